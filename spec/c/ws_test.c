/* sk_ws against the loopback echo server (spec/servers/echo): ws and wss,
 * subprotocol and header delivery, client/server close codes, the close
 * timeout, refused and rejected connections, abort, fragments, limits,
 * shutdown, and one run with http + ws + a child process in flight. */
#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "../servers/echo/harness.h"
#include "buf.h"
#include "http.h"
#include "log.h"
#include "loop.h"
#include "proc.h"
#include "ws.h"

#define TOKEN "sometoken"

typedef struct wmsg {
    bool binary;
    size_t len;
    char head[64]; /* first bytes, NUL-terminated */
} wmsg;

typedef struct wcall {
    sk_ws *ws;
    int opens, closes, msgs, after_close;
    char protocol[128];
    wmsg m[32];
    size_t bytes;
    int code;
    char reason[128], error[1024];
    bool opened, local;
    int http_status;
    int abort_after;      /* abort inside the Nth message callback */
    int close_after;      /* sk_ws_close(1000, "bye") in the Nth message callback */
    const char *send_on_open;
    int send_result;
    double t_start, t_end;
} wcall;

static void w_open(sk_ws *ws, const char *protocol, void *ud)
{
    wcall *c = ud;
    c->opens++;
    snprintf(c->protocol, sizeof c->protocol, "%s", protocol);
    if (c->send_on_open)
        c->send_result = sk_ws_send(ws, false, c->send_on_open, strlen(c->send_on_open));
}

static void w_message(sk_ws *ws, bool binary, const char *data, size_t len, void *ud)
{
    wcall *c = ud;
    if (c->closes)
        c->after_close++;
    if (c->msgs < 32) {
        wmsg *m = &c->m[c->msgs];
        m->binary = binary;
        m->len = len;
        size_t n = len < sizeof m->head - 1 ? len : sizeof m->head - 1;
        memcpy(m->head, data, n);
        m->head[n] = '\0';
    }
    c->msgs++;
    c->bytes += len;
    if (c->abort_after && c->msgs == c->abort_after) {
        sk_ws_abort(ws);
        c->ws = NULL;
    } else if (c->close_after && c->msgs == c->close_after) {
        sk_ws_close(ws, 1000, "bye");
    }
}

static void w_close(sk_ws *ws, const sk_ws_close_info *i, void *ud)
{
    (void)ws;
    wcall *c = ud;
    c->closes++;
    c->ws = NULL;
    c->t_end = sk_now_ms();
    c->code = i->code;
    snprintf(c->reason, sizeof c->reason, "%s", i->reason ? i->reason : "(null)");
    snprintf(c->error, sizeof c->error, "%s", i->error ? i->error : "");
    c->opened = i->opened;
    c->local = i->local;
    c->http_status = i->http_status;
}

static const sk_ws_callbacks wcb = { w_open, w_message, w_close };

static bool wconnect(sk_loop *loop, wcall *c, const sk_ws_opts *o)
{
    c->t_start = sk_now_ms();
    const char *err = NULL;
    c->ws = sk_ws_connect(loop, o, &wcb, c, &err);
    if (!c->ws)
        tap_note("sk_ws_connect failed: %s", err ? err : "?");
    return c->ws != NULL;
}

static const sk_ws_header auth_headers[] = { { "Authorization", "Bearer " TOKEN }, { "X-Sandkit-Test", "1" } };

static sk_ws_opts opts(const char *url)
{
    return (sk_ws_opts){ .url = url, .protocols = "railway-shell, " TOKEN, .headers = auth_headers,
                         .n_headers = 2 };
}

/* Last admin-log entry of a type on a path, or NULL (caller decrefs). */
static json_t *last_entry(sk_loop *loop, const echo_server *s, const char *type, const char *path)
{
    char *body = echo_admin(loop, s, "/__admin/log", NULL);
    json_t *arr = body ? json_loads(body, 0, NULL) : NULL;
    free(body);
    json_t *found = NULL;
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "type")) ?: "", type) == 0 &&
            strcmp(json_string_value(json_object_get(e, "path")) ?: "", path) == 0) {
            json_decref(found);
            found = json_incref(e);
        }
    }
    json_decref(arr);
    return found;
}

/* Polls the admin log until a ws-close for path shows up (server side is
 * asynchronous to our close callback). */
static json_t *wait_server_close(sk_loop *loop, const echo_server *s, const char *path)
{
    for (int i = 0; i < 100; i++) {
        json_t *e = last_entry(loop, s, "ws-close", path);
        if (e)
            return e;
        int never = 0;
        run_until(loop, &never, 1, 20);
    }
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Captured log lines (sink test). */
static sk_buf log_lines;
static void capture_sink(sk_log_level level, const char *component, const char *msg, void *ud)
{
    (void)ud;
    sk_buf_appendf(&log_lines, "%s %s %s\n", sk_log_level_name(level), component, msg);
}

/* ---- cases ------------------------------------------------------------------ */

static void test_exchange(sk_loop *loop, const echo_server *s, bool tls)
{
    char url[256];
    wcall c = { .send_on_open = "hello" };
    snprintf(url, sizeof url, "%s://127.0.0.1:%d/ws/exec", tls ? "wss" : "ws", tls ? s->tls_port : s->port);
    sk_ws_opts o = opts(url);
    if (tls)
        o.ca_file = s->ca_file;
    wconnect(loop, &c, &o);
    run_until(loop, &c.closes, 1, 10000);
    const char *kind = tls ? "wss" : "ws";
    tap(c.opens == 1 && strcmp(c.protocol, "railway-shell") == 0 && c.send_result == 0,
           "%s: open with selected protocol railway-shell", kind);
    tap(c.msgs == 3 && c.m[0].binary && c.m[0].len == 6 && memcmp(c.m[0].head, "\x01hello", 6) == 0 &&
               c.m[1].binary && memcmp(c.m[1].head, "\x03" "err", 4) == 0 && !c.m[2].binary &&
               strcmp(c.m[2].head, "{\"type\":\"exit\",\"data\":{\"exit_code\":0}}") == 0,
           "%s: three frames: stdout-tag binary, stderr-tag binary, exit text", kind);
    tap(c.closes == 1 && c.code == 1000 && c.opened && !c.local && c.error[0] == '\0' && c.after_close == 0,
           "%s: server close 1000, exactly one close callback (code %d, error '%s')", kind, c.code, c.error);

    json_t *e = last_entry(loop, s, "ws-upgrade", "/ws/exec");
    tap(e && strcmp(json_string_value(json_object_get(e, "offered")), "railway-shell, " TOKEN) == 0 &&
               strcmp(json_string_value(json_object_get(e, "authorization")), "Bearer " TOKEN) == 0 &&
               strcmp(json_string_value(json_object_get(e, "custom")), "1") == 0 &&
               strcmp(json_string_value(json_object_get(e, "port")), tls ? "tls" : "plain") == 0,
           "%s: server received the protocol list verbatim and the extra headers", kind);
    json_decref(e);
}

static void test_hello(sk_loop *loop, const echo_server *s)
{
    char *body = echo_admin(loop, s, "/hello", NULL);
    tap(body && strstr(body, "\"lastOfferedProtocols\":\"railway-shell, " TOKEN "\""),
           "GET /hello reports the last offered protocols");
    free(body);
}

static void test_rejections(sk_loop *loop, const echo_server *s)
{
    char url[256];
    wcall c = { 0 };
    snprintf(url, sizeof url, "ws://127.0.0.1:%d/", s->port);
    sk_ws_opts o = { .url = url, .protocols = "other, secrettoken" };
    wconnect(loop, &c, &o);
    run_until(loop, &c.closes, 1, 10000);
    tap(c.closes == 1 && c.opens == 0 && !c.opened && c.http_status == 401 && strstr(c.error, "unauthorized") &&
               !strstr(c.error, "secrettoken"),
           "upgrade refused with 401: close with http_status 401, no token in: %s", c.error);

    memset(&c, 0, sizeof c);
    snprintf(url, sizeof url, "ws://127.0.0.1:%d/x?token=SECRET", closed_port());
    o = opts(url);
    wconnect(loop, &c, &o);
    run_until(loop, &c.closes, 1, 10000);
    tap(c.closes == 1 && !c.opened && c.code == 1006 && strstr(c.error, "connect") && !strstr(c.error, "SECRET"),
           "connection refused: one close callback, not opened: %s", c.error);

    memset(&c, 0, sizeof c);
    o = opts("ws://no-such-host.invalid/");
    wconnect(loop, &c, &o);
    run_until(loop, &c.closes, 1, 10000);
    tap(c.closes == 1 && !c.opened && strstr(c.error, "resolve"), "unknown host: %s", c.error);

    const char *err = NULL;
    sk_ws_opts bad = { .url = "http://127.0.0.1/" };
    tap(!sk_ws_connect(loop, &bad, &wcb, &c, &err) && err && strstr(err, "scheme"),
           "non-ws URL rejected up front (%s)", err ? err : "");
    sk_ws_header inj = { "X-Bad", "a\r\nInjected: 1" };
    bad = (sk_ws_opts){ .url = url, .headers = &inj, .n_headers = 1 };
    tap(!sk_ws_connect(loop, &bad, &wcb, &c, &err), "CR/LF in a header value rejected up front");
}

static void test_tls_failures(sk_loop *loop, const echo_server *s)
{
    char url[256];
    wcall c = { 0 };
    snprintf(url, sizeof url, "wss://127.0.0.1:%d/ws/exec", s->tls_port);
    sk_buf_reset(&log_lines);
    sk_log_set_sink(capture_sink, NULL);
    sk_ws_opts o = opts(url);
    wconnect(loop, &c, &o);
    run_until(loop, &c.closes, 1, 10000);
    sk_log_set_sink(NULL, NULL);
    tap(c.closes == 1 && !c.opened && (strstr(c.error, "self-signed") || strstr(c.error, "certificate")),
           "wss without the CA fails with the TLS reason from the lws log: %s", c.error);
    tap(log_lines.len > 0 && strstr(log_lines.data, "lws") && !strstr(log_lines.data, TOKEN),
           "lws errors reach the core log sink, without secrets");

    memset(&c, 0, sizeof c);
    c.send_on_open = "x";
    o.insecure_skip_verify = true;
    wconnect(loop, &c, &o);
    run_until(loop, &c.closes, 1, 10000);
    tap(c.opens == 1 && c.msgs == 3 && c.code == 1000, "wss with insecure_skip_verify");

    memset(&c, 0, sizeof c);
    c.send_on_open = "x";
    snprintf(url, sizeof url, "wss://localhost:%d/ws/exec", s->tls_port);
    o = opts(url);
    o.ca_file = s->ca_file;
    wconnect(loop, &c, &o);
    run_until(loop, &c.closes, 1, 10000);
    tap(c.opens == 1 && c.msgs == 3 && c.code == 1000, "wss by host name (resolved, SNI and SAN DNS:localhost)");
}

static void test_closes(sk_loop *loop, const echo_server *s)
{
    char url[256];
    wcall c = { .send_on_open = "x", .close_after = 3 };
    snprintf(url, sizeof url, "ws://127.0.0.1:%d/bench", s->port);
    sk_ws_opts o = opts(url);
    wconnect(loop, &c, &o);
    run_until(loop, &c.closes, 1, 10000);
    json_t *e = wait_server_close(loop, s, "/bench");
    tap(c.closes == 1 && c.msgs == 3 && c.local && c.code == 1000 && c.error[0] == '\0',
           "client close: close callback after the peer's CLOSE (code %d, error '%s')", c.code, c.error);
    tap(e && json_integer_value(json_object_get(e, "code")) == 1000 &&
               strcmp(json_string_value(json_object_get(e, "reason")), "bye") == 0,
           "client close seen by the server as 1000 \"bye\" (got %lld)",
           e ? (long long)json_integer_value(json_object_get(e, "code")) : -1LL);
    json_decref(e);

    memset(&c, 0, sizeof c);
    snprintf(url, sizeof url, "ws://127.0.0.1:%d/deaf", s->port);
    o = opts(url);
    o.close_timeout_ms = 300;
    wconnect(loop, &c, &o);
    run_until(loop, &c.opens, 1, 10000);
    double t0 = sk_now_ms();
    sk_ws_close(c.ws, 1000, NULL);
    tap(sk_ws_send(c.ws, false, "late", 4) == -1, "send after close is refused");
    run_until(loop, &c.closes, 1, 10000);
    double took = sk_now_ms() - t0;
    tap(c.closes == 1 && c.code == 1006 && c.local && strstr(c.error, "no CLOSE") && took >= 250 && took < 5000,
           "unanswered close: hard close after the close timeout (%.0f ms): %s", took, c.error);

    memset(&c, 0, sizeof c);
    snprintf(url, sizeof url, "ws://127.0.0.1:%d/close?code=4001&reason=bye", s->port);
    o = opts(url);
    wconnect(loop, &c, &o);
    run_until(loop, &c.closes, 1, 10000);
    tap(c.closes == 1 && c.opened && c.code == 4001 && strcmp(c.reason, "bye") == 0 && !c.local && !c.error[0],
           "server close with code 4001 and reason");

    /* Codes that may not be sent are refused; a long reason is cut to fit. */
    memset(&c, 0, sizeof c);
    snprintf(url, sizeof url, "ws://127.0.0.1:%d/echo-reason", s->port);
    o = opts(url);
    wconnect(loop, &c, &o);
    run_until(loop, &c.opens, 1, 10000);
    char reason[300];
    memset(reason, 'r', sizeof reason - 1);
    reason[sizeof reason - 1] = '\0';
    int r1006 = sk_ws_close(c.ws, 1006, NULL), r5000 = sk_ws_close(c.ws, 5000, NULL);
    int rok = sk_ws_close(c.ws, 4000, reason);
    run_until(loop, &c.closes, 1, 10000);
    e = wait_server_close(loop, s, "/echo-reason");
    const char *got = e ? json_string_value(json_object_get(e, "reason")) : NULL;
    tap(r1006 == -1 && r5000 == -1 && rok == 0 && c.code == 4000 && got && strlen(got) == 123 &&
               json_integer_value(json_object_get(e, "code")) == 4000,
           "close codes 1006/5000 refused; 299-byte reason cut to 123 bytes");
    json_decref(e);

    memset(&c, 0, sizeof c);
    snprintf(url, sizeof url, "ws://127.0.0.1:%d/bench", s->port);
    o = opts(url);
    wconnect(loop, &c, &o);
    sk_ws_close(c.ws, 1000, NULL);
    run_until(loop, &c.closes, 1, 10000);
    tap(c.closes == 1 && c.opens == 0 && !c.opened && strstr(c.error, "before open"),
           "close before open: one close callback (%s)", c.error);
}

static void test_abort(sk_loop *loop, const echo_server *s)
{
    char url[256];
    wcall c = { .abort_after = 20 };
    snprintf(url, sizeof url, "ws://127.0.0.1:%d/flood", s->port);
    sk_ws_opts o = opts(url);
    wconnect(loop, &c, &o);
    run_until(loop, &c.msgs, 20, 10000);
    json_t *e = wait_server_close(loop, s, "/flood");
    int never = 0;
    run_until(loop, &never, 1, 200);
    tap(c.msgs == 20 && c.closes == 0 && e && json_integer_value(json_object_get(e, "code")) == 1006,
           "abort mid-stream (in a message callback): no more callbacks, server sees 1006 (msgs %d)", c.msgs);
    json_decref(e);

    wcall a = { 0 }, b = { .send_on_open = "x" };
    snprintf(url, sizeof url, "ws://127.0.0.1:%d/bench", s->port);
    o = opts(url);
    wconnect(loop, &a, &o);
    sk_ws_abort(a.ws); /* still resolving */
    wconnect(loop, &b, &o);
    run_until(loop, &b.msgs, 3, 10000);
    sk_ws_abort(b.ws); /* open, outside any callback */
    run_until(loop, &never, 1, 200);
    tap(a.opens == 0 && a.closes == 0 && b.msgs == 3 && b.closes == 0, "abort before open and after open: silent");
}

static void test_messages(sk_loop *loop, const echo_server *s)
{
    char url[256];
    wcall c = { 0 };
    snprintf(url, sizeof url, "ws://127.0.0.1:%d/frag", s->port);
    sk_ws_opts o = opts(url);
    wconnect(loop, &c, &o);
    run_until(loop, &c.msgs, 2, 10000);
    tap(c.msgs == 2 && !c.m[0].binary && strcmp(c.m[0].head, "hello, fragmented world") == 0 && c.m[1].binary &&
               c.m[1].len == 5 && memcmp(c.m[1].head, "\0\1\2\3\4", 5) == 0,
           "fragmented text and binary messages reassembled");
    sk_ws_close(c.ws, 1000, NULL);
    run_until(loop, &c.closes, 1, 10000);

    /* Queued before open, in order, including a 1 MiB binary. */
    memset(&c, 0, sizeof c);
    snprintf(url, sizeof url, "ws://127.0.0.1:%d/echo", s->port);
    o = opts(url);
    wconnect(loop, &c, &o);
    size_t big = 1 << 20;
    char *blob = malloc(big);
    for (size_t i = 0; i < big; i++)
        blob[i] = (char)(i * 7);
    int sent = 0;
    sent += sk_ws_send(c.ws, true, blob, big) == 0;
    for (int i = 0; i < 10; i++) {
        char t[16]; /* gcc -O1 sizes %d for any int */
        snprintf(t, sizeof t, "m%d", i);
        sent += sk_ws_send(c.ws, false, t, strlen(t)) == 0;
    }
    sent += sk_ws_send(c.ws, false, "", 0) == 0;
    bool queued = sk_ws_buffered(c.ws) == big + 20;
    run_until(loop, &c.msgs, 12, 15000);
    bool order = c.msgs == 12 && c.m[0].binary && c.m[0].len == big && memcmp(c.m[0].head, blob, 16) == 0;
    for (int i = 0; order && i < 10; i++) {
        char t[16]; /* gcc -O1 sizes %d for any int */
        snprintf(t, sizeof t, "m%d", i);
        order = !c.m[i + 1].binary && strcmp(c.m[i + 1].head, t) == 0;
    }
    tap(sent == 12 && queued && order && c.m[11].len == 0 && sk_ws_buffered(c.ws) == 0,
           "messages sent before open arrive in order (1 MiB binary, texts, empty text)");

    /* Larger than max_message: close 1009 and an error. */
    sk_ws_close(c.ws, 1000, NULL);
    run_until(loop, &c.closes, 1, 10000);
    memset(&c, 0, sizeof c);
    snprintf(url, sizeof url, "ws://127.0.0.1:%d/echo-limit", s->port);
    o.max_message = 1000;
    wconnect(loop, &c, &o);
    run_until(loop, &c.opens, 1, 10000);
    sk_ws_send(c.ws, true, blob, 2000);
    run_until(loop, &c.closes, 1, 10000);
    json_t *e = wait_server_close(loop, s, "/echo-limit");
    tap(c.closes == 1 && c.msgs == 0 && strstr(c.error, "limit") && e &&
               json_integer_value(json_object_get(e, "code")) == 1009,
           "message over max_message: not delivered, close 1009 (%s; msgs %d, server saw %lld)", c.error, c.msgs,
           e ? (long long)json_integer_value(json_object_get(e, "code")) : -1LL);
    json_decref(e);
    free(blob);
}

static void bench(sk_loop *loop, const echo_server *s, bool tls)
{
    char url[256];
    wcall c = { 0 };
    snprintf(url, sizeof url, "%s://127.0.0.1:%d/bench", tls ? "wss" : "ws", tls ? s->tls_port : s->port);
    sk_ws_opts o = opts(url);
    o.ca_file = s->ca_file;
    wconnect(loop, &c, &o);
    run_until(loop, &c.opens, 1, 10000);
    enum { N = 1000 };
    static double lat[N];
    int done = 0;
    for (int i = 0; i < N; i++) {
        double t0 = sk_now_ms();
        int want = c.msgs + 3;
        if (sk_ws_send(c.ws, false, "hi", 2) != 0 || !run_until(loop, &c.msgs, want, 5000))
            break;
        lat[i] = sk_now_ms() - t0;
        done++;
    }
    tap(done == N, "%s: %d round trips (send text, receive 3 frames)", tls ? "wss" : "ws", done);
    if (done == N) {
        qsort(lat, N, sizeof lat[0], cmp_double);
        tap_note("%s round trip: median %.0f us, p90 %.0f us", tls ? "wss" : "ws", lat[N / 2] * 1000,
                 lat[N * 9 / 10] * 1000);
    }
    sk_ws_close(c.ws, 1000, NULL);
    run_until(loop, &c.closes, 1, 10000);
}

/* http + ws + a child process in flight at once on one loop. */
typedef struct hcall {
    int done, status;
    char body[512];
} hcall;

static void h_done(sk_http *req, const sk_http_result *r, void *ud)
{
    (void)req;
    hcall *h = ud;
    h->status = r->status;
    snprintf(h->body, sizeof h->body, "%s", r->body ? r->body : "");
    h->done = 1;
}

typedef struct pcall {
    int done;
    int64_t status;
    int sig;
    sk_buf out, err;
} pcall;

static void p_output(sk_proc *p, int stream, const char *data, size_t len, void *ud)
{
    (void)p;
    pcall *c = ud;
    sk_buf_append(stream == 1 ? &c->out : &c->err, data, len);
}

static void p_exit(sk_proc *p, int64_t status, int sig, void *ud)
{
    (void)p;
    pcall *c = ud;
    c->status = status;
    c->sig = sig;
    c->done = 1;
}

static void test_combined(const echo_server *s)
{
    sk_loop *loop = sk_loop_new();
    char url[256], hurl[256];
    wcall w = { .send_on_open = "hello" };
    snprintf(url, sizeof url, "ws://127.0.0.1:%d/", s->port);
    sk_ws_opts o = opts(url);
    wconnect(loop, &w, &o);

    hcall h = { 0 };
    snprintf(hurl, sizeof hurl, "%s/hello", s->base);
    sk_http_request q = { .url = hurl };
    static const sk_http_callbacks hcb = { NULL, NULL, NULL, h_done };
    sk_http *hr = sk_http_start(loop, &q, &hcb, &h, NULL);

    pcall p = { 0 };
    char *argv[] = { "sh", "-c", "echo out; echo err >&2; exit 3", NULL };
    sk_proc_opts po = { .file = "sh", .argv = argv };
    sk_proc_callbacks pcb = { .output = p_output, .exit = p_exit };
    int uv_err = 0;
    sk_proc *proc = sk_proc_spawn(loop, &po, &pcb, &p, &uv_err);

    double t0 = sk_now_ms();
    int turns = 0;
    while (!(w.closes && h.done && p.done) && sk_now_ms() - t0 < 10000) {
        sk_loop_turn(loop, 100);
        turns++;
    }
    double took = sk_now_ms() - t0;
    tap(hr && proc && w.opens == 1 && w.msgs == 3 && w.code == 1000,
           "combined: ws exchange completed (3 frames, close 1000)");
    tap(h.done && h.status == 200 && strstr(h.body, "\"lastOfferedProtocols\":\"railway-shell, " TOKEN "\""),
           "combined: http GET completed (200)");
    tap(p.done && p.status == 3 && p.sig == 0 && p.out.len == 4 && strcmp(p.out.data, "out\n") == 0 &&
               p.err.len == 4 && strcmp(p.err.data, "err\n") == 0,
           "combined: child exit 3, stdout 'out', stderr 'err'");
    tap_note("combined run: %.1f ms, %d loop turns", took, turns);
    sk_proc_free(proc);
    sk_buf_free(&p.out);
    sk_buf_free(&p.err);

    /* The owners' contract: end connections, then free the loop. */
    wcall live = { 0 };
    snprintf(url, sizeof url, "ws://127.0.0.1:%d/bench", s->port);
    o = opts(url);
    wconnect(loop, &live, &o);
    run_until(loop, &live.opens, 1, 10000);
    sk_ws_abort(live.ws);
    double tf = sk_now_ms();
    sk_loop_free(loop);
    double free_ms = sk_now_ms() - tf;
    tap(live.closes == 0 && free_ms < 1000, "abort then sk_loop_free (http + ws services): %.1f ms", free_ms);

    /* Free a loop with a connection open and another one resolving: they
     * are dropped without callbacks, and the two-step lws destroy leaves
     * nothing behind (valgrind). */
    loop = sk_loop_new();
    wcall open = { 0 }, pending = { 0 };
    wconnect(loop, &open, &o);
    run_until(loop, &open.opens, 1, 10000);
    wconnect(loop, &pending, &o);
    tf = sk_now_ms();
    sk_loop_free(loop);
    free_ms = sk_now_ms() - tf;
    tap(open.opens == 1 && open.closes == 0 && pending.opens == 0 && pending.closes == 0 && free_ms < 1000,
           "sk_loop_free with live connections: dropped silently (%.1f ms)", free_ms);
}

static void test_cycles(const echo_server *s)
{
    char url[256];
    int good = 0;
    for (int i = 0; i < 10; i++) {
        sk_loop *loop = sk_loop_new();
        wcall c = { .send_on_open = "x" };
        bool tls = i % 2;
        snprintf(url, sizeof url, "%s://127.0.0.1:%d/", tls ? "wss" : "ws", tls ? s->tls_port : s->port);
        sk_ws_opts o = opts(url);
        o.ca_file = s->ca_file;
        /* http first on odd cycles: the hooks then run in the other order. */
        hcall h = { 0 };
        char hurl[256];
        snprintf(hurl, sizeof hurl, "%s/hello", s->base);
        sk_http_request q = { .url = hurl };
        static const sk_http_callbacks hcb = { NULL, NULL, NULL, h_done };
        if (tls)
            sk_http_start(loop, &q, &hcb, &h, NULL);
        wconnect(loop, &c, &o);
        if (!tls)
            sk_http_start(loop, &q, &hcb, &h, NULL);
        run_until(loop, &c.closes, 1, 10000);
        run_until(loop, &h.done, 1, 10000);
        good += c.msgs == 3 && c.code == 1000 && h.status == 200;
        sk_loop_free(loop);
    }
    tap(good == 10, "10 loop create/connect/exchange/free cycles (half over TLS) (%d good)", good);
}

int main(void)
{
    echo_server s;
    sk_loop *loop = echo_begin(&s);
    if (!loop)
        return tap_done();
    test_exchange(loop, &s, false);
    test_hello(loop, &s);
    test_exchange(loop, &s, true);
    test_rejections(loop, &s);
    test_tls_failures(loop, &s);
    test_closes(loop, &s);
    test_abort(loop, &s);
    test_messages(loop, &s);
    bench(loop, &s, false);
    bench(loop, &s, true);
    sk_loop_free(loop);
    test_combined(&s);
    test_cycles(&s);
    echo_stop(&s);
    sk_buf_free(&log_lines);
    return tap_done();
}
