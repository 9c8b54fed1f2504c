/* The Modal client: auth, retries, router; see modal_client.h. Each logical
 * call is an mc_call that moves between waiting for a token or a router JWT,
 * an attempt in flight (one sk_grpc_call), and a backoff timer. */
#include "modal_client.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "../../compat.h"
#include "../../grpc.h"
#include "../../grpc_frame.h"
#include "../../log.h"
#include "modal_msg.h"
#include "../../secrets.h"

/* SDK constants (docs/protocols/modal.md §1.5, §1.6, §1.8). */
enum {
    MC_TOKEN_REFRESH_WINDOW_S = 300,
    MC_TOKEN_DEFAULT_EXPIRY_S = 1200,
    MC_JWT_REFRESH_WINDOW_S = 30,
    MC_CP_RETRIES = 3,
    MC_CP_BASE_DELAY_MS = 100,
    MC_CP_MAX_DELAY_MS = 1000,
    MC_STDIO_RETRIES = 10,
    MC_STDIO_BASE_DELAY_MS = 10,
    MC_STATUS_BASE_DELAY_MS = 10, /* see call_on_grpc_done (lost trailers) */
};

/* A server's retry_after beyond this is taken as this: 2^53 ms, about
 * 285,000 years, "forever" as the spec's unlimited wait has it, and still
 * an int64 (a float from the wire reaches 3.4e38 s). */
#define MC_SERVER_RETRY_MAX_MS 9007199254740992.0

/* Receive buffers of router calls; see call_attempt. */
#define MC_ROUTER_RECV_BUFFER 1024
#define MC_STDIO_RECV_BUFFER 4096
#define MC_STDERR_RECV_BUFFER 1024

const mc_retry sk_mc_retry_router = { .base_ms = 10, .factor = 2, .max_retries = 10 };

typedef enum { MC_CP, MC_CP_STREAM, MC_ROUTER, MC_STDIO } mc_kind;
typedef enum { MC_NEW, MC_WAIT_TOKEN, MC_WAIT_JWT, MC_FLIGHT, MC_SLEEP, MC_FAILING, MC_DONE } mc_state;

struct mc_call {
    mc_client *client;
    mc_router *router;       /* referenced (router and stdio calls) */
    mc_kind kind;
    mc_state state;
    char *rpc;
    sk_buf msg;              /* encoded request (stdio: rebuilt per attempt) */
    mc_reply_fn fn;
    mc_data_fn data;
    void *ud;
    sk_grpc_call *grpc;
    uv_timer_t *timer;
    int busy;                /* > 0 while a user callback runs */
    bool cancelled;
    /* control-plane retry middleware */
    char idem[37];
    int attempt, throttle;
    int64_t delay_ms, poll_ms;
    double start_ms;
    char *token;             /* auth token for every attempt of this call */
    bool soft_wait;          /* waiting on a refresh it may do without */
    /* router loops */
    mc_retry policy;
    int retries;
    bool auth_retried;
    bool status_retried; /* see call_on_grpc_done */
    int64_t status_delay_ms; /* the next wait after a lost grpc-status; see call_on_grpc_done */
    bool status_sleep;   /* sleeping after a lost grpc-status: sk_mc_call_wake may cut it short */
    /* stdio */
    char *exec_id;
    int fd;
    uint64_t offset;
    /* a failure decided before any attempt (delivered from a timer) */
    int fail_code;
    size_t fail_limit;        /* ResponseTooLargeError: the limit */
    char *fail_message;
    sk_error_kind fail_local; /* SK_ERR_NONE: a gRPC status */
    const char *fail_rpc;    /* the failure came from another call (static string) */
    mc_call *prev, *next;    /* client->calls */
    mc_call *wnext;          /* a waiter list */
};

struct mc_router {
    mc_client *client;
    int refs;
    char *task_id, *jwt, *url, *base_url;
    bool jwt_held; /* as a secret (secrets.h) */
    int64_t jwt_exp;         /* -1: unknown */
    mc_call *refresh;        /* TaskGetCommandRouterAccess in flight */
    mc_call *waiters;        /* calls waiting for it */
    mc_router *next;         /* client->routers */
};

struct mc_client {
    sk_loop *loop;
    sk_modal_config cfg;
    char *base_url;          /* cfg.server_url with a scheme */
    bool localhost;
    int64_t rpc_timeout_ms;
    char *token;
    bool token_held, cfg_held; /* as secrets (secrets.h) */
    size_t max_message;
    int64_t token_exp;
    mc_call *token_fetch;
    mc_call *token_waiters;
    mc_call *calls;
    mc_router *routers;
};

static void call_attempt(mc_call *call);
static void call_finish(mc_call *call, const mc_reply *r);

/* ---- small helpers ------------------------------------------------------ */

bool sk_mc_retryable(int code)
{
    return code == 1 || code == 2 || code == 4 || code == 13 || code == 14;
}

void sk_mc_uuid4(char out[37])
{
    uint8_t b[16];
    if (sk_random_bytes(b, sizeof b) != 0)
        for (size_t i = 0; i < sizeof b; i++)
            b[i] = (uint8_t)rand();
    b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
    b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
    static const char hex[] = "0123456789abcdef";
    int o = 0;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[o++] = '-';
        out[o++] = hex[b[i] >> 4];
        out[o++] = hex[b[i] & 15];
    }
    out[o] = '\0';
}

static int64_t mc_wall_s(void) { return (int64_t)time(NULL); }

static void mc_list_add(mc_client *c, mc_call *call)
{
    call->next = c->calls;
    if (c->calls)
        c->calls->prev = call;
    c->calls = call;
}

static void mc_list_remove(mc_client *c, mc_call *call)
{
    if (call->prev)
        call->prev->next = call->next;
    else if (c->calls == call)
        c->calls = call->next;
    if (call->next)
        call->next->prev = call->prev;
    call->prev = call->next = NULL;
}

static void mc_waiters_remove(mc_call **list, mc_call *call)
{
    for (mc_call **pp = list; *pp; pp = &(*pp)->wnext) {
        if (*pp == call) {
            *pp = call->wnext;
            call->wnext = NULL;
            return;
        }
    }
}

static void mc_waiters_push(mc_call **list, mc_call *call)
{
    call->wnext = NULL;
    while (*list)
        list = &(*list)->wnext;
    *list = call;
}

static void mc_timer_start(mc_call *call, int64_t ms, uv_timer_cb cb)
{
    if (sk_timer_start(call->client->loop, &call->timer, call, (uint64_t)(ms > 0 ? ms : 0), cb) != 0)
        abort(); /* a few bytes; nothing sensible to do without them */
}

static void call_free(mc_call *call)
{
    sk_timer_close(&call->timer);
    if (call->grpc)
        sk_grpc_cancel(call->grpc);
    if (call->router)
        sk_mc_router_unref(call->router);
    free(call->rpc);
    sk_buf_free(&call->msg);
    free(call->token);
    free(call->exec_id);
    free(call->fail_message);
    free(call);
}

/* Unlinks the call from everything that could call it back. */
static void call_detach(mc_call *call)
{
    mc_client *c = call->client;
    mc_list_remove(c, call);
    if (call->state == MC_WAIT_TOKEN)
        mc_waiters_remove(&c->token_waiters, call);
    if (call->state == MC_WAIT_JWT && call->router)
        mc_waiters_remove(&call->router->waiters, call);
    sk_timer_close(&call->timer);
    if (call->grpc) {
        sk_grpc_cancel(call->grpc);
        call->grpc = NULL;
    }
}

void sk_mc_call_cancel(mc_call *call)
{
    if (!call || call->cancelled || call->state == MC_DONE)
        return;
    call->cancelled = true;
    call_detach(call);
    if (call->busy == 0)
        call_free(call);
}

static mc_call *call_new(mc_client *c, mc_kind kind, const char *rpc, const sk_buf *msg, mc_reply_fn fn,
                         void *ud)
{
    mc_call *call = calloc(1, sizeof *call);
    if (!call)
        return NULL;
    call->client = c;
    call->kind = kind;
    call->fn = fn;
    call->ud = ud;
    call->rpc = strdup(rpc);
    if (!call->rpc || (msg && msg->len && sk_buf_append(&call->msg, msg->data, msg->len) != 0)) {
        free(call->rpc);
        sk_buf_free(&call->msg);
        free(call);
        return NULL;
    }
    sk_mc_uuid4(call->idem);
    call->start_ms = sk_now_ms();
    mc_list_add(c, call);
    return call;
}

/* Delivers r and frees the call. */
static void call_finish(mc_call *call, const mc_reply *r)
{
    call_detach(call);
    call->state = MC_DONE;
    call->busy++;
    call->fn(call->ud, r);
    call->busy--;
    call_free(call);
}

static void call_on_fail_timer(uv_timer_t *t)
{
    mc_call *call = t->data;
    mc_reply r = { .code = call->fail_code, .rpc = call->fail_rpc ? call->fail_rpc : call->rpc,
                   .message = call->fail_message ? call->fail_message : "", .local = call->fail_local,
                   .limit = call->fail_limit };
    call_finish(call, &r);
}

/* A failure decided by the client: delivered from the loop, never from the
 * function that got us here (which may be the caller's start function). */
static void call_fail_later(mc_call *call, int code, sk_error_kind local, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void call_fail_later(mc_call *call, int code, sk_error_kind local, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    free(call->fail_message);
    if (vasprintf(&call->fail_message, fmt, ap) < 0)
        call->fail_message = NULL;
    va_end(ap);
    call->fail_code = code;
    call->fail_local = local;
    if (call->grpc) {
        sk_grpc_cancel(call->grpc);
        call->grpc = NULL;
    }
    call->state = MC_FAILING;
    mc_timer_start(call, 0, call_on_fail_timer);
}

/* ---- client --------------------------------------------------------------- */

/* Hostname of a URL as WHATWG's URL reports it (IPv6 keeps its brackets). */
static char *mc_url_host(const char *url)
{
    const char *p = strstr(url, "://");
    p = p ? p + 3 : url;
    const char *at = NULL;
    for (const char *q = p; *q && *q != '/' && *q != '?' && *q != '#'; q++)
        if (*q == '@')
            at = q;
    if (at)
        p = at + 1;
    size_t n;
    if (*p == '[') {
        const char *end = strchr(p, ']');
        n = end ? (size_t)(end - p + 1) : strlen(p);
    } else {
        n = strcspn(p, ":/?#");
    }
    char *h = strndup(p, n);
    for (char *q = h; q && *q; q++)
        *q = (char)tolower((unsigned char)*q);
    return h;
}

static void mc_drop_token(mc_client *c)
{
    if (c->token && c->token_held)
        sk_secret_release(c->token);
    c->token_held = false;
    free(c->token);
    c->token = NULL;
}

mc_client *sk_mc_client_new(sk_loop *loop, sk_modal_config *cfg, int64_t rpc_timeout_ms)
{
    mc_client *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->loop = loop;
    c->cfg = *cfg;
    memset(cfg, 0, sizeof *cfg);
    if (sk_secret_hold(c->cfg.token_id) != 0) {
        sk_mc_client_free(c);
        return NULL;
    }
    if (sk_secret_hold(c->cfg.token_secret) != 0) {
        sk_secret_release(c->cfg.token_id);
        sk_mc_client_free(c);
        return NULL;
    }
    c->cfg_held = true;
    c->rpc_timeout_ms = rpc_timeout_ms;
    const char *url = c->cfg.server_url ? c->cfg.server_url : "";
    /* nice-grpc: no scheme means cleartext (docs/protocols/modal.md §1.2). */
    bool has_scheme = strstr(url, "://") != NULL;
    if (asprintf(&c->base_url, "%s%s", has_scheme ? "" : "http://", url) < 0)
        c->base_url = NULL;
    char *host = mc_url_host(url);
    if (!c->base_url || !host) {
        free(host);
        sk_mc_client_free(c);
        return NULL;
    }
    c->localhost = strcmp(host, "localhost") == 0 || strcmp(host, "127.0.0.1") == 0 ||
                   strcmp(host, "::1") == 0 || strcmp(host, "172.21.0.1") == 0;
    free(host);
    return c;
}

void sk_mc_client_free(mc_client *c)
{
    if (!c)
        return;
    /* Refresh calls are among c->calls and go below. */
    for (mc_router *r = c->routers; r; r = r->next)
        r->refresh = NULL;
    while (c->calls) {
        mc_call *call = c->calls;
        call->cancelled = true;
        call_detach(call);
        if (call->busy == 0)
            call_free(call);
    }
    /* Routers still referenced by someone are orphaned, not freed. */
    for (mc_router *r = c->routers; r; r = r->next)
        r->client = NULL;
    if (c->cfg_held) {
        sk_secret_release(c->cfg.token_id);
        sk_secret_release(c->cfg.token_secret);
    }
    sk_modal_config_free(&c->cfg);
    free(c->base_url);
    mc_drop_token(c);
    free(c);
}

void sk_mc_client_set_max_message(mc_client *c, size_t max) { c->max_message = max; }

const sk_modal_config *sk_mc_client_config(const mc_client *c) { return &c->cfg; }
bool sk_mc_client_localhost(const mc_client *c) { return c->localhost; }

/* ---- the auth token (AuthTokenManager) ---------------------------------------- */

static bool token_expired(const mc_client *c) { return mc_wall_s() >= c->token_exp; }
static bool token_needs_refresh(const mc_client *c)
{
    return mc_wall_s() >= c->token_exp - MC_TOKEN_REFRESH_WINDOW_S;
}

/* What the calls waiting for a token or a router JWT get: the fetch's
 * status, or a client-side failure when its answer is unusable. */
typedef struct mc_outcome {
    int code;
    const char *message;
    sk_error_kind local;
} mc_outcome;

static mc_outcome mc_outcome_of(const mc_reply *r) { return (mc_outcome){ r->code, r->message, r->local }; }

static void mc_outcome_fail(mc_outcome *o, const char *message)
{
    *o = (mc_outcome){ SK_GRPC_INTERNAL, message, SK_ERR_MODAL };
}

/* The first call of a detached waiter list, unlinked and ready to be
 * attempted again; NULL at the end. */
static mc_call *mc_waiter_pop(mc_call **list)
{
    mc_call *w = *list;
    if (w) {
        *list = w->wnext;
        w->wnext = NULL;
        w->state = MC_NEW;
    }
    return w;
}

static void token_on_fetched(void *ud, const mc_reply *r)
{
    mc_client *c = ud;
    c->token_fetch = NULL;
    mc_outcome o = mc_outcome_of(r);
    if (o.code == 0) {
        sk_modal_auth_token_get_response resp;
        if (sk_modal_decode_auth_token_get(r->data, r->len, &resp) != 0) {
            mc_outcome_fail(&o, "malformed AuthTokenGet response");
        } else if (!resp.token[0]) {
            mc_outcome_fail(&o, "Internal error: did not receive auth token from server, please contact Modal support");
            sk_modal_auth_token_get_response_free(&resp);
        } else {
            mc_drop_token(c);
            c->token = resp.token;
            c->token_held = sk_secret_hold(c->token) == 0;
            int64_t exp;
            if (sk_jwt_exp(c->token, &exp) == 0 && exp > 0) {
                c->token_exp = exp;
            } else {
                sk_log(SK_LOG_WARN, "modal", "x-modal-auth-token does not contain exp field");
                c->token_exp = mc_wall_s() + MC_TOKEN_DEFAULT_EXPIRY_S;
            }
        }
    }
    /* Detach the list first: continuing a waiter may start new calls. */
    mc_call *list = c->token_waiters;
    c->token_waiters = NULL;
    for (mc_call *w; (w = mc_waiter_pop(&list));) {
        bool usable = c->token && !token_expired(c);
        if (o.code == 0 || (w->soft_wait && usable)) {
            if (o.code != 0)
                sk_log(SK_LOG_WARN, "modal", "refreshing the auth token failed (%s); using the current one",
                       sk_grpc_code_name(o.code) ? sk_grpc_code_name(o.code) : "UNKNOWN");
            free(w->token);
            w->token = strdup(c->token);
            call_attempt(w);
        } else {
            w->fail_rpc = SK_MODAL_RPC_AUTH_TOKEN_GET; /* the SDK throws the fetch's error */
            w->fail_limit = r->limit;
            call_fail_later(w, o.code, o.local, "%s", o.message);
        }
    }
}

static void token_fetch_start(mc_client *c)
{
    if (c->token_fetch)
        return;
    sk_buf empty = { 0 };
    c->token_fetch = sk_mc_unary(c, SK_MODAL_RPC_AUTH_TOKEN_GET, &empty, 0, token_on_fetched, c);
}

/* authMiddleware's getToken(): continue now, or wait for a fetch. */
static void call_get_token(mc_call *call)
{
    mc_client *c = call->client;
    if (!c->token || token_expired(c)) {
        call->soft_wait = false;
    } else if (token_needs_refresh(c) && !c->token_fetch) {
        call->soft_wait = true; /* the caller that refreshes waits for it */
    } else {
        free(call->token);
        call->token = strdup(c->token);
        call_attempt(call);
        return;
    }
    call->state = MC_WAIT_TOKEN;
    mc_waiters_push(&c->token_waiters, call);
    token_fetch_start(c);
    if (!c->token_fetch) {
        mc_waiters_remove(&c->token_waiters, call);
        call_fail_later(call, SK_GRPC_INTERNAL, SK_ERR_MODAL, "out of memory");
    }
}

/* ---- attempts --------------------------------------------------------------- */

static void call_on_grpc_done(sk_grpc_call *g, const sk_grpc_outcome *o, void *ud);
static void call_on_grpc_message(sk_grpc_call *g, const uint8_t *data, size_t len, void *ud);

static void call_on_retry_timer(uv_timer_t *t)
{
    mc_call *call = t->data;
    call->state = MC_NEW;
    call->status_sleep = false;
    call_attempt(call);
}

static void call_sleep(mc_call *call, int64_t ms)
{
    call->state = MC_SLEEP;
    call->status_sleep = false;
    mc_timer_start(call, ms, call_on_retry_timer);
}

void sk_mc_call_wake(mc_call *call)
{
    if (!call || call->cancelled || call->state != MC_SLEEP || !call->status_sleep)
        return;
    call->status_sleep = false;
    mc_timer_start(call, 0, call_on_retry_timer); /* from the loop, not from our caller */
}

static void call_attempt(mc_call *call)
{
    mc_client *c = call->client;
    sk_http_header h[8], shared[8]; /* per call; the same for many calls */
    size_t n = 0, ns = 0;
    char attempt[16], throttle[16], delay[32], tdelay[32], bearer[8192];
    sk_grpc_request q = { .user_agent = MC_USER_AGENT, .message = call->msg.data,
                          .message_len = call->msg.len, .path = call->rpc, .ca_file = c->cfg.ca_file };
    if (call->kind == MC_CP || call->kind == MC_CP_STREAM) {
        /* Header order as the SDK's middleware writes them; the retry
         * middleware leaves streaming calls alone. */
        double elapsed = (sk_now_ms() - call->start_ms) / 1000.0;
        snprintf(attempt, sizeof attempt, "%d", call->attempt);
        snprintf(throttle, sizeof throttle, "%d", call->throttle);
        if (call->kind == MC_CP) {
            h[n++] = (sk_http_header){ "x-idempotency-key", call->idem };
            h[n++] = (sk_http_header){ "x-retry-attempt", attempt };
            h[n++] = (sk_http_header){ "x-throttle-retry-attempt", throttle };
        }
        if (call->kind == MC_CP && call->attempt > 0) {
            snprintf(delay, sizeof delay, "%.3f", elapsed);
            h[n++] = (sk_http_header){ "x-retry-delay", delay };
        }
        if (call->kind == MC_CP && call->throttle > 0) {
            snprintf(tdelay, sizeof tdelay, "%.3f", elapsed);
            h[n++] = (sk_http_header){ "x-throttle-retry-delay", tdelay };
        }
        shared[ns++] = (sk_http_header){ "x-modal-client-type", "8" };
        shared[ns++] = (sk_http_header){ "x-modal-client-version", "1.0.0" };
        shared[ns++] = (sk_http_header){ "x-modal-libmodal-version", "modal-js/" MC_SDK_VERSION };
        shared[ns++] = (sk_http_header){ "x-modal-token-id", c->cfg.token_id };
        shared[ns++] = (sk_http_header){ "x-modal-token-secret", c->cfg.token_secret };
        if (call->token && *call->token)
            shared[ns++] = (sk_http_header){ "x-modal-auth-token", call->token };
        q.base_url = c->base_url;
        if (c->rpc_timeout_ms > 0)
            q.timeout_ms = c->rpc_timeout_ms + call->poll_ms;
    } else {
        mc_router *r = call->router;
        if (!r->client) {
            call_fail_later(call, SK_GRPC_CANCELLED, SK_ERR_MODAL, "the Modal client was closed");
            return;
        }
        if (snprintf(bearer, sizeof bearer, "Bearer %s", r->jwt) >= (int)sizeof bearer) {
            call_fail_later(call, SK_GRPC_INTERNAL, SK_ERR_MODAL, "router JWT too long");
            return;
        }
        shared[ns++] = (sk_http_header){ "authorization", bearer };
        q.base_url = r->base_url;
        q.plaintext = c->localhost; /* docs/protocols/modal.md §1.8: h2c to an https router URL */
        if (call->kind == MC_STDIO) {
            sk_buf_reset(&call->msg);
            sk_modal_task_exec_stdio_read_request m = { .task_id = r->task_id, .exec_id = call->exec_id,
                                                        .offset = call->offset, .file_descriptor = call->fd };
            if (sk_modal_encode_task_exec_stdio_read(&call->msg, &m) != 0) {
                call_fail_later(call, SK_GRPC_INTERNAL, SK_ERR_MODAL, "out of memory");
                return;
            }
            q.message = call->msg.data;
            q.message_len = call->msg.len;
        } else {
            int64_t t = call->policy.attempt_timeout_ms;
            if (call->policy.deadline_ms > 0) {
                int64_t left = (int64_t)(call->policy.deadline_ms - sk_now_ms());
                if (left < 1)
                    left = 1;
                if (t <= 0 || left < t)
                    t = left;
            }
            q.timeout_ms = t;
        }
    }
    q.metadata = h;
    q.n_metadata = n;
    q.shared_metadata = shared;
    q.n_shared_metadata = ns;
    q.max_message_bytes = c->max_message;
    /* libcurl's receive buffer is held for the whole call, and an exec keeps
     * four calls in flight (bench/scale.lua). A router unary answer is a few
     * bytes; stdout carries bulk output, where 4 KiB costs no more CPU per
     * 10 MiB than curl's 16 KiB (1 KiB cost a fifth more); stderr is mostly
     * small, so it takes the fifth more when it is not. Control-plane calls
     * keep the default. */
    if (call->kind == MC_ROUTER)
        q.recv_buffer_bytes = MC_ROUTER_RECV_BUFFER;
    else if (call->kind == MC_STDIO)
        q.recv_buffer_bytes = call->fd == SK_MODAL_TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDERR ? MC_STDERR_RECV_BUFFER
                                                                                        : MC_STDIO_RECV_BUFFER;
    const char *err = NULL;
    static const sk_grpc_callbacks cp_cb = { .done = call_on_grpc_done };
    static const sk_grpc_callbacks stream_cb = { .message = call_on_grpc_message, .done = call_on_grpc_done };
    call->state = MC_FLIGHT;
    bool streaming = call->kind == MC_STDIO || call->kind == MC_CP_STREAM;
    call->grpc = sk_grpc_start(c->loop, &q, streaming ? &stream_cb : &cp_cb, call, &err);
    if (!call->grpc)
        call_fail_later(call, SK_GRPC_UNAVAILABLE, SK_ERR_MODAL, "%s", err ? err : "cannot start the call");
}

/* Server-directed throttling (JS >= 0.7.5): the retry delay in a
 * RPCRetryPolicy detail of grpc-status-details-bin, or -1. */
static int64_t call_server_retry_ms(const char *details_bin)
{
    if (!details_bin)
        return -1;
    sk_buf raw = { 0 };
    int64_t ms = -1;
    if (sk_grpc_base64_decode(details_bin, strlen(details_bin), &raw) == 0) {
        sk_modal_status_details d;
        if (sk_modal_decode_status_details(raw.data ? raw.data : "", raw.len, &d) == 0) {
            if (d.has_retry_after) {
                /* the server's float may be NaN, infinite or past any
                 * int64 (3.4e38 s): converting such a value is undefined */
                double v = (double)d.retry_after_secs * 1000.0;
                if (!(v > MC_CP_BASE_DELAY_MS))
                    v = MC_CP_BASE_DELAY_MS;
                else if (v > MC_SERVER_RETRY_MAX_MS)
                    v = MC_SERVER_RETRY_MAX_MS;
                ms = (int64_t)v;
            }
            sk_modal_status_details_free(&d);
        }
    }
    sk_buf_free(&raw);
    return ms;
}

static void router_refresh(mc_call *call);

static void call_on_grpc_message(sk_grpc_call *g, const uint8_t *data, size_t len, void *ud)
{
    (void)g;
    mc_call *call = ud;
    if (call->kind == MC_CP_STREAM) {
        call->busy++;
        call->data(call->ud, data, len);
        call->busy--;
        if (call->cancelled && call->busy == 0)
            call_free(call);
        return;
    }
    const uint8_t *chunk;
    size_t clen;
    if (sk_modal_decode_task_exec_stdio_chunk(data, len, &chunk, &clen) != 0) {
        call->grpc = NULL; /* freed by grpc.c once we return */
        sk_grpc_cancel(g);
        call_fail_later(call, SK_GRPC_INTERNAL, SK_ERR_MODAL, "malformed TaskExecStdioRead response");
        return;
    }
    call->delay_ms = MC_STDIO_BASE_DELAY_MS;
    call->auth_retried = false;
    if (clen == 0)
        return;
    call->offset += clen;
    call->busy++;
    call->data(call->ud, chunk, clen);
    call->busy--;
    if (call->cancelled && call->busy == 0) {
        /* call_detach already cancelled the grpc call (deferred by grpc.c). */
        call_free(call);
    }
}

static void call_on_grpc_done(sk_grpc_call *g, const sk_grpc_outcome *o, void *ud)
{
    (void)g;
    mc_call *call = ud;
    call->grpc = NULL;
    mc_reply r = { .code = o->code, .rpc = call->rpc, .message = o->message,
                   .data = o->response, .len = o->response_len };
    if (o->too_large) {
        /* the same server would answer the same again: no retry */
        r.local = SK_ERR_RESPONSE_TOO_LARGE;
        r.limit = o->limit;
        call_finish(call, &r);
        return;
    }
    if (o->code == 0) {
        if ((call->kind == MC_CP || call->kind == MC_ROUTER) && o->messages != 1) {
            r.code = SK_GRPC_INTERNAL;
            r.message = o->messages ? "unary response had more than one message" : "no response message";
            r.local = SK_ERR_MODAL;
        }
        call_finish(call, &r);
        return;
    }
    if (call->kind == MC_CP_STREAM) {
        call_finish(call, &r); /* streams are never retried by the middleware */
        return;
    }
    if (call->kind == MC_CP) {
        int64_t server_ms = call_server_retry_ms(o->details_bin);
        int64_t max_wait = call->client->cfg.max_throttle_wait;
        if (server_ms >= 0 && max_wait != 0) {
            double elapsed_s = (sk_now_ms() - call->start_ms) / 1000.0;
            if (max_wait < 0 || elapsed_s + (double)server_ms / 1000.0 < (double)max_wait) {
                call->throttle++;
                call_sleep(call, server_ms);
                return;
            }
        }
        if (sk_mc_retryable(o->code) && call->attempt < MC_CP_RETRIES) {
            if (call->delay_ms == 0)
                call->delay_ms = MC_CP_BASE_DELAY_MS;
            int64_t d = call->delay_ms;
            call->delay_ms = d * 2 > MC_CP_MAX_DELAY_MS ? MC_CP_MAX_DELAY_MS : d * 2;
            call->attempt++;
            call_sleep(call, d);
            return;
        }
        call_finish(call, &r);
        return;
    }
    /* libcurl 7.88 drops a stream's trailers when it ends while another
     * stream on the connection holds nghttp2 paused: a TaskExecWait answer
     * arriving during bulk stdout lost its grpc-status, and the policy's
     * 1 s wait before the retry became the exec's wall time. The first such
     * ending of a call is retried at once. The repeat is answered at once
     * too and, while the output still streams, loses its status the same
     * way; so later ones wait 10 ms doubling (never longer than the
     * policy's wait, and counted as its retries, so a server that never
     * sends a status cannot make us spin), and sk_mc_call_wake ends the
     * wait when the caller's streams end. docs/reliability.md §"Lost trailers". */
    if (o->status_missing && !call->status_retried && sk_mc_retryable(o->code)) {
        call->status_retried = true;
        call->status_delay_ms = MC_STATUS_BASE_DELAY_MS;
        call_sleep(call, 0);
        return;
    }
    /* Router calls: one JWT refresh per attempt on UNAUTHENTICATED. */
    if (o->code == SK_GRPC_UNAUTHENTICATED && !call->auth_retried) {
        call->auth_retried = true;
        router_refresh(call);
        return;
    }
    if (call->kind == MC_STDIO) {
        if (sk_mc_retryable(o->code) && call->retries < MC_STDIO_RETRIES) {
            int64_t d = call->delay_ms ? call->delay_ms : MC_STDIO_BASE_DELAY_MS;
            call->delay_ms = d * 2;
            call->retries++;
            call_sleep(call, d);
            return;
        }
        call_finish(call, &r);
        return;
    }
    const mc_retry *p = &call->policy;
    bool excluded = o->code < 32 && (p->no_retry_mask & (1u << o->code));
    if (sk_mc_retryable(o->code) && !excluded && (p->max_retries < 0 || call->retries < p->max_retries)) {
        int64_t d = call->delay_ms ? call->delay_ms : p->base_ms;
        if (p->deadline_ms > 0) {
            double left = p->deadline_ms - sk_now_ms();
            if (left <= 0) {
                r.code = SK_GRPC_DEADLINE_EXCEEDED;
                r.message = "Timeout expired";
                r.local = SK_ERR_TIMEOUT;
                call_finish(call, &r);
                return;
            }
            if ((double)d > left)
                d = (int64_t)left;
        }
        call->delay_ms = d * (p->factor > 0 ? p->factor : 1);
        if (call->delay_ms <= 0)
            call->delay_ms = p->base_ms;
        call->retries++;
        call->auth_retried = false;
        bool lost_status = o->status_missing && call->status_delay_ms > 0 && call->status_delay_ms < d;
        if (lost_status) {
            d = call->status_delay_ms;
            call->status_delay_ms *= 2;
        }
        call_sleep(call, d);
        call->status_sleep = lost_status;
        return;
    }
    if (p->deadline_ms > 0 && sk_now_ms() >= p->deadline_ms) {
        r.code = SK_GRPC_DEADLINE_EXCEEDED;
        r.message = "Timeout expired";
        r.local = SK_ERR_TIMEOUT;
    }
    call_finish(call, &r);
}

static mc_call *cp_call(mc_client *c, mc_kind kind, const char *rpc, const sk_buf *msg, int64_t poll_ms,
                        mc_data_fn data, mc_reply_fn fn, void *ud)
{
    mc_call *call = call_new(c, kind, rpc, msg, fn, ud);
    if (!call)
        return NULL;
    call->data = data;
    call->poll_ms = poll_ms;
    const char *missing = sk_modal_config_missing(&c->cfg);
    if (missing) {
        call_fail_later(call, SK_GRPC_UNAUTHENTICATED, SK_ERR_CONFIG,
                        "Profile is missing token_id or token_secret. Please set them in .modal.toml, "
                        "or as environment variables, or via the token_id and token_secret options.");
        return call;
    }
    if (strcmp(rpc, SK_MODAL_RPC_AUTH_TOKEN_GET) == 0)
        call_attempt(call);
    else
        call_get_token(call);
    return call;
}

mc_call *sk_mc_unary(mc_client *c, const char *rpc, const sk_buf *msg, int64_t poll_ms, mc_reply_fn fn, void *ud)
{
    return cp_call(c, MC_CP, rpc, msg, poll_ms, NULL, fn, ud);
}

mc_call *sk_mc_stream(mc_client *c, const char *rpc, const sk_buf *msg, int64_t poll_ms, mc_data_fn data,
                   mc_reply_fn fn, void *ud)
{
    return cp_call(c, MC_CP_STREAM, rpc, msg, poll_ms, data, fn, ud);
}

/* ---- router ---------------------------------------------------------------- */

mc_router *sk_mc_router_new(mc_client *c, const char *task_id, const char *jwt, const char *url, sk_error **err)
{
    if (strncasecmp(url, "https://", 8) != 0) {
        *err = sk_error_new(SK_ERR_MODAL, json_pack("{s:s}", "rpc", SK_MODAL_RPC_TASK_GET_COMMAND_ROUTER_ACCESS),
                            "Task router URL must be https, got: %s", url);
        return NULL;
    }
    mc_router *r = calloc(1, sizeof *r);
    if (!r)
        goto oom;
    r->client = c;
    r->refs = 1;
    r->task_id = strdup(task_id);
    r->jwt = strdup(jwt);
    r->url = strdup(url);
    /* The SDK dials host:port itself (default 443), dropping any path. */
    const char *hp = url + 8;
    size_t n = strcspn(hp, "/?#");
    const char *colon = NULL;
    for (size_t i = 0; i < n; i++)
        if (hp[i] == ':' && (hp[0] != '[' || memchr(hp, ']', i)))
            colon = hp + i;
    if (asprintf(&r->base_url, "https://%.*s%s", (int)n, hp, colon ? "" : ":443") < 0)
        r->base_url = NULL;
    if (!r->task_id || !r->jwt || !r->url || !r->base_url)
        goto oom;
    r->jwt_held = sk_secret_hold(r->jwt) == 0;
    if (sk_jwt_exp(jwt, &r->jwt_exp) != 0)
        r->jwt_exp = -1;
    r->next = c->routers;
    c->routers = r;
    return r;
oom:
    if (r) {
        free(r->task_id);
        free(r->jwt);
        free(r->url);
        free(r->base_url);
        free(r);
    }
    *err = sk_error_oom();
    return NULL;
}

void sk_mc_router_ref(mc_router *r) { r->refs++; }

void sk_mc_router_unref(mc_router *r)
{
    if (!r || --r->refs > 0)
        return;
    mc_client *c = r->client;
    if (c) {
        sk_mc_call_cancel(r->refresh);
        r->refresh = NULL;
        for (mc_router **pp = &c->routers; *pp; pp = &(*pp)->next)
            if (*pp == r) {
                *pp = r->next;
                break;
            }
    }
    if (r->jwt_held)
        sk_secret_release(r->jwt);
    free(r->task_id);
    free(r->jwt);
    free(r->url);
    free(r->base_url);
    free(r);
}

const char *sk_mc_router_task_id(const mc_router *r) { return r->task_id; }

static mc_call *router_call_new(mc_router *r, mc_kind kind, const char *rpc, const sk_buf *msg, mc_reply_fn fn,
                                void *ud)
{
    if (!r->client)
        return NULL;
    mc_call *call = call_new(r->client, kind, rpc, msg, fn, ud);
    if (!call)
        return NULL;
    call->router = r;
    sk_mc_router_ref(r);
    return call;
}

mc_call *sk_mc_router_unary(mc_router *r, const char *rpc, const sk_buf *msg, const mc_retry *policy,
                         mc_reply_fn fn, void *ud)
{
    mc_call *call = router_call_new(r, MC_ROUTER, rpc, msg, fn, ud);
    if (!call)
        return NULL;
    call->policy = *policy;
    call_attempt(call);
    return call;
}

mc_call *sk_mc_stdio_read(mc_router *r, const char *exec_id, int fd, mc_data_fn data, mc_reply_fn fn, void *ud)
{
    mc_call *call = router_call_new(r, MC_STDIO, SK_MODAL_RPC_TASK_EXEC_STDIO_READ, NULL, fn, ud);
    if (!call)
        return NULL;
    call->data = data;
    call->fd = fd;
    call->delay_ms = MC_STDIO_BASE_DELAY_MS;
    if (!(call->exec_id = strdup(exec_id))) {
        sk_mc_call_cancel(call);
        return NULL;
    }
    call_attempt(call);
    return call;
}

static void router_on_access(void *ud, const mc_reply *rep)
{
    mc_router *r = ud;
    r->refresh = NULL;
    mc_outcome o = mc_outcome_of(rep);
    if (o.code == 0) {
        sk_modal_task_get_command_router_access_response resp;
        if (sk_modal_decode_task_get_command_router_access(rep->data, rep->len, &resp) != 0) {
            mc_outcome_fail(&o, "malformed TaskGetCommandRouterAccess response");
        } else {
            if (strcmp(resp.url, r->url) != 0)
                sk_log(SK_LOG_WARN, "modal", "Task router URL changed during session");
            if (r->jwt_held)
                sk_secret_release(r->jwt);
            free(r->jwt);
            r->jwt = resp.jwt;
            resp.jwt = NULL;
            r->jwt_held = sk_secret_hold(r->jwt) == 0;
            if (sk_jwt_exp(r->jwt, &r->jwt_exp) != 0)
                r->jwt_exp = -1;
            sk_modal_task_get_command_router_access_response_free(&resp);
        }
    }
    mc_call *list = r->waiters;
    r->waiters = NULL;
    for (mc_call *w; (w = mc_waiter_pop(&list));) {
        if (o.code == 0) {
            call_attempt(w);
        } else {
            w->fail_rpc = SK_MODAL_RPC_TASK_GET_COMMAND_ROUTER_ACCESS;
            call_fail_later(w, o.code, o.local, "%s", o.message);
        }
    }
}

/* refreshJwt(): only when the JWT expires within 30 s or its expiry is
 * unknown; concurrent refreshes share one TaskGetCommandRouterAccess. The
 * failed call is attempted again either way (callWithAuthRetry). */
static void router_refresh(mc_call *call)
{
    mc_router *r = call->router;
    if (!r->refresh && r->jwt_exp >= 0 && r->jwt_exp - mc_wall_s() > MC_JWT_REFRESH_WINDOW_S) {
        call_attempt(call);
        return;
    }
    call->state = MC_WAIT_JWT;
    mc_waiters_push(&r->waiters, call);
    if (r->refresh)
        return;
    sk_buf msg = { 0 };
    sk_modal_task_get_command_router_access_request m = { .task_id = r->task_id };
    if (sk_modal_encode_task_get_command_router_access(&msg, &m) == 0)
        r->refresh = sk_mc_unary(r->client, SK_MODAL_RPC_TASK_GET_COMMAND_ROUTER_ACCESS, &msg, 0, router_on_access, r);
    sk_buf_free(&msg);
    if (!r->refresh) {
        mc_waiters_remove(&r->waiters, call);
        call_fail_later(call, SK_GRPC_INTERNAL, SK_ERR_MODAL, "out of memory");
    }
}

/* ---- errors ------------------------------------------------------------------ */

/* Replaces every occurrence of secret in *s with "[redacted]". */
static void mc_redact_one(char **s, const char *secret)
{
    if (!*s || !secret || strlen(secret) < 4 || !strstr(*s, secret))
        return;
    sk_buf out = { 0 };
    size_t n = strlen(secret);
    const char *p = *s;
    for (const char *hit; (hit = strstr(p, secret)); p = hit + n) {
        sk_buf_append(&out, p, (size_t)(hit - p));
        sk_buf_append(&out, "[redacted]", 10);
    }
    sk_buf_append(&out, p, strlen(p));
    free(*s);
    *s = sk_buf_take(&out);
}

sk_error *sk_mc_error(const mc_client *c, const mc_reply *r, const char *sdk_error)
{
    char *msg = strdup(r->message ? r->message : "");
    if (!msg)
        return sk_error_oom();
    if (c) {
        mc_redact_one(&msg, c->cfg.token_secret);
        mc_redact_one(&msg, c->token);
        for (const mc_router *rt = c->routers; rt; rt = rt->next)
            mc_redact_one(&msg, rt->jwt);
    }
    if (!msg)
        return sk_error_oom();
    const char *name = sk_grpc_code_name(r->code);
    sk_error *e;
    if (r->local != SK_ERR_NONE && r->local != SK_ERR_MODAL) {
        if (r->limit)
            e = sk_error_new(r->local, json_pack("{s:s,s:s}", "provider", "modal", "rpc", r->rpc ? r->rpc : ""),
                             "Modal %s: %s (option max_response_bytes)", r->rpc ? r->rpc : "call", msg);
        else
            e = sk_error_new(r->local, json_pack("{s:s,s:s}", "provider", "modal", "rpc", r->rpc ? r->rpc : ""),
                             "%s", msg);
        const char *missing = c ? sk_modal_config_missing(&c->cfg) : NULL;
        if (e && r->local == SK_ERR_CONFIG && missing)
            sk_error_set(e, "key", json_string(missing));
        if (e && r->limit)
            sk_error_set(e, "limit", json_integer((json_int_t)r->limit));
    } else {
        e = sk_error_new(SK_ERR_MODAL,
                         json_pack("{s:i,s:s,s:s,s:s}", "grpc_status", r->code, "grpc_code", name ? name : "UNKNOWN",
                                   "grpc_message", msg, "rpc", r->rpc ? r->rpc : ""),
                         "%s %s: %s", r->rpc ? r->rpc : "", name ? name : "UNKNOWN", msg);
    }
    /* The SDK's classes for the codes a caller acts on. */
    if (!sdk_error && r->local == SK_ERR_NONE)
        sdk_error = r->code == SK_GRPC_NOT_FOUND        ? "NotFoundError"
                    : r->code == SK_GRPC_ALREADY_EXISTS  ? "AlreadyExistsError"
                    : r->code == SK_GRPC_DEADLINE_EXCEEDED ? "TimeoutError"
                                                           : NULL;
    if (e && sdk_error)
        sk_error_set(e, "sdk_error", json_string(sdk_error));
    free(msg);
    return e;
}
