/* A raw connection to the daemon for the hijacked exec stream; see
 * docker_conn.h and docs/protocols/docker.md §3.
 *
 * Connect phase: a private multi (a hijacked connection is never reused,
 * so sharing http.c's connection cache buys nothing) with curl's sockets
 * on uv_poll handles and its timeout on a uv_timer. curl keeps the
 * CONNECT_ONLY connection while the easy handle stays in that multi
 * (removing it closes the connection), so it stays there until close.
 * Data phase: one uv_poll on the socket; curl_easy_recv until EAGAIN (a TLS
 * record may hold more than the socket shows), at most DK_READ_BUDGET bytes
 * per loop turn so a flooding daemon cannot starve the loop. Requires
 * curl_global_init done (http.c does it before the first request; a
 * sandbox makes requests before any exec). */
#include "docker_conn.h"

#include <curl/curl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "../../buf.h"

enum { DK_READ_CHUNK = 64 * 1024, DK_READ_BUDGET = 1024 * 1024 };

typedef enum { CONN_CONNECTING, CONN_OPEN, CONN_DONE } conn_state;

typedef struct conn_sock {
    uv_poll_t poll;
    curl_socket_t fd;
    dk_conn *c;
} conn_sock;

struct dk_conn {
    sk_loop *loop;
    CURLM *multi;
    CURL *easy;
    uv_timer_t timer;    /* curl's timeout while connecting, then the read continuation */
    uv_poll_t data;      /* the socket once connected */
    bool data_init;
    curl_socket_t fd;
    conn_state state;
    sk_buf out;          /* queued bytes; out_off of them already sent */
    size_t out_off;
    bool shut;           /* shutdown_write was asked for */
    bool shut_wanted;    /* and is still to be done once the queue is sent */
    int handles;         /* uv handles not yet closed */
    bool closing;        /* sk_dk_conn_close called */
    bool in_curl;        /* inside curl_multi_socket_action */
    dk_conn_callbacks cb;
    void *ud;
    char errbuf[CURL_ERROR_SIZE];
};

static void conn_maybe_free(dk_conn *c)
{
    if (!c->closing || c->handles > 0)
        return;
    if (c->multi && c->easy)
        curl_multi_remove_handle(c->multi, c->easy);
    if (c->easy)
        curl_easy_cleanup(c->easy);
    if (c->multi)
        curl_multi_cleanup(c->multi);
    sk_buf_free(&c->out);
    free(c);
}

static void conn_handle_closed(uv_handle_t *h)
{
    dk_conn *c = h->data;
    c->handles--;
    conn_maybe_free(c);
}

static void conn_sock_closed(uv_handle_t *h)
{
    conn_sock *s = h->data;
    dk_conn *c = s->c;
    free(s);
    c->handles--;
    conn_maybe_free(c);
}

/* Ends the stream: closed once (unless the caller already closed it). */
static void conn_end(dk_conn *c, const char *error)
{
    if (c->state == CONN_DONE)
        return;
    c->state = CONN_DONE;
    if (c->data_init)
        uv_poll_stop(&c->data);
    uv_timer_stop(&c->timer);
    if (!c->closing && c->cb.closed)
        c->cb.closed(c, error, c->ud);
}

static void conn_on_data(uv_poll_t *h, int status, int events);

static void conn_update_poll(dk_conn *c)
{
    if (c->state != CONN_OPEN || c->closing)
        return;
    int events = UV_READABLE;
    if (c->out.len > c->out_off || c->shut_wanted)
        events |= UV_WRITABLE;
    if (uv_poll_start(&c->data, events, conn_on_data) != 0)
        conn_end(c, "cannot watch the connection");
}

static void conn_flush(dk_conn *c)
{
    while (c->state == CONN_OPEN && c->out.len > c->out_off) {
        size_t n = 0;
        CURLcode rc = curl_easy_send(c->easy, c->out.data + c->out_off, c->out.len - c->out_off, &n);
        if (rc == CURLE_AGAIN)
            break;
        if (rc != CURLE_OK) {
            conn_end(c, curl_easy_strerror(rc));
            return;
        }
        c->out_off += n;
    }
    if (c->out_off == c->out.len) {
        sk_buf_reset(&c->out);
        c->out_off = 0;
        if (c->shut_wanted && c->state == CONN_OPEN) {
            c->shut_wanted = false;
            /* plain TCP and unix sockets: FIN. TLS: the daemon (Go's
             * crypto/tls) reads EOF at a record boundary too. */
            shutdown(c->fd, SHUT_WR);
        }
    }
    conn_update_poll(c);
}

static void conn_on_continue(uv_timer_t *t);

static void conn_read(dk_conn *c)
{
    char *buf = sk_loop_scratch(c->loop);
    if (!buf) {
        conn_end(c, "out of memory");
        return;
    }
    size_t budget = DK_READ_BUDGET;
    while (c->state == CONN_OPEN && !c->closing) {
        if (budget == 0) {
            /* more may wait inside curl (TLS) where poll cannot see it */
            uv_timer_start(&c->timer, conn_on_continue, 0, 0);
            return;
        }
        size_t n = 0;
        size_t want = budget < DK_READ_CHUNK ? budget : DK_READ_CHUNK;
        CURLcode rc = curl_easy_recv(c->easy, buf, want, &n);
        if (rc == CURLE_AGAIN)
            return;
        if (rc != CURLE_OK) {
            conn_end(c, curl_easy_strerror(rc));
            return;
        }
        if (n == 0) {
            conn_end(c, NULL);
            return;
        }
        budget -= n;
        if (c->cb.data)
            c->cb.data(c, buf, n, c->ud);
    }
}

static void conn_on_continue(uv_timer_t *t) { conn_read(t->data); }

static void conn_on_data(uv_poll_t *h, int status, int events)
{
    dk_conn *c = h->data;
    if (status < 0)
        events = UV_READABLE; /* an error on the socket: reading tells which, or EOF */
    if (events & UV_WRITABLE)
        conn_flush(c);
    if ((events & UV_READABLE) && c->state == CONN_OPEN && !c->closing) {
        uv_timer_stop(&c->timer);
        conn_read(c);
    }
}

/* ---- the connect phase --------------------------------------------------- */

static void conn_check_done(dk_conn *c)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(c->multi, &left))) {
        if (msg->msg != CURLMSG_DONE || c->state != CONN_CONNECTING)
            continue;
        CURLcode rc = msg->data.result;
        if (rc != CURLE_OK) {
            static char why[CURL_ERROR_SIZE + 64];
            snprintf(why, sizeof why, "%s%s%s", curl_easy_strerror(rc), c->errbuf[0] ? ": " : "", c->errbuf);
            conn_end(c, why);
            return;
        }
        curl_socket_t fd = CURL_SOCKET_BAD;
        if (curl_easy_getinfo(c->easy, CURLINFO_ACTIVESOCKET, &fd) != CURLE_OK || fd == CURL_SOCKET_BAD) {
            conn_end(c, "no socket after connecting");
            return;
        }
        c->fd = fd;
        /* curl has stopped watching it (its transfer is done): ours now */
        if (uv_poll_init_socket(sk_loop_uv(c->loop), &c->data, fd) != 0) {
            conn_end(c, "cannot watch the connection");
            return;
        }
        c->data.data = c;
        c->data_init = true;
        c->handles++;
        uv_timer_stop(&c->timer);
        c->state = CONN_OPEN;
        if (c->cb.connected)
            c->cb.connected(c, c->ud);
        if (c->state == CONN_OPEN && !c->closing)
            conn_flush(c);
        return;
    }
}

static void conn_action(dk_conn *c, curl_socket_t fd, int flags)
{
    int running = 0;
    c->in_curl = true;
    curl_multi_socket_action(c->multi, fd, flags, &running);
    c->in_curl = false;
    if (c->state == CONN_CONNECTING)
        conn_check_done(c);
}

static void conn_on_sock(uv_poll_t *h, int status, int events)
{
    conn_sock *s = h->data;
    int flags = 0;
    if (status < 0)
        flags = CURL_CSELECT_ERR;
    if (events & UV_READABLE)
        flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE)
        flags |= CURL_CSELECT_OUT;
    conn_action(s->c, s->fd, flags);
}

static void conn_on_timer(uv_timer_t *t)
{
    dk_conn *c = t->data;
    if (c->state == CONN_CONNECTING)
        conn_action(c, CURL_SOCKET_TIMEOUT, 0);
}

static int conn_curl_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
    (void)easy;
    dk_conn *c = userp;
    conn_sock *s = socketp;
    if (what == CURL_POLL_REMOVE) {
        if (s) {
            curl_multi_assign(c->multi, fd, NULL);
            uv_poll_stop(&s->poll);
            uv_close((uv_handle_t *)&s->poll, conn_sock_closed);
        }
        return 0;
    }
    if (!s) {
        if (!(s = calloc(1, sizeof *s)))
            return -1;
        if (uv_poll_init_socket(sk_loop_uv(c->loop), &s->poll, fd) != 0) {
            free(s);
            return -1;
        }
        s->fd = fd;
        s->c = c;
        s->poll.data = s;
        c->handles++;
        curl_multi_assign(c->multi, fd, s);
    }
    int events = 0;
    if (what & CURL_POLL_IN)
        events |= UV_READABLE;
    if (what & CURL_POLL_OUT)
        events |= UV_WRITABLE;
    return uv_poll_start(&s->poll, events, conn_on_sock) == 0 ? 0 : -1;
}

static int conn_curl_timer(CURLM *multi, long timeout_ms, void *userp)
{
    (void)multi;
    dk_conn *c = userp;
    if (c->state != CONN_CONNECTING)
        return 0;
    if (timeout_ms < 0)
        uv_timer_stop(&c->timer);
    else
        uv_timer_start(&c->timer, conn_on_timer, (uint64_t)timeout_ms, 0);
    return 0;
}

dk_conn *sk_dk_conn_open(sk_loop *loop, const dk_conn_opts *o, const dk_conn_callbacks *cb, void *ud,
                         const char **errmsg)
{
    dk_conn *c = calloc(1, sizeof *c);
    if (!c) {
        *errmsg = "out of memory";
        return NULL;
    }
    c->loop = loop;
    c->cb = *cb;
    c->ud = ud;
    c->fd = CURL_SOCKET_BAD;
    if (!(c->multi = curl_multi_init()) || !(c->easy = curl_easy_init())) {
        *errmsg = "out of memory";
        goto fail;
    }
    uv_timer_init(sk_loop_uv(loop), &c->timer);
    c->timer.data = c;
    c->handles++;
    CURL *e = c->easy;
    curl_easy_setopt(e, CURLOPT_URL, o->url);
    curl_easy_setopt(e, CURLOPT_CONNECT_ONLY, 1L);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->errbuf);
    if (o->connect_timeout_ms > 0)
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, o->connect_timeout_ms);
    if (o->unix_socket)
        curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, o->unix_socket);
    if (o->ca_file)
        curl_easy_setopt(e, CURLOPT_CAINFO, o->ca_file);
    if (o->client_cert)
        curl_easy_setopt(e, CURLOPT_SSLCERT, o->client_cert);
    if (o->client_key)
        curl_easy_setopt(e, CURLOPT_SSLKEY, o->client_key);
    if (o->insecure) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, conn_curl_socket);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, conn_curl_timer);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
    if (curl_multi_add_handle(c->multi, e) != CURLM_OK) {
        *errmsg = "could not add the connection";
        goto fail;
    }
    return c;
fail:
    c->closing = true;
    if (c->handles) {
        uv_close((uv_handle_t *)&c->timer, conn_handle_closed);
        return NULL;
    }
    conn_maybe_free(c);
    return NULL;
}

int sk_dk_conn_write(dk_conn *c, const void *data, size_t len)
{
    if (c->state == CONN_DONE || c->closing || c->shut)
        return -1;
    if (len && sk_buf_append(&c->out, data, len) != 0)
        return -1;
    conn_update_poll(c); /* sent when writable: no callback from inside this call */
    return 0;
}

void sk_dk_conn_shutdown_write(dk_conn *c)
{
    if (c->state == CONN_DONE || c->closing)
        return;
    if (c->shut)
        return;
    c->shut = c->shut_wanted = true;
    conn_update_poll(c);
}

size_t sk_dk_conn_pending(const dk_conn *c) { return c->out.len - c->out_off; }

void sk_dk_conn_close(dk_conn *c)
{
    if (!c || c->closing)
        return;
    c->closing = true;
    c->state = CONN_DONE;
    if (c->data_init) {
        uv_poll_stop(&c->data);
        uv_close((uv_handle_t *)&c->data, conn_handle_closed);
    }
    uv_timer_stop(&c->timer);
    uv_close((uv_handle_t *)&c->timer, conn_handle_closed);
    /* curl's connect-phase sockets: removing the transfer makes curl say
     * CURL_POLL_REMOVE for each (their polls close) and close the
     * connection */
    if (c->easy && c->multi && !c->in_curl) {
        curl_multi_remove_handle(c->multi, c->easy);
        curl_easy_cleanup(c->easy);
        c->easy = NULL;
    }
    conn_maybe_free(c);
}
