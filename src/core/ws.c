/* libwebsockets 4.1.6 client on the shared libuv loop; see ws.h and
 * docs/protocols/event-core.md §2, §3, §4, §7 and §8 (context, connect, TLS, two-step
 * destroy, client close workaround).
 *
 * Lifetime: an sk_ws lives from sk_ws_connect until its close callback
 * returns (or sk_ws_abort). Host names are resolved with uv_getaddrinfo
 * first, because lws 4.1.6 as built by Debian resolves synchronously on the
 * loop; lws then connects to the address with the name as Host/SNI. The
 * lws wsi outlives us by a little: we detach from it (opaque user data
 * NULL) and let lws finish closing it on its own. */
#include "ws.h"

#include <arpa/inet.h>
#include <libwebsockets.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "log.h"

#define WS_PROTOCOL_NAME "sandkit-ws"
#define WS_DEFAULT_CLOSE_TIMEOUT_MS 2000
#define WS_DEFAULT_MAX_MESSAGE ((size_t)64 << 20)
#define WS_MAX_PROTOCOLS_LEN 8192
#define WS_MAX_EXTRA_HEADERS_LEN 8192
#define WS_LWS_WRITE_CLOSE 4 /* lws' private LWS_WRITE_CLOSE (docs/protocols/event-core.md §8) */
#define WS_LWS_TIMEOUT_SECS 60 /* lws connect/handshake steps; see ws_vhost_get */

/* One lws vhost per distinct CA file: lws keeps the client TLS context
 * (and so the trust store) per vhost. */
typedef struct ws_vhost {
    struct lws_vhost *vh;
    char *ca_file; /* NULL: system roots */
    struct ws_vhost *next;
} ws_vhost;

typedef struct ws_svc {
    sk_loop_hook hook;
    sk_loop *loop;
    struct lws_context *ctx; /* lws NULLs it once fully destroyed (pcontext) */
    ws_vhost *vhosts;
    int vhost_seq;
    sk_ws *conns;
    bool closing;
} ws_svc;

typedef struct ws_msg {
    struct ws_msg *next;
    bool binary;
    size_t len;
    unsigned char buf[]; /* LWS_PRE headroom, then the payload */
} ws_msg;

enum ws_state {
    WS_RESOLVING,  /* uv_getaddrinfo in flight */
    WS_CONNECTING, /* lws connecting / TLS / upgrade */
    WS_OPEN,
    WS_CLOSE_SENT, /* our CLOSE written; waiting for the peer's */
    WS_DONE
};

struct sk_ws {
    ws_svc *svc;
    struct lws *wsi;
    ws_vhost *vhost;
    sk_ws_callbacks cb;
    void *ud;
    /* connect parameters (owned copies) */
    char *host;        /* name or address, without brackets */
    char *host_header; /* Host: name[:port] */
    char *path;        /* path and query */
    char *where;       /* "ws://host:port/path" for messages: no query */
    char *protocols;
    char *extra;       /* "Name: value\r\n"... appended to the handshake */
    size_t extra_len;
    int port;
    bool tls, insecure;
    int close_timeout_ms;
    size_t max_message;
    uv_getaddrinfo_t gai;
    char addr[INET6_ADDRSTRLEN];
    /* state */
    enum ws_state state;
    bool opened;
    bool close_requested; /* sk_ws_close called (or a local protocol error) */
    bool local_close;
    bool aborted;
    int depth;            /* > 0 while a user callback of ours runs */
    ws_msg *q_head, *q_tail;
    size_t q_bytes;
    int close_code;
    char close_reason[123];
    size_t close_reason_len;
    sk_buf rx;
    bool rx_active, rx_binary, rx_skip;
    bool peer_closed;
    int peer_code;
    char peer_reason[124];
    int http_status;
    char *error;
    char selected[128];
    unsigned long log_mark;
    sk_ws *prev, *next;
};

/* ---- lws log routing ---------------------------------------------------- */

/* TLS failure reasons reach us only through the lws log, which has no
 * connection context: keep the last error/warning line of this thread and
 * attribute it to a connection that fails after it was logged. */
static _Thread_local char ws_log_last[256];
static _Thread_local unsigned long ws_log_seq;

static void ws_log_emit(int level, const char *line)
{
    sk_log_level l = (level & LLL_ERR)    ? SK_LOG_ERROR
                     : (level & LLL_WARN) ? SK_LOG_WARN
                     : (level & LLL_NOTICE) ? SK_LOG_INFO
                                            : SK_LOG_DEBUG;
    if (level & (LLL_ERR | LLL_WARN)) {
        size_t n = strnlen(line, sizeof ws_log_last - 1);
        memcpy(ws_log_last, line, n);
        while (n > 0 && (ws_log_last[n - 1] == '\n' || ws_log_last[n - 1] == '\r'))
            n--;
        ws_log_last[n] = '\0';
        ws_log_seq++;
    }
    sk_log(l, "lws", "%s", line);
}

/* ---- small helpers -------------------------------------------------------- */

static char *ws_strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static void ws_set_error(sk_ws *ws, const char *fmt, const char *detail)
{
    if (ws->error)
        return; /* the first failure is the cause */
    bool with_log = ws_log_seq != ws->log_mark && ws_log_last[0];
    size_t n = strlen(fmt) + strlen(ws->where) + (detail ? strlen(detail) : 0) +
               (with_log ? strlen(ws_log_last) + 4 : 0) + 8;
    ws->error = malloc(n);
    if (!ws->error)
        return;
    int k = snprintf(ws->error, n, fmt, ws->where, detail ? detail : "");
    if (with_log && k > 0 && (size_t)k < n)
        snprintf(ws->error + k, n - (size_t)k, " (%s)", ws_log_last);
}

static void ws_queue_free(sk_ws *ws)
{
    while (ws->q_head) {
        ws_msg *m = ws->q_head;
        ws->q_head = m->next;
        free(m);
    }
    ws->q_tail = NULL;
    ws->q_bytes = 0;
}

static void ws_unlink(sk_ws *ws)
{
    ws_svc *svc = ws->svc;
    if (ws->prev)
        ws->prev->next = ws->next;
    else if (svc->conns == ws)
        svc->conns = ws->next;
    if (ws->next)
        ws->next->prev = ws->prev;
    ws->prev = ws->next = NULL;
}

static void ws_free(sk_ws *ws)
{
    ws_queue_free(ws);
    sk_buf_free(&ws->rx);
    free(ws->host);
    free(ws->host_header);
    free(ws->path);
    free(ws->where);
    free(ws->protocols);
    free(ws->extra);
    free(ws->error);
    free(ws);
}

/* Stops lws from calling us about this connection and lets it die. */
static void ws_detach(sk_ws *ws)
{
    if (ws->wsi) {
        lws_set_opaque_user_data(ws->wsi, NULL);
        lws_set_timeout(ws->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
        ws->wsi = NULL;
    }
}

/* Delivers the close callback once, then frees (unless a callback of ours
 * is still on the stack: ws_leave frees then). */
static void ws_finish(sk_ws *ws)
{
    if (ws->state == WS_DONE)
        return;
    ws->state = WS_DONE;
    if (ws->wsi) {
        lws_set_opaque_user_data(ws->wsi, NULL);
        ws->wsi = NULL;
    }
    ws_unlink(ws);
    if (!ws->aborted && !ws->svc->closing) {
        sk_ws_close_info info = {
            .code = ws->peer_closed ? ws->peer_code : 1006,
            .reason = ws->peer_reason,
            .opened = ws->opened,
            .local = ws->local_close || (!ws->peer_closed && ws->error),
            .http_status = ws->http_status,
            .error = ws->error,
        };
        ws->depth++;
        ws->cb.close(ws, &info, ws->ud);
        ws->depth--;
    }
    if (ws->depth == 0)
        ws_free(ws);
}

/* Brackets a user callback; returns false when ws is gone or aborted. */
static bool ws_leave(sk_ws *ws)
{
    ws->depth--;
    if (ws->depth > 0)
        return !ws->aborted && ws->state != WS_DONE;
    if (ws->state == WS_DONE) {
        ws_free(ws);
        return false;
    }
    return !ws->aborted;
}

/* ---- per-loop service ----------------------------------------------------- */

static int ws_lws_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                           size_t len);

static const struct lws_protocols ws_protocols[] = {
    { WS_PROTOCOL_NAME, ws_lws_callback, 0, 0, 0, NULL, 0 },
    { NULL, NULL, 0, 0, 0, NULL, 0 },
};

static void ws_svc_shutdown(sk_loop_hook *hook, sk_loop *loop)
{
    ws_svc *svc = (ws_svc *)hook;
    svc->closing = true;
    for (sk_ws *ws = svc->conns, *next; ws; ws = next) {
        next = ws->next;
        ws->aborted = true;
        if (ws->state == WS_RESOLVING) {
            /* Freed by ws_on_resolved, which runs during the drain. */
            uv_cancel((uv_req_t *)&ws->gai);
            continue;
        }
        ws_detach(ws);
        ws_unlink(ws);
        ws->state = WS_DONE;
        if (ws->depth == 0)
            ws_free(ws);
    }
    /* Step 1 of the two-step destroy: starts closing lws' uv handles. */
    if (svc->ctx)
        lws_context_destroy(svc->ctx);
    sk_loop_set_service(loop, SK_SERVICE_WS, NULL);
}

static void ws_svc_finish(sk_loop_hook *hook, sk_loop *loop)
{
    (void)loop;
    ws_svc *svc = (ws_svc *)hook;
    /* Step 2, after the drain: frees the context and NULLs svc->ctx. */
    if (svc->ctx)
        lws_context_destroy(svc->ctx);
    while (svc->vhosts) {
        ws_vhost *v = svc->vhosts;
        svc->vhosts = v->next;
        free(v->ca_file);
        free(v);
    }
    free(svc);
}

typedef struct ws_handle_set {
    uv_handle_t **h;
    size_t n, cap;
    bool failed;
} ws_handle_set;

static void ws_handles_collect(uv_handle_t *h, void *arg)
{
    ws_handle_set *set = arg;
    if (set->n == set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 32;
        uv_handle_t **v = realloc(set->h, cap * sizeof *v);
        if (!v) {
            set->failed = true;
            return;
        }
        set->h = v;
        set->cap = cap;
    }
    set->h[set->n++] = h;
}

static void ws_handles_unref_new(uv_handle_t *h, void *arg)
{
    ws_handle_set *old = arg;
    for (size_t i = 0; i < old->n; i++)
        if (old->h[i] == h)
            return;
    uv_unref(h);
}

static ws_svc *ws_svc_get(sk_loop *loop)
{
    ws_svc *svc = sk_loop_service(loop, SK_SERVICE_WS);
    if (svc)
        return svc;
    svc = calloc(1, sizeof *svc);
    if (!svc)
        return NULL;
    svc->loop = loop;
    /* Process-wide in lws; sk_log filters by level (NOTICE -> info). */
    lws_set_log_level(LLL_ERR | LLL_WARN | LLL_NOTICE, ws_log_emit);

    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    void *foreign[1] = { sk_loop_uv(loop) };
    info.port = CONTEXT_PORT_NO_LISTEN;
    info.options = LWS_SERVER_OPTION_LIBUV | LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT |
                   LWS_SERVER_OPTION_EXPLICIT_VHOSTS;
    info.foreign_loops = foreign;
    info.pcontext = &svc->ctx;
    /* Room for long handshake headers (a JWT in the protocol list and in
     * Authorization): the request is built in the per-thread service buffer
     * and the offered list is kept in the header table. */
    info.pt_serv_buf_size = 32768;
    info.max_http_header_data = 16384;
    info.timeout_secs = WS_LWS_TIMEOUT_SECS; /* as the vhosts' (ws_vhost_get) */
    ws_handle_set before = { 0 };
    uv_walk(sk_loop_uv(loop), ws_handles_collect, &before);
    svc->ctx = lws_create_context(&info);
    if (!svc->ctx) {
        free(before.h);
        free(svc);
        return NULL;
    }
    /* lws' own timer, idle and wake-up pipe would keep the loop alive
     * forever; only live connections (their socket polls) should. */
    if (!before.failed)
        uv_walk(sk_loop_uv(loop), ws_handles_unref_new, &before);
    free(before.h);
    svc->hook.shutdown = ws_svc_shutdown;
    svc->hook.finish = ws_svc_finish;
    sk_loop_add_hook(loop, &svc->hook);
    sk_loop_set_service(loop, SK_SERVICE_WS, svc);
    return svc;
}

static ws_vhost *ws_vhost_get(ws_svc *svc, const char *ca_file)
{
    for (ws_vhost *v = svc->vhosts; v; v = v->next)
        if ((!v->ca_file && !ca_file) || (v->ca_file && ca_file && strcmp(v->ca_file, ca_file) == 0))
            return v;
    ws_vhost *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    if (ca_file && !(v->ca_file = ws_strdup(ca_file))) {
        free(v);
        return NULL;
    }
    char name[32];
    snprintf(name, sizeof name, "sk%d", svc->vhost_seq++);
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = CONTEXT_PORT_NO_LISTEN;
    info.vhost_name = name;
    info.protocols = ws_protocols;
    info.options = LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
    info.client_ssl_ca_filepath = ca_file;
    /* lws' own deadline for each connect and handshake step (default 5 s
     * here) must not cut in before the caller's (sk_ws_opts and the
     * providers' handshake_timeout_ms): with 1,000 sockets opening at once
     * on a busy server, handshakes wait longer than that and lws dropped
     * them as "connection closed". */
    info.timeout_secs = WS_LWS_TIMEOUT_SECS;
    info.connect_timeout_secs = WS_LWS_TIMEOUT_SECS;
    v->vh = lws_create_vhost(svc->ctx, &info);
    if (!v->vh) {
        free(v->ca_file);
        free(v);
        return NULL;
    }
    v->next = svc->vhosts;
    svc->vhosts = v;
    return v;
}

/* ---- sending --------------------------------------------------------------- */

static void ws_want_write(sk_ws *ws)
{
    if (ws->wsi && (ws->state == WS_OPEN))
        lws_callback_on_writable(ws->wsi);
}

/* Writes the head of the queue. false when the write failed (the
 * connection is being dropped). */
static bool ws_write_head(sk_ws *ws, struct lws *wsi)
{
    ws_msg *m = ws->q_head;
    ws->q_head = m->next;
    if (!ws->q_head)
        ws->q_tail = NULL;
    ws->q_bytes -= m->len;
    int n = lws_write(wsi, m->buf + LWS_PRE, m->len, m->binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT);
    free(m);
    if (n < 0) {
        ws_set_error(ws, "websocket %s: write failed%s", NULL);
        lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
        return false;
    }
    return true;
}

/* Our own CLOSE frame (docs/protocols/event-core.md §8): lws' close path would hard-close the
 * socket before the frame leaves. */
static void ws_write_close(sk_ws *ws, struct lws *wsi)
{
    unsigned char buf[LWS_PRE + 2 + sizeof ws->close_reason];
    unsigned char *p = buf + LWS_PRE;
    p[0] = (unsigned char)(ws->close_code >> 8);
    p[1] = (unsigned char)(ws->close_code & 0xff);
    memcpy(p + 2, ws->close_reason, ws->close_reason_len);
    int n = lws_write(wsi, p, 2 + ws->close_reason_len, (enum lws_write_protocol)WS_LWS_WRITE_CLOSE);
    ws->state = WS_CLOSE_SENT;
    if (n < 0) {
        lws_set_timeout(wsi, PENDING_TIMEOUT_CLOSE_ACK, LWS_TO_KILL_ASYNC);
        return;
    }
    lws_set_timer_usecs(wsi, (lws_usec_t)ws->close_timeout_ms * 1000);
}

static int ws_on_writeable(sk_ws *ws, struct lws *wsi)
{
    if (ws->state != WS_OPEN)
        return 0;
    if (ws->q_head) {
        if (ws_write_head(ws, wsi) && (ws->q_head || ws->close_requested))
            lws_callback_on_writable(wsi);
        return 0;
    }
    if (ws->close_requested)
        ws_write_close(ws, wsi);
    return 0;
}

/* Writes what is queued and our CLOSE now rather than on the next writable
 * callback: a caller that exits (or tears the peer down) right after
 * closing would otherwise leave the peer with no CLOSE at all (1006). Only
 * while lws holds no partial frame: a frame written behind one would be
 * taken for its continuation. What cannot go now goes when writable. */
static void ws_flush_close_now(sk_ws *ws)
{
    struct lws *wsi = ws->wsi;
    while (ws->state == WS_OPEN && ws->q_head && !lws_partial_buffered(wsi))
        if (!ws_write_head(ws, wsi))
            return;
    if (ws->state == WS_OPEN && !ws->q_head && !lws_partial_buffered(wsi))
        ws_write_close(ws, wsi);
    else if (ws->state == WS_OPEN)
        lws_callback_on_writable(wsi);
}

static void ws_request_close(sk_ws *ws, int code, const char *reason, size_t reason_len)
{
    ws->close_requested = true;
    ws->local_close = true;
    ws->close_code = code;
    /* A control frame carries at most 125 bytes: code + 123 of reason, cut
     * on a UTF-8 boundary. */
    if (reason_len > sizeof ws->close_reason) {
        reason_len = sizeof ws->close_reason;
        while (reason_len > 0 && ((unsigned char)reason[reason_len] & 0xc0) == 0x80)
            reason_len--;
    }
    memcpy(ws->close_reason, reason, reason_len);
    ws->close_reason_len = reason_len;
    if (ws->wsi && ws->state == WS_OPEN)
        ws_flush_close_now(ws);
}

/* ---- the lws protocol callback -------------------------------------------- */

static int ws_append_headers(sk_ws *ws, void *in, size_t len)
{
    char **p = in;
    if (ws->extra_len == 0)
        return 0;
    if (ws->extra_len >= len)
        return -1; /* lws fails the handshake */
    memcpy(*p, ws->extra, ws->extra_len);
    *p += ws->extra_len;
    return 0;
}

static void ws_on_receive(sk_ws *ws, struct lws *wsi, const void *in, size_t len)
{
    if (!ws->rx_active) {
        ws->rx_active = true;
        ws->rx_binary = lws_frame_is_binary(wsi) != 0;
        ws->rx_skip = ws->close_requested;
        sk_buf_reset(&ws->rx);
    }
    if (!ws->rx_skip) {
        if (ws->rx.len + len > ws->max_message) {
            ws->rx_skip = true;
            sk_buf_free(&ws->rx);
            char limit[48];
            snprintf(limit, sizeof limit, " of %zu bytes", ws->max_message);
            ws_set_error(ws, "websocket %s: message larger than the limit%s", limit);
            if (!ws->close_requested)
                ws_request_close(ws, 1009, "message too big", 15);
        } else if (sk_buf_append(&ws->rx, in, len) != 0) {
            ws->rx_skip = true;
            ws_set_error(ws, "websocket %s: out of memory%s", NULL);
            if (!ws->close_requested)
                ws_request_close(ws, 1011, "", 0);
        }
    }
    if (!lws_is_final_fragment(wsi))
        return;
    ws->rx_active = false;
    if (ws->rx_skip || !ws->cb.message)
        return;
    ws->depth++;
    ws->cb.message(ws, ws->rx_binary, ws->rx.len ? ws->rx.data : "", ws->rx.len, ws->ud);
    if (!ws_leave(ws))
        return;
    if (ws->rx.cap > (1u << 20))
        sk_buf_free(&ws->rx); /* do not pin a big buffer for the connection's life */
}

static int ws_lws_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in,
                           size_t len)
{
    (void)user;
    sk_ws *ws = wsi ? lws_get_opaque_user_data(wsi) : NULL;
    if (!ws)
        return 0;
    switch (reason) {
    case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER:
        return ws_append_headers(ws, in, len);

    case LWS_CALLBACK_CLIENT_FILTER_PRE_ESTABLISH:
        if (lws_hdr_copy(wsi, ws->selected, sizeof ws->selected, WSI_TOKEN_PROTOCOL) < 0)
            ws->selected[0] = '\0';
        return 0;

    case LWS_CALLBACK_CLIENT_ESTABLISHED:
        ws->opened = true;
        ws->state = WS_OPEN;
        ws->log_mark = ws_log_seq;
        if (ws->cb.open) {
            ws->depth++;
            ws->cb.open(ws, ws->selected, ws->ud);
            if (!ws_leave(ws))
                return 0;
        }
        if (ws->q_head || ws->close_requested)
            lws_callback_on_writable(wsi);
        return 0;

    case LWS_CALLBACK_CLIENT_RECEIVE:
        if (ws->state == WS_OPEN || ws->state == WS_CLOSE_SENT)
            ws_on_receive(ws, wsi, in, len);
        return 0;

    case LWS_CALLBACK_CLIENT_WRITEABLE:
        return ws_on_writeable(ws, wsi);

    case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE: {
        const unsigned char *p = in;
        ws->peer_closed = true;
        ws->peer_code = len >= 2 ? (p[0] << 8) | p[1] : 1005;
        size_t rl = len > 2 ? len - 2 : 0;
        if (rl >= sizeof ws->peer_reason)
            rl = sizeof ws->peer_reason - 1;
        if (rl)
            memcpy(ws->peer_reason, p + 2, rl);
        ws->peer_reason[rl] = '\0';
        return 0;
    }

    case LWS_CALLBACK_TIMER:
        /* The peer did not answer our CLOSE in time: drop the socket. */
        if (ws->state == WS_CLOSE_SENT && !ws->peer_closed) {
            char detail[48];
            snprintf(detail, sizeof detail, "%d ms", ws->close_timeout_ms);
            ws->log_mark = ws_log_seq;
            ws_set_error(ws, "websocket %s: no CLOSE from the peer within %s", detail);
            lws_set_timeout(wsi, PENDING_TIMEOUT_CLOSE_ACK, LWS_TO_KILL_ASYNC);
        }
        return 0;

    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR: {
        char detail[128];
        size_t n = in ? strnlen(in, len < sizeof detail ? len : sizeof detail - 1) : 0;
        memcpy(detail, in ? in : "", n);
        detail[n] = '\0';
        ws->http_status = (int)lws_http_client_http_response(wsi);
        if (ws->http_status == 101 || ws->http_status < 0)
            ws->http_status = 0;
        if (ws->close_requested && !ws->opened)
            ws_set_error(ws, "websocket %s: closed before open%s", NULL);
        else
            ws_set_error(ws, "websocket %s: connect failed: %s", n ? detail : "unknown error");
        ws_finish(ws);
        return 0;
    }

    case LWS_CALLBACK_CLIENT_CLOSED:
        ws_finish(ws);
        return 0;

    case LWS_CALLBACK_WSI_DESTROY:
        /* Backstop: lws freed the connection without telling us why. */
        if (!ws->opened)
            ws_set_error(ws, "websocket %s: connection closed%s", NULL);
        ws->wsi = NULL;
        ws_finish(ws);
        return 0;

    default:
        return 0;
    }
}

/* ---- connecting --------------------------------------------------------------- */

static void ws_start_lws(sk_ws *ws)
{
    struct lws_client_connect_info ci;
    memset(&ci, 0, sizeof ci);
    ci.context = ws->svc->ctx;
    ci.vhost = ws->vhost->vh;
    ci.address = ws->addr;
    ci.port = ws->port;
    ci.path = ws->path;
    ci.host = ws->host_header;
    ci.protocol = ws->protocols;
    ci.local_protocol_name = WS_PROTOCOL_NAME;
    ci.opaque_user_data = ws;
    ci.pwsi = &ws->wsi;
    ci.alpn = "http/1.1"; /* lws cannot do ws over h2 as a client */
    ci.ietf_version_or_minus_one = -1;
    if (ws->tls) {
        ci.ssl_connection = LCCSCF_USE_SSL;
        if (ws->insecure)
            ci.ssl_connection |= LCCSCF_ALLOW_SELFSIGNED | LCCSCF_SKIP_SERVER_CERT_HOSTNAME_CHECK |
                                 LCCSCF_ALLOW_EXPIRED | LCCSCF_ALLOW_INSECURE;
    }
    ws->state = WS_CONNECTING;
    ws->log_mark = ws_log_seq;
    ws->depth++; /* a synchronous failure must not free ws under us */
    struct lws *wsi = lws_client_connect_via_info(&ci);
    ws->depth--;
    if (ws->state == WS_DONE) {
        ws_free(ws); /* finished (and reported) inside the call */
        return;
    }
    if (!wsi) {
        ws->wsi = NULL;
        ws_set_error(ws, "websocket %s: connect failed%s", NULL);
        ws_finish(ws);
        return;
    }
    if (ws->aborted) /* aborted from inside the call: cannot happen, be safe */
        ws_detach(ws);
}

static void ws_on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    sk_ws *ws = req->data;
    if (ws->aborted || ws->svc->closing) {
        uv_freeaddrinfo(res);
        ws_unlink(ws);
        ws_free(ws);
        return;
    }
    if (status == 0 && res) {
        const void *a = res->ai_family == AF_INET6 ? (const void *)&((struct sockaddr_in6 *)res->ai_addr)->sin6_addr
                                                   : (const void *)&((struct sockaddr_in *)res->ai_addr)->sin_addr;
        if (!inet_ntop(res->ai_family, a, ws->addr, sizeof ws->addr))
            status = UV_EAI_FAIL;
    } else if (status == 0) {
        status = UV_EAI_NONAME;
    }
    uv_freeaddrinfo(res);
    if (ws->close_requested) {
        ws_set_error(ws, "websocket %s: closed before open%s", NULL);
        ws_finish(ws);
        return;
    }
    if (status != 0) {
        ws->log_mark = ws_log_seq;
        ws_set_error(ws, "websocket %s: cannot resolve host: %s", uv_strerror(status));
        ws_finish(ws);
        return;
    }
    ws_start_lws(ws);
}

/* ws[s]://host[:port][/path][?query] */
static const char *ws_parse_url(sk_ws *ws, const char *url, const char *path_override)
{
    const char *p;
    if (strncasecmp(url, "ws://", 5) == 0) {
        p = url + 5;
        ws->tls = false;
    } else if (strncasecmp(url, "wss://", 6) == 0) {
        p = url + 6;
        ws->tls = true;
    } else {
        return "URL scheme must be ws:// or wss://";
    }
    size_t alen = strcspn(p, "/?#");
    const char *auth_end = p + alen;
    if (memchr(p, '@', alen))
        return "user info in a websocket URL is not supported";
    const char *host = p, *host_end, *port_str = NULL;
    if (*p == '[') {
        host = p + 1;
        host_end = memchr(p, ']', alen);
        if (!host_end)
            return "invalid IPv6 host in URL";
        if (host_end + 1 < auth_end) {
            if (host_end[1] != ':')
                return "invalid URL authority";
            port_str = host_end + 2;
        }
    } else {
        host_end = memchr(p, ':', alen);
        if (host_end)
            port_str = host_end + 1;
        else
            host_end = auth_end;
    }
    if (host_end == host)
        return "missing host in URL";
    ws->port = ws->tls ? 443 : 80;
    bool explicit_port = false;
    if (port_str) {
        char *end;
        long port = strtol(port_str, &end, 10);
        if (end != auth_end || port <= 0 || port > 65535)
            return "invalid port in URL";
        ws->port = (int)port;
        explicit_port = ws->port != (ws->tls ? 443 : 80);
    }
    size_t hlen = (size_t)(host_end - host);
    ws->host = malloc(hlen + 1);
    if (!ws->host)
        return "out of memory";
    memcpy(ws->host, host, hlen);
    ws->host[hlen] = '\0';
    /* it becomes the Host header: no header injection from a lease's URL */
    if (strpbrk(ws->host, "\r\n \t"))
        return "invalid characters in URL host";

    const char *rest = auth_end;
    size_t rlen = strcspn(rest, "#");
    const char *src = path_override ? path_override : rest;
    size_t slen = path_override ? strlen(path_override) : rlen;
    ws->path = malloc(slen + 2);
    if (!ws->path)
        return "out of memory";
    size_t off = 0;
    if (slen == 0 || src[0] != '/')
        ws->path[off++] = '/';
    memcpy(ws->path + off, src, slen);
    ws->path[off + slen] = '\0';
    if (strpbrk(ws->path, "\r\n "))
        return "invalid characters in URL path";

    bool v6 = strchr(ws->host, ':') != NULL;
    size_t n = hlen + 16;
    ws->host_header = malloc(n);
    if (!ws->host_header)
        return "out of memory";
    if (explicit_port)
        snprintf(ws->host_header, n, v6 ? "[%s]:%d" : "%s:%d", ws->host, ws->port);
    else
        snprintf(ws->host_header, n, v6 ? "[%s]" : "%s", ws->host);

    size_t plen = strcspn(ws->path, "?");
    n = hlen + plen + 32;
    ws->where = malloc(n);
    if (!ws->where)
        return "out of memory";
    snprintf(ws->where, n, "%s://%s%s%s:%d%.*s", ws->tls ? "wss" : "ws", v6 ? "[" : "", ws->host,
             v6 ? "]" : "", ws->port, (int)plen, ws->path);
    return NULL;
}

static const char *ws_copy_headers(sk_ws *ws, const sk_ws_opts *o)
{
    sk_buf b = { 0 };
    for (size_t i = 0; i < o->n_headers; i++) {
        const char *name = o->headers[i].name, *value = o->headers[i].value;
        if (!name || !*name || !value || strpbrk(name, "\r\n: ") || strpbrk(value, "\r\n")) {
            sk_buf_free(&b);
            return "invalid header (empty name, or CR/LF/colon in it)";
        }
        if (sk_buf_appendf(&b, "%s: %s\r\n", name, value) != 0) {
            sk_buf_free(&b);
            return "out of memory";
        }
    }
    if (b.len > WS_MAX_EXTRA_HEADERS_LEN) {
        sk_buf_free(&b);
        return "extra headers too long";
    }
    ws->extra_len = b.len;
    ws->extra = b.len ? sk_buf_take(&b) : NULL;
    sk_buf_free(&b);
    return NULL;
}

sk_ws *sk_ws_connect(sk_loop *loop, const sk_ws_opts *o, const sk_ws_callbacks *cb, void *ud,
                     const char **errmsg)
{
    const char *err = NULL;
    sk_ws *ws = NULL;
    if (!loop || !o || !o->url || !cb || !cb->close) {
        err = "missing loop, url or close callback";
        goto fail;
    }
    if (o->protocols && (strlen(o->protocols) > WS_MAX_PROTOCOLS_LEN || strpbrk(o->protocols, "\r\n"))) {
        err = "invalid or too long protocol list";
        goto fail;
    }
    ws = calloc(1, sizeof *ws);
    if (!ws) {
        err = "out of memory";
        goto fail;
    }
    ws->cb = *cb;
    ws->ud = ud;
    ws->insecure = o->insecure_skip_verify;
    ws->close_timeout_ms = o->close_timeout_ms > 0 ? o->close_timeout_ms : WS_DEFAULT_CLOSE_TIMEOUT_MS;
    ws->max_message = o->max_message ? o->max_message : WS_DEFAULT_MAX_MESSAGE;
    if ((err = ws_parse_url(ws, o->url, o->path)) || (err = ws_copy_headers(ws, o)))
        goto fail;
    if (o->protocols && !(ws->protocols = ws_strdup(o->protocols))) {
        err = "out of memory";
        goto fail;
    }
    ws_svc *svc = ws_svc_get(loop);
    if (!svc) {
        err = "could not create the libwebsockets context (is libwebsockets-evlib-uv installed?)";
        goto fail;
    }
    if (svc->closing) {
        err = "loop is shutting down";
        goto fail;
    }
    ws->svc = svc;
    ws->vhost = ws_vhost_get(svc, o->ca_file);
    if (!ws->vhost) {
        err = "could not create the TLS client context (check ca_file)";
        goto fail;
    }
    /* Always resolve through libuv (numeric hosts return at once): lws would
     * block the loop on getaddrinfo, and connecting from a loop callback
     * keeps every callback out of this call. */
    ws->state = WS_RESOLVING;
    ws->gai.data = ws;
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = uv_getaddrinfo(sk_loop_uv(loop), &ws->gai, ws_on_resolved, ws->host, NULL, &hints);
    if (rc != 0) {
        err = "could not start resolving the host";
        goto fail;
    }
    ws->next = svc->conns;
    if (svc->conns)
        svc->conns->prev = ws;
    svc->conns = ws;
    return ws;
fail:
    if (ws)
        ws_free(ws);
    if (errmsg)
        *errmsg = err;
    return NULL;
}

int sk_ws_send(sk_ws *ws, bool binary, const void *data, size_t len)
{
    if (!ws || ws->aborted || ws->close_requested || ws->state >= WS_CLOSE_SENT || ws->peer_closed)
        return -1;
    ws_msg *m = malloc(sizeof *m + LWS_PRE + len);
    if (!m)
        return -1;
    m->next = NULL;
    m->binary = binary;
    m->len = len;
    if (len)
        memcpy(m->buf + LWS_PRE, data, len);
    if (ws->q_tail)
        ws->q_tail->next = m;
    else
        ws->q_head = m;
    ws->q_tail = m;
    ws->q_bytes += len;
    ws_want_write(ws);
    return 0;
}

/* Codes an endpoint may send (RFC 6455 §7.4): not 1004-1006, 1015. */
static bool ws_code_sendable(int code)
{
    return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999);
}

int sk_ws_close(sk_ws *ws, int code, const char *reason)
{
    if (code == 0)
        code = 1000;
    if (!ws || ws->aborted || ws->close_requested || ws->state == WS_DONE || !ws_code_sendable(code))
        return -1;
    reason = reason ? reason : "";
    size_t rl = strlen(reason);
    if (ws->state == WS_OPEN) {
        if (ws->peer_closed)
            ws->close_requested = true; /* the peer's close is already under way */
        else
            ws_request_close(ws, code, reason, rl);
        return 0;
    }
    ws->close_requested = true;
    ws->local_close = true;
    if (ws->state == WS_CONNECTING && ws->wsi) {
        ws->log_mark = ws_log_seq;
        ws_set_error(ws, "websocket %s: closed before open%s", NULL);
        /* lws reports the failed connection from the loop, then we finish. */
        lws_set_timeout(ws->wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
    } else if (ws->state == WS_RESOLVING) {
        uv_cancel((uv_req_t *)&ws->gai); /* ws_on_resolved sees close_requested */
    }
    return 0;
}

void sk_ws_abort(sk_ws *ws)
{
    if (!ws || ws->aborted || ws->state == WS_DONE)
        return;
    ws->aborted = true;
    if (ws->state == WS_RESOLVING) {
        uv_cancel((uv_req_t *)&ws->gai); /* ws_on_resolved frees it */
        return;
    }
    ws_detach(ws);
    ws_unlink(ws);
    ws->state = WS_DONE;
    if (ws->depth == 0)
        ws_free(ws);
}

size_t sk_ws_buffered(const sk_ws *ws) { return ws ? ws->q_bytes : 0; }
