/* PlatformSandbox: Mastra Platform sandboxes through the workspace proxy
 * (docs/protocols/platform.md §1): REST control plane (platform_api.c),
 * exec lease + one WebSocket per command with one retry (platform_exec.c).
 * This file: options and env fallbacks, the lifecycle (docs/protocols/platform.md §4: reattach via
 * GET, provision with retry on 5xx, stop = destroy = DELETE), info()
 * metadata and the default instructions.
 *
 * The Railway lease path only: the E2B path needs the envd protocol the
 * spec does not cover, so SANDBOX_PROVIDER is not read. info() of a running
 * sandbox asks the proxy (GET /sandbox/{id}, docs/protocols/platform.md §4.5) so platform_status is
 * current; a failed GET fails info() with its typed error, as upstream's
 * getInfo() rejects. Otherwise info() answers locally. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../log.h"
#include "platform_state.h"

#define PLATFORM_HANDSHAKE_MS 30000
static const int64_t platform_default_delays[] = { 2000, 4000 }; /* S1: 2 s x attempt */

static void platform_free_state(platform_sandbox *ps)
{
    free(ps->platform_id);
    free(ps->provider_resource_id);
    free(ps->platform_status);
    ps->platform_id = ps->provider_resource_id = ps->platform_status = NULL;
}

void sk_platform_forget(platform_sandbox *ps)
{
    platform_free_state(ps);
    ps->gen++;
    if (ps->lease) {
        sk_platform_lease_unref(ps->lease);
        ps->lease = NULL;
    }
}

static void platform_free(sk_sandbox *sb)
{
    platform_sandbox *ps = sb->impl;
    if (!ps)
        return;
    sk_platform_api_cancel(ps->op_call);
    ps->op_call = NULL;
    sk_platform_api_cancel(ps->refresh_call);
    ps->refresh_call = NULL;
    sk_timer_close(&ps->op_timer);
    sk_platform_exec_free_all(ps);
    sk_platform_forget(ps);
    sk_platform_api_free(ps->api);
    free(ps->environment_id);
    free(ps->network_isolation);
    free(ps->working_directory);
    free(ps->ca_file);
    free(ps->retry_delays);
    free(ps);
    sb->impl = NULL;
}

static int platform_init(sk_sandbox *sb, const json_t *o, sk_error **err)
{
    platform_sandbox *ps = calloc(1, sizeof *ps);
    if (!ps)
        goto oom;
    sb->impl = ps;
    ps->sb = sb;
    if (!(ps->api = sk_platform_api_open(sb->loop, o, PLATFORM_NAME, sb, err)))
        return -1;
    const char *env_id = sk_platform_setting(o, "environment_id", "MASTRA_ENVIRONMENT_ID");
    const char *sandbox_id = json_string_value(json_object_get(o, "sandbox_id"));
    if (sandbox_id && !*sandbox_id)
        sandbox_id = NULL;
    if (!env_id && !sandbox_id) {
        *err = sk_platform_config_error("environment_id", "%s",
                                     "PlatformSandbox: environment_id is required (option environment_id or "
                                     "MASTRA_ENVIRONMENT_ID) unless sandbox_id is given");
        return -1;
    }
    const char *iso = json_string_value(json_object_get(o, "network_isolation"));
    if (iso && strcmp(iso, "ISOLATED") != 0 && strcmp(iso, "PRIVATE") != 0) {
        *err = sk_platform_config_error("network_isolation",
                                     "PlatformSandbox option 'network_isolation' must be \"ISOLATED\" or \"PRIVATE\" (got \"%s\")",
                                     iso);
        return -1;
    }
    if ((env_id && !(ps->environment_id = strdup(env_id))) || (sandbox_id && !(ps->platform_id = strdup(sandbox_id))) ||
        (iso && !(ps->network_isolation = strdup(iso))))
        goto oom;
    const char *wd = json_string_value(json_object_get(o, "working_directory"));
    if (wd && *wd && !(ps->working_directory = strdup(wd)))
        goto oom;
    const char *ca = json_string_value(json_object_get(o, "ca_file"));
    if (ca && *ca && !(ps->ca_file = strdup(ca)))
        goto oom;
    ps->insecure = json_is_true(json_object_get(o, "insecure_skip_verify"));
    json_t *frames = json_object_get(o, "stdin_frames");
    ps->stdin_frames = !json_is_false(frames);
    json_t *idle = json_object_get(o, "idle_timeout_minutes");
    if (json_is_number(idle)) {
        ps->has_idle_timeout = true;
        ps->idle_timeout_minutes = json_number_value(idle);
    }
    json_t *delays = json_object_get(o, "retry_delays_ms");
    if (delays) {
        /* an empty Lua table arrives as {}: no retry */
        size_t n = json_is_array(delays) ? json_array_size(delays) : 0;
        ps->retry_delays = calloc(n ? n : 1, sizeof *ps->retry_delays);
        if (!ps->retry_delays)
            goto oom;
        for (size_t i = 0; i < n; i++) {
            double d = json_number_value(json_array_get(delays, i));
            ps->retry_delays[i] = d > 0 ? (int64_t)d : 0;
        }
        ps->n_retry_delays = n;
    } else {
        ps->retry_delays = malloc(sizeof platform_default_delays);
        if (!ps->retry_delays)
            goto oom;
        memcpy(ps->retry_delays, platform_default_delays, sizeof platform_default_delays);
        ps->n_retry_delays = sizeof platform_default_delays / sizeof platform_default_delays[0];
    }
    json_t *hs = json_object_get(o, "handshake_timeout_ms");
    ps->handshake_timeout_ms = json_is_number(hs) && json_number_value(hs) > 0 ? (int64_t)json_number_value(hs)
                                                                                 : PLATFORM_HANDSHAKE_MS;
    return 0;
oom:
    *err = sk_error_oom();
    return -1;
}

/* ---- lifecycle ------------------------------------------------------------ */

static void platform_op_complete(platform_sandbox *ps, sk_error *err)
{
    sk_provider_done done = ps->op_done;
    ps->op_done = NULL;
    done(ps->sb, err);
}

static char *platform_sandbox_path(const char *id, const char *suffix)
{
    char *enc = sk_platform_enc(id), *path = NULL;
    if (enc && asprintf(&path, "/sandbox/%s%s", enc, suffix ? suffix : "") < 0)
        path = NULL;
    free(enc);
    return path;
}

static void platform_take_string(char **slot, json_t *v)
{
    free(*slot);
    *slot = json_is_string(v) ? strdup(json_string_value(v)) : NULL;
}

/* Keeps a CreateSandboxResponse: id, metadata, createdAt. */
static int platform_take_record(platform_sandbox *ps, json_t *rec)
{
    const char *id = json_string_value(json_object_get(rec, "id"));
    if (!id || !*id)
        return -1;
    if (!ps->platform_id || strcmp(ps->platform_id, id) != 0) {
        char *copy = strdup(id);
        if (!copy)
            return -1;
        free(ps->platform_id);
        ps->platform_id = copy;
        ps->gen++;
    }
    platform_take_string(&ps->provider_resource_id, json_object_get(rec, "providerResourceId"));
    platform_take_string(&ps->platform_status, json_object_get(rec, "status"));
    double created;
    if (sk_platform_parse_iso(json_string_value(json_object_get(rec, "createdAt")), &created))
        ps->sb->created_at_ms = created;
    return 0;
}

static void platform_log_started(platform_sandbox *ps, const char *mode)
{
    sk_log(SK_LOG_INFO, PLATFORM_ID,
           "platform-workspace start complete sandboxId=%s mode=%s totalMs=%.0f requestMs=%.0f", ps->platform_id,
           mode, sk_now_ms() - ps->op_t0, ps->op_req_ms);
}

static sk_error *platform_malformed_record(const char *what)
{
    return sk_error_new(SK_ERR_PLATFORM_API, json_pack("{s:b}", "malformed", 1),
                        "Platform proxy returned a %s without a sandbox id", what);
}

static void platform_create_send(platform_sandbox *ps);
static void platform_on_create_timer(uv_timer_t *t) { platform_create_send(t->data); }

static void platform_on_create(int status, json_t *json, sk_error *err, void *ud)
{
    platform_sandbox *ps = ud;
    ps->op_call = NULL;
    ps->op_req_ms += sk_now_ms() - ps->op_req_t0;
    if (err && status >= 500 && (size_t)ps->op_attempt <= ps->n_retry_delays) {
        int64_t delay = ps->retry_delays[ps->op_attempt - 1];
        sk_log(SK_LOG_DEBUG, PLATFORM_ID, "POST /sandbox answered %d; retrying in %lld ms", status,
               (long long)delay);
        sk_error_free(err);
        ps->op_attempt++;
        if (sk_timer_start(ps->sb->loop, &ps->op_timer, ps, (uint64_t)delay, platform_on_create_timer) != 0)
            platform_op_complete(ps, sk_error_oom());
        return;
    }
    if (err) {
        platform_op_complete(ps, err);
        return;
    }
    if (platform_take_record(ps, json) != 0) {
        platform_op_complete(ps, platform_malformed_record("create response"));
        return;
    }
    platform_log_started(ps, "provision");
    platform_op_complete(ps, NULL);
}

static void platform_create_send(platform_sandbox *ps)
{
    sk_sandbox *sb = ps->sb;
    json_t *body = json_object();
    json_object_set_new(body, "id", json_string(sb->id));
    json_object_set_new(body, "environmentId", json_string(ps->environment_id));
    if (ps->has_idle_timeout)
        json_object_set_new(body, "idleTimeoutMinutes",
                            ps->idle_timeout_minutes == (double)(json_int_t)ps->idle_timeout_minutes
                                ? json_integer((json_int_t)ps->idle_timeout_minutes)
                                : json_real(ps->idle_timeout_minutes));
    if (ps->network_isolation)
        json_object_set_new(body, "networkIsolation", json_string(ps->network_isolation));
    json_object_set(body, "env", sb->env);
    sk_error *err = NULL;
    ps->op_req_t0 = sk_now_ms();
    ps->op_call = sk_platform_api_call(ps->api, "POST", "/sandbox", body, platform_on_create, ps, &err);
    json_decref(body);
    if (!ps->op_call)
        platform_op_complete(ps, err);
}

static void platform_provision(platform_sandbox *ps)
{
    if (!ps->environment_id) {
        platform_op_complete(ps, sk_platform_config_error("environment_id", "%s",
                                                       "PlatformSandbox: environment_id is required to provision a "
                                                       "sandbox (the sandbox_id to reattach to is gone)"));
        return;
    }
    ps->op_attempt = 1;
    platform_create_send(ps);
}

static void platform_on_reattach(int status, json_t *json, sk_error *err, void *ud)
{
    platform_sandbox *ps = ud;
    ps->op_call = NULL;
    ps->op_req_ms += sk_now_ms() - ps->op_req_t0;
    if (!err) {
        json_t *destroyed = json_object_get(json, "destroyedAt");
        if (destroyed && !json_is_null(destroyed)) {
            sk_platform_forget(ps); /* a record of a destroyed sandbox */
            platform_provision(ps);
            return;
        }
        if (platform_take_record(ps, json) != 0) {
            platform_op_complete(ps, platform_malformed_record("sandbox record"));
            return;
        }
        platform_log_started(ps, "reattach");
        platform_op_complete(ps, NULL);
        return;
    }
    if (status == 404) {
        sk_error_free(err);
        sk_platform_forget(ps);
        platform_provision(ps);
        return;
    }
    platform_op_complete(ps, err);
}

static void platform_start(sk_sandbox *sb, sk_provider_done done)
{
    platform_sandbox *ps = sb->impl;
    ps->op_done = done;
    ps->op_t0 = sk_now_ms();
    ps->op_req_ms = 0;
    if (!ps->platform_id) {
        platform_provision(ps);
        return;
    }
    char *path = platform_sandbox_path(ps->platform_id, NULL);
    sk_error *err = NULL;
    if (!path) {
        platform_op_complete(ps, sk_error_oom());
        return;
    }
    ps->op_req_t0 = sk_now_ms();
    ps->op_call = sk_platform_api_call(ps->api, "GET", path, NULL, platform_on_reattach, ps, &err);
    free(path);
    if (!ps->op_call)
        platform_op_complete(ps, err);
}

static void platform_on_deleted(int status, json_t *json, sk_error *err, void *ud)
{
    (void)status;
    (void)json;
    platform_sandbox *ps = ud;
    ps->op_call = NULL;
    if (!err)
        sk_platform_forget(ps);
    platform_op_complete(ps, err);
}

/* stop() is an alias of destroy() (era D): DELETE /sandbox/{id}, then the
 * platform id, record and lease are forgotten; nothing when never started. */
static void platform_teardown(sk_sandbox *sb, sk_provider_done done)
{
    platform_sandbox *ps = sb->impl;
    sk_platform_exec_reset(ps);
    if (!ps->platform_id) {
        done(sb, NULL);
        return;
    }
    ps->op_done = done;
    char *path = platform_sandbox_path(ps->platform_id, NULL);
    sk_error *err = NULL;
    if (!path) {
        platform_op_complete(ps, sk_error_oom());
        return;
    }
    ps->op_call = sk_platform_api_call(ps->api, "DELETE", path, NULL, platform_on_deleted, ps, &err);
    free(path);
    if (!ps->op_call)
        platform_op_complete(ps, err);
}

/* ---- info / instructions --------------------------------------------------- */

static void platform_on_refreshed(int status, json_t *json, sk_error *err, void *ud)
{
    (void)status;
    platform_sandbox *ps = ud;
    ps->refresh_call = NULL;
    sk_provider_done done = ps->refresh_done;
    ps->refresh_done = NULL;
    /* a teardown or a 410 since the GET left: the record is stale */
    if (!err && ps->refresh_gen == ps->gen && ps->platform_id) {
        const char *id = json_string_value(json_object_get(json, "id"));
        if (!id || strcmp(id, ps->platform_id) != 0)
            err = sk_error_new(SK_ERR_PLATFORM_API, json_pack("{s:b,s:s}", "malformed", 1, "sandbox_id", ps->platform_id),
                               "Platform proxy answered GET /sandbox/%s with the record of another sandbox",
                               ps->platform_id);
        else if (platform_take_record(ps, json) != 0)
            err = sk_error_oom();
    }
    done(ps->sb, err);
}

/* docs/protocols/platform.md §4.5, S3: any non-2xx fails (PlatformApiError, NetworkError, TimeoutError). */
static void platform_refresh(sk_sandbox *sb, sk_provider_done done)
{
    platform_sandbox *ps = sb->impl;
    if (!ps->platform_id) {
        done(sb, NULL);
        return;
    }
    char *path = platform_sandbox_path(ps->platform_id, NULL);
    if (!path) {
        done(sb, sk_error_oom());
        return;
    }
    sk_error *err = NULL;
    ps->refresh_done = done;
    ps->refresh_gen = ps->gen;
    ps->refresh_call = sk_platform_api_call(ps->api, "GET", path, NULL, platform_on_refreshed, ps, &err);
    free(path);
    if (!ps->refresh_call) {
        ps->refresh_done = NULL;
        done(sb, err);
    }
}

static json_t *platform_metadata(sk_sandbox *sb)
{
    platform_sandbox *ps = sb->impl;
    if (!ps->platform_id)
        return NULL;
    json_t *m = json_pack("{s:s}", "sandbox_id", ps->platform_id);
    if (ps->provider_resource_id)
        json_object_set_new(m, "provider_resource_id", json_string(ps->provider_resource_id));
    if (ps->platform_status)
        json_object_set_new(m, "platform_status", json_string(ps->platform_status));
    return m;
}

static char *platform_instructions(sk_sandbox *sb)
{
    platform_sandbox *ps = sb->impl;
    char *s = NULL;
    if (asprintf(&s, "Platform sandbox%s%s. Execute commands with the sandbox command APIs.",
                 ps->platform_id ? " " : "", ps->platform_id ? ps->platform_id : "") < 0)
        return NULL;
    return s;
}

/* processes: platform_exec.c */

const sk_provider sk_provider_platform = {
    .id = PLATFORM_ID,
    .name = PLATFORM_NAME,
    .handles_timeout = true,
    .init = platform_init,
    .start = platform_start,
    .stop = platform_teardown,
    .destroy = platform_teardown,
    .spawn = sk_platform_exec_spawn,
    .kill = sk_platform_exec_kill,
    .write_stdin = sk_platform_exec_write_stdin,
    .close_stdin = sk_platform_exec_close_stdin,
    .release = sk_platform_exec_release,
    .fs = &sk_platform_fs_ops,
    .refresh = platform_refresh,
    .metadata = platform_metadata,
    .instructions = platform_instructions,
    .free = platform_free,
};
