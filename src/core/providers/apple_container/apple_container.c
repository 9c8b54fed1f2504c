/* AppleContainerSandbox: a long-lived container managed through Apple's
 * `container` CLI, commands through `container exec`
 * (docs/protocols/apple-container.md). Lifecycle steps run one CLI call at a time on the
 * loop: start = inspect, then reuse / `start` / `run`, then the readiness
 * loop; stop and destroy = inspect, then `stop` / `delete --force`.
 *
 * Failures carry upstream's messages verbatim. Upstream throws
 * SandboxExecutionError for them; sandkit's kind is ContainerCliError
 * (docs/errors.md §"Kinds") with the same exit_code, stdout and stderr, plus argv when a
 * CLI call failed. */
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../buf.h"
#include "../../provider.h"
#include "apple_container_cli.h"
#include "apple_container_config.h"
#include "apple_container_shell.h"

enum {
    AC_CLI_GRACE_MS = 10000,     /* host bound of an exec beyond its timeout */
    AC_READY_TIMEOUT_MS = 10000, /* readiness loop */
    AC_READY_EXEC_TIMEOUT_MS = 5000,
    AC_READY_DELAY_MS = 100,
};

typedef enum { OP_START, OP_STOP, OP_DESTROY } op_kind;

typedef enum {
    STEP_INSPECT,       /* first inspect of start / stop / destroy */
    STEP_RUN,
    STEP_START,
    STEP_READY_INSPECT,
    STEP_READY_EXEC,
    STEP_STOP,
    STEP_DELETE,
    STEP_CLEANUP_DELETE, /* after a failed readiness of a new container */
} op_step;

typedef struct ac_op ac_op;

typedef struct ac_sandbox {
    ac_config cfg;
    char *container_id; /* recorded by start; NULL: the container name */
    json_t *resources;  /* { cpu_cores, memory_mb } from the last inspect */
    ac_op *op;          /* the lifecycle operation in flight */
} ac_sandbox;

struct ac_op {
    sk_sandbox *sb;
    ac_sandbox *as;
    op_kind kind;
    op_step step;
    sk_provider_done done;
    ac_cli *cli;
    ac_strv argv;       /* of the call in flight */
    uv_timer_t *delay;
    double deadline;
    char *action;       /* readiness: "create Apple container <name>" ... */
    bool cleanup;       /* delete the container when readiness fails */
    sk_error *pending;  /* the readiness error, held while cleaning up */
    bool have_last;     /* the last readiness probe */
    int last_code;
    char *last_stdout, *last_stderr;
};

typedef struct ac_exec {
    sk_process *p;
    ac_cli *cli;
    bool wrapped; /* runs under the timeout wrapper: the marker applies */
    ac_marker_filter filter;
} ac_exec;

static const char *ac_cid(const ac_sandbox *as)
{
    return as->container_id ? as->container_id : as->cfg.container_name;
}


static json_t *ac_argv_json(const ac_strv *argv)
{
    json_t *a = json_array();
    for (size_t i = 0; a && argv && i < argv->n; i++)
        json_array_append_new(a, json_string_nocheck(argv->v[i]));
    return a;
}

/* A lifecycle failure: upstream's message, exit code and CLI output. */
static sk_error *ac_error(const ac_op *op, const ac_strv *argv, int exit_code, const char *out, size_t out_len,
                          const char *err, size_t err_len, const char *fmt, ...) __attribute__((format(printf, 8, 9)));

static sk_error *ac_error(const ac_op *op, const ac_strv *argv, int exit_code, const char *out, size_t out_len,
                          const char *err, size_t err_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = sk_ac_vformat(fmt, ap);
    va_end(ap);
    json_t *fields = json_pack("{s:i,s:s,s:s}", "exit_code", exit_code, "sandbox_id", op->as->cfg.id,
                               "container_id", ac_cid(op->as));
    /* CLI output need not be UTF-8 (json_pack's s% would refuse it and
     * lose every field); Lua gets the bytes as they are */
    if (fields) {
        json_object_set_new(fields, "stdout", json_stringn_nocheck(out ? out : "", out ? out_len : 0));
        json_object_set_new(fields, "stderr", json_stringn_nocheck(err ? err : "", err ? err_len : 0));
    }
    if (fields && argv)
        json_object_set_new(fields, "argv", ac_argv_json(argv));
    sk_error *e = sk_error_new(SK_ERR_CONTAINER_CLI, fields, "%s", msg ? msg : "Apple container operation failed");
    free(msg);
    return e;
}

/* "<action> failed with exit code <n>: <stderr>" for a failed CLI call. */
static sk_error *ac_call_error(const ac_op *op, const ac_cli_result *r, const char *action_fmt, const char *who)
{
    char action[512];
    snprintf(action, sizeof action, action_fmt, who);
    return ac_error(op, &op->argv, r->exit_code, r->stdout_data, r->stdout_len, r->stderr_data, r->stderr_len,
                    "%s failed with exit code %d: %.*s", action, r->exit_code, (int)r->stderr_len, r->stderr_data);
}

/* /not found|no such|does not exist|unknown container/i */
static bool ac_missing_message(const char *s)
{
    return strcasestr(s, "not found") || strcasestr(s, "no such") || strcasestr(s, "does not exist") ||
           strcasestr(s, "unknown container");
}

/* ---- inspect --------------------------------------------------------------- */

typedef enum { INSPECT_PRESENT, INSPECT_MISSING, INSPECT_FAILED } inspect_outcome;

/* Both shapes (docs/protocols/apple-container.md §7): a list (take element 0; empty = missing, as CLI
 * <= 0.12 prints for an unknown id) or an object. */
static inspect_outcome ac_inspect_parse(ac_op *op, const ac_cli_result *r, json_t **item, sk_error **err)
{
    *item = NULL;
    if (!r->success) {
        if (ac_missing_message(r->stderr_data))
            return INSPECT_MISSING;
        *err = ac_call_error(op, r, "inspect Apple container %s", ac_cid(op->as));
        return INSPECT_FAILED;
    }
    json_error_t jerr;
    json_t *doc = json_loadb(r->stdout_data, r->stdout_len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    if (!doc) {
        *err = ac_error(op, &op->argv, 1, r->stdout_data, r->stdout_len, r->stderr_data, r->stderr_len,
                        "Failed to parse Apple container inspect output for %s: %s", ac_cid(op->as), jerr.text);
        return INSPECT_FAILED;
    }
    json_t *v = json_is_array(doc) ? json_array_get(doc, 0) : doc;
    /* a falsy value is no container (JavaScript truthiness) */
    if (!v || json_is_null(v) || json_is_false(v) || (json_is_number(v) && json_number_value(v) == 0) ||
        (json_is_string(v) && json_string_length(v) == 0)) {
        json_decref(doc);
        return INSPECT_MISSING;
    }
    *item = json_incref(v);
    json_decref(doc);
    return INSPECT_PRESENT;
}

static const char *ac_label(const json_t *item, const char *key)
{
    return json_string_value(json_object_get(json_object_get(json_object_get(item, "configuration"), "labels"), key));
}

/* status is the state string before CLI 1.0, { state } from 1.0 on. */
static const char *ac_state(const json_t *item)
{
    json_t *st = json_object_get(item, "status");
    return json_is_string(st) ? json_string_value(st) : json_string_value(json_object_get(st, "state"));
}

static bool ac_running(const json_t *item)
{
    const char *s = ac_state(item);
    return s && strcmp(s, "running") == 0;
}

/* Ownership, then (unless only_owner) the config hash: NULL or the error. */
static sk_error *ac_check_owner(ac_op *op, const json_t *item, bool only_owner)
{
    const char *mine = ac_label(item, "mastra.sandbox"), *id = ac_label(item, "mastra.sandbox.id");
    if (!mine || strcmp(mine, "true") != 0 || !id || strcmp(id, op->as->cfg.id) != 0)
        return ac_error(op, NULL, 1, "", 0, "", 0,
                        "Refusing to manage Apple container %s because it is not labeled as Mastra sandbox %s",
                        ac_cid(op->as), op->as->cfg.id);
    if (only_owner)
        return NULL;
    const char *hash = ac_label(item, "mastra.sandbox.config-hash");
    /* no hash: a container of an older provider version (legacy) */
    if (hash && *hash && strcmp(hash, op->as->cfg.hash) != 0)
        return ac_error(op, NULL, 1, "", 0, "", 0,
                        "Refusing to manage Apple container %s because its immutable configuration does not match "
                        "sandbox %s",
                        ac_cid(op->as), op->as->cfg.id);
    return NULL;
}

static void ac_remember_resources(ac_sandbox *as, const json_t *item)
{
    json_t *res = json_object_get(json_object_get(item, "configuration"), "resources");
    if (!json_is_object(res))
        return;
    json_t *out = json_object();
    if (!out)
        return;
    json_t *cpus = json_object_get(res, "cpus");
    if (json_is_number(cpus))
        json_object_set(out, "cpu_cores", cpus);
    double mem = json_number_value(json_object_get(res, "memoryInBytes"));
    if (mem > 0)
        json_object_set_new(out, "memory_mb", json_integer((json_int_t)llround(mem / 1048576.0)));
    json_decref(as->resources);
    as->resources = out;
}

/* ---- running one CLI call ------------------------------------------------- */

static void op_on_result(ac_op *op, const ac_cli_result *r);

static void op_cli_exit(ac_cli *c, const ac_cli_result *r, void *ud)
{
    (void)c;
    op_on_result(ud, r);
}

static const ac_cli_callbacks op_cli_callbacks = { NULL, op_cli_exit };

static void op_free(ac_op *op)
{
    if (op->cli)
        sk_ac_cli_free(op->cli);
    sk_timer_close(&op->delay);
    sk_ac_strv_free(&op->argv);
    sk_error_free(op->pending);
    free(op->action);
    free(op->last_stdout);
    free(op->last_stderr);
    free(op);
}

/* Ends the operation: err (stolen) goes to the sandbox layer. */
static void op_end(ac_op *op, sk_error *err)
{
    sk_sandbox *sb = op->sb;
    sk_provider_done done = op->done;
    op->as->op = NULL;
    op_free(op);
    done(sb, err);
}

/* Starts a CLI call; argv is consumed. env: names passed as bare --env. */
static void op_call(ac_op *op, op_step step, ac_strv *argv, const json_t *env, double timeout_ms)
{
    sk_ac_strv_free(&op->argv);
    op->argv = *argv;
    memset(argv, 0, sizeof *argv);
    op->step = step;
    if (op->argv.failed) {
        op_end(op, sk_error_oom());
        return;
    }
    if (op->cli) {
        sk_ac_cli_free(op->cli);
        op->cli = NULL;
    }
    ac_cli_opts o = {
        .binary = op->as->cfg.binary,
        .argv = op->argv.v,
        .env = env,
        .timeout_ms = timeout_ms,
        .retain = true,
    };
    int uv_err = 0;
    op->cli = sk_ac_cli_run(op->sb->loop, &o, &op_cli_callbacks, op, &uv_err);
    if (!op->cli) {
        if (uv_err == UV_ENOENT)
            op_end(op, ac_error(op, &op->argv, 127, "", 0, uv_strerror(uv_err), strlen(uv_strerror(uv_err)),
                                "Apple container CLI not found: %s", op->as->cfg.binary));
        else
            op_end(op, ac_error(op, &op->argv, 1, "", 0, "", 0, "Cannot run the Apple container CLI %s: %s",
                                op->as->cfg.binary, uv_strerror(uv_err)));
    }
}

static void op_call2(ac_op *op, op_step step, const char *a, const char *b)
{
    ac_strv argv = { 0 };
    sk_ac_strv_push(&argv, a);
    sk_ac_strv_push(&argv, b);
    op_call(op, step, &argv, NULL, op->as->cfg.timeout_ms);
}

static void op_inspect(ac_op *op, op_step step) { op_call2(op, step, "inspect", ac_cid(op->as)); }

static void op_delete(ac_op *op, op_step step)
{
    ac_strv argv = { 0 };
    sk_ac_strv_push(&argv, "delete");
    sk_ac_strv_push(&argv, "--force");
    sk_ac_strv_push(&argv, ac_cid(op->as));
    op_call(op, step, &argv, NULL, op->as->cfg.timeout_ms);
}

/* ---- readiness (docs/protocols/apple-container.md §4.3) ------------------------------- */

static void ready_iterate(ac_op *op);

/* A readiness failure: a new container is deleted first (deleteOnDestroy). */
static void ready_fail(ac_op *op, sk_error *err)
{
    if (!op->cleanup) {
        op_end(op, err);
        return;
    }
    op->pending = err;
    op_delete(op, STEP_CLEANUP_DELETE);
}

static void ready_give_up(ac_op *op)
{
    const char *out = op->last_stdout ? op->last_stdout : "", *err = op->last_stderr ? op->last_stderr : "";
    ready_fail(op, ac_error(op, NULL, op->have_last ? op->last_code : 1, out, strlen(out), err, strlen(err),
                            "%s failed because Apple container %s did not become ready for exec", op->action,
                            ac_cid(op->as)));
}

static void ready_on_delay(uv_timer_t *t)
{
    ac_op *op = t->data;
    ready_iterate(op);
}

static void ready_iterate(ac_op *op)
{
    if (sk_now_ms() >= op->deadline) {
        ready_give_up(op);
        return;
    }
    op_inspect(op, STEP_READY_INSPECT);
}

static void ready_begin(ac_op *op, bool cleanup, const char *fmt, const char *who)
{
    free(op->action);
    op->action = NULL;
    if (asprintf(&op->action, fmt, who) < 0) {
        op->action = NULL;
        op_end(op, sk_error_oom());
        return;
    }
    op->cleanup = cleanup;
    op->deadline = sk_now_ms() + AC_READY_TIMEOUT_MS;
    ready_iterate(op);
}

static void ready_on_inspect(ac_op *op, const ac_cli_result *r)
{
    json_t *item = NULL;
    sk_error *err = NULL;
    switch (ac_inspect_parse(op, r, &item, &err)) {
    case INSPECT_FAILED:
        ready_fail(op, err);
        return;
    case INSPECT_MISSING:
        ready_fail(op, ac_error(op, NULL, 1, "", 0, "", 0, "%s failed because Apple container %s disappeared",
                                op->action, ac_cid(op->as)));
        return;
    case INSPECT_PRESENT:
        break;
    }
    ac_remember_resources(op->as, item);
    if ((err = ac_check_owner(op, item, false))) {
        json_decref(item);
        ready_fail(op, err);
        return;
    }
    if (!ac_running(item)) {
        const char *state = ac_state(item);
        err = ac_error(op, NULL, 1, "", 0, "", 0, "%s failed because Apple container %s is %s", op->action,
                       ac_cid(op->as), state ? state : "not running");
        json_decref(item);
        ready_fail(op, err);
        return;
    }
    json_decref(item);
    ac_strv argv = { 0 };
    sk_ac_strv_push(&argv, "exec");
    sk_ac_strv_push(&argv, ac_cid(op->as));
    sk_ac_strv_push(&argv, "sh");
    sk_ac_strv_push(&argv, "-lc");
    sk_ac_strv_push(&argv, "true");
    op_call(op, STEP_READY_EXEC, &argv, NULL, AC_READY_EXEC_TIMEOUT_MS);
}

static void ready_on_exec(ac_op *op, const ac_cli_result *r)
{
    if (r->success) {
        op_end(op, NULL);
        return;
    }
    op->have_last = true;
    op->last_code = r->exit_code;
    free(op->last_stdout);
    free(op->last_stderr);
    op->last_stdout = strndup(r->stdout_data, r->stdout_len);
    op->last_stderr = strndup(r->stderr_data, r->stderr_len);
    if (!ac_missing_message(r->stderr_data) && !strcasestr(r->stderr_data, "not running") &&
        !strcasestr(r->stderr_data, "not yet running")) {
        ready_give_up(op);
        return;
    }
    if (sk_timer_start(op->sb->loop, &op->delay, op, AC_READY_DELAY_MS, ready_on_delay) != 0)
        op_end(op, sk_error_oom());
}

/* ---- the steps ---------------------------------------------------------------- */

static void start_create(ac_op *op)
{
    ac_strv argv = { 0 };
    json_t *env = NULL;
    if (sk_ac_run_argv(&op->as->cfg, &argv, &env) != 0) {
        sk_ac_strv_free(&argv);
        op_end(op, sk_error_oom());
        return;
    }
    /* the env values reach the CLI through its environment only */
    op_call(op, STEP_RUN, &argv, env, op->as->cfg.timeout_ms);
    json_decref(env);
}

static void start_on_inspect(ac_op *op, json_t *item)
{
    ac_sandbox *as = op->as;
    sk_error *err = ac_check_owner(op, item, false);
    if (err) {
        op_end(op, err);
        return;
    }
    ac_remember_resources(as, item);
    const char *cid = json_string_value(json_object_get(json_object_get(item, "configuration"), "id"));
    char *copy = strdup(cid ? cid : as->cfg.container_name);
    if (!copy) {
        op_end(op, sk_error_oom());
        return;
    }
    free(as->container_id);
    as->container_id = copy;
    if (ac_running(item)) {
        op_end(op, NULL); /* reuse */
        return;
    }
    op_call2(op, STEP_START, "start", ac_cid(as));
}

static void op_on_result(ac_op *op, const ac_cli_result *r)
{
    ac_sandbox *as = op->as;
    switch (op->step) {
    case STEP_INSPECT: {
        json_t *item = NULL;
        sk_error *err = NULL;
        inspect_outcome oc = ac_inspect_parse(op, r, &item, &err);
        if (oc == INSPECT_FAILED) {
            op_end(op, err);
        } else if (op->kind == OP_START) {
            if (oc == INSPECT_MISSING)
                start_create(op);
            else
                start_on_inspect(op, item);
        } else if (oc == INSPECT_MISSING) {
            op_end(op, NULL);
        } else if ((err = ac_check_owner(op, item, true))) {
            op_end(op, err);
        } else if (op->kind == OP_DESTROY && as->cfg.delete_on_destroy) {
            op_delete(op, STEP_DELETE);
        } else if (!ac_running(item)) {
            op_end(op, NULL);
        } else {
            op_call2(op, STEP_STOP, "stop", ac_cid(as));
        }
        json_decref(item);
        return;
    }
    case STEP_RUN:
        if (!r->success) {
            op_end(op, ac_call_error(op, r, "create Apple container %s", as->cfg.container_name));
            return;
        }
        free(as->container_id);
        if (!(as->container_id = strdup(as->cfg.container_name))) {
            op_end(op, sk_error_oom());
            return;
        }
        ready_begin(op, as->cfg.delete_on_destroy, "create Apple container %s", as->cfg.container_name);
        return;
    case STEP_START:
        if (!r->success) {
            op_end(op, ac_call_error(op, r, "start Apple container %s", ac_cid(as)));
            return;
        }
        ready_begin(op, false, "start Apple container %s", ac_cid(as));
        return;
    case STEP_READY_INSPECT:
        ready_on_inspect(op, r);
        return;
    case STEP_READY_EXEC:
        ready_on_exec(op, r);
        return;
    case STEP_STOP:
        if (!r->success && !ac_missing_message(r->stderr_data))
            op_end(op, ac_call_error(op, r, "stop Apple container %s", ac_cid(as)));
        else
            op_end(op, NULL);
        return;
    case STEP_DELETE:
        if (!r->success && !ac_missing_message(r->stderr_data))
            op_end(op, ac_call_error(op, r, "delete Apple container %s", ac_cid(as)));
        else
            op_end(op, NULL);
        return;
    case STEP_CLEANUP_DELETE: {
        sk_error *err = op->pending;
        op->pending = NULL;
        if (!r->success && !ac_missing_message(r->stderr_data)) {
            sk_error_free(err);
            err = ac_call_error(op, r, "delete Apple container %s", ac_cid(as));
        }
        op_end(op, err);
        return;
    }
    }
}

static void ac_begin(sk_sandbox *sb, op_kind kind, sk_provider_done done)
{
    ac_sandbox *as = sb->impl;
    ac_op *op = calloc(1, sizeof *op);
    if (!op) {
        done(sb, sk_error_oom());
        return;
    }
    op->sb = sb;
    op->as = as;
    op->kind = kind;
    op->done = done;
    as->op = op;
    op_inspect(op, STEP_INSPECT);
}

static void ac_start(sk_sandbox *sb, sk_provider_done done) { ac_begin(sb, OP_START, done); }
static void ac_stop(sk_sandbox *sb, sk_provider_done done) { ac_begin(sb, OP_STOP, done); }
static void ac_destroy(sk_sandbox *sb, sk_provider_done done) { ac_begin(sb, OP_DESTROY, done); }

/* ---- commands ------------------------------------------------------------------ */

static void exec_emit_stderr(void *ud, const char *data, size_t len) { sk_process_output(ud, 2, data, len); }

static void exec_on_output(ac_cli *c, int stream, const char *data, size_t len, void *ud)
{
    (void)c;
    ac_exec *x = ud;
    if (stream == 2 && x->wrapped)
        sk_ac_marker_filter_feed(&x->filter, data, len, exec_emit_stderr, x->p);
    else
        sk_process_output(x->p, stream, data, len);
}

static void exec_on_exit(ac_cli *c, const ac_cli_result *r, void *ud)
{
    (void)c;
    ac_exec *x = ud;
    sk_process *p = x->p;
    sk_result res = { 0 };
    res.exit_code = r->exit_code;
    res.killed = r->killed;
    /* docs/protocols/apple-container.md §5.2: 124 with the wrapper's marker is the in-container
     * timeout; a command's own 124 passes through unchanged */
    bool marker = x->wrapped && r->exit_code == AC_TIMEOUT_EXIT_CODE && sk_ac_marker_filter_seen(&x->filter);
    if (x->wrapped)
        sk_ac_marker_filter_end(&x->filter, marker, exec_emit_stderr, p);
    if (marker) {
        res.timed_out = true;
        res.killed = true;
        if (p->capture && p->err.len)
            p->err.len = sk_ac_strip_marker(p->err.data, p->err.len);
    }
    if (r->killed && !marker && !r->timed_out)
        /* docs/processes.md §"Background processes": a killed command reports 137 in
         * every case, also when the CLI forwarded our SIGTERM and exited
         * 143 itself */
        res.exit_code = 137;
    if (r->timed_out) {
        /* the host bound (command timeout + 10 s) fired */
        res.exit_code = AC_TIMEOUT_EXIT_CODE;
        res.timed_out = true;
        res.killed = true;
    }
    sk_process_finish(p, &res, NULL); /* releases x */
}

static const ac_cli_callbacks exec_cli_callbacks = { exec_on_output, exec_on_exit };

/* --env flags: the sandbox env first, then keys only the command adds (what
 * {...getEnv(), ...options.env} iterates), each group in key order. */
static int exec_env_flags(sk_sandbox *sb, const json_t *per_command, ac_strv *argv, json_t *env, sk_error **err)
{
    const json_t *groups[2] = { sb->env, per_command };
    for (int g = 0; g < 2; g++) {
        if (!json_is_object(groups[g]))
            continue;
        const char **keys = sk_ac_sorted_keys(groups[g]);
        if (!keys) {
            *err = sk_error_oom();
            return -1;
        }
        for (size_t i = 0; keys[i]; i++) {
            const char *k = keys[i];
            if (g == 1 && json_object_get(sb->env, k))
                continue;
            if (!sk_ac_env_name_ok(k)) {
                *err = sk_error_new(SK_ERR_CONFIG, json_pack("{s:s,s:s}", "provider", "apple-container", "key", "env"),
                                    "Invalid environment variable name for Apple container command: %s", k);
                free(keys);
                return -1;
            }
            json_t *v = json_object_get(per_command, k);
            if (!v)
                v = json_object_get(sb->env, k);
            sk_ac_strv_push(argv, "--env");
            sk_ac_strv_push(argv, k);
            json_object_set(env, k, v);
        }
        free(keys);
    }
    return 0;
}

static int ac_spawn(sk_sandbox *sb, sk_process *p, const sk_spawn_opts *o, sk_error **err)
{
    ac_sandbox *as = sb->impl;
    bool with_stdin = o->has_stdin || o->keep_stdin_open;
    bool wrapped = o->timeout_ms > 0;
    ac_strv argv = { 0 };
    json_t *env = json_object();
    char *script = NULL;
    ac_exec *x = calloc(1, sizeof *x);
    int rc = -1;
    if (!x || !env) {
        *err = sk_error_oom();
        goto done;
    }
    sk_ac_strv_push(&argv, "exec");
    /* sandkit extension: stdin for the command (upstream has none) */
    if (with_stdin)
        sk_ac_strv_push(&argv, "--interactive");
    if (exec_env_flags(sb, o->env, &argv, env, err) != 0)
        goto done;
    sk_ac_strv_push(&argv, "--workdir");
    sk_ac_strv_push(&argv, o->cwd ? o->cwd : as->cfg.working_dir);
    sk_ac_strv_push(&argv, ac_cid(as));
    sk_ac_strv_push(&argv, "sh");
    sk_ac_strv_push(&argv, "-lc");
    if (wrapped) {
        if (!(script = sk_ac_timeout_script(o->command, (double)o->timeout_ms, with_stdin))) {
            *err = sk_error_oom();
            goto done;
        }
        sk_ac_strv_push(&argv, script);
    } else {
        sk_ac_strv_push(&argv, o->command);
    }
    if (argv.failed) {
        *err = sk_error_oom();
        goto done;
    }
    x->p = p;
    x->wrapped = wrapped;
    ac_cli_opts co = {
        .binary = as->cfg.binary,
        .argv = argv.v,
        .env = env,
        .timeout_ms = wrapped ? (double)o->timeout_ms + AC_CLI_GRACE_MS : 0,
        .stdin_pipe = with_stdin,
    };
    int uv_err = 0;
    x->cli = sk_ac_cli_run(sb->loop, &co, &exec_cli_callbacks, x, &uv_err);
    if (!x->cli) {
        if (uv_err == UV_ENOENT)
            *err = sk_error_new(SK_ERR_CONTAINER_CLI,
                                json_pack("{s:i,s:s,s:s,s:s}", "exit_code", 127, "stdout", "", "stderr",
                                          uv_strerror(uv_err), "sandbox_id", as->cfg.id),
                                "Apple container CLI not found: %s", as->cfg.binary);
        else
            *err = sk_error_new(SK_ERR_CONTAINER_CLI, json_pack("{s:i,s:s}", "exit_code", 1, "sandbox_id", as->cfg.id),
                                "Cannot run the Apple container CLI %s: %s", as->cfg.binary, uv_strerror(uv_err));
        goto done;
    }
    p->impl = x;
    snprintf(p->pid, sizeof p->pid, "%d", sk_ac_cli_pid(x->cli));
    if (o->has_stdin) {
        if (o->stdin_len)
            sk_ac_cli_write(x->cli, o->stdin_data, o->stdin_len);
        if (!o->keep_stdin_open)
            sk_ac_cli_close_stdin(x->cli);
    }
    x = NULL;
    rc = 0;
done:
    if (x) {
        sk_ac_marker_filter_free(&x->filter);
        free(x);
    }
    sk_ac_strv_free(&argv);
    json_decref(env);
    free(script);
    return rc;
}

static int ac_kill(sk_process *p, int sig)
{
    ac_exec *x = p->impl;
    return x && sk_ac_cli_kill(x->cli, sig) == 0 ? 0 : -1;
}

static int ac_write_stdin(sk_process *p, const char *data, size_t len, sk_error **err)
{
    ac_exec *x = p->impl;
    int rc = x ? sk_ac_cli_write(x->cli, data, len) : UV_EPIPE;
    if (rc != 0) {
        *err = sk_error_new(SK_ERR_PROCESS_EXITED, NULL, "Cannot write to stdin of process %s: %s", p->pid,
                            rc == UV_EPIPE ? "stdin is closed" : uv_strerror(rc));
        return -1;
    }
    return 0;
}

static int ac_close_stdin(sk_process *p)
{
    ac_exec *x = p->impl;
    return x ? sk_ac_cli_close_stdin(x->cli) : -1;
}

static void ac_release(sk_process *p)
{
    ac_exec *x = p->impl;
    if (!x)
        return;
    p->impl = NULL;
    sk_ac_cli_free(x->cli);
    sk_ac_marker_filter_free(&x->filter);
    free(x);
}

/* ---- the rest ------------------------------------------------------------------- */

static json_t *ac_metadata(sk_sandbox *sb)
{
    ac_sandbox *as = sb->impl;
    json_t *m = sk_ac_config_metadata(&as->cfg);
    if (m && as->resources && json_object_size(as->resources))
        json_object_set(m, "resources", as->resources);
    return m;
}

static char *ac_instructions(sk_sandbox *sb)
{
    ac_sandbox *as = sb->impl;
    return sk_ac_config_instructions(&as->cfg);
}

static void ac_free(sk_sandbox *sb)
{
    ac_sandbox *as = sb->impl;
    if (!as)
        return;
    if (as->op)
        op_free(as->op); /* no callback: the sandbox layer settles its waiters */
    sk_ac_config_free(&as->cfg);
    free(as->container_id);
    json_decref(as->resources);
    free(as);
    sb->impl = NULL;
}

static int ac_init(sk_sandbox *sb, const json_t *options, sk_error **err)
{
    ac_sandbox *as = calloc(1, sizeof *as);
    if (!as) {
        *err = sk_error_oom();
        return -1;
    }
    sb->impl = as;
    /* the id is needed now (labels, default name): upstream's generated form */
    if (!sb->id && !(sb->id = sk_sandbox_default_id("apple-container"))) {
        *err = sk_error_oom();
        return -1;
    }
    /* `name` names the container; the sandbox's name stays AppleContainerSandbox */
    free(sb->name);
    sb->name = NULL;
    return sk_ac_config_parse(&as->cfg, sb->id, options, err);
}

const sk_provider sk_provider_apple_container = {
    .id = "apple-container",
    .name = "AppleContainerSandbox",
    .handles_timeout = true,
    /* upstream's stop() acts from pending and error too: a container of this
     * name left by another process is stopped, and a refused one is refused
     * again; from stopped it runs nothing (docs/protocols/apple-container.md §4.4) */
    .stop_when_idle = true,
    .init = ac_init,
    .start = ac_start,
    .stop = ac_stop,
    .destroy = ac_destroy,
    .spawn = ac_spawn,
    .kill = ac_kill,
    .write_stdin = ac_write_stdin,
    .close_stdin = ac_close_stdin,
    .release = ac_release,
    .metadata = ac_metadata,
    .instructions = ac_instructions,
    .free = ac_free,
};
