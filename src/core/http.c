/* libcurl multi on the shared libuv loop (docs/protocols/event-core.md §5, §7); see http.h.
 * curl drives sockets through uv_poll handles and its timeouts through one
 * uv_timer. curl forbids multi calls from inside its own callbacks, so
 * starts and cancels made while curl is running (depth > 0) are deferred to
 * http_svc_flush, which runs once curl has returned to us.
 *
 * Multi handles (pools) per loop: curl 7.88 will reuse an idle HTTP/1.1
 * connection for an h2c prior-knowledge request to the same host:port and
 * then speak HTTP/2 on it, so h2c requests get a connection cache of their
 * own; h2 over TLS gets pools of its own, opened as bursts need them
 * (http_tls_pool). */
#include "http.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "buf.h"

#define HTTP_DEFAULT_TIMEOUT_MS 60000L
#define HTTP_MAX_STREAMS 10000L /* per connection; see http_svc_get */
/* Kicks in a row that deliver no header line, while a header block is
 * half delivered: enough to hand over the largest block we accept through
 * curl's smallest receive buffer (1 KiB), in pieces; see http_on_kick. */
#define HTTP_HEAD_KICKS_MAX (SK_HTTP_MAX_HEADER_BYTES / 1024 + 2)
#define HTTP_UPLOAD_BUFFER 16384L /* curl's least; see http_setup */
#define HTTP_BULK_BODY ((size_t)1 << 20)     /* a body this large gets... */
#define HTTP_BULK_UPLOAD_BUFFER (256L << 10) /* ...this upload buffer */
#define HTTP_DEADLINE_SLACK_MS 1000.0 /* see http_on_deadline */

typedef struct http_svc http_svc;
typedef struct http_pool http_pool;

/* A socket curl asked us to watch. */
typedef struct http_sock {
    uv_poll_t poll;
    curl_socket_t fd;
    http_pool *pool;
    unsigned kicked; /* the pool's kick round that last reported it; see http_on_kick */
    struct http_sock *prev, *next;
} http_sock;

/* Owned header lines: name and value point into one allocation per line. */
typedef struct http_hdrs {
    sk_http_header *v;
    size_t n, cap;
} http_hdrs;

/* h2 over TLS: a multi per HTTP_TLS_POOL_STREAMS streams in flight, at
 * most HTTP_TLS_POOLS of them; see http_tls_pool. */
#define HTTP_TLS_POOL_STREAMS 96
#define HTTP_TLS_POOLS 64
/* Sockets a pool remembers after curl stopped watching them; see http_h2c_conn_alive. */
#define HTTP_UNWATCHED 16
enum { HTTP_POOL_DEFAULT, HTTP_POOL_H2C, HTTP_POOL_TLS, HTTP_POOL_COUNT = HTTP_POOL_TLS + HTTP_TLS_POOLS };

struct http_pool {
    http_svc *svc;
    CURLM *multi;
    uv_timer_t timer;
    uv_timer_t kick;      /* see http_on_kick */
    bool kick_armed;
    bool delivered;       /* body bytes were delivered during this socket action */
    size_t partial_heads; /* transfers between their status line and the end of their headers */
    unsigned head_kicks;  /* kicks since the last header line; see http_on_kick */
    unsigned kick_round;  /* numbers the kicks, for http_sock.kicked */
    size_t n_added;       /* transfers handed to this multi and not yet removed */
    size_t n_load;        /* requests that chose this pool and are not freed yet; see http_tls_pool */
    int index;            /* in svc->pools */
    size_t h2c_connecting; /* of them, h2c openers whose request has not gone out yet; see http_h2c_mode */
    bool h2c_idle;        /* an h2c transfer ended well: its connection may wait in curl's cache */
    http_sock *socks;
    struct {
        int port;          /* local port */
        bool healthy;      /* no hang-up or error from the server when curl let it go */
    } unwatched[HTTP_UNWATCHED]; /* sockets curl stopped watching, newest at unwatched_next - 1 */
    unsigned unwatched_next;
};

/* Headers that many requests send alike, one copy for all of them: curl
 * only reads a header list, so each request's own lines end in a link to
 * the shared tail. See sk_http_request.shared_headers. */
typedef struct http_hdr_set {
    struct http_hdr_set *next;
    size_t refs;
    uint64_t hash;
    char *key; /* the lines, each ended by '\n' */
    size_t key_len;
    struct curl_slist *list;
} http_hdr_set;

struct http_svc {
    sk_loop_hook hook;
    sk_loop *loop;
    http_pool *pools[HTTP_POOL_COUNT]; /* the first n_pools are open; see http_pool_open */
    int n_pools;
    sk_http *reqs;     /* in flight, added to the multi */
    sk_http *pending;  /* started while curl was running, not yet added */
    sk_http *sending;  /* whose body curl may still be sending; see http_drop_upload_buffers */
    http_hdr_set *hdr_sets;
    int depth;         /* > 0 while inside curl_multi_socket_action */
    size_t late_cancels; /* cancelled while curl ran, still in reqs: http_svc_flush drops them */
    bool closing;
    uv_timer_t deadline;  /* see http_on_deadline */
    double deadline_at;   /* when it fires (sk_now_ms), 0 when idle */
};

enum http_phase { HTTP_PHASE_HEAD, HTTP_PHASE_BODY };
enum http_h2c_role { HTTP_H2C_NONE, HTTP_H2C_OPENER, HTTP_H2C_JOINER };

struct sk_http {
    http_svc *svc;
    http_pool *pool;
    CURL *easy;
    struct curl_slist *hdr_list; /* own lines; the last one links to hdr_set's */
    struct curl_slist *hdr_last;
    http_hdr_set *hdr_set;
    char *body; /* our copy of the request body; NULL when borrowed */
    char *what; /* "METHOD scheme://host:port/path" for error messages */
    sk_http_callbacks cb;
    void *ud;
    char errbuf[CURL_ERROR_SIZE];
    int status;
    enum http_phase phase;
    http_hdrs headers, trailers;
    sk_buf acc;  /* accumulated body (no data callback) */
    curl_off_t body_len;
    size_t max_body;
    double deadline; /* sk_now_ms by which it must have ended (timeout_ms), 0 = none */
    size_t header_bytes; /* of the current header block, or of the trailers */
    bool too_large;      /* the body or headers passed their cap: aborted */
    bool oom;            /* out of memory storing the response: aborted */
    bool added;      /* handed to curl_multi_add_handle */
    bool cancelled;
    bool in_done;
    bool sending;    /* on svc->sending */
    bool partial_head; /* counted in pool->partial_heads */
    enum http_h2c_role h2c; /* see http_h2c_mode */
    unsigned char h2c_refusals;
    bool h2c_refused; /* a joiner found no connection to join: comes back */
    bool h2c_went_out;       /* a joiner's request went out on a connection (since its last add) */
    bool h2c_server_refused; /* and the server did not process it (http_h2c_conn_alive) */
    int h2c_port;            /* local port of the connection it went out on */
    bool h2c_connecting;     /* an opener counted in pool->h2c_connecting */
    bool h2c_alone;          /* refused as a joiner, sent again on one connection of its own (http_complete) */
    sk_http *prev, *next; /* in svc->reqs or svc->pending */
    sk_http *sprev, *snext; /* in svc->sending */
};

static pthread_once_t http_global_once = PTHREAD_ONCE_INIT;
static CURLcode http_global_rc;

static void http_global_init(void) { http_global_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

/* ---- small helpers --------------------------------------------------- */

static void http_list_push(sk_http **head, sk_http *r)
{
    r->prev = NULL;
    r->next = *head;
    if (*head)
        (*head)->prev = r;
    *head = r;
}

static void http_list_unlink(sk_http **head, sk_http *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else if (*head == r)
        *head = r->next;
    if (r->next)
        r->next->prev = r->prev;
    r->prev = r->next = NULL;
}

static void http_sending_push(http_svc *svc, sk_http *r)
{
    r->sprev = NULL;
    r->snext = svc->sending;
    if (svc->sending)
        svc->sending->sprev = r;
    svc->sending = r;
    r->sending = true;
}

static void http_sending_unlink(http_svc *svc, sk_http *r)
{
    if (!r->sending)
        return;
    if (r->sprev)
        r->sprev->snext = r->snext;
    else
        svc->sending = r->snext;
    if (r->snext)
        r->snext->sprev = r->sprev;
    r->sprev = r->snext = NULL;
    r->sending = false;
}

static void http_hdrs_free(http_hdrs *h)
{
    for (size_t i = 0; i < h->n; i++)
        free((char *)h->v[i].name);
    free(h->v);
    h->v = NULL;
    h->n = h->cap = 0;
}

/* Parses "Name: value\r\n" into h; lines without a colon are ignored. */
static int http_hdrs_add_line(http_hdrs *h, const char *line, size_t len)
{
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    const char *colon = memchr(line, ':', len);
    if (!colon || colon == line)
        return 0;
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 16;
        sk_http_header *v = realloc(h->v, cap * sizeof *v);
        if (!v)
            return -1;
        h->v = v;
        h->cap = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    memcpy(copy, line, len);
    copy[len] = '\0';
    size_t nlen = (size_t)(colon - line);
    copy[nlen] = '\0';
    char *value = copy + nlen + 1;
    while (*value == ' ' || *value == '\t')
        value++;
    char *end = copy + len;
    while (end > value && (end[-1] == ' ' || end[-1] == '\t'))
        *--end = '\0';
    h->v[h->n].name = copy;
    h->v[h->n].value = value;
    h->n++;
    return 0;
}

const char *sk_http_header_get(const sk_http_header *h, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(h[i].name, name) == 0)
            return h[i].value;
    return NULL;
}

char *sk_url_escape(const char *s, const char *keep)
{
    static const char hex[] = "0123456789ABCDEF";
    char *out = malloc(strlen(s) * 3 + 1), *o = out;
    if (!out)
        return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                     strchr("-_.~", *p) || (keep && strchr(keep, *p));
        if (plain) {
            *o++ = (char)*p;
        } else {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        }
    }
    *o = '\0';
    return out;
}

const char *sk_http_err_name(sk_http_err err)
{
    switch (err) {
    case SK_HTTP_OK: return "ok";
    case SK_HTTP_ERR_TIMEOUT: return "timeout";
    case SK_HTTP_ERR_RESOLVE: return "resolve";
    case SK_HTTP_ERR_CONNECT: return "connect";
    case SK_HTTP_ERR_TLS: return "tls";
    case SK_HTTP_ERR_NETWORK: return "network";
    case SK_HTTP_ERR_PROTOCOL: return "protocol";
    case SK_HTTP_ERR_USAGE: return "usage";
    case SK_HTTP_ERR_OTHER: return "other";
    case SK_HTTP_ERR_TOO_LARGE: return "too_large";
    }
    return "other";
}

static sk_http_err http_err_of(CURLcode rc)
{
    switch (rc) {
    case CURLE_OK: return SK_HTTP_OK;
    case CURLE_OPERATION_TIMEDOUT: return SK_HTTP_ERR_TIMEOUT;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY: return SK_HTTP_ERR_RESOLVE;
    case CURLE_COULDNT_CONNECT: return SK_HTTP_ERR_CONNECT;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_USE_SSL_FAILED: return SK_HTTP_ERR_TLS;
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE: return SK_HTTP_ERR_NETWORK;
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_BAD_CONTENT_ENCODING:
    case CURLE_HTTP3: return SK_HTTP_ERR_PROTOCOL;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_BAD_FUNCTION_ARGUMENT:
    case CURLE_NOT_BUILT_IN: return SK_HTTP_ERR_USAGE;
    case CURLE_FILESIZE_EXCEEDED: return SK_HTTP_ERR_TOO_LARGE;
    default: return SK_HTTP_ERR_OTHER;
    }
}

/* "METHOD scheme://host[:port]/path": no user info, query or fragment,
 * which is where secrets end up in URLs. */
static char *http_describe(const char *method, const char *url)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL, *out = NULL;
    bool ok = u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
              curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
              curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK;
    if (ok) {
        (void)curl_url_get(u, CURLUPART_PORT, &port, 0);
        (void)curl_url_get(u, CURLUPART_PATH, &path, 0);
    }
    size_t n = strlen(method) + 64 + (ok ? strlen(scheme) + strlen(host) + (port ? strlen(port) : 0) +
                                               (path ? strlen(path) : 0)
                                         : 0);
    out = malloc(n);
    if (out) {
        if (ok)
            snprintf(out, n, "%s %s://%s%s%s%s", method, scheme, host, port ? ":" : "",
                     port ? port : "", path ? path : "/");
        else
            snprintf(out, n, "%s (unparsable URL)", method);
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_url_cleanup(u);
    return out;
}

/* ---- request lifetime ------------------------------------------------ */

/* A transfer between its status line and the end of its headers: see http_on_kick. */
static void http_partial_head(sk_http *r, bool on)
{
    if (r->partial_head == on)
        return;
    r->partial_head = on;
    if (on)
        r->pool->partial_heads++;
    else
        r->pool->partial_heads--;
}

static void http_hdr_set_unref(http_svc *svc, http_hdr_set *set)
{
    if (--set->refs > 0)
        return;
    for (http_hdr_set **p = &svc->hdr_sets; *p; p = &(*p)->next) {
        if (*p == set) {
            *p = set->next;
            break;
        }
    }
    curl_slist_free_all(set->list);
    free(set->key);
    free(set);
}

static void http_req_free(sk_http *r)
{
    if (r->pool) {
        http_partial_head(r, false);
        r->pool->n_load--;
    }
    if (r->svc)
        http_sending_unlink(r->svc, r);
    if (r->easy)
        curl_easy_cleanup(r->easy);
    if (r->hdr_last)
        r->hdr_last->next = NULL; /* the shared tail is not ours */
    curl_slist_free_all(r->hdr_list);
    if (r->hdr_set)
        http_hdr_set_unref(r->svc, r->hdr_set);
    http_hdrs_free(&r->headers);
    http_hdrs_free(&r->trailers);
    free(r->body);
    free(r->what);
    sk_buf_free(&r->acc);
    free(r);
}

/* An opener's connection is up (its request goes out), or it left. */
static void http_h2c_connected(sk_http *r)
{
    if (r->h2c_connecting) {
        r->h2c_connecting = false;
        r->pool->h2c_connecting--;
    }
}

/* r has left its multi. */
static void http_pool_removed(sk_http *r)
{
    r->pool->n_added--;
    http_h2c_connected(r);
}

/* Removes r from curl and from the svc lists, then frees it. Only at depth 0. */
static void http_req_drop(sk_http *r)
{
    http_svc *svc = r->svc;
    if (r->added) {
        curl_multi_remove_handle(r->pool->multi, r->easy);
        http_pool_removed(r);
        http_list_unlink(&svc->reqs, r);
    } else {
        http_list_unlink(&svc->pending, r);
    }
    http_req_free(r);
}

static void http_h2c_mode(sk_http *r, enum http_h2c_role role);
static bool http_h2c_conn_alive(http_pool *pool, int local_port);
static curl_socket_t http_h2c_alone_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *addr);
static int http_add(sk_http *r);
static void http_kick_soon(http_pool *pool);

static void http_complete(sk_http *r, CURLcode rc)
{
    http_svc *svc = r->svc;
    curl_multi_remove_handle(r->pool->multi, r->easy);
    r->added = false;
    http_pool_removed(r);
    http_list_unlink(&svc->reqs, r);
    if (r->cancelled) {
        http_req_free(r);
        return;
    }
    /* A joiner refused after its request went out is curl retrying it on
     * its own because the connection died: the server may have processed
     * it, so it is not sent again (unless the server said it had not). */
    bool replay = r->h2c_went_out && !r->h2c_server_refused;
    if (r->h2c_refused && rc == CURLE_COULDNT_CONNECT && !replay && !r->h2c_alone) {
        /* Nothing was sent: the same request again. While another opener is
         * on its way it waits for that connection (once); else it opens one. */
        r->h2c_refused = false;
        r->pool->h2c_idle = false;
        r->errbuf[0] = '\0';
        bool wait = r->pool->h2c_connecting > 0 && ++r->h2c_refusals < 2;
        http_h2c_mode(r, wait ? HTTP_H2C_JOINER : HTTP_H2C_OPENER);
        if (http_add(r) == 0)
            return;
    }
    /* curl retries a joiner's refused stream (REFUSED_STREAM, or a GOAWAY
     * naming a lower stream) by joining another live connection, five
     * times. A server's SETTINGS_MAX_CONCURRENT_STREAMS is unknown until
     * curl reads the server's SETTINGS, so in a burst each fresh connection
     * takes joiners past its limit and refuses them: a joiner can be
     * refused by one new connection after another and run out. Its
     * connection still up means the last refusal was the server's (see
     * http_h2c_conn_alive), so it goes once more as an opener: the first
     * stream on a connection of its own, within any limit but 0. Refused
     * there too, it ends (http_h2c_alone_socket): the server refuses all. */
    if (r->h2c == HTTP_H2C_JOINER && !r->h2c_alone && r->h2c_went_out && r->status == 0 && r->acc.len == 0 &&
        (rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR) && http_h2c_conn_alive(r->pool, r->h2c_port)) {
        r->h2c_alone = true;
        r->pool->h2c_idle = false;
        r->errbuf[0] = '\0';
        http_h2c_mode(r, HTTP_H2C_OPENER);
        curl_easy_setopt(r->easy, CURLOPT_OPENSOCKETFUNCTION, http_h2c_alone_socket);
        curl_easy_setopt(r->easy, CURLOPT_OPENSOCKETDATA, r);
        if (http_add(r) == 0)
            return;
    }
    if (rc == CURLE_OK && r->h2c != HTTP_H2C_NONE)
        r->pool->h2c_idle = true;
    if (rc != CURLE_OK)
        http_kick_soon(r->pool);
    sk_http_result res = { 0 };
    res.err = r->too_large ? SK_HTTP_ERR_TOO_LARGE : r->oom ? SK_HTTP_ERR_OTHER : http_err_of(rc);
    res.curl_code = (int)rc;
    if (res.err == SK_HTTP_ERR_TOO_LARGE) {
        res.headers_too_large = r->header_bytes > SK_HTTP_MAX_HEADER_BYTES;
        res.limit = res.headers_too_large ? SK_HTTP_MAX_HEADER_BYTES : r->max_body;
    }
    res.status = r->status;
    long v = 0;
    if (curl_easy_getinfo(r->easy, CURLINFO_HTTP_VERSION, &v) == CURLE_OK)
        res.http_version = v == CURL_HTTP_VERSION_1_0   ? 10
                           : v == CURL_HTTP_VERSION_1_1 ? 11
                           : v == CURL_HTTP_VERSION_2_0 ? 20
                                                        : 0;
    (void)curl_easy_getinfo(r->easy, CURLINFO_NUM_CONNECTS, &res.connects);
    res.headers = r->headers.v;
    res.n_headers = r->headers.n;
    res.trailers = r->trailers.v;
    res.n_trailers = r->trailers.n;
    if (!r->cb.data && res.err == SK_HTTP_OK) {
        res.body = r->acc.len ? r->acc.data : "";
        res.body_len = r->acc.len;
    }
    char msg[CURL_ERROR_SIZE + 512];
    if (res.err == SK_HTTP_ERR_TOO_LARGE) {
        sk_buf_free(&r->acc); /* give the memory back before the callback */
        snprintf(msg, sizeof msg, "%s: response %s larger than the limit of %zu bytes",
                 r->what ? r->what : "request", res.headers_too_large ? "headers" : "body",
                 res.limit);
        res.error = msg;
    } else if (r->oom) {
        sk_buf_free(&r->acc);
        snprintf(msg, sizeof msg, "%s: out of memory storing the response", r->what ? r->what : "request");
        res.error = msg;
    } else if (r->h2c_alone && r->h2c_refused) {
        res.err = SK_HTTP_ERR_NETWORK;
        snprintf(msg, sizeof msg,
                 "%s: the server refused the HTTP/2 stream (not processed) on every connection, also as the "
                 "first stream on one of its own",
                 r->what ? r->what : "request");
        res.error = msg;
    } else if (r->h2c_refused && replay) {
        res.err = SK_HTTP_ERR_NETWORK;
        snprintf(msg, sizeof msg,
                 "%s: the HTTP/2 connection failed after the request was sent; not sent again, as the "
                 "server may have processed it",
                 r->what ? r->what : "request");
        res.error = msg;
    } else if (rc != CURLE_OK) {
        /* errbuf holds curl's detail (host, port, reason), never headers. */
        if (r->errbuf[0])
            snprintf(msg, sizeof msg, "%s: %s: %s", r->what ? r->what : "request",
                     curl_easy_strerror(rc), r->errbuf);
        else
            snprintf(msg, sizeof msg, "%s: %s", r->what ? r->what : "request",
                     curl_easy_strerror(rc));
        res.error = msg;
    }
    r->in_done = true;
    if (r->cb.trailers && r->trailers.n > 0)
        r->cb.trailers(r, r->trailers.v, r->trailers.n, r->ud);
    r->cb.done(r, &res, r->ud);
    http_req_free(r);
}

static void http_check_info(http_pool *pool)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(pool->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        sk_http *r = NULL;
        CURLcode rc = msg->data.result;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
        if (r)
            http_complete(r, rc); /* may start/cancel others: all at depth 0 */
    }
}

static void http_on_deadline(uv_timer_t *t);
static void http_svc_flush(http_svc *svc);

static void http_deadline_arm(http_svc *svc, double deadline)
{
    if (deadline <= 0 || svc->closing)
        return;
    double at = deadline + HTTP_DEADLINE_SLACK_MS;
    if (svc->deadline_at > 0 && svc->deadline_at <= at)
        return;
    svc->deadline_at = at;
    double in = at - sk_now_ms();
    sk_timer_arm(&svc->deadline, http_on_deadline, in > 0 ? (uint64_t)in : 0, 0);
}

/* The caller's timeout_ms bounds the whole request, and curl enforces it
 * per attempt only: a joiner that http.c adds again (http_complete) starts
 * curl's clock over, and curl 7.88 does not time out a transfer at all
 * while it waits for a connection to multiplex on (CURLOPT_PIPEWAIT,
 * multi.c's PENDING state; seen as h2c calls to a silent server that
 * never ended). So a request still in flight a little after its deadline
 * ends here, as a timeout. */
static void http_on_deadline(uv_timer_t *t)
{
    http_svc *svc = t->data;
    svc->deadline_at = 0;
    if (svc->depth > 0)
        return; /* not reached: libuv runs timers outside curl */
    for (bool again = true; again && !svc->closing;) {
        again = false;
        double now = sk_now_ms();
        for (sk_http *r = svc->reqs; r; r = r->next) {
            if (r->deadline > 0 && !r->cancelled && r->deadline + HTTP_DEADLINE_SLACK_MS <= now) {
                r->h2c_refused = false;
                snprintf(r->errbuf, sizeof r->errbuf, "the request took longer than its timeout");
                http_complete(r, CURLE_OPERATION_TIMEDOUT); /* may start or cancel others: rescan */
                again = true;
                break;
            }
        }
    }
    http_svc_flush(svc);
    double next = 0;
    for (sk_http *r = svc->reqs; r; r = r->next)
        if (r->deadline > 0 && (next == 0 || r->deadline < next))
            next = r->deadline;
    http_deadline_arm(svc, next);
}

static int http_add(sk_http *r)
{
    http_svc *svc = r->svc;
    if (curl_multi_add_handle(r->pool->multi, r->easy) != CURLM_OK)
        return -1;
    r->added = true;
    http_deadline_arm(svc, r->deadline);
    r->pool->n_added++;
    if (r->h2c == HTTP_H2C_OPENER) {
        r->pool->h2c_connecting++;
        r->h2c_connecting = true;
    }
    http_list_push(&svc->reqs, r);
    return 0;
}

/* After curl returned to us: deliver completions, apply deferred cancels and
 * starts. Completions may queue more work, hence the loop. */
static void http_svc_flush(http_svc *svc)
{
    if (svc->depth > 0 || svc->closing)
        return;
    for (;;) {
        for (int i = 0; i < svc->n_pools; i++)
            http_check_info(svc->pools[i]);
        bool again = false;
        /* Walked only when there is something to find: with thousands of
         * streams in flight a walk per action cost a few percent of the
         * client's CPU (bench-scale). */
        if (svc->late_cancels > 0) {
            svc->late_cancels = 0;
            for (sk_http *r = svc->reqs, *next; r; r = next) {
                next = r->next;
                if (r->cancelled) {
                    http_req_drop(r);
                    again = true;
                }
            }
        }
        while (svc->pending) {
            sk_http *r = svc->pending;
            http_list_unlink(&svc->pending, r);
            if (r->cancelled) {
                http_req_free(r);
                continue;
            }
            if (http_add(r) != 0) {
                /* Report like any transfer failure: done still runs once. */
                sk_http_result res = { .err = SK_HTTP_ERR_OTHER, .curl_code = CURLE_OUT_OF_MEMORY,
                                       .error = "could not add the transfer to libcurl" };
                r->in_done = true;
                r->cb.done(r, &res, r->ud);
                http_req_free(r);
            }
            again = true;
        }
        if (!again)
            break;
    }
}

/* libcurl 7.88 keeps a transfer's upload buffer (16 KiB at the least,
 * CURLOPT_UPLOAD_BUFFERSIZE) until the transfer ends, though a request body
 * passes through it once: a gRPC stream waiting minutes for a command's
 * output held 16 KiB for a body of a hundred bytes, and such buffers were
 * the largest part of a Modal exec in flight (bench/scale.lua). Setting the
 * option again frees the buffer (setopt.c, "force a realloc next
 * opportunity"). We do that once curl counts the whole body as sent: it
 * then has stopped sending (transfer.c, readwrite_upload ends with
 * Curl_done_sending), the bytes were copied on (to the socket, or into
 * nghttp2's frames) and nothing points into the buffer; should curl send
 * again (a retried request) it allocates a new one. Checked against 7.88's
 * sources only, hence the version test. Runs at depth 0 after every
 * action; the list holds only transfers still sending, which is brief. */
static bool http_upload_buffer_held(void)
{
    unsigned v = curl_version_info(CURLVERSION_NOW)->version_num;
    return v >= 0x075800 && v < 0x080000;
}

static void http_drop_upload_buffers(http_svc *svc)
{
    for (sk_http *r = svc->sending, *next; r; r = next) {
        next = r->snext;
        curl_off_t sent = 0;
        if (!r->added || r->cancelled ||
            curl_easy_getinfo(r->easy, CURLINFO_SIZE_UPLOAD_T, &sent) != CURLE_OK || sent < r->body_len)
            continue;
        curl_easy_setopt(r->easy, CURLOPT_UPLOAD_BUFFERSIZE, HTTP_UPLOAD_BUFFER);
        http_sending_unlink(svc, r);
    }
}

/* ---- curl <-> libuv glue --------------------------------------------- */

static void http_socket_action(http_pool *pool, curl_socket_t fd, int flags);
static void http_on_timer(uv_timer_t *t);

/* curl 7.88 over HTTP/2 with the multi_socket API can leave frames it has
 * already read from a socket unprocessed: when a stream's buffer fills it
 * pauses nghttp2 with the rest of the read (more DATA, END_STREAM, the
 * trailers) still in its connection buffer, and its "data pending" check
 * never reports that buffer (the comparison is inverted; fixed by the
 * rewrite in curl 8.1). Nothing runs the stream again unless its socket
 * turns readable, which never happens once the server has sent everything:
 * the tail of the output is lost and the call hangs. curl's own timer does
 * not help even when it is due at once: it runs only the transfers that
 * expired, not the one holding the bytes. So after every action that
 * delivered body bytes we report each watched socket readable once more
 * (every transfer on it runs); spurious readiness is harmless to curl (it
 * reads EAGAIN). Header blocks stall the same way: curl copies a block
 * into the receive buffer in pieces, and calls us only per whole line, so a
 * line longer than the buffer (a long grpc-message) arrives in pieces that
 * deliver nothing we can see. While any transfer is between its status line
 * and the end of its headers, the rest of the block is already in curl's
 * memory (nghttp2 decodes a header block whole), so we keep kicking, at
 * most HTTP_HEAD_KICKS_MAX times without a new line (a server that never
 * finishes a block must not make us spin).
 * docs/reliability.md §"HTTP/2 stalls in libcurl 7.88". */
static void http_on_kick(uv_timer_t *t)
{
    http_pool *pool = t->data;
    pool->kick_armed = false;
    pool->head_kicks++;
    /* Every watched socket once (an h2c pool holds dozens of connections).
     * An action may close sockets or open new ones, so the walk starts over
     * after each and takes the first socket not yet reported this round:
     * quadratic in the sockets of one pool, which are few, and no memory
     * to allocate. */
    unsigned round = ++pool->kick_round;
    for (;;) {
        http_sock *s = pool->socks;
        while (s && s->kicked == round)
            s = s->next;
        if (!s || !pool->multi)
            break;
        s->kicked = round;
        http_socket_action(pool, s->fd, CURL_CSELECT_IN);
    }
}

/* A transfer failed, or a joiner's connection died: the other streams of
 * that connection may not have been told (curl 7.88 marks the connection
 * for closing in the transfer that saw the error; a stream waiting on it
 * for data then waits for its timeout, or for ever). One round of
 * readiness on every socket lets each notice. */
static void http_kick_soon(http_pool *pool)
{
    if (pool->kick_armed || !pool->socks || pool->svc->closing)
        return;
    pool->kick_armed = true;
    sk_timer_arm(&pool->kick, http_on_kick, 0, 0);
}

static void http_socket_action(http_pool *pool, curl_socket_t fd, int flags)
{
    http_svc *svc = pool->svc;
    int running = 0;
    pool->delivered = false;
    svc->depth++;
    curl_multi_socket_action(pool->multi, fd, flags, &running);
    svc->depth--;
    /* curl calls the timer callback only when its next expiry changes. A
     * libuv timer can fire a fraction of a millisecond before curl's clock
     * reaches that expiry (libuv counts whole ms of cached loop time); curl
     * then expires nothing, keeps the same expiry, says nothing, and with no
     * timer left armed the transfer waited forever (seen as a Modal stdio
     * read that never completed after its END_STREAM was in). So re-arm from
     * curl_multi_timeout whenever no timer is pending, 0 as 1 ms so that
     * time moves on. */
    long next_ms = -1;
    if (!svc->closing && !uv_is_active((uv_handle_t *)&pool->timer) &&
        curl_multi_timeout(pool->multi, &next_ms) == CURLM_OK && next_ms >= 0) {
        sk_timer_arm(&pool->timer, http_on_timer, (uint64_t)(next_ms > 0 ? next_ms : 1), 0);
    }
    bool head_stalled = pool->partial_heads > 0 && pool->head_kicks < HTTP_HEAD_KICKS_MAX;
    if ((pool->delivered || head_stalled) && running > 0 && !pool->kick_armed && !svc->closing) {
        pool->kick_armed = true;
        sk_timer_arm(&pool->kick, http_on_kick, 0, 0);
    }
    if (svc->sending && svc->depth == 0)
        http_drop_upload_buffers(svc);
    http_svc_flush(svc);
}

static void http_on_poll(uv_poll_t *h, int status, int events)
{
    http_sock *s = h->data;
    int flags = 0;
    if (status < 0)
        flags = CURL_CSELECT_ERR;
    else {
        if (events & UV_READABLE)
            flags |= CURL_CSELECT_IN;
        if (events & UV_WRITABLE)
            flags |= CURL_CSELECT_OUT;
    }
    http_socket_action(s->pool, s->fd, flags);
}

static void http_on_timer(uv_timer_t *t)
{
    http_socket_action(t->data, CURL_SOCKET_TIMEOUT, 0);
}

static void http_sock_free(uv_handle_t *h) { free(h->data); }

static int http_local_port(int fd)
{
    struct sockaddr_storage a;
    socklen_t len = sizeof a;
    if (getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        return -1;
    return a.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&a)->sin6_port)
           : a.ss_family == AF_INET ? ntohs(((struct sockaddr_in *)&a)->sin_port)
                                    : -1;
}

/* No hang-up or error from the peer (yet). */
static bool http_sock_healthy(int fd)
{
    struct pollfd p = { .fd = fd, .events = POLLIN | POLLRDHUP };
    return poll(&p, 1, 0) >= 0 && !(p.revents & (POLLERR | POLLHUP | POLLRDHUP | POLLNVAL));
}

static void http_sock_close(http_pool *pool, http_sock *s)
{
    unsigned k = pool->unwatched_next++ % HTTP_UNWATCHED;
    pool->unwatched[k].port = http_local_port(s->fd);
    pool->unwatched[k].healthy = http_sock_healthy(s->fd);
    if (s->prev)
        s->prev->next = s->next;
    else
        pool->socks = s->next;
    if (s->next)
        s->next->prev = s->prev;
    curl_multi_assign(pool->multi, s->fd, NULL);
    uv_poll_stop(&s->poll);
    uv_close((uv_handle_t *)&s->poll, http_sock_free);
}

static int http_curl_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
    (void)easy;
    http_pool *pool = userp;
    http_sock *s = socketp;
    if (what == CURL_POLL_REMOVE) {
        if (s)
            http_sock_close(pool, s);
        return 0;
    }
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s)
            return -1;
        if (uv_poll_init_socket(sk_loop_uv(pool->svc->loop), &s->poll, fd) != 0) {
            free(s);
            return -1;
        }
        s->fd = fd;
        s->pool = pool;
        s->poll.data = s;
        s->next = pool->socks;
        if (pool->socks)
            pool->socks->prev = s;
        pool->socks = s;
        curl_multi_assign(pool->multi, fd, s);
    }
    int events = 0;
    if (what & CURL_POLL_IN)
        events |= UV_READABLE;
    if (what & CURL_POLL_OUT)
        events |= UV_WRITABLE;
    return uv_poll_start(&s->poll, events, http_on_poll) == 0 ? 0 : -1;
}

static int http_curl_timer(CURLM *multi, long timeout_ms, void *userp)
{
    (void)multi;
    http_pool *pool = userp;
    if (timeout_ms < 0)
        uv_timer_stop(&pool->timer);
    else
        sk_timer_arm(&pool->timer, http_on_timer, (uint64_t)timeout_ms, 0);
    return 0;
}

/* ---- per-loop service ------------------------------------------------- */

static void http_svc_shutdown(sk_loop_hook *hook, sk_loop *loop)
{
    http_svc *svc = (http_svc *)hook;
    svc->closing = true;
    while (svc->reqs)
        http_req_drop(svc->reqs);
    while (svc->pending)
        http_req_drop(svc->pending);
    /* Every request held its set; none is left once they are gone. */
    while (svc->hdr_sets) {
        svc->hdr_sets->refs = 1;
        http_hdr_set_unref(svc, svc->hdr_sets);
    }
    for (int i = 0; i < svc->n_pools; i++) {
        http_pool *pool = svc->pools[i];
        /* Stop watching before curl closes its cached connections. */
        while (pool->socks)
            http_sock_close(pool, pool->socks);
        curl_multi_cleanup(pool->multi);
        pool->multi = NULL;
        uv_close((uv_handle_t *)&pool->timer, NULL);
        uv_close((uv_handle_t *)&pool->kick, NULL);
    }
    uv_close((uv_handle_t *)&svc->deadline, NULL);
    sk_loop_set_service(loop, SK_SERVICE_HTTP, NULL);
}

static void http_svc_finish(sk_loop_hook *hook, sk_loop *loop)
{
    (void)loop;
    http_svc *svc = (http_svc *)hook;
    for (int i = 0; i < svc->n_pools; i++)
        free(svc->pools[i]); /* their timers are closed by now */
    free(svc);
}

/* A pool on a new multi, not yet on the loop; NULL when out of memory. */
static http_pool *http_pool_new(void)
{
    http_pool *pool = calloc(1, sizeof *pool);
    if (pool && !(pool->multi = curl_multi_init())) {
        free(pool);
        return NULL;
    }
    return pool;
}

/* Makes pool the next pool of svc. Pools stay until the loop ends (their
 * handles close with it). */
static http_pool *http_pool_open(http_svc *svc, http_pool *pool)
{
    pool->index = svc->n_pools;
    svc->pools[svc->n_pools++] = pool;
    sk_loop *loop = svc->loop;
    CURLM *multi = pool->multi;
    pool->svc = svc;
    curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, http_curl_socket);
    curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, pool);
    curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, http_curl_timer);
    curl_multi_setopt(multi, CURLMOPT_TIMERDATA, pool);
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    /* libcurl's own cap is 100 streams per connection; past it every
     * further transfer opens a connection of its own (7.88 does not wait
     * for the one being set up), so a burst of a few hundred calls
     * opened hundreds of TLS connections. The server's
     * SETTINGS_MAX_CONCURRENT_STREAMS still applies. */
    curl_multi_setopt(multi, CURLMOPT_MAX_CONCURRENT_STREAMS, HTTP_MAX_STREAMS);
    uv_timer_init(sk_loop_uv(loop), &pool->timer);
    pool->timer.data = pool;
    uv_timer_init(sk_loop_uv(loop), &pool->kick);
    pool->kick.data = pool;
    return pool;
}

static http_svc *http_svc_get(sk_loop *loop)
{
    http_svc *svc = sk_loop_service(loop, SK_SERVICE_HTTP);
    if (svc)
        return svc;
    pthread_once(&http_global_once, http_global_init);
    if (http_global_rc != CURLE_OK)
        return NULL;
    svc = calloc(1, sizeof *svc);
    if (!svc)
        return NULL;
    svc->loop = loop;
    http_pool *fixed[HTTP_POOL_TLS];
    for (int i = 0; i < HTTP_POOL_TLS; i++) {
        if (!(fixed[i] = http_pool_new())) {
            while (i-- > 0) {
                curl_multi_cleanup(fixed[i]->multi);
                free(fixed[i]);
            }
            free(svc);
            return NULL;
        }
    }
    for (int i = 0; i < HTTP_POOL_TLS; i++)
        http_pool_open(svc, fixed[i]);
    uv_timer_init(sk_loop_uv(loop), &svc->deadline);
    svc->deadline.data = svc;
    /* A backstop only: it may stay armed past the requests it was armed
     * for, and must not keep the loop alive (sk_loop_alive) meanwhile. */
    uv_unref((uv_handle_t *)&svc->deadline);
    svc->hook.shutdown = http_svc_shutdown;
    svc->hook.finish = http_svc_finish;
    sk_loop_add_hook(loop, &svc->hook);
    sk_loop_set_service(loop, SK_SERVICE_HTTP, svc);
    return svc;
}

/* ---- curl callbacks for one request ----------------------------------- */

static size_t http_on_oom(sk_http *r)
{
    r->oom = true;
    return 0; /* aborts the transfer */
}

/* A Content-Length above the cap. */
static bool http_declared_too_large(const sk_http *r)
{
    const char *cl = sk_http_header_get(r->headers.v, r->headers.n, "content-length");
    if (!cl)
        return false;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(cl, &end, 10);
    return end != cl && (errno == ERANGE || n > r->max_body);
}

static size_t http_on_header(char *buf, size_t size, size_t nitems, void *userp)
{
    sk_http *r = userp;
    size_t len = size * nitems;
    if (r->cancelled)
        return 0; /* aborts the transfer */
    /* 7.88 copies an HTTP/2 header block (trailers too) into the receive
     * buffer in pieces and stalls between them as it does with bodies: a
     * grpc-message longer than a 1 KiB buffer hung the call. See
     * http_on_kick. */
    r->pool->delivered = true;
    r->pool->head_kicks = 0;
    if (len >= 5 && memcmp(buf, "HTTP/", 5) == 0) {
        /* Only HTTP/2 has the rest of the block in memory already. */
        if (len >= 6 && buf[5] == '2')
            http_partial_head(r, true);
        /* A new response block (after 1xx, or the first one). */
        const char *sp = memchr(buf, ' ', len);
        r->status = sp ? atoi(sp + 1) : 0;
        r->phase = HTTP_PHASE_HEAD;
        r->header_bytes = 0;
        http_hdrs_free(&r->headers);
        return len;
    }
    bool blank = len <= 2 && (len == 0 || buf[0] == '\r' || buf[0] == '\n');
    /* A header block (or trailer block) that never ends must not grow
     * without bound either. */
    r->header_bytes += len;
    if (r->header_bytes > SK_HTTP_MAX_HEADER_BYTES) {
        r->too_large = true;
        return 0;
    }
    if (r->phase == HTTP_PHASE_HEAD) {
        if (!blank)
            return http_hdrs_add_line(&r->headers, buf, len) == 0 ? len : http_on_oom(r);
        if (r->status >= 100 && r->status < 200)
            return len; /* interim; the final block follows */
        r->phase = HTTP_PHASE_BODY;
        http_partial_head(r, false);
        r->header_bytes = 0; /* from here on: the trailers */
        if (!r->cb.data && http_declared_too_large(r)) {
            r->too_large = true; /* fail before reading a byte of it */
            return 0;
        }
        if (r->cb.head)
            r->cb.head(r, r->status, r->headers.v, r->headers.n, r->ud);
        return r->cancelled ? 0 : len;
    }
    /* After the header block: trailers. */
    if (blank)
        return len;
    return http_hdrs_add_line(&r->trailers, buf, len) == 0 ? len : http_on_oom(r);
}

static size_t http_on_data(char *buf, size_t size, size_t nmemb, void *userp)
{
    sk_http *r = userp;
    size_t len = size * nmemb;
    if (r->cancelled)
        return 0;
    r->pool->delivered = true;
    if (r->cb.data) {
        r->cb.data(r, buf, len, r->ud);
        return r->cancelled ? 0 : len;
    }
    if (len > r->max_body - r->acc.len) {
        r->too_large = true;
        return 0;
    }
    return sk_buf_append(&r->acc, buf, len) == 0 ? len : http_on_oom(r);
}

/* ---- public API -------------------------------------------------------- */

static bool http_h2c_reuse_broken(void)
{
    return curl_version_info(CURLVERSION_NOW)->version_num < 0x080000;
}

/* curl 7.88 retries a joiner's request on a new connection (which we
 * refuse) both when the server refused its stream (RST_STREAM
 * REFUSED_STREAM, or a GOAWAY naming a lower stream: not processed, safe
 * to send again) and when the connection died under it (maybe processed);
 * it says which only in a debug build. A refused stream leaves the
 * connection up (the server goes on with its other streams, and curl
 * still watches its socket); a dead one is gone from our watch list, or
 * its socket reports a hang-up or an error. So: the joiner's connection
 * (by its local port, which curl hands the pre-request callback) still
 * up means refused; anything else counts as died. */
static bool http_h2c_conn_alive(http_pool *pool, int local_port)
{
    if (local_port <= 0)
        return false;
    for (http_sock *s = pool->socks; s; s = s->next)
        if (http_local_port(s->fd) == local_port)
            return http_sock_healthy(s->fd);
    /* Gone from the watch list: curl also closes a connection a refusal
     * marked unusable itself, once its other streams end. */
    for (unsigned i = 1; i <= HTTP_UNWATCHED; i++) {
        unsigned k = (pool->unwatched_next - i) % HTTP_UNWATCHED;
        if (pool->unwatched[k].port == local_port)
            return pool->unwatched[k].healthy;
    }
    return false;
}

static curl_socket_t http_h2c_refuse_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *addr)
{
    (void)purpose;
    (void)addr;
    sk_http *r = ud;
    r->h2c_refused = true;
    if (r->h2c_went_out) {
        r->h2c_server_refused = http_h2c_conn_alive(r->pool, r->h2c_port);
        r->pool->delivered = true; /* its connection may have died: kick the others on it (http_kick_soon) */
    }
    return CURL_SOCKET_BAD;
}

/* The connection of a request sent again alone (http_complete). Once the
 * request went out on it, curl asks for another only to retry a refused
 * stream (an opener's connection is fresh: curl retries nothing else
 * there), which would be a refusal of the first stream on a connection. */
static curl_socket_t http_h2c_alone_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *addr)
{
    (void)purpose;
    sk_http *r = ud;
    if (r->h2c_went_out) {
        r->h2c_refused = true;
        return CURL_SOCKET_BAD;
    }
    /* as curl opens one when no callback is set */
    curl_socket_t fd = socket(addr->family, addr->socktype, addr->protocol);
    if (fd != CURL_SOCKET_BAD)
        (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    return fd;
}

/* Called before a request goes out: an opener's on the connection it
 * made, a joiner's on the connection it joined. */
static int http_h2c_prereq(void *ud, char *ip, char *local_ip, int port, int local_port)
{
    (void)ip;
    (void)local_ip;
    (void)port;
    sk_http *r = ud;
    if (r->h2c == HTTP_H2C_OPENER) {
        http_h2c_connected(r);
        r->h2c_went_out = r->h2c_alone; /* see http_h2c_alone_socket */
        return CURL_PREREQFUNC_OK;
    }
    r->h2c_went_out = true;
    r->h2c_port = local_port;
    return CURL_PREREQFUNC_OK;
}

/* curl < 8.0 corrupts a reused h2c connection (curl issue #10634): a
 * prior-knowledge transfer that reuses one stacks a second HTTP/2 layer on
 * it, because the switch (Curl_http2_may_switch, called from Curl_http for
 * connections without ALPN) tests only what the transfer asked for, not
 * what the connection already speaks. A transfer that asks for
 * CURL_HTTP_VERSION_2TLS joins a live h2c connection as a plain new stream
 * instead (curl only needs httpwant >= 2.0 to pick an HTTP/2 connection,
 * url.c ConnectionExists). Left alone, such a transfer would open an
 * HTTP/1.1 connection when none is live, so its opensocket callback
 * refuses; it then comes back before a byte was sent (http_complete): as a
 * joiner once more while another opener is on its way, else as an opener
 * (prior knowledge, its own fresh connection). Openers never reuse, so none
 * ever takes the broken path, and joiners wait (PIPEWAIT) for an opener
 * still connecting. Which one a transfer starts as is only a guess (an h2c
 * transfer in flight, or one that ended well and left its connection in
 * curl's cache, means a connection to join, mostly); the refusal makes a
 * wrong guess cost a retry, never a request. */
static void http_h2c_mode(sk_http *r, enum http_h2c_role role)
{
    CURL *e = r->easy;
    bool join = role == HTTP_H2C_JOINER;
    r->h2c = role;
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION,
                     join ? (long)CURL_HTTP_VERSION_2TLS : (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
    curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, join ? 0L : 1L);
    curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, join ? http_h2c_refuse_socket : NULL);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, join ? r : NULL);
    curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, http_h2c_prereq);
    curl_easy_setopt(e, CURLOPT_PREREQDATA, r);
    r->h2c_went_out = r->h2c_server_refused = false;
}

static bool http_clean(const char *s)
{
    return s && !strpbrk(s, "\r\n");
}

/* Header h as curl takes it, appended to *out with a '\n' after it. */
static const char *http_header_line(const sk_http_header *h, sk_buf *out, bool *has_ctype)
{
    const char *name = h->name, *value = h->value;
    if (!http_clean(name) || !*name || strchr(name, ':') || (value && !http_clean(value)))
        return "invalid header (empty name, or CR/LF/colon in it)";
    if (strcasecmp(name, "content-type") == 0)
        *has_ctype = true;
    /* "Name:" removes a header curl would add itself; "Name;" is curl's
     * spelling of a header with an empty value. */
    const char *sep = !value ? ":" : *value ? ": " : ";";
    if (sk_buf_append(out, name, strlen(name)) != 0 || sk_buf_append(out, sep, strlen(sep)) != 0 ||
        (value && sk_buf_append(out, value, strlen(value)) != 0) || sk_buf_append(out, "\n", 1) != 0)
        return "out of memory";
    return NULL;
}

/* Appends each '\n'-ended line of lines to *list. */
static int http_list_lines(struct curl_slist **list, char *lines, size_t len)
{
    for (char *p = lines, *end = lines + len; p < end;) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        *nl = '\0';
        struct curl_slist *l = curl_slist_append(*list, p);
        *nl = '\n';
        if (!l)
            return -1;
        *list = l;
        p = nl + 1;
    }
    return 0;
}

static uint64_t http_fnv1a(const char *p, size_t n)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

/* The shared set with these lines (taken over), made if none has them yet. */
static http_hdr_set *http_hdr_set_get(http_svc *svc, sk_buf *lines)
{
    uint64_t hash = http_fnv1a(lines->data, lines->len);
    for (http_hdr_set *set = svc->hdr_sets; set; set = set->next) {
        if (set->hash == hash && set->key_len == lines->len && memcmp(set->key, lines->data, lines->len) == 0) {
            set->refs++;
            sk_buf_free(lines);
            return set;
        }
    }
    http_hdr_set *set = calloc(1, sizeof *set);
    if (!set || http_list_lines(&set->list, lines->data, lines->len) != 0) {
        if (set)
            curl_slist_free_all(set->list);
        free(set);
        return NULL;
    }
    set->refs = 1;
    set->hash = hash;
    set->key = lines->data;
    set->key_len = lines->len;
    *lines = (sk_buf){ 0 };
    set->next = svc->hdr_sets;
    svc->hdr_sets = set;
    return set;
}

static const char *http_headers(sk_http *r, const sk_http_request *q)
{
    bool has_ctype = false;
    const char *err = NULL;
    sk_buf own = { 0 }, shared = { 0 };
    for (size_t i = 0; i < q->n_headers && !err; i++)
        err = http_header_line(&q->headers[i], &own, &has_ctype);
    for (size_t i = 0; i < q->n_shared_headers && !err; i++)
        err = http_header_line(&q->shared_headers[i], &shared, &has_ctype);
    /* No 100-continue round trip; no form content type curl would invent. */
    if (!err && (sk_buf_append(&own, "Expect:\n", 8) != 0 ||
                 (q->body && !has_ctype && sk_buf_append(&own, "Content-Type:\n", 14) != 0)))
        err = "out of memory";
    if (!err && http_list_lines(&r->hdr_list, own.data, own.len) != 0)
        err = "out of memory";
    if (!err && shared.len > 0) {
        if (!(r->hdr_set = http_hdr_set_get(r->svc, &shared))) {
            err = "out of memory";
        } else {
            r->hdr_last = r->hdr_list;
            while (r->hdr_last->next)
                r->hdr_last = r->hdr_last->next;
            r->hdr_last->next = r->hdr_set->list;
        }
    }
    sk_buf_free(&own);
    sk_buf_free(&shared);
    return err;
}

static const char *http_setup(sk_http *r, const sk_http_request *q)
{
    CURL *e = r->easy;
    const char *method = q->method ? q->method : q->body ? "POST" : "GET";
    for (const char *m = method; *m; m++)
        if (!isupper((unsigned char)*m) && *m != '-' && *m != '_')
            return "invalid HTTP method";
    const char *herr = http_headers(r, q);
    if (herr)
        return herr;

    r->what = http_describe(method, q->url);
    if (!r->what)
        return "out of memory";

    curl_easy_setopt(e, CURLOPT_URL, q->url);
    curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)r);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, http_on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, http_on_data);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->hdr_list);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    /* Bodies are handed over whole (POSTFIELDS) and HTTP/2 frames are 16 KiB:
     * curl's default 64 KiB upload buffer per transfer only cost memory
     * (about half the heap of a Modal exec in flight, bench/scale.lua). A
     * bulk body (a file PUT) is the exception: curl sends one buffer per
     * socket action, so 16 KiB made a 100 MiB upload 6,400 loop turns
     * (curl's own tool uses 64 KiB). The buffer is freed once the body is
     * out (http_drop_upload_buffers), and is a quarter of a percent of it. */
    bool bulk = q->body && q->body_len >= HTTP_BULK_BODY;
    curl_easy_setopt(e, CURLOPT_UPLOAD_BUFFERSIZE, bulk ? HTTP_BULK_UPLOAD_BUFFER : HTTP_UPLOAD_BUFFER);
    if (q->recv_buffer_bytes)
        curl_easy_setopt(e, CURLOPT_BUFFERSIZE, q->recv_buffer_bytes > LONG_MAX ? LONG_MAX : (long)q->recv_buffer_bytes);
    long timeout = q->timeout_ms == 0 ? HTTP_DEFAULT_TIMEOUT_MS : q->timeout_ms < 0 ? 0 : q->timeout_ms;
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout);
    r->deadline = timeout > 0 ? sk_now_ms() + (double)timeout : 0;
    r->max_body = q->max_body_bytes ? q->max_body_bytes : SK_HTTP_DEFAULT_MAX_BODY;

    if (q->body) {
        const char *body = q->body;
        if (!q->body_borrowed) {
            r->body = malloc(q->body_len ? q->body_len : 1);
            if (!r->body)
                return "out of memory";
            memcpy(r->body, q->body, q->body_len);
            body = r->body;
        }
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q->body_len);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
        r->body_len = (curl_off_t)q->body_len;
        if (strcmp(method, "POST") != 0)
            curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    } else if (strcmp(method, "POST") == 0) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
    } else if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
    }

    if (q->ca_file)
        curl_easy_setopt(e, CURLOPT_CAINFO, q->ca_file);
    if (q->client_cert)
        curl_easy_setopt(e, CURLOPT_SSLCERT, q->client_cert);
    if (q->client_key)
        curl_easy_setopt(e, CURLOPT_SSLKEY, q->client_key);
    if (q->unix_socket)
        curl_easy_setopt(e, CURLOPT_UNIX_SOCKET_PATH, q->unix_socket);
    if (q->insecure_skip_verify) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    switch (q->version) {
    case SK_HTTP_DEFAULT:
        curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
        /* Over TLS, wait for ALPN to tell whether streams can share the
         * first connection. Not for http://: curl would queue behind a
         * busy HTTP/1.1 connection instead of opening another. */
        if (strncasecmp(q->url, "https://", 8) == 0)
            curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
        break;
    case SK_HTTP_1_1:
        curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
        break;
    case SK_HTTP_2_PRIOR_KNOWLEDGE:
        curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE);
        if (strncasecmp(q->url, "http://", 7) == 0 && http_h2c_reuse_broken()) {
            bool live = r->pool->n_added > 0 || r->pool->h2c_idle;
            http_h2c_mode(r, live ? HTTP_H2C_JOINER : HTTP_H2C_OPENER);
        } else {
            /* Concurrent streams wait for the one connection instead of opening more. */
            curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
        }
        break;
    default:
        return "invalid HTTP version";
    }
    return NULL;
}

/* The pool for an h2 request over TLS. curl 7.88 runs every transfer on a
 * connection for each event on its socket, and puts all the streams to one
 * origin on one connection: a burst of n calls cost O(n) per event, O(n²)
 * in all. Each pool is a multi of its own (its own connection cache), and
 * filling them in order keeps a connection at HTTP_TLS_POOL_STREAMS
 * streams at most, while a burst still opens one connection per pool (the
 * pool's first transfer connects, the others wait for it: PIPEWAIT).
 * Requests that come one at a time all stay in the first pool, on one
 * connection. The cap stays below 100: until the server's SETTINGS
 * arrive, 7.88 assumes it allows 100 streams, and a transfer past that
 * opens a connection of its own. docs/protocols/event-core.md §5 */
static http_pool *http_tls_pool(http_svc *svc)
{
    http_pool *least = NULL;
    for (int i = HTTP_POOL_TLS; i < svc->n_pools; i++) {
        http_pool *pool = svc->pools[i];
        if (pool->n_load < HTTP_TLS_POOL_STREAMS)
            return pool;
        if (!least || pool->n_load < least->n_load)
            least = pool;
    }
    http_pool *pool = svc->n_pools < HTTP_POOL_COUNT ? http_pool_new() : NULL;
    if (pool)
        return http_pool_open(svc, pool);
    return least ? least : svc->pools[HTTP_POOL_H2C];
}

sk_http *sk_http_start(sk_loop *loop, const sk_http_request *q, const sk_http_callbacks *cb,
                       void *ud, const char **errmsg)
{
    const char *err = NULL;
    sk_http *r = NULL;
    if (!loop || !q || !q->url || !cb || !cb->done) {
        err = "missing loop, url or done callback";
        goto fail;
    }
    http_svc *svc = http_svc_get(loop);
    if (!svc) {
        err = "could not initialise libcurl";
        goto fail;
    }
    if (svc->closing) {
        err = "loop is shutting down";
        goto fail;
    }
    r = calloc(1, sizeof *r);
    if (!r || !(r->easy = curl_easy_init())) {
        err = "out of memory";
        goto fail;
    }
    r->svc = svc;
    if (q->version != SK_HTTP_2_PRIOR_KNOWLEDGE)
        r->pool = svc->pools[HTTP_POOL_DEFAULT];
    else if (strncasecmp(q->url, "https://", 8) == 0)
        r->pool = http_tls_pool(svc);
    else
        r->pool = svc->pools[HTTP_POOL_H2C];
    r->pool->n_load++;
    /* A pool past the first exists for a burst: its connection closes
     * with its last stream rather than wait idle in its cache, where
     * nothing would drive that multi again to notice it closing. */
    if (r->pool->index > HTTP_POOL_TLS)
        curl_easy_setopt(r->easy, CURLOPT_FORBID_REUSE, 1L);
    r->cb = *cb;
    r->ud = ud;
    if ((err = http_setup(r, q)))
        goto fail;
    if (r->body_len > 0 && http_upload_buffer_held())
        http_sending_push(svc, r);
    if (svc->depth > 0) {
        http_list_push(&svc->pending, r);
        return r;
    }
    if (http_add(r) != 0) {
        err = "could not add the transfer";
        goto fail;
    }
    return r;
fail:
    if (r)
        http_req_free(r);
    if (errmsg)
        *errmsg = err;
    return NULL;
}

void sk_http_cancel(sk_http *r)
{
    if (!r || r->in_done || r->cancelled)
        return;
    r->cancelled = true;
    if (r->svc->depth == 0)
        http_req_drop(r);
    else if (r->added)
        r->svc->late_cancels++;
    /* else: http_svc_flush drops it once curl returns; callbacks see
     * r->cancelled and stay silent until then. */
}
