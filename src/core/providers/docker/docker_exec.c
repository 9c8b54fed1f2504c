/* DockerSandbox commands (docs/protocols/docker.md §3-4): an exec per
 * command, as upstream's (`sh -c` of the command line, per-exec cwd and
 * merged env, the hijacked stream with stdin, the 8-byte frames, the exit
 * code from exec inspect), with two differences that make kill work:
 *
 *  - The command runs under a one-line sh wrapper that writes its pid in
 *    the container (a marker line, first on stderr, taken off before the
 *    caller sees stderr) and then execs `sh -c <command>` in place. The
 *    exec'd process leads its own process group (runc and crun setsid it).
 *  - kill(sig) runs a second exec, `kill -<sig> -<pgid>`, inside the
 *    container, so the command and its children end there. Upstream
 *    signals the host pid that exec inspect reports (upstream issue
 *    23773): the command kept running. The second exec attaches stdout,
 *    as Podman refuses one started with no attached stream.
 *
 * The timeout counts from the command's start (the stream open), as
 * upstream's does: an exec's create and start are bounded by api_timeout,
 * and on a loaded daemon take seconds that are not the command's. Then
 * SIGTERM, SIGKILL a second later (sandbox.c's steps), and the command ends
 * with 124 and timed_out, as on every provider (upstream's DockerSandbox
 * reports 137). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../buf.h"
#include "../../http.h"
#include "docker_conn.h"
#include "docker_frame.h"
#include "docker_state.h"

/* The wrapper ($1 is the command line); the marker is its first output. */
#define DK_WRAPPER "printf '\\036sk-pid:%s\\n' \"$$\" >&2; exec sh -c \"$1\""
#define DK_MARKER "\036sk-pid:"
#define DK_MARKER_MAX 32
#define DK_HEAD_MAX ((size_t)64 << 10)
#define DK_SYSERR_MAX 4096
/* exec inspect can say Running for a moment after the stream ended: asked
 * again after 10 ms, doubling to 250 ms, this many times (about 3 s). */
#define DK_INSPECT_TRIES 16
/* Between a timeout's SIGTERM and its SIGKILL (sandbox.c's grace). */
#define DK_KILL_GRACE_MS 1000

typedef enum { X_CREATING, X_HEAD, X_ERROR_BODY, X_STREAM, X_INSPECTING } x_phase;

typedef struct dk_exec {
    sk_process *p;
    sk_sandbox *sb;
    dk_sandbox *ds;
    x_phase phase;
    dk_call *call;       /* exec create, then exec inspect */
    dk_conn *conn;       /* the hijacked start */
    char *exec_id;
    uv_timer_t *timer;   /* the start's answer deadline, then inspect retries */
    uv_timer_t *deadline; /* the command's timeout, from the stream open */
    int64_t timeout_ms;
    sk_buf head;         /* the start's response head; then an error body */
    int status;
    long content_length; /* of an error body; -1: until close or chunked end */
    bool chunked;
    dk_demux demux;
    char marker[DK_MARKER_MAX];
    size_t marker_len;
    bool marker_done;
    long cpid;           /* the command's pid in the container; 0 until known */
    int pending_sig;     /* asked before the pid was known */
    bool kill_asked;
    bool finishing;      /* killed: reported on the next turn (x_kill_now) */
    sk_buf stdin_q;      /* written before the stream is open */
    bool stdin_close;
    bool with_stdin;
    sk_buf syserr;       /* the daemon's error frames */
    sk_error *stream_err;
    int inspect_tries;
} dk_exec;

struct dk_kill {
    dk_sandbox *ds;
    dk_kill *prev, *next;
    dk_exec *x;          /* NULL once the exec is released */
    dk_call *call;
    int sig;
    char *exec_id;
};

static void x_send_kill(dk_exec *x, int sig);
static void x_kill_now(dk_exec *x, int sig);

/* ---- finishing -------------------------------------------------------------- */

static void x_finish(dk_exec *x, const sk_result *r, sk_error *err)
{
    sk_process *p = x->p;
    sk_process_finish(p, r, err); /* releases x */
}

static void x_finish_killed(dk_exec *x)
{
    sk_result r = { .exit_code = 128 + SIGKILL, .killed = true };
    x_finish(x, &r, NULL);
}

static sk_error *x_error_fields(dk_exec *x, sk_error *e)
{
    sk_error_set(e, "sandbox_id", json_string(x->ds->cfg.id));
    if (x->ds->container_id)
        sk_error_set(e, "container_id", json_string(x->ds->container_id));
    sk_error_set(e, "command", json_string(x->p->command));
    if (x->exec_id)
        sk_error_set(e, "exec_id", json_string(x->exec_id));
    return e;
}

static sk_error *x_malformed(dk_exec *x, const char *fmt, const char *detail)
{
    sk_error *e = sk_error_new(SK_ERR_DOCKER_API,
                               json_pack("{s:b,s:s}", "malformed", 1, "docker_host", x->ds->api.host), fmt, detail);
    return x_error_fields(x, e);
}

/* ---- exec inspect --------------------------------------------------------------- */

static void x_inspect(dk_exec *x);

static void x_on_retry(uv_timer_t *t) { x_inspect(t->data); }

static void x_on_inspect(const dk_reply *r, const sk_error *err, void *ud)
{
    dk_exec *x = ud;
    x->call = NULL;
    if (x->finishing)
        return; /* killed: x_on_killed reports it */
    if (x->kill_asked && !x->stream_err && (err || r->status == 404)) {
        /* killed, and the exec went with its container (destroy): a result */
        x_finish_killed(x);
        return;
    }
    if (err) {
        sk_error_free(x->stream_err);
        x->stream_err = NULL;
        x_finish(x, NULL, x_error_fields(x, sk_error_copy(err)));
        return;
    }
    if (r->status != 200 || !json_is_object(r->json)) {
        char path[160];
        snprintf(path, sizeof path, "/v%s/exec/%s/json", x->ds->api.version, x->exec_id);
        x_finish(x, NULL, x_error_fields(x, sk_dk_api_error(&x->ds->api, "GET", path, r, "Inspecting the exec")));
        return;
    }
    json_t *code = json_object_get(r->json, "ExitCode");
    bool running = json_is_true(json_object_get(r->json, "Running"));
    if ((running || !json_is_integer(code)) && ++x->inspect_tries < DK_INSPECT_TRIES) {
        uint64_t delay = 10u << (x->inspect_tries < 6 ? x->inspect_tries - 1 : 5);
        if (sk_timer_start(x->sb->loop, &x->timer, x, delay > 250 ? 250 : delay, x_on_retry) != 0)
            x_finish(x, NULL, sk_error_oom());
        return;
    }
    if (x->stream_err) {
        sk_error *e = x->stream_err;
        x->stream_err = NULL;
        x_finish(x, NULL, e);
        return;
    }
    sk_result res = { 0 };
    /* upstream: ExitCode ?? 1 */
    res.exit_code = json_is_integer(code) ? (int)json_integer_value(code) : 1;
    res.killed = x->kill_asked && res.exit_code > 128;
    x_finish(x, &res, NULL);
}

static void x_inspect(dk_exec *x)
{
    x->phase = X_INSPECTING;
    char *path = NULL;
    sk_error *err = NULL;
    if (asprintf(&path, "/exec/%s/json", x->exec_id) < 0) {
        x_finish(x, NULL, sk_error_oom());
        return;
    }
    x->call = sk_dk_api_call(&x->ds->api, "GET", path, NULL, 0, 0, x_on_inspect, x, &err);
    free(path);
    if (!x->call)
        x_finish(x, NULL, err);
}

/* ---- the stream ---------------------------------------------------------------- */

/* stderr through the pid marker: the wrapper's first line, taken off. */
static void x_stderr(dk_exec *x, const char *data, size_t len)
{
    while (!x->marker_done && len > 0) {
        char ch = *data++;
        len--;
        x->marker[x->marker_len++] = ch;
        size_t plen = sizeof DK_MARKER - 1;
        bool prefix_ok = x->marker_len > plen || memcmp(x->marker, DK_MARKER, x->marker_len) == 0;
        bool digit_ok = x->marker_len <= plen || (ch >= '0' && ch <= '9') || ch == '\n';
        if (!prefix_ok || !digit_ok || (x->marker_len == sizeof x->marker && ch != '\n')) {
            /* not the wrapper's line (it did not run): the bytes are output */
            x->marker_done = true;
            sk_process_output(x->p, 2, x->marker, x->marker_len);
            break;
        }
        if (ch == '\n') {
            x->marker_done = true;
            x->cpid = strtol(x->marker + plen, NULL, 10);
            if (x->pending_sig && x->cpid > 0) {
                int sig = x->pending_sig;
                x->pending_sig = 0;
                x_kill_now(x, sig);
            }
        }
    }
    if (len > 0)
        sk_process_output(x->p, 2, data, len);
}

static int x_on_frame(void *ud, int stream, const char *data, size_t len)
{
    dk_exec *x = ud;
    if (stream == DK_STREAM_SYSTEMERR) {
        size_t room = x->syserr.len < DK_SYSERR_MAX ? DK_SYSERR_MAX - x->syserr.len : 0;
        if (room)
            sk_buf_append(&x->syserr, data, len < room ? len : room);
    } else if (stream == DK_STREAM_STDERR) {
        x_stderr(x, data, len);
    } else {
        sk_process_output(x->p, 1, data, len);
    }
    return x->p->exited ? 1 : 0;
}

/* Stream bytes through the demultiplexer; a header that is not the
 * protocol ends the exec (the command must not run on unseen). */
static void x_feed(dk_exec *x, const char *data, size_t len)
{
    if (sk_dk_demux_feed(&x->demux, data, len, x_on_frame, x) != DK_DEMUX_BAD_HEADER)
        return;
    char shown[40];
    snprintf(shown, sizeof shown, "%02x %02x %02x %02x %02x %02x %02x %02x", x->demux.bad[0], x->demux.bad[1],
             x->demux.bad[2], x->demux.bad[3], x->demux.bad[4], x->demux.bad[5], x->demux.bad[6], x->demux.bad[7]);
    sk_error *e = x_malformed(x, "Docker daemon sent a malformed exec stream (frame header %s)", shown);
    if (x->cpid > 0)
        x_send_kill(x, SIGKILL);
    x_finish(x, NULL, e);
}

static void x_flush_stdin(dk_exec *x)
{
    if (x->stdin_q.len && sk_dk_conn_write(x->conn, x->stdin_q.data, x->stdin_q.len) != 0)
        x->stdin_close = true;
    sk_buf_free(&x->stdin_q);
    if (x->stdin_close)
        sk_dk_conn_shutdown_write(x->conn);
}

/* A chunked body: whether it is whole; its data to *out. */
static bool x_dechunk(const char *s, size_t len, sk_buf *out)
{
    size_t i = 0;
    while (i < len) {
        char *end = NULL;
        unsigned long n = strtoul(s + i, &end, 16);
        const char *crlf = memchr(s + i, '\n', len - i);
        if (!crlf || !end || end == s + i)
            return false;
        i = (size_t)(crlf - s) + 1;
        if (n == 0)
            return true;
        if (n > len - i)
            return false;
        sk_buf_append(out, s + i, n);
        i += n;
        while (i < len && (s[i] == '\r' || s[i] == '\n'))
            i++;
    }
    return false;
}

/* The start answered with an error: its body, when whole (or at close). */
static void x_error_body(dk_exec *x, bool at_close)
{
    sk_buf body = { 0 };
    bool whole = at_close;
    if (x->chunked)
        whole = x_dechunk(x->head.data ? x->head.data : "", x->head.len, &body) || at_close;
    else if (x->content_length >= 0)
        whole = whole || x->head.len >= (size_t)x->content_length;
    if (!whole) {
        sk_buf_free(&body);
        return;
    }
    if (!x->chunked)
        sk_buf_append(&body, x->head.data ? x->head.data : "", x->head.len);
    dk_reply r = { .status = x->status, .body = body.data ? body.data : "", .body_len = body.len };
    json_t *doc = body.len ? json_loadb(body.data, body.len, 0, NULL) : NULL;
    r.json = doc;
    char path[160];
    snprintf(path, sizeof path, "/v%s/exec/%s/start", x->ds->api.version, x->exec_id);
    sk_error *e = x_error_fields(x, sk_dk_api_error(&x->ds->api, "POST", path, &r, "Starting the exec"));
    json_decref(doc);
    sk_buf_free(&body);
    x_finish(x, NULL, e);
}

/* The timeout: SIGTERM, then SIGKILL after the grace. p->timing_out makes
 * sandbox.c report 124, timed_out and its note, as for its own timer. */
static void x_on_deadline(uv_timer_t *t)
{
    dk_exec *x = t->data;
    sk_process *p = x->p;
    if (!p->timing_out) {
        p->timing_out = true;
        sk_dk_kill(p, SIGTERM);
        if (p->impl == x)
            (void)sk_timer_start(x->sb->loop, &x->deadline, x, DK_KILL_GRACE_MS, x_on_deadline);
    } else {
        sk_dk_kill(p, SIGKILL);
    }
}

static void x_on_head(dk_exec *x)
{
    const char *h = x->head.data;
    const char *end = memmem(h, x->head.len, "\r\n\r\n", 4);
    if (!end) {
        if (x->head.len > DK_HEAD_MAX)
            x_finish(x, NULL, x_malformed(x, "Docker daemon's answer to an exec start has a head over 64 KiB%s", ""));
        return;
    }
    int major = 0, minor = 0, status = 0;
    if (sscanf(h, "HTTP/%d.%d %d", &major, &minor, &status) != 3) {
        x_finish(x, NULL, x_malformed(x, "Docker daemon's answer to an exec start is not HTTP: %.40s", h));
        return;
    }
    x->status = status;
    sk_timer_close(&x->timer);
    size_t head_len = (size_t)(end - h) + 4;
    size_t rest_len = x->head.len - head_len;
    char *rest = NULL;
    if (rest_len && !(rest = malloc(rest_len))) {
        x_finish(x, NULL, sk_error_oom());
        return;
    }
    if (rest_len)
        memcpy(rest, h + head_len, rest_len);
    if (status == 101 || status == 200) {
        /* upgraded (Docker, Podman) or the old hijack without upgrade:
         * the multiplexed stream follows; stdin only now, as the docker
         * CLI does (bytes sent with the request can be lost in the
         * daemon's read buffer when it takes the connection over) */
        sk_buf_free(&x->head);
        x->phase = X_STREAM;
        if (x->timeout_ms > 0 &&
            sk_timer_start(x->sb->loop, &x->deadline, x, (uint64_t)x->timeout_ms, x_on_deadline) != 0) {
            free(rest);
            x_finish(x, NULL, sk_error_oom()); /* a command must not run without its timeout */
            return;
        }
        x_flush_stdin(x);
        if (rest_len)
            x_feed(x, rest, rest_len); /* may finish x */
        free(rest);
        return;
    }
    /* an error: Content-Length, chunked, or until close */
    x->content_length = -1;
    for (const char *line = strstr(h, "\r\n"); line && line < end; line = strstr(line + 2, "\r\n")) {
        if (strncasecmp(line + 2, "Content-Length:", 15) == 0)
            x->content_length = strtol(line + 17, NULL, 10);
        else if (strncasecmp(line + 2, "Transfer-Encoding:", 18) == 0 && strcasestr(line + 2, "chunked") &&
                 strcasestr(line + 2, "chunked") < strstr(line + 2, "\r\n"))
            x->chunked = true;
    }
    sk_buf_reset(&x->head);
    if (rest_len)
        sk_buf_append(&x->head, rest, rest_len);
    free(rest);
    x->phase = X_ERROR_BODY;
    x_error_body(x, false);
}

static void x_conn_data(dk_conn *c, const char *data, size_t len, void *ud)
{
    (void)c;
    dk_exec *x = ud;
    switch (x->phase) {
    case X_HEAD:
        if (sk_buf_append(&x->head, data, len) != 0) {
            x_finish(x, NULL, sk_error_oom());
            return;
        }
        x_on_head(x);
        return;
    case X_ERROR_BODY:
        if (x->head.len < DK_HEAD_MAX)
            sk_buf_append(&x->head, data, len);
        x_error_body(x, x->head.len >= DK_HEAD_MAX);
        return;
    case X_STREAM:
        x_feed(x, data, len);
        return;
    default:
        return;
    }
}

static void x_conn_closed(dk_conn *c, const char *error, void *ud)
{
    (void)c;
    dk_exec *x = ud;
    switch (x->phase) {
    case X_HEAD: {
        char path[160];
        snprintf(path, sizeof path, "/v%s/exec/%s/start", x->ds->api.version, x->exec_id);
        x_finish(x, NULL,
                 x_error_fields(x, sk_dk_api_transport_error(&x->ds->api, "POST", path, false,
                                                             error ? error : "the daemon closed the connection "
                                                                             "before answering")));
        return;
    }
    case X_ERROR_BODY:
        x_error_body(x, true);
        return;
    case X_STREAM:
        if (x->syserr.len) {
            sk_error *e = sk_error_new(SK_ERR_DOCKER_API, json_pack("{s:s%}", "docker_message", x->syserr.data, x->syserr.len),
                                       "Docker daemon reported an error in the exec stream: %.*s", (int)x->syserr.len,
                                       x->syserr.data);
            x->stream_err = x_error_fields(x, e);
        } else if (error) {
            char path[160];
            snprintf(path, sizeof path, "/v%s/exec/%s/start", x->ds->api.version, x->exec_id);
            x->stream_err = x_error_fields(x, sk_dk_api_transport_error(&x->ds->api, "POST", path, false, error));
        } else if (!sk_dk_demux_at_boundary(&x->demux)) {
            x->stream_err = x_malformed(x, "Docker daemon's exec stream ended inside a frame%s", "");
        }
        /* the exit code, or what happened to the daemon */
        x_inspect(x);
        return;
    default:
        return;
    }
}

static void x_on_head_timeout(uv_timer_t *t)
{
    dk_exec *x = t->data;
    char path[160];
    snprintf(path, sizeof path, "/v%s/exec/%s/start", x->ds->api.version, x->exec_id);
    x_finish(x, NULL, x_error_fields(x, sk_dk_api_transport_error(&x->ds->api, "POST", path, true, NULL)));
}

static const dk_conn_callbacks x_conn_callbacks = { NULL, x_conn_data, x_conn_closed };

static void x_start(dk_exec *x)
{
    dk_api *api = &x->ds->api;
    dk_conn_opts co;
    sk_dk_api_conn_opts(api, &co);
    const char *why = NULL;
    x->conn = sk_dk_conn_open(x->sb->loop, &co, &x_conn_callbacks, x, &why);
    if (!x->conn) {
        x_finish(x, NULL, sk_error_oom());
        return;
    }
    const char *authority = strstr(api->base_url, "://");
    authority = authority ? authority + 3 : api->base_url;
    static const char body[] = "{\"Detach\":false,\"Tty\":false}";
    char *req = NULL;
    /* Upgrade: tcp, as the docker CLI asks (the daemon answers 101) */
    int n = asprintf(&req,
                     "POST /v%s/exec/%s/start HTTP/1.1\r\nHost: %s\r\nUser-Agent: sandkit\r\n"
                     "Content-Type: application/json\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
                     "Content-Length: %zu\r\n\r\n%s",
                     api->version, x->exec_id, authority, sizeof body - 1, body);
    if (n < 0 || sk_dk_conn_write(x->conn, req, (size_t)n) != 0) {
        if (n >= 0)
            free(req);
        x_finish(x, NULL, sk_error_oom());
        return;
    }
    free(req);
    x->phase = X_HEAD;
    if (sk_timer_start(x->sb->loop, &x->timer, x, (uint64_t)api->timeout_ms, x_on_head_timeout) != 0)
        x_finish(x, NULL, sk_error_oom());
}

static void x_on_created(const dk_reply *r, const sk_error *err, void *ud)
{
    dk_exec *x = ud;
    x->call = NULL;
    if (err) {
        x_finish(x, NULL, x_error_fields(x, sk_error_copy(err)));
        return;
    }
    const char *id = json_string_value(json_object_get(r->json, "Id"));
    if (r->status != 201 || !id) {
        char path[200];
        snprintf(path, sizeof path, "/v%s/containers/%s/exec", x->ds->api.version,
                 x->ds->container_id ? x->ds->container_id : "");
        x_finish(x, NULL, x_error_fields(x, sk_dk_api_error(&x->ds->api, "POST", path, r, "Creating the exec")));
        return;
    }
    if (!(x->exec_id = strdup(id))) {
        x_finish(x, NULL, sk_error_oom());
        return;
    }
    if (x->pending_sig == SIGKILL) {
        /* killed before it started: it never runs */
        x_finish_killed(x);
        return;
    }
    x_start(x);
}

/* ---- kill ---------------------------------------------------------------------------- */

static void kill_free(dk_kill *k)
{
    dk_sandbox *ds = k->ds;
    if (k->prev)
        k->prev->next = k->next;
    else
        ds->kills = k->next;
    if (k->next)
        k->next->prev = k->prev;
    sk_dk_api_cancel(k->call);
    free(k->exec_id);
    free(k);
}

void sk_dk_kills_free(dk_sandbox *ds)
{
    while (ds->kills)
        kill_free(ds->kills);
}

/* The kill command could not run: a SIGKILL ends the wait for the stream
 * here (the daemon may be gone; nothing else can end the command). */
static void kill_failed(dk_kill *k)
{
    dk_exec *x = k->x;
    int sig = k->sig;
    kill_free(k);
    if (x && sig == SIGKILL)
        x_finish_killed(x);
}

static void kill_on_started(const dk_reply *r, const sk_error *err, void *ud)
{
    dk_kill *k = ud;
    k->call = NULL;
    if (err || r->status != 200)
        kill_failed(k);
    else
        kill_free(k); /* the command's own stream tells the rest */
}

static void kill_on_created(const dk_reply *r, const sk_error *err, void *ud)
{
    dk_kill *k = ud;
    k->call = NULL;
    const char *id = err ? NULL : json_string_value(json_object_get(r->json, "Id"));
    char *path = NULL;
    if (!id || r->status != 201 || asprintf(&path, "/exec/%s/start", id) < 0) {
        kill_failed(k);
        return;
    }
    json_t *body = json_pack("{s:b,s:b}", "Detach", 0, "Tty", 0);
    sk_error *e = NULL;
    /* not upgraded: the daemon answers 200 and closes when it is done */
    k->call = sk_dk_api_call(&k->ds->api, "POST", path, body, DK_CALL_RAW_STREAM, 0, kill_on_started, k, &e);
    json_decref(body);
    free(path);
    if (!k->call) {
        sk_error_free(e);
        kill_failed(k);
    }
}

static void x_send_kill(dk_exec *x, int sig)
{
    dk_sandbox *ds = x->ds;
    dk_kill *k = calloc(1, sizeof *k);
    char script[128], *path = NULL;
    if (!k)
        return;
    k->ds = ds;
    k->x = x;
    k->sig = sig;
    k->next = ds->kills;
    if (ds->kills)
        ds->kills->prev = k;
    ds->kills = k;
    /* the group first; the pid alone where the command leads none */
    snprintf(script, sizeof script, "kill -%d -%ld 2>/dev/null || kill -%d %ld", sig, x->cpid, sig, x->cpid);
    json_t *body = json_pack("{s:b,s:b,s:b,s:[s,s,s]}", "AttachStdin", 0, "AttachStdout", 1, "AttachStderr", 1,
                             "Cmd", "sh", "-c", script);
    char *cid = sk_url_escape(ds->container_id ? ds->container_id : "", NULL);
    sk_error *e = NULL;
    if (body && cid && asprintf(&path, "/containers/%s/exec", cid) >= 0)
        k->call = sk_dk_api_call(&ds->api, "POST", path, body, 0, 0, kill_on_created, k, &e);
    sk_error_free(e);
    json_decref(body);
    free(cid);
    free(path);
    if (!k->call)
        kill_free(k); /* out of memory: the timeout's next step, or the caller, tries again */
}

static void x_on_killed(uv_timer_t *t) { x_finish_killed(t->data); }

/* The kill runs in the container. A SIGKILL does not wait for the stream
 * to end and exec inspect to answer (seconds on a loaded daemon): the
 * command is reported killed on the next loop turn (never from inside
 * kill(): sandbox.c may be walking its process list), while its kill exec
 * goes on without it. */
static void x_kill_now(dk_exec *x, int sig)
{
    x_send_kill(x, sig);
    if (sig == SIGKILL && sk_timer_start(x->sb->loop, &x->timer, x, 0, x_on_killed) == 0)
        x->finishing = true; /* else the stream's end finishes it */
}

int sk_dk_kill(sk_process *p, int sig)
{
    dk_exec *x = p->impl;
    if (!x)
        return -1;
    x->kill_asked = true;
    if (x->phase == X_INSPECTING)
        return 0; /* it has ended; its status is on its way */
    if (x->cpid > 0 && x->phase == X_STREAM) {
        x_kill_now(x, sig);
        return 0;
    }
    /* not started, or its pid not read yet: sent once it is */
    if (x->pending_sig != SIGKILL)
        x->pending_sig = sig;
    return 0;
}

/* ---- spawn, stdin, release ------------------------------------------------------------ */

int sk_dk_spawn(sk_sandbox *sb, sk_process *p, const sk_spawn_opts *o, sk_error **err)
{
    dk_sandbox *ds = sb->impl;
    dk_exec *x = calloc(1, sizeof *x);
    json_t *env = sk_sandbox_merged_env(sb, o->env);
    json_t *body = NULL;
    char *path = NULL, *cid = NULL;
    int rc = -1;
    if (!x || !env) {
        *err = sk_error_oom();
        goto done;
    }
    x->p = p;
    x->sb = sb;
    x->ds = ds;
    x->with_stdin = o->has_stdin || o->keep_stdin_open;
    x->timeout_ms = o->timeout_ms;
    sk_dk_demux_init(&x->demux);
    if (o->has_stdin) {
        if (o->stdin_len && sk_buf_append(&x->stdin_q, o->stdin_data, o->stdin_len) != 0) {
            *err = sk_error_oom();
            goto done;
        }
        x->stdin_close = !o->keep_stdin_open;
    }
    /* upstream's exec create, Cmd under the wrapper */
    body = json_pack("{s:b,s:b,s:b,s:b,s:[s,s,s,s,s]}", "AttachStdin", x->with_stdin, "AttachStdout", 1,
                     "AttachStderr", 1, "Tty", 0, "Cmd", "sh", "-c", DK_WRAPPER, "sh", o->command);
    json_t *env_a = sk_dk_env_array(env);
    if (body && env_a)
        json_object_set_new(body, "Env", env_a);
    else
        json_decref(env_a);
    if (body && o->cwd)
        json_object_set_new(body, "WorkingDir", json_string(o->cwd));
    cid = sk_url_escape(ds->container_id ? ds->container_id : "", NULL);
    if (!body || !cid || asprintf(&path, "/containers/%s/exec", cid) < 0) {
        path = NULL;
        *err = sk_error_oom();
        goto done;
    }
    x->call = sk_dk_api_call(&ds->api, "POST", path, body, 0, 0, x_on_created, x, err);
    if (!x->call)
        goto done;
    p->impl = x;
    x = NULL;
    rc = 0;
done:
    if (x) {
        sk_buf_free(&x->stdin_q);
        free(x);
    }
    /* the body held env values: wiped by the call's copy; ours goes now */
    json_decref(body);
    json_decref(env);
    free(path);
    free(cid);
    return rc;
}

int sk_dk_write_stdin(sk_process *p, const char *data, size_t len, sk_error **err)
{
    dk_exec *x = p->impl;
    bool closed = !x || !x->with_stdin || x->stdin_close || x->phase == X_INSPECTING;
    int rc = 0;
    if (!closed) {
        if (x->phase == X_STREAM)
            rc = sk_dk_conn_write(x->conn, data, len);
        else
            rc = sk_buf_append(&x->stdin_q, data, len);
    }
    if (closed || rc != 0) {
        *err = sk_error_new(SK_ERR_PROCESS_EXITED, NULL, "Cannot write to stdin of process %s: %s", p->pid,
                            closed ? "stdin is closed" : "out of memory");
        return -1;
    }
    return 0;
}

int sk_dk_close_stdin(sk_process *p)
{
    dk_exec *x = p->impl;
    if (!x || !x->with_stdin || x->stdin_close)
        return -1;
    x->stdin_close = true;
    if (x->phase == X_STREAM)
        sk_dk_conn_shutdown_write(x->conn);
    return 0;
}

void sk_dk_release(sk_process *p)
{
    dk_exec *x = p->impl;
    if (!x)
        return;
    p->impl = NULL;
    for (dk_kill *k = x->ds->kills; k; k = k->next)
        if (k->x == x)
            k->x = NULL;
    sk_dk_api_cancel(x->call);
    sk_dk_conn_close(x->conn);
    sk_timer_close(&x->timer);
    sk_timer_close(&x->deadline);
    sk_buf_free(&x->head);
    sk_buf_free(&x->stdin_q);
    sk_buf_free(&x->syserr);
    sk_error_free(x->stream_err);
    free(x->exec_id);
    free(x);
}
