/* PlatformSandbox data plane (docs/protocols/platform.md §2.5, §3): the exec-lease cache,
 * one WebSocket per command, the retry rule and its typed errors.
 *
 * A command (platform_exec, p->impl) makes up to two attempts. Each gets a
 * lease (cached until 60 s before expiry; concurrent misses share one
 * POST /exec-lease), opens a new socket offering "<subprotocol>, <jwt>",
 * sends init_exec then stdin_close, and streams the tagged binary frames to
 * sk_process_output until the exit frame. A close without an exit frame is
 * a transport failure: the first one retries with a fresh lease, the second
 * raises SandboxExecTransportError. A 410 on the mint raises
 * SandboxDestroyedError and leaves the sandbox `stopped`, so the next
 * command provisions a new one.
 *
 * Beyond upstream: output streams as frames arrive; kill (op:cancel(),
 * h:kill()) closes the socket, which the proxy answers by killing the
 * command, and the process finishes at once; background processes keep
 * stdin open and send_stdin uses the reference server's stdin frames
 * (binary [0x00] + bytes), an extension the spec does not define (option
 * stdin_frames = false turns it off). Output bytes are passed through
 * undecoded (Lua strings are bytes).
 *
 * The retry replays a command whose first socket had opened, as upstream
 * does (docs/protocols/platform.md §3.5): callbacks then see the output of both attempts, while the
 * result keeps only the second one's. */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../log.h"
#include "../../secrets.h"
#include "../../ws.h"
#include "platform_state.h"

#define EXEC_LEASE_MARGIN_MS 60000.0 /* reuse until 60 s before expiry (docs/protocols/platform.md §2.5) */
#define EXEC_STDIN_FRAME_MAX (1u << 20)
#define EXEC_TAG_STDIN 0
#define EXEC_TAG_STDOUT 1
#define EXEC_TAG_STDERR 3
#define EXEC_STDIN_CLOSE "{\"type\":\"stdin_close\"}"

/* One socket. It outlives its command while its closing handshake runs
 * (ex NULL, listed in ps->orphans); the sandbox's free drops those. */
typedef struct platform_conn {
    platform_sandbox *ps;
    struct platform_exec *ex;
    sk_ws *ws;
    struct platform_conn *prev, *next;
} platform_conn;

enum exec_deferred { EXEC_DEFER_NONE, EXEC_DEFER_ATTEMPT, EXEC_DEFER_FINISH };

typedef struct platform_exec {
    platform_sandbox *ps;
    sk_process *p;
    char *command;
    char *init_text;           /* the init_exec frame (holds env values: wiped on free) */
    int64_t timeout_ms;
    bool keep_stdin_open;
    bool stdin_closed;
    sk_buf stdin_sent;         /* everything written so far: replayed on the retry */
    int attempt;
    platform_lease *lease;     /* the current attempt's */
    char *ws_endpoint;         /* the last lease's, for the transport error */
    platform_conn *conn;
    uv_timer_t *deadline;      /* timeout, or the handshake deadline without one */
    bool deadline_is_handshake;
    bool deadline_passed;      /* the timeout fired once; 124 after one more I/O pass */
    uv_timer_t *defer;         /* work that must not run inside the caller */
    enum exec_deferred deferred;
    bool in_mint;
    struct platform_exec *mint_next;
    /* the current attempt */
    bool opened;
    int close_code;            /* 0: none recorded */
    char close_reason[124];
    int http_status;
    char *ws_error;
    /* settled: every later event is ignored */
    bool settled;
    sk_result result;
    sk_error *error;
} platform_exec;

static void exec_attempt_failed(platform_exec *ex);
static void exec_begin_attempt(platform_exec *ex);

/* ---- leases ----------------------------------------------------------------- */

static void exec_wipe_free(char *s)
{
    if (s) {
        memset(s, 0, strlen(s));
        free(s);
    }
}

void sk_platform_lease_unref(platform_lease *l)
{
    if (!l || --l->refs > 0)
        return;
    if (l->jwt_held)
        sk_secret_release(l->jwt);
    exec_wipe_free(l->jwt);
    free(l->ws_endpoint);
    free(l->subprotocol);
    free(l);
}

static platform_lease *lease_ref(platform_lease *l)
{
    l->refs++;
    return l;
}

static bool lease_fresh(const platform_lease *l)
{
    return l->has_expiry && l->expires_ms - EXEC_LEASE_MARGIN_MS > sk_platform_wall_ms();
}

static platform_lease *lease_parse(const json_t *j, sk_error **err)
{
    const char *jwt = json_string_value(json_object_get(j, "jwt"));
    const char *endpoint = json_string_value(json_object_get(j, "wsEndpoint"));
    const char *proto = json_string_value(json_object_get(j, "subprotocol"));
    const char *provider = json_string_value(json_object_get(j, "provider"));
    if (provider && strcmp(provider, "railway") != 0) {
        *err = sk_error_new(SK_ERR_PLATFORM_API, json_pack("{s:s}", "lease_provider", provider),
                            "The exec lease is for provider '%s'; sandkit speaks only the Railway exec protocol",
                            provider);
        return NULL;
    }
    if (!jwt || !*jwt || !endpoint || !*endpoint) {
        *err = sk_error_new(SK_ERR_PLATFORM_API, json_pack("{s:b}", "malformed", 1),
                            "Platform proxy returned an exec lease without jwt or wsEndpoint");
        return NULL;
    }
    platform_lease *l = calloc(1, sizeof *l);
    if (!l || !(l->jwt = strdup(jwt)) || !(l->ws_endpoint = strdup(endpoint)) ||
        !(l->subprotocol = strdup(proto && *proto ? proto : "railway-shell"))) {
        if (l)
            l->refs = 1;
        sk_platform_lease_unref(l);
        *err = sk_error_oom();
        return NULL;
    }
    l->refs = 1;
    /* the jwt opens exec on the sandbox: a server echoing the offered
     * subprotocol header (a close reason, an error body) must not show it */
    if (!(l->jwt_held = sk_secret_hold(l->jwt) == 0)) {
        sk_platform_lease_unref(l);
        *err = sk_error_oom();
        return NULL;
    }
    /* null or unparseable expiresAt: never cached, a mint per command */
    l->has_expiry = sk_platform_parse_iso(json_string_value(json_object_get(j, "expiresAt")), &l->expires_ms);
    return l;
}

/* ---- errors ------------------------------------------------------------------- */

static sk_error *exec_destroyed_error(const char *sandbox_id, platform_exec *ex)
{
    json_t *f = json_pack("{s:s,s:i}", "command", ex->command, "attempts", ex->attempt);
    if (sandbox_id)
        json_object_set_new(f, "sandbox_id", json_string(sandbox_id));
    return sk_error_new(SK_ERR_SANDBOX_DESTROYED, f, "Sandbox %s was destroyed; /exec-lease returned 410",
                        sandbox_id ? sandbox_id : "(unknown)");
}

static sk_error *exec_transport_error(platform_exec *ex)
{
    const char *id = ex->ps->platform_id;
    json_t *f = json_pack("{s:s,s:i,s:b}", "command", ex->command, "attempts", ex->attempt, "opened", ex->opened);
    if (id)
        json_object_set_new(f, "sandbox_id", json_string(id));
    if (ex->ws_endpoint)
        json_object_set_new(f, "ws_endpoint", json_string(ex->ws_endpoint));
    char close[160] = "";
    if (ex->close_code) {
        json_object_set_new(f, "close_code", json_integer(ex->close_code));
        if (ex->close_reason[0]) {
            json_object_set_new(f, "close_reason", json_string(ex->close_reason));
            snprintf(close, sizeof close, " (close %d %s)", ex->close_code, ex->close_reason);
        } else {
            snprintf(close, sizeof close, " (close %d)", ex->close_code);
        }
    }
    if (ex->http_status)
        json_object_set_new(f, "http_status", json_integer(ex->http_status));
    if (ex->ws_error)
        json_object_set_new(f, "transport_error", json_string(ex->ws_error));
    return sk_error_new(SK_ERR_SANDBOX_EXEC_TRANSPORT, f, "Direct-exec transport failed for sandbox %s after %d attempt(s)%s",
                        id ? id : "(unknown)", ex->attempt, close);
}

/* ---- sockets -------------------------------------------------------------------- */

static void conn_unlink_orphan(platform_conn *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else if (c->ps->orphans == c)
        c->ps->orphans = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
}

/* Detaches the command's socket: it closes with 1000 and an empty reason
 * (docs/protocols/platform.md §3.4), or stops connecting, and frees itself when closed. */
static void exec_orphan_conn(platform_exec *ex)
{
    platform_conn *c = ex->conn;
    if (!c)
        return;
    ex->conn = NULL;
    c->ex = NULL;
    c->next = c->ps->orphans;
    if (c->next)
        c->next->prev = c;
    c->ps->orphans = c;
    sk_ws_close(c->ws, 1000, "");
}

static void exec_stop_deadline(platform_exec *ex)
{
    if (ex->deadline)
        uv_timer_stop(ex->deadline);
}

/* ---- settling ------------------------------------------------------------------- */

static void mint_leave(platform_exec *ex)
{
    if (!ex->in_mint)
        return;
    for (platform_exec **pp = &ex->ps->mint_waiters; *pp; pp = &(*pp)->mint_next) {
        if (*pp == ex) {
            *pp = ex->mint_next;
            break;
        }
    }
    ex->in_mint = false;
    ex->mint_next = NULL;
}

static void exec_settle(platform_exec *ex)
{
    ex->settled = true;
    exec_stop_deadline(ex);
    mint_leave(ex);
    exec_orphan_conn(ex);
}

/* Finishes now (from a loop callback). ex may be freed on return. */
static void exec_finish(platform_exec *ex, const sk_result *r, sk_error *err)
{
    exec_settle(ex);
    sk_process_finish(ex->p, err ? NULL : r, err);
}

static void exec_on_defer(uv_timer_t *t)
{
    platform_exec *ex = t->data;
    enum exec_deferred what = ex->deferred;
    ex->deferred = EXEC_DEFER_NONE;
    if (what == EXEC_DEFER_ATTEMPT && !ex->settled) {
        exec_begin_attempt(ex);
    } else if (what == EXEC_DEFER_FINISH) {
        sk_error *err = ex->error;
        sk_result r = ex->result;
        ex->error = NULL;
        sk_process_finish(ex->p, err ? NULL : &r, err);
    }
}

/* Finishes on the next loop turn (from kill, which may run inside the
 * sandbox layer's own bookkeeping). */
static void exec_finish_later(platform_exec *ex, const sk_result *r, sk_error *err)
{
    exec_settle(ex);
    if (r)
        ex->result = *r;
    ex->error = err;
    ex->deferred = EXEC_DEFER_FINISH;
    sk_timer_arm(ex->defer, exec_on_defer, 0, 0);
}

/* ---- socket callbacks ----------------------------------------------------------- */

static void conn_on_open(sk_ws *ws, const char *protocol, void *ud)
{
    (void)ws;
    (void)protocol; /* not verified, as upstream (docs/protocols/platform.md §3.2) */
    platform_conn *c = ud;
    platform_exec *ex = c->ex;
    if (!ex || ex->settled)
        return;
    ex->opened = true;
    if (ex->deadline_is_handshake)
        exec_stop_deadline(ex); /* a long command without a timeout may run forever */
}

static void conn_on_message(sk_ws *ws, bool binary, const char *data, size_t len, void *ud)
{
    (void)ws;
    platform_conn *c = ud;
    platform_exec *ex = c->ex;
    if (!ex || ex->settled)
        return;
    if (binary) {
        if (len <= 1)
            return;
        unsigned char tag = (unsigned char)data[0];
        if (tag == EXEC_TAG_STDOUT)
            sk_process_output(ex->p, 1, data + 1, len - 1);
        else if (tag == EXEC_TAG_STDERR)
            sk_process_output(ex->p, 2, data + 1, len - 1);
        return;
    }
    json_t *j = json_loadb(data, len, 0, NULL);
    const char *type = json_string_value(json_object_get(j, "type"));
    if (type && strcmp(type, "exit") == 0) {
        json_t *code = json_object_get(json_object_get(j, "data"), "exit_code");
        /* clamped: converting a double an int cannot hold is undefined */
        double v = json_number_value(code);
        sk_result r = { .exit_code = !json_is_number(code) ? 0 : v <= INT_MIN ? INT_MIN : v >= INT_MAX ? INT_MAX : (int)v };
        json_decref(j);
        exec_finish(ex, &r, NULL);
        return;
    }
    json_decref(j); /* durable_session, unknown types and malformed text are ignored */
}

static void conn_on_close(sk_ws *ws, const sk_ws_close_info *info, void *ud)
{
    (void)ws;
    platform_conn *c = ud;
    platform_exec *ex = c->ex;
    if (!ex) {
        conn_unlink_orphan(c);
        free(c);
        return;
    }
    ex->conn = NULL;
    free(c);
    if (ex->settled)
        return;
    ex->opened = ex->opened || info->opened;
    /* upstream settles on the error event before a never-opened socket's
     * close, so only an opened socket reports a close code */
    if (info->opened) {
        ex->close_code = info->code;
        /* Redacted on its own now: a server that cut a secret short at the
         * end of the reason leaves a piece only recognisable there. */
        const char *reason = info->reason ? info->reason : "";
        char *safe = sk_redact(ex->ps->sb, reason, strlen(reason), NULL);
        snprintf(ex->close_reason, sizeof ex->close_reason, "%s", safe ? safe : "[redacted: out of memory]");
        free(safe);
    }
    ex->http_status = info->http_status;
    free(ex->ws_error);
    ex->ws_error = info->error ? strdup(info->error) : NULL;
    exec_attempt_failed(ex);
}

static const sk_ws_callbacks exec_ws_callbacks = { conn_on_open, conn_on_message, conn_on_close };

static void exec_on_deadline(uv_timer_t *t)
{
    platform_exec *ex = t->data;
    if (ex->settled)
        return;
    if (!ex->deadline_is_handshake) {
        if (!ex->deadline_passed) {
            /* after a host block past the deadline the exit frame may be
             * waiting unread: one pass of I/O first (sandbox.c does the same) */
            ex->deadline_passed = true;
            sk_timer_arm(t, exec_on_deadline, 1, 0);
            return;
        }
        /* docs/protocols/platform.md §3.4: a timeout is a result (124), never retried */
        sk_result r = { .exit_code = 124, .timed_out = true };
        exec_finish(ex, &r, NULL);
        return;
    }
    if (ex->opened)
        return;
    char msg[96];
    snprintf(msg, sizeof msg, "handshake not completed within %lld ms", (long long)ex->ps->handshake_timeout_ms);
    exec_orphan_conn(ex);
    free(ex->ws_error);
    ex->ws_error = strdup(msg);
    exec_attempt_failed(ex);
}

/* ---- attempts ---------------------------------------------------------------- */

static void exec_send_stdin(platform_exec *ex, const char *data, size_t len)
{
    if (!ex->conn)
        return;
    while (len > 0) {
        size_t n = len > EXEC_STDIN_FRAME_MAX ? EXEC_STDIN_FRAME_MAX : len;
        char *frame = malloc(n + 1);
        if (!frame)
            return;
        frame[0] = EXEC_TAG_STDIN;
        memcpy(frame + 1, data, n);
        sk_ws_send(ex->conn->ws, true, frame, n + 1);
        free(frame);
        data += n;
        len -= n;
    }
}

static void exec_connect(platform_exec *ex)
{
    platform_sandbox *ps = ex->ps;
    platform_lease *l = ex->lease;
    free(ex->ws_endpoint);
    ex->ws_endpoint = strdup(l->ws_endpoint);
    /* docs/protocols/platform.md §3.4: armed before the socket exists, so it covers the handshake */
    ex->deadline_is_handshake = ex->timeout_ms <= 0;
    ex->deadline_passed = false;
    sk_timer_arm(ex->deadline, exec_on_deadline,
                 (uint64_t)(ex->deadline_is_handshake ? ps->handshake_timeout_ms : ex->timeout_ms), 0);
    char *protocols = NULL;
    platform_conn *c = calloc(1, sizeof *c);
    if (!c || asprintf(&protocols, "%s, %s", l->subprotocol, l->jwt) < 0) {
        free(c);
        free(ex->ws_error);
        ex->ws_error = strdup("out of memory");
        exec_attempt_failed(ex);
        return;
    }
    c->ps = ps;
    c->ex = ex;
    sk_ws_opts o = {
        .url = l->ws_endpoint,
        .protocols = protocols,
        .ca_file = ps->ca_file,
        .insecure_skip_verify = ps->insecure,
    };
    const char *why = NULL;
    c->ws = sk_ws_connect(ps->sb->loop, &o, &exec_ws_callbacks, c, &why);
    exec_wipe_free(protocols);
    if (!c->ws) {
        free(c);
        free(ex->ws_error);
        ex->ws_error = strdup(why ? why : "cannot connect");
        exec_attempt_failed(ex);
        return;
    }
    ex->conn = c;
    /* queued until the socket opens (ws.h) */
    sk_ws_send(c->ws, false, ex->init_text, strlen(ex->init_text));
    if (ex->stdin_sent.len)
        exec_send_stdin(ex, ex->stdin_sent.data, ex->stdin_sent.len);
    if (ex->stdin_closed)
        sk_ws_send(c->ws, false, EXEC_STDIN_CLOSE, sizeof EXEC_STDIN_CLOSE - 1);
}

static void mint_on_done(int status, json_t *json, sk_error *err, void *ud);

static void exec_join_mint(platform_exec *ex)
{
    platform_sandbox *ps = ex->ps;
    ex->in_mint = true;
    ex->mint_next = ps->mint_waiters;
    ps->mint_waiters = ex;
    if (ps->mint_call)
        return; /* docs/protocols/platform.md §2.5: concurrent misses share one mint */
    char *enc = sk_platform_enc(ps->platform_id), *path = NULL;
    sk_error *err = NULL;
    if (!enc || asprintf(&path, "/sandbox/%s/exec-lease", enc) < 0) {
        path = NULL;
        err = sk_error_oom();
    } else {
        ps->mint_gen = ps->gen;
        ps->mint_call = sk_platform_api_call(ps->api, "POST", path, NULL, mint_on_done, ps, &err);
    }
    free(enc);
    free(path);
    if (!ps->mint_call)
        mint_on_done(0, NULL, err, ps);
}

static void mint_on_done(int status, json_t *json, sk_error *err, void *ud)
{
    platform_sandbox *ps = ud;
    ps->mint_call = NULL;
    platform_exec *waiters = ps->mint_waiters;
    ps->mint_waiters = NULL;
    for (platform_exec *w = waiters; w; w = w->mint_next)
        w->in_mint = false;
    bool current = ps->mint_gen == ps->gen;
    platform_lease *lease = NULL;
    char *gone_id = NULL;
    bool gone = err && status == 410;
    if (gone && current) {
        /* docs/protocols/platform.md §3.5: forget the sandbox; the next command provisions afresh */
        gone_id = ps->platform_id ? strdup(ps->platform_id) : NULL;
        sk_platform_forget(ps);
        if (ps->sb->status == SK_RUNNING)
            ps->sb->status = SK_STOPPED;
        sk_log(SK_LOG_INFO, PLATFORM_ID, "exec-lease answered 410: sandbox %s is gone; status stopped",
               gone_id ? gone_id : "(unknown)");
    } else if (!err) {
        lease = lease_parse(json, &err);
        if (lease && current && lease->has_expiry) {
            sk_platform_lease_unref(ps->lease);
            ps->lease = lease_ref(lease);
        }
    }
    for (platform_exec *w = waiters, *next; w; w = next) {
        next = w->mint_next;
        w->mint_next = NULL;
        if (w->settled)
            continue;
        if (gone)
            exec_finish(w, NULL, exec_destroyed_error(gone_id, w));
        else if (err)
            exec_finish(w, NULL, sk_error_copy(err));
        else {
            w->lease = lease_ref(lease);
            exec_connect(w);
        }
    }
    free(gone_id);
    sk_error_free(err);
    sk_platform_lease_unref(lease);
}

static void exec_begin_attempt(platform_exec *ex)
{
    platform_sandbox *ps = ex->ps;
    ex->attempt++;
    ex->opened = false;
    ex->close_code = 0;
    ex->close_reason[0] = '\0';
    ex->http_status = 0;
    free(ex->ws_error);
    ex->ws_error = NULL;
    sk_platform_lease_unref(ex->lease);
    ex->lease = NULL;
    if (ex->attempt > 1 && ex->p->capture) {
        /* the result is the retry's alone, as upstream */
        sk_process_reset_capture(ex->p);
    }
    if (!ps->platform_id) {
        exec_finish(ex, NULL, sk_error_new(SK_ERR_SANDBOX_NOT_READY, json_pack("{s:s}", "sandbox_id", ps->sb->id),
                                           "Sandbox %s has no platform sandbox (it was destroyed or stopped)",
                                           ps->sb->id));
        return;
    }
    if (ps->lease && lease_fresh(ps->lease)) {
        ex->lease = lease_ref(ps->lease);
        exec_connect(ex);
        return;
    }
    exec_join_mint(ex);
}

static void exec_attempt_failed(platform_exec *ex)
{
    platform_sandbox *ps = ex->ps;
    exec_stop_deadline(ex);
    /* docs/protocols/platform.md §2.5: drop the cached lease only if it is still the one we used */
    if (ex->lease && ps->lease == ex->lease) {
        sk_platform_lease_unref(ps->lease);
        ps->lease = NULL;
    }
    if (ex->attempt < 2) {
        sk_log(SK_LOG_DEBUG, PLATFORM_ID, "direct exec attempt %d failed (opened %d, close %d); retrying with a fresh lease",
               ex->attempt, ex->opened, ex->close_code);
        exec_begin_attempt(ex);
        return;
    }
    exec_finish(ex, NULL, exec_transport_error(ex));
}

/* ---- the provider's process entry points ------------------------------------------ */

static void exec_free(platform_exec *ex);

static char *exec_init_frame(const char *command, const char *cwd, json_t *env)
{
    json_t *data = json_object();
    json_t *cmd = json_string(command);
    if (!data || !cmd) {
        json_decref(data);
        json_decref(cmd);
        return NULL;
    }
    json_object_set_new(data, "command", cmd);
    if (cwd && *cwd) {
        json_t *c = json_string(cwd);
        if (!c) {
            json_decref(data);
            return NULL;
        }
        json_object_set_new(data, "cwd", c);
    }
    if (env && json_object_size(env) > 0)
        json_object_set(data, "env", env);
    json_t *msg = json_pack("{s:s,s:o}", "type", "init_exec", "data", data);
    char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
    json_decref(msg);
    return text;
}

int sk_platform_exec_spawn(sk_sandbox *sb, sk_process *p, const sk_spawn_opts *o, sk_error **err)
{
    platform_sandbox *ps = sb->impl;
    if (!ps->platform_id) {
        *err = sk_error_new(SK_ERR_SANDBOX_NOT_READY, json_pack("{s:s}", "sandbox_id", ps->sb->id),
                            "Sandbox %s has no platform sandbox", ps->sb->id);
        return -1;
    }
    if (o->has_stdin && o->stdin_len && !ps->stdin_frames) {
        *err = sk_error_new(SK_ERR_UNSUPPORTED, NULL,
                            "Platform sandbox command execution does not support stdin (the stdin_frames option is off)");
        return -1;
    }
    platform_exec *ex = calloc(1, sizeof *ex);
    if (!ex)
        goto oom;
    ex->ps = ps;
    ex->p = p;
    ex->timeout_ms = o->timeout_ms;
    ex->keep_stdin_open = o->keep_stdin_open && ps->stdin_frames;
    ex->stdin_closed = !ex->keep_stdin_open;
    if (!(ex->command = strdup(o->command)))
        goto oom;
    json_t *env = sk_sandbox_merged_env(ps->sb, o->env);
    if (!env)
        goto oom;
    /* docs/protocols/platform.md §3.4: cwd only when non-empty, env only with a key; no timeout field */
    ex->init_text = exec_init_frame(o->command, o->cwd ? o->cwd : ps->working_directory, env);
    json_decref(env);
    if (!ex->init_text) {
        exec_free(ex);
        *err = sk_error_new(SK_ERR_CONFIG, json_pack("{s:s}", "provider", PLATFORM_ID),
                            "PlatformSandbox: the command, cwd and env must be valid UTF-8 (they travel in a JSON frame)");
        return -1;
    }
    if (o->has_stdin && o->stdin_len && sk_buf_append(&ex->stdin_sent, o->stdin_data, o->stdin_len) != 0)
        goto oom;
    if (!(ex->deadline = sk_timer_new(ps->sb->loop, ex)) || !(ex->defer = sk_timer_new(ps->sb->loop, ex)))
        goto oom;
    /* upstream: platform-proc-<ms base36>-<counter base36> */
    char ms36[SK_BASE36_MAX], n36[SK_BASE36_MAX];
    sk_base36((unsigned long long)sk_platform_wall_ms(), ms36);
    sk_base36(++ps->proc_counter, n36);
    char pid[64];
    snprintf(pid, sizeof pid, "platform-proc-%s-%s", ms36, n36);
    snprintf(p->pid, sizeof p->pid, "%.31s", pid);
    p->impl = ex;
    ex->deferred = EXEC_DEFER_ATTEMPT;
    sk_timer_arm(ex->defer, exec_on_defer, 0, 0);
    return 0;
oom:
    if (ex)
        exec_free(ex);
    *err = sk_error_oom();
    return -1;
}

int sk_platform_exec_kill(sk_process *p, int sig)
{
    platform_exec *ex = p->impl;
    if (!ex || ex->settled)
        return -1;
    /* closing the socket is the protocol's cancellation (docs/protocols/platform.md §3.4) */
    sk_result r = { .exit_code = 128 + sig, .killed = true };
    exec_finish_later(ex, &r, NULL);
    return 0;
}

int sk_platform_exec_write_stdin(sk_process *p, const char *data, size_t len, sk_error **err)
{
    platform_exec *ex = p->impl;
    if (!ex || ex->settled) {
        *err = sk_error_new(SK_ERR_PROCESS_EXITED, NULL, "Process %s has already exited", p->pid);
        return -1;
    }
    if (!ex->ps->stdin_frames) {
        *err = sk_error_new(SK_ERR_UNSUPPORTED, NULL,
                            "Platform sandbox command execution does not support stdin (the stdin_frames option is off)");
        return -1;
    }
    if (ex->stdin_closed) {
        *err = sk_error_new(SK_ERR_PROCESS_EXITED, NULL, "Cannot write to stdin of process %s: stdin is closed", p->pid);
        return -1;
    }
    if (sk_buf_append(&ex->stdin_sent, data, len) != 0) {
        *err = sk_error_oom();
        return -1;
    }
    exec_send_stdin(ex, data, len);
    return 0;
}

int sk_platform_exec_close_stdin(sk_process *p)
{
    platform_exec *ex = p->impl;
    if (!ex || ex->settled)
        return -1;
    if (!ex->stdin_closed) {
        ex->stdin_closed = true;
        if (ex->conn)
            sk_ws_send(ex->conn->ws, false, EXEC_STDIN_CLOSE, sizeof EXEC_STDIN_CLOSE - 1);
    }
    return 0;
}

static void exec_free(platform_exec *ex)
{
    mint_leave(ex);
    exec_orphan_conn(ex);
    sk_timer_close(&ex->deadline);
    sk_timer_close(&ex->defer);
    sk_platform_lease_unref(ex->lease);
    free(ex->command);
    exec_wipe_free(ex->init_text);
    if (ex->stdin_sent.data)
        memset(ex->stdin_sent.data, 0, ex->stdin_sent.cap);
    sk_buf_free(&ex->stdin_sent);
    free(ex->ws_endpoint);
    free(ex->ws_error);
    sk_error_free(ex->error);
    free(ex);
}

void sk_platform_exec_release(sk_process *p)
{
    platform_exec *ex = p->impl;
    if (!ex)
        return;
    p->impl = NULL;
    exec_free(ex);
}

void sk_platform_exec_reset(platform_sandbox *ps)
{
    sk_platform_lease_unref(ps->lease);
    ps->lease = NULL;
    if (ps->mint_call) {
        sk_platform_api_cancel(ps->mint_call);
        ps->mint_call = NULL;
    }
    /* commands still waiting (none: the sandbox layer kills them first) */
    platform_exec *w = ps->mint_waiters;
    ps->mint_waiters = NULL;
    for (platform_exec *next; w; w = next) {
        next = w->mint_next;
        w->in_mint = false;
        w->mint_next = NULL;
        if (!w->settled)
            exec_finish_later(w, NULL, sk_error_new(SK_ERR_SANDBOX_NOT_READY, NULL, "The sandbox is being torn down"));
    }
}

void sk_platform_exec_free_all(platform_sandbox *ps)
{
    if (ps->mint_call) {
        sk_platform_api_cancel(ps->mint_call);
        ps->mint_call = NULL;
    }
    for (platform_exec *w = ps->mint_waiters; w; w = w->mint_next)
        w->in_mint = false;
    ps->mint_waiters = NULL;
    while (ps->orphans) {
        platform_conn *c = ps->orphans;
        ps->orphans = c->next;
        sk_ws_abort(c->ws);
        free(c);
    }
}
