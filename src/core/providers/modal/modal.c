/* ModalSandbox: Mastra's ModalSandbox (docs/protocols/modal.md §3) over the
 * Modal client in modal_client.c.
 *
 * - start: SandboxGetFromName (reconnect by name = the sandbox id); on
 *   NOT_FOUND AppGetOrCreate, then the image (the snapshot taken by this
 *   object's last stop, else ImageGetOrCreate of base_image), an ephemeral
 *   secret for env, SandboxCreate.
 * - stop: TaskSnapshotFilesystem (failures logged and swallowed), then
 *   SandboxTerminate and SandboxWait until it has finished.
 * - destroy: SandboxTerminate (failures ignored); the snapshot is dropped.
 * - commands: modal_exec.c; filesystem operations: modal_fs.c. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../grpc_frame.h"
#include "../../log.h"
#include "modal_state.h"

/* Response messages are control-plane protobufs and output chunks, far
 * below this; the SDKs allow 100 MiB, which we keep as an opt-in
 * (docs/security.md §"Hostile servers: memory bounds"). */
#define MODAL_DEFAULT_MAX_MESSAGE ((size_t)16 << 20)

#define MODAL_ID "modal"
#define MODAL_SNAPSHOT_TIMEOUT_MS 55000 /* snapshotFilesystem() default */
#define MODAL_WAIT_POLL_S 10             /* Sandbox.wait() long poll */
#define MODAL_TASK_ID_TRIES 600          /* 5 minutes at 500 ms */
#define MODAL_TASK_ID_DELAY_MS 500

/* ---- small helpers ------------------------------------------------------ */


static void modal_set_str(char **dst, const char *src)
{
    free(*dst);
    *dst = src ? strdup(src) : NULL;
}

/* upstream isSandboxDeadError, on a gRPC code and message */
bool sk_modal_dead(int code, const char *message)
{
    if (code == SK_GRPC_NOT_FOUND)
        return true;
    if (!message)
        return false;
    static const char *const marks[] = { "sandbox not found", "has been terminated", "already completed",
                                         "was cancelled", "NOT_FOUND", NULL };
    for (int i = 0; marks[i]; i++)
        if (strstr(message, marks[i]))
            return true;
    return false;
}

bool sk_modal_error_dead(const sk_error *e)
{
    if (!e)
        return false;
    json_t *st = e->fields ? json_object_get(e->fields, "grpc_status") : NULL;
    json_t *dead = e->fields ? json_object_get(e->fields, "sandbox_dead") : NULL;
    if (json_is_true(dead))
        return true;
    return sk_modal_dead(json_is_integer(st) ? (int)json_integer_value(st) : -1, e->message);
}

static sk_error *modal_reply_error(modal_sandbox *ms, const mc_reply *r, const char *sdk_error)
{
    return sk_mc_error(ms->client, r, sdk_error);
}

/* Drops the handle (sandbox id, task id, router): the next command or start
 * reconnects or re-provisions. A task lookup in flight is cancelled and its
 * waiters are told the sandbox changed. */
static void modal_drop_handle(modal_sandbox *ms)
{
    ms->gen++;
    modal_set_str(&ms->sandbox_id, NULL);
    modal_set_str(&ms->task_id, NULL);
    if (ms->router) {
        sk_mc_router_unref(ms->router);
        ms->router = NULL;
    }
    if (ms->ready.active) {
        ms->ready.active = false;
        sk_mc_call_cancel(ms->ready.call);
        ms->ready.call = NULL;
        sk_timer_close(&ms->ready.timer);
        sk_error *e = sk_error_new(SK_ERR_MODAL, json_pack("{s:b}", "sandbox_dead", 1),
                                   "The sandbox was replaced");
        sk_waiters_notify(ms->sb, &ms->ready.waiters, e);
        sk_error_free(e);
    }
}

/* ---- provisioning: reconnect by name, or create ----------------------------- */

enum { PROV_FROM_NAME, PROV_APP, PROV_IMAGE, PROV_JOIN, PROV_SECRET, PROV_CREATE };

static void prov_step(modal_sandbox *ms);

static void prov_finish(modal_sandbox *ms, sk_error *err)
{
    ms->prov.active = false;
    ms->prov.call = NULL;
    modal_set_str(&ms->prov.app_id, NULL);
    modal_set_str(&ms->prov.image_id, NULL);
    modal_set_str(&ms->prov.secret_id, NULL);
    modal_set_str(&ms->prov.last_entry_id, NULL);
    sk_waiters_notify(ms->sb, &ms->prov.waiters, err);
    sk_error_free(err);
}

static void prov_on_reply(void *ud, const mc_reply *r)
{
    modal_sandbox *ms = ud;
    ms->prov.call = NULL;
    switch (ms->prov.step) {
    case PROV_FROM_NAME: {
        if (r->code == SK_GRPC_NOT_FOUND) {
            ms->prov.step = PROV_APP;
            prov_step(ms);
            return;
        }
        if (r->code != 0) {
            prov_finish(ms, modal_reply_error(ms, r, NULL));
            return;
        }
        sk_modal_sandbox_get_from_name_response resp;
        if (sk_modal_decode_sandbox_get_from_name(r->data, r->len, &resp) != 0) {
            prov_finish(ms, sk_error_new(SK_ERR_MODAL, NULL, "malformed SandboxGetFromName response"));
            return;
        }
        ms->gen++;
        modal_set_str(&ms->sandbox_id, resp.sandbox_id);
        sk_modal_sandbox_get_from_name_response_free(&resp);
        sk_log(SK_LOG_DEBUG, "modal", "reconnected to running sandbox %s", ms->sb->id);
        prov_finish(ms, ms->sandbox_id ? NULL : sk_error_oom());
        return;
    }
    case PROV_APP: {
        if (r->code != 0) {
            prov_finish(ms, modal_reply_error(ms, r, r->code == SK_GRPC_NOT_FOUND ? "NotFoundError" : NULL));
            return;
        }
        sk_modal_app_get_or_create_response resp;
        if (sk_modal_decode_app_get_or_create(r->data, r->len, &resp) != 0) {
            prov_finish(ms, sk_error_new(SK_ERR_MODAL, NULL, "malformed AppGetOrCreate response"));
            return;
        }
        modal_set_str(&ms->prov.app_id, resp.app_id);
        sk_modal_app_get_or_create_response_free(&resp);
        if (ms->snapshot_image) {
            modal_set_str(&ms->prov.image_id, ms->snapshot_image);
            ms->prov.step = PROV_SECRET;
        } else {
            ms->prov.step = PROV_IMAGE;
        }
        prov_step(ms);
        return;
    }
    case PROV_IMAGE: {
        if (r->code != 0) {
            prov_finish(ms, modal_reply_error(ms, r, NULL));
            return;
        }
        sk_modal_image_get_or_create_response resp;
        if (sk_modal_decode_image_get_or_create(r->data, r->len, &resp) != 0) {
            prov_finish(ms, sk_error_new(SK_ERR_MODAL, NULL, "malformed ImageGetOrCreate response"));
            return;
        }
        modal_set_str(&ms->prov.image_id, resp.image_id);
        int status = resp.has_result ? resp.result.status : 0;
        sk_error *e = NULL;
        if (status == 0) {
            ms->prov.step = PROV_JOIN; /* the build runs: join it */
        } else if (status != SK_MODAL_GENERIC_STATUS_SUCCESS) {
            e = sk_error_new(SK_ERR_MODAL, json_pack("{s:s,s:i}", "rpc", SK_MODAL_RPC_IMAGE_GET_OR_CREATE,
                                                     "image_status", status),
                             status == SK_MODAL_GENERIC_STATUS_FAILURE
                                 ? "Image build for %s failed with the exception:\n%s"
                                 : "Image build for %s failed with status %s",
                             resp.image_id,
                             status == SK_MODAL_GENERIC_STATUS_FAILURE ? resp.result.exception
                             : status == SK_MODAL_GENERIC_STATUS_TERMINATED ? "TERMINATED"
                             : status == SK_MODAL_GENERIC_STATUS_TIMEOUT    ? "TIMEOUT"
                                                                    : "unknown");
        } else {
            ms->prov.step = PROV_SECRET;
        }
        sk_modal_image_get_or_create_response_free(&resp);
        if (e)
            prov_finish(ms, e);
        else
            prov_step(ms);
        return;
    }
    case PROV_JOIN:
        /* The stream ended: without a result, join again from the last
         * entry id (prov_on_join_message handles a result). */
        if (r->code != 0) {
            prov_finish(ms, modal_reply_error(ms, r, NULL));
            return;
        }
        prov_step(ms);
        return;
    case PROV_SECRET: {
        if (r->code != 0) {
            prov_finish(ms, modal_reply_error(ms, r,
                                              r->code == SK_GRPC_INVALID_ARGUMENT ||
                                                      r->code == SK_GRPC_FAILED_PRECONDITION
                                                  ? "InvalidError"
                                                  : NULL));
            return;
        }
        sk_modal_secret_get_or_create_response resp;
        if (sk_modal_decode_secret_get_or_create(r->data, r->len, &resp) != 0) {
            prov_finish(ms, sk_error_new(SK_ERR_MODAL, NULL, "malformed SecretGetOrCreate response"));
            return;
        }
        modal_set_str(&ms->prov.secret_id, resp.secret_id);
        sk_modal_secret_get_or_create_response_free(&resp);
        ms->prov.step = PROV_CREATE;
        prov_step(ms);
        return;
    }
    case PROV_CREATE: {
        if (r->code != 0) {
            prov_finish(ms, modal_reply_error(ms, r, r->code == SK_GRPC_ALREADY_EXISTS ? "AlreadyExistsError" : NULL));
            return;
        }
        sk_modal_sandbox_create_response resp;
        if (sk_modal_decode_sandbox_create(r->data, r->len, &resp) != 0) {
            prov_finish(ms, sk_error_new(SK_ERR_MODAL, NULL, "malformed SandboxCreate response"));
            return;
        }
        ms->gen++;
        modal_set_str(&ms->sandbox_id, resp.sandbox_id);
        sk_modal_sandbox_create_response_free(&resp);
        sk_log(SK_LOG_DEBUG, "modal", "created sandbox %s (%s)", ms->sb->id, ms->sandbox_id);
        prov_finish(ms, ms->sandbox_id ? NULL : sk_error_oom());
        return;
    }
    }
}

/* ImageJoinStreaming: the first message with a result ends the join. */
static void prov_on_join_message(void *ud, const uint8_t *data, size_t len)
{
    modal_sandbox *ms = ud;
    sk_modal_image_join_streaming_response resp;
    if (sk_modal_decode_image_join_streaming(data, len, &resp) != 0) {
        sk_mc_call_cancel(ms->prov.call);
        ms->prov.call = NULL;
        prov_finish(ms, sk_error_new(SK_ERR_MODAL, NULL, "malformed ImageJoinStreaming response"));
        return;
    }
    if (resp.entry_id[0])
        modal_set_str(&ms->prov.last_entry_id, resp.entry_id);
    int status = resp.has_result ? resp.result.status : 0;
    sk_error *e = NULL;
    if (status != 0 && status != SK_MODAL_GENERIC_STATUS_SUCCESS)
        e = sk_error_new(SK_ERR_MODAL, json_pack("{s:s,s:i}", "rpc", SK_MODAL_RPC_IMAGE_JOIN_STREAMING,
                                                 "image_status", status),
                         "Image build for %s failed with status %d%s%s", ms->prov.image_id, status,
                         resp.result.exception && resp.result.exception[0] ? ": " : "",
                         resp.result.exception ? resp.result.exception : "");
    sk_modal_image_join_streaming_response_free(&resp);
    if (status == 0)
        return;
    sk_mc_call_cancel(ms->prov.call);
    ms->prov.call = NULL;
    if (e) {
        prov_finish(ms, e);
        return;
    }
    ms->prov.step = PROV_SECRET;
    prov_step(ms);
}

/* The sandbox env as map entries (borrowed from json; caller frees v). */
sk_modal_kv *sk_modal_env_kvs(const json_t *env, size_t *n)
{
    *n = json_is_object(env) ? json_object_size(env) : 0;
    sk_modal_kv *v = calloc(*n ? *n : 1, sizeof *v);
    if (!v)
        return NULL;
    size_t i = 0;
    const char *k;
    json_t *val;
    json_object_foreach((json_t *)env, k, val) {
        v[i].key = k;
        v[i].value = json_is_string(val) ? json_string_value(val) : "";
        i++;
    }
    return v;
}

static void prov_step(modal_sandbox *ms)
{
    const sk_modal_config *cfg = sk_mc_client_config(ms->client);
    sk_buf msg = { 0 };
    int rc = -1;
    const char *rpc = NULL;
    int64_t poll = 0;
    switch (ms->prov.step) {
    case PROV_FROM_NAME: {
        sk_modal_sandbox_get_from_name_request m = { .sandbox_name = ms->sb->id,
                                                     .environment_name = cfg->environment,
                                                     .app_name = ms->app_name };
        rc = sk_modal_encode_sandbox_get_from_name(&msg, &m);
        rpc = SK_MODAL_RPC_SANDBOX_GET_FROM_NAME;
        break;
    }
    case PROV_APP: {
        sk_modal_app_get_or_create_request m = {
            .app_name = ms->app_name,
            .environment_name = cfg->environment,
            .object_creation_type = SK_MODAL_OBJECT_CREATION_TYPE_CREATE_IF_MISSING,
        };
        rc = sk_modal_encode_app_get_or_create(&msg, &m);
        rpc = SK_MODAL_RPC_APP_GET_OR_CREATE;
        break;
    }
    case PROV_IMAGE: {
        char *from = NULL;
        if (asprintf(&from, "FROM %s", ms->base_image) < 0)
            break;
        const char *cmds[] = { from };
        sk_modal_image_get_or_create_request m = { .has_image = true,
                                                   .image = { .dockerfile_commands = { cmds, 1 } },
                                                   .app_id = ms->prov.app_id,
                                                   .builder_version = cfg->image_builder_version };
        rc = sk_modal_encode_image_get_or_create(&msg, &m);
        free(from);
        rpc = SK_MODAL_RPC_IMAGE_GET_OR_CREATE;
        break;
    }
    case PROV_JOIN: {
        sk_modal_image_join_streaming_request m = { .image_id = ms->prov.image_id, .timeout = 55,
                                                    .last_entry_id = ms->prov.last_entry_id };
        rc = sk_modal_encode_image_join_streaming(&msg, &m);
        rpc = SK_MODAL_RPC_IMAGE_JOIN_STREAMING;
        poll = 55000;
        break;
    }
    case PROV_SECRET: {
        if (json_object_size(ms->sb->env) == 0) {
            ms->prov.step = PROV_CREATE;
            prov_step(ms);
            return;
        }
        size_t n;
        sk_modal_kv *kv = sk_modal_env_kvs(ms->sb->env, &n);
        if (!kv)
            break;
        sk_modal_secret_get_or_create_request m = {
            .object_creation_type = SK_MODAL_OBJECT_CREATION_TYPE_EPHEMERAL,
            .env_dict = { kv, n },
            .environment_name = cfg->environment,
        };
        rc = sk_modal_encode_secret_get_or_create(&msg, &m);
        free(kv);
        rpc = SK_MODAL_RPC_SECRET_GET_OR_CREATE;
        break;
    }
    case PROV_CREATE: {
        const char *secrets[] = { ms->prov.secret_id };
        /* As the JS SDK: resources (with an empty gpu_config), an empty
         * open_ports and network_access are always sent. */
        sk_modal_sandbox_create_request m = {
            .app_id = ms->prov.app_id,
            .has_definition = true,
            .definition = {
                .image_id = ms->prov.image_id,
                .secret_ids = { secrets, ms->prov.secret_id ? 1 : 0 },
                .has_resources = true,
                .resources = { .has_gpu_config = true },
                .timeout_secs = (uint32_t)(ms->timeout_ms / 1000),
                .workdir = ms->workdir,
                .has_open_ports = true,
                .has_network_access = true,
                .network_access = { .network_access_type = SK_MODAL_NETWORK_ACCESS_TYPE_OPEN },
                .name = ms->sb->id,
            },
        };
        rc = sk_modal_encode_sandbox_create(&msg, &m);
        rpc = SK_MODAL_RPC_SANDBOX_CREATE;
        break;
    }
    }
    if (rc == 0 && ms->prov.step == PROV_JOIN)
        ms->prov.call = sk_mc_stream(ms->client, rpc, &msg, poll, prov_on_join_message, prov_on_reply, ms);
    else if (rc == 0)
        ms->prov.call = sk_mc_unary(ms->client, rpc, &msg, poll, prov_on_reply, ms);
    sk_buf_free(&msg);
    if (!ms->prov.call)
        prov_finish(ms, sk_error_oom());
}

/* Joins the provisioning in flight, or starts one. */
void sk_modal_provision(modal_sandbox *ms, sk_lifecycle_cb fn, void *ud)
{
    if (sk_waiters_add(&ms->prov.waiters, fn, ud) != 0) {
        sk_error *e = sk_error_oom();
        fn(ms->sb, e, ud);
        sk_error_free(e);
        return;
    }
    if (ms->prov.active)
        return;
    ms->prov.active = true;
    ms->prov.step = PROV_FROM_NAME;
    prov_step(ms);
}

/* upstream retryOnDead: forget the dead handle and reconnect or create. */
void sk_modal_revive(modal_sandbox *ms, sk_lifecycle_cb fn, void *ud)
{
    if (!ms->prov.active && ms->sandbox_id) {
        sk_log(SK_LOG_DEBUG, "modal", "sandbox %s is gone; provisioning it again", ms->sb->id);
        modal_drop_handle(ms);
    }
    sk_modal_provision(ms, fn, ud);
}

/* ---- readiness for commands: task id, then router access ---------------------- */

enum { READY_TASK, READY_ACCESS };

static void ready_step(modal_sandbox *ms);

static void ready_finish(modal_sandbox *ms, sk_error *err)
{
    ms->ready.active = false;
    ms->ready.call = NULL;
    sk_waiters_notify(ms->sb, &ms->ready.waiters, err);
    sk_error_free(err);
}

static void ready_on_timer(uv_timer_t *t)
{
    modal_sandbox *ms = t->data;
    ready_step(ms);
}

static void ready_on_reply(void *ud, const mc_reply *r)
{
    modal_sandbox *ms = ud;
    ms->ready.call = NULL;
    if (r->code != 0) {
        sk_error *e;
        if (ms->ready.step == READY_ACCESS && r->code == SK_GRPC_FAILED_PRECONDITION)
            e = sk_error_new(SK_ERR_MODAL, json_pack("{s:i,s:s,s:s}", "grpc_status", r->code, "grpc_code",
                                                     "FAILED_PRECONDITION", "rpc", r->rpc),
                             "Command router access is not available for this sandbox");
        else
            e = modal_reply_error(ms, r, NULL);
        ready_finish(ms, e);
        return;
    }
    if (ms->ready.step == READY_TASK) {
        sk_modal_sandbox_get_task_id_response resp;
        if (sk_modal_decode_sandbox_get_task_id(r->data, r->len, &resp) != 0) {
            ready_finish(ms, sk_error_new(SK_ERR_MODAL, NULL, "malformed SandboxGetTaskId response"));
            return;
        }
        if (resp.has_task_result) {
            sk_error *e;
            if (resp.task_result.status == SK_MODAL_GENERIC_STATUS_SUCCESS || !resp.task_result.exception[0])
                e = sk_error_new(SK_ERR_MODAL, json_pack("{s:b,s:s}", "sandbox_dead", 1, "rpc", r->rpc),
                                 "Sandbox %s has already completed", ms->sandbox_id);
            else
                e = sk_error_new(SK_ERR_MODAL, json_pack("{s:b,s:s}", "sandbox_dead", 1, "rpc", r->rpc),
                                 "Sandbox %s has already completed with result: exception:\"%s\"", ms->sandbox_id,
                                 resp.task_result.exception);
            sk_modal_sandbox_get_task_id_response_free(&resp);
            ready_finish(ms, e);
            return;
        }
        if (!resp.task_id) {
            sk_modal_sandbox_get_task_id_response_free(&resp);
            if (++ms->ready.tries >= MODAL_TASK_ID_TRIES) {
                ready_finish(ms, sk_error_new(SK_ERR_TIMEOUT, NULL, "Timed out waiting for task ID for Sandbox %s",
                                              ms->sandbox_id));
                return;
            }
            if (sk_timer_start(ms->sb->loop, &ms->ready.timer, ms, MODAL_TASK_ID_DELAY_MS, ready_on_timer) != 0)
                ready_finish(ms, sk_error_oom());
            return;
        }
        modal_set_str(&ms->task_id, resp.task_id);
        sk_modal_sandbox_get_task_id_response_free(&resp);
        ms->ready.step = READY_ACCESS;
        ready_step(ms);
        return;
    }
    sk_modal_task_get_command_router_access_response resp;
    if (sk_modal_decode_task_get_command_router_access(r->data, r->len, &resp) != 0) {
        ready_finish(ms, sk_error_new(SK_ERR_MODAL, NULL, "malformed TaskGetCommandRouterAccess response"));
        return;
    }
    sk_error *err = NULL;
    mc_router *router = sk_mc_router_new(ms->client, ms->task_id, resp.jwt, resp.url, &err);
    sk_modal_task_get_command_router_access_response_free(&resp);
    if (router) {
        if (ms->router)
            sk_mc_router_unref(ms->router);
        ms->router = router;
    }
    ready_finish(ms, err);
}

static void ready_step(modal_sandbox *ms)
{
    sk_buf msg = { 0 };
    int rc;
    const char *rpc;
    if (ms->ready.step == READY_TASK) {
        sk_modal_sandbox_get_task_id_request m = { .sandbox_id = ms->sandbox_id };
        rc = sk_modal_encode_sandbox_get_task_id(&msg, &m);
        rpc = SK_MODAL_RPC_SANDBOX_GET_TASK_ID;
    } else {
        sk_modal_task_get_command_router_access_request m = { .task_id = ms->task_id };
        rc = sk_modal_encode_task_get_command_router_access(&msg, &m);
        rpc = SK_MODAL_RPC_TASK_GET_COMMAND_ROUTER_ACCESS;
    }
    if (rc == 0)
        ms->ready.call = sk_mc_unary(ms->client, rpc, &msg, 0, ready_on_reply, ms);
    sk_buf_free(&msg);
    if (!ms->ready.call)
        ready_finish(ms, sk_error_oom());
}

/* Calls fn at once when the router is known, else once the lookup ends. */
void sk_modal_ready(modal_sandbox *ms, sk_lifecycle_cb fn, void *ud)
{
    if (ms->router) {
        fn(ms->sb, NULL, ud);
        return;
    }
    if (sk_waiters_add(&ms->ready.waiters, fn, ud) != 0) {
        sk_error *e = sk_error_oom();
        fn(ms->sb, e, ud);
        sk_error_free(e);
        return;
    }
    if (ms->ready.active)
        return;
    ms->ready.active = true;
    ms->ready.tries = 0;
    ms->ready.step = ms->task_id ? READY_ACCESS : READY_TASK;
    ready_step(ms);
}

/* ---- init / info ---------------------------------------------------------------- */

static void modal_free(sk_sandbox *sb)
{
    modal_sandbox *ms = sb->impl;
    if (!ms)
        return;
    sk_mc_call_cancel(ms->prov.call);
    sk_mc_call_cancel(ms->ready.call);
    sk_mc_call_cancel(ms->down.call);
    sk_timer_close(&ms->ready.timer);
    sk_waiters_free(&ms->prov.waiters);
    sk_waiters_free(&ms->ready.waiters);
    if (ms->router)
        sk_mc_router_unref(ms->router);
    sk_mc_client_free(ms->client);
    sk_error_free(ms->down.err);
    free(ms->app_name);
    free(ms->base_image);
    free(ms->workdir);
    free(ms->sandbox_id);
    free(ms->task_id);
    free(ms->snapshot_image);
    free(ms->prov.app_id);
    free(ms->prov.image_id);
    free(ms->prov.secret_id);
    free(ms->prov.last_entry_id);
    free(ms);
    sb->impl = NULL;
}

/* fmt has at most one %s, for value. */
static sk_error *modal_config_error(const char *key, const char *fmt, const char *value)
{
    char msg[512];
    snprintf(msg, sizeof msg, fmt, value ? value : "");
    return sk_error_new(SK_ERR_CONFIG, json_pack("{s:s,s:s}", "provider", MODAL_ID, "key", key), "%s", msg);
}

static int modal_init(sk_sandbox *sb, const json_t *o, sk_error **err)
{
    modal_sandbox *ms = calloc(1, sizeof *ms);
    if (!ms)
        goto oom;
    sb->impl = ms;
    ms->sb = sb;
    const char *app = json_string_value(json_object_get(o, "app_name"));
    const char *image = json_string_value(json_object_get(o, "base_image"));
    const char *wd = json_string_value(json_object_get(o, "workdir"));
    json_t *t = json_object_get(o, "timeout_ms");
    ms->timeout_ms = json_is_number(t) ? (int64_t)json_number_value(t) : 300000;
    if (ms->timeout_ms <= 0 || ms->timeout_ms % 1000 != 0) {
        *err = sk_error_new(SK_ERR_CONFIG, json_pack("{s:s,s:s}", "provider", MODAL_ID, "key", "timeout_ms"),
                            "ModalSandbox option 'timeout_ms' must be a positive multiple of 1000 (got %lld)",
                            (long long)ms->timeout_ms);
        return -1;
    }
    if (app && !*app) {
        *err = modal_config_error("app_name", "ModalSandbox option 'app_name' must not be empty", NULL);
        return -1;
    }
    if (wd && wd[0] != '/') {
        *err = modal_config_error("workdir", "ModalSandbox option 'workdir' must be an absolute path, got: %s", wd);
        return -1;
    }
    ms->app_name = strdup(app ? app : "mastra");
    ms->base_image = strdup(image && *image ? image : "ubuntu:22.04");
    ms->workdir = wd ? strdup(wd) : NULL;
    if (!ms->app_name || !ms->base_image || (wd && !ms->workdir))
        goto oom;
    sk_modal_config_opts co = {
        .token_id = json_string_value(json_object_get(o, "token_id")),
        .token_secret = json_string_value(json_object_get(o, "token_secret")),
    };
    sk_modal_config cfg;
    if (sk_modal_config_load(&co, &cfg) != 0)
        goto oom;
    const char *url = json_string_value(json_object_get(o, "server_url"));
    if (url && *url) {
        char *copy = strdup(url);
        if (!copy) {
            sk_modal_config_free(&cfg);
            goto oom;
        }
        free(cfg.server_url);
        cfg.server_url = copy;
    }
    const char *scheme_end = strstr(cfg.server_url, "://");
    if (scheme_end && !((scheme_end - cfg.server_url == 4 && strncasecmp(cfg.server_url, "http", 4) == 0) ||
                        (scheme_end - cfg.server_url == 5 && strncasecmp(cfg.server_url, "https", 5) == 0))) {
        *err = sk_error_new(SK_ERR_CONFIG, json_pack("{s:s,s:s}", "provider", MODAL_ID, "key", "server_url"),
                            "Modal server URL must use http or https");
        sk_modal_config_free(&cfg);
        return -1;
    }
    const char *ca = json_string_value(json_object_get(o, "ca_file"));
    if (ca && *ca && !(cfg.ca_file = strdup(ca))) {
        sk_modal_config_free(&cfg);
        goto oom;
    }
    json_t *rt = json_object_get(o, "rpc_timeout_ms");
    ms->client = sk_mc_client_new(sb->loop, &cfg, json_is_number(rt) ? (int64_t)json_number_value(rt) : 0);
    sk_modal_config_free(&cfg); /* taken over, or left for us on failure */
    if (!ms->client)
        goto oom;
    json_t *max_resp = json_object_get(o, "max_response_bytes");
    sk_mc_client_set_max_message(ms->client, json_is_number(max_resp) ? (size_t)json_number_value(max_resp)
                                                                    : MODAL_DEFAULT_MAX_MESSAGE);
    return 0;
oom:
    *err = sk_error_oom();
    return -1;
}

static json_t *modal_metadata(sk_sandbox *sb)
{
    modal_sandbox *ms = sb->impl;
    return json_pack("{s:s,s:s,s:I}", "app_name", ms->app_name, "image",
                     ms->snapshot_image ? ms->snapshot_image : ms->base_image, "timeout_ms",
                     (json_int_t)ms->timeout_ms);
}

static char *modal_instructions(sk_sandbox *sb)
{
    modal_sandbox *ms = sb->impl;
    char *s = NULL;
    if (asprintf(&s, "Modal cloud sandbox running %s. Use exec() to run shell commands.", ms->base_image) < 0)
        return NULL;
    return s;
}

/* ---- lifecycle ---------------------------------------------------------------------- */

static void modal_on_started(sk_sandbox *sb, const sk_error *err, void *ud)
{
    (void)ud;
    modal_sandbox *ms = sb->impl;
    sk_provider_done done = ms->start_done;
    ms->start_done = NULL;
    done(sb, err ? sk_error_copy(err) : NULL);
}

static void modal_start(sk_sandbox *sb, sk_provider_done done)
{
    modal_sandbox *ms = sb->impl;
    if (ms->sandbox_id) {
        done(sb, NULL); /* a live handle: nothing to do (upstream) */
        return;
    }
    ms->start_done = done;
    sk_modal_provision(ms, modal_on_started, NULL);
}

enum { DOWN_SETTLE, DOWN_READY, DOWN_SNAPSHOT, DOWN_TERMINATE, DOWN_WAIT, DOWN_DONE };

static void down_step(modal_sandbox *ms);

static void down_finish(modal_sandbox *ms)
{
    ms->down.call = NULL;
    if (ms->down.destroying)
        modal_set_str(&ms->snapshot_image, NULL);
    modal_drop_handle(ms);
    sk_error *err = ms->down.err;
    ms->down.err = NULL;
    sk_provider_done done = ms->down.done;
    ms->down.done = NULL;
    done(ms->sb, err);
}

static void down_on_wait(sk_sandbox *sb, const sk_error *err, void *ud)
{
    (void)sb;
    modal_sandbox *ms = ud;
    if (ms->down.step == DOWN_READY) {
        if (err) {
            sk_log(SK_LOG_DEBUG, "modal", "no snapshot of %s: %s", ms->sb->id, err->message);
            ms->down.step = DOWN_TERMINATE;
        } else {
            ms->down.step = DOWN_SNAPSHOT;
        }
    }
    down_step(ms);
}

static void down_on_reply(void *ud, const mc_reply *r)
{
    modal_sandbox *ms = ud;
    ms->down.call = NULL;
    switch (ms->down.step) {
    case DOWN_SNAPSHOT:
        if (r->code == 0) {
            sk_modal_task_snapshot_filesystem_response resp;
            if (sk_modal_decode_task_snapshot_filesystem(r->data, r->len, &resp) == 0 && resp.image_id[0])
                modal_set_str(&ms->snapshot_image, resp.image_id);
            else
                sk_log(SK_LOG_DEBUG, "modal", "Sandbox snapshot filesystem response missing `imageId`");
            sk_modal_task_snapshot_filesystem_response_free(&resp);
        } else {
            sk_error *e = modal_reply_error(ms, r, NULL);
            sk_log(SK_LOG_DEBUG, "modal", "Snapshot failed, terminating without snapshot: %s", e ? e->message : "");
            sk_error_free(e);
        }
        ms->down.step = DOWN_TERMINATE;
        break;
    case DOWN_TERMINATE:
        if (r->code != 0 && !ms->down.destroying && !sk_modal_dead(r->code, r->message)) {
            ms->down.err = modal_reply_error(ms, r, NULL);
            ms->down.step = DOWN_DONE;
        } else {
            ms->down.step = ms->down.destroying || r->code != 0 ? DOWN_DONE : DOWN_WAIT;
        }
        break;
    case DOWN_WAIT:
        if (r->code != 0) {
            if (!sk_modal_dead(r->code, r->message))
                ms->down.err = modal_reply_error(ms, r, NULL);
            ms->down.step = DOWN_DONE;
            break;
        }
        sk_modal_sandbox_wait_response resp;
        if (sk_modal_decode_sandbox_wait(r->data, r->len, &resp) != 0) {
            ms->down.err = sk_error_new(SK_ERR_MODAL, NULL, "malformed SandboxWait response");
            ms->down.step = DOWN_DONE;
            break;
        }
        if (resp.has_result && resp.result.status != 0)
            ms->down.step = DOWN_DONE;
        sk_modal_sandbox_wait_response_free(&resp);
        break;
    }
    down_step(ms);
}

static void down_step(modal_sandbox *ms)
{
    sk_buf msg = { 0 };
    for (;;) {
        switch (ms->down.step) {
        case DOWN_SETTLE:
            /* A provisioning in flight ends first, so whatever it creates is
             * what we tear down. */
            if (ms->prov.active && sk_waiters_add(&ms->prov.waiters, down_on_wait, ms) == 0)
                return;
            if (!ms->sandbox_id) {
                down_finish(ms);
                return;
            }
            ms->down.step = ms->down.destroying ? DOWN_TERMINATE : DOWN_READY;
            continue;
        case DOWN_READY:
            sk_modal_ready(ms, down_on_wait, ms);
            return;
        case DOWN_SNAPSHOT: {
            char snap[37];
            sk_mc_uuid4(snap);
            sk_modal_task_snapshot_filesystem_request m = { .task_id = ms->task_id, .snapshot_id = snap,
                                                            .has_ttl_seconds = true, .ttl_seconds = -1 };
            mc_retry policy = sk_mc_retry_router;
            policy.deadline_ms = sk_now_ms() + MODAL_SNAPSHOT_TIMEOUT_MS;
            policy.no_retry_mask = (1u << SK_GRPC_DEADLINE_EXCEEDED) | (1u << SK_GRPC_CANCELLED);
            if (sk_modal_encode_task_snapshot_filesystem(&msg, &m) == 0)
                ms->down.call = sk_mc_router_unary(ms->router, SK_MODAL_RPC_TASK_SNAPSHOT_FILESYSTEM, &msg, &policy,
                                                down_on_reply, ms);
            break;
        }
        case DOWN_TERMINATE: {
            sk_modal_sandbox_terminate_request m = { .sandbox_id = ms->sandbox_id };
            if (sk_modal_encode_sandbox_terminate(&msg, &m) == 0)
                ms->down.call = sk_mc_unary(ms->client, SK_MODAL_RPC_SANDBOX_TERMINATE, &msg, 0, down_on_reply, ms);
            break;
        }
        case DOWN_WAIT: {
            sk_modal_sandbox_wait_request m = { .sandbox_id = ms->sandbox_id, .timeout = MODAL_WAIT_POLL_S };
            if (sk_modal_encode_sandbox_wait(&msg, &m) == 0)
                ms->down.call = sk_mc_unary(ms->client, SK_MODAL_RPC_SANDBOX_WAIT, &msg, MODAL_WAIT_POLL_S * 1000,
                                         down_on_reply, ms);
            break;
        }
        default:
            down_finish(ms);
            return;
        }
        sk_buf_free(&msg);
        if (!ms->down.call) {
            sk_error_free(ms->down.err);
            ms->down.err = sk_error_oom();
            down_finish(ms);
        }
        return;
    }
}

static void modal_down(sk_sandbox *sb, sk_provider_done done, bool destroying)
{
    modal_sandbox *ms = sb->impl;
    ms->down.destroying = destroying;
    ms->down.done = done;
    ms->down.step = DOWN_SETTLE;
    down_step(ms);
}

static void modal_stop(sk_sandbox *sb, sk_provider_done done) { modal_down(sb, done, false); }
static void modal_destroy(sk_sandbox *sb, sk_provider_done done) { modal_down(sb, done, true); }

const sk_provider sk_provider_modal = {
    .id = MODAL_ID,
    .name = "ModalSandbox",
    .handles_timeout = false,
    .init = modal_init,
    .start = modal_start,
    .stop = modal_stop,
    .destroy = modal_destroy,
    .spawn = sk_modal_exec_spawn,
    .kill = sk_modal_exec_kill,
    .write_stdin = sk_modal_exec_write_stdin,
    .close_stdin = sk_modal_exec_close_stdin,
    .release = sk_modal_exec_release,
    .fs = &sk_modal_fs_ops,
    .metadata = modal_metadata,
    .instructions = modal_instructions,
    .free = modal_free,
};
