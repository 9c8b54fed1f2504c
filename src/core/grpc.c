/* gRPC calls over http.c; see grpc.h. The status is read once the transfer
 * is over, from both the response headers (trailers-only responses) and the
 * trailers, which http.c hands to done together. */
#include "grpc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "grpc_frame.h"

#define GRPC_MAX_METADATA 32

struct sk_grpc_call {
    sk_http *http;
    sk_grpc_callbacks cb;
    void *ud;
    sk_grpc_deframer df;
    sk_buf first;     /* first message, when there is no message callback */
    uint64_t messages;
    int depth;        /* > 0 while a message callback runs */
    bool cancelled;
    bool in_done;
};

static void grpc_call_free(sk_grpc_call *c)
{
    sk_grpc_deframer_free(&c->df);
    sk_buf_free(&c->first);
    free(c);
}

static int grpc_on_message(void *ud, const uint8_t *msg, size_t len)
{
    sk_grpc_call *c = ud;
    c->messages++;
    if (!c->cb.message) {
        if (c->messages == 1 && sk_buf_append(&c->first, msg, len) != 0)
            return 1;
        return 0;
    }
    c->cb.message(c, msg, len, c->ud);
    return c->cancelled ? 1 : 0;
}

/* A message over the limit: the call ends now, before the server can make
 * us read (or wait for) the rest of it. Nothing of it was buffered. */
static void grpc_fail_too_large(sk_grpc_call *c)
{
    uint32_t n = (uint32_t)c->df.hdr[1] << 24 | (uint32_t)c->df.hdr[2] << 16 | (uint32_t)c->df.hdr[3] << 8 |
                 (uint32_t)c->df.hdr[4];
    sk_http_cancel(c->http);
    c->http = NULL;
    c->in_done = true;
    char msg[160];
    snprintf(msg, sizeof msg, "response message of %lu bytes is larger than the limit of %zu bytes",
             (unsigned long)n, c->df.max_len);
    sk_grpc_outcome o = { .code = SK_GRPC_RESOURCE_EXHAUSTED, .message = msg, .messages = c->messages,
                          .too_large = true, .limit = c->df.max_len };
    c->cb.done(c, &o, c->ud);
    grpc_call_free(c);
}

static void grpc_on_data(sk_http *req, const char *data, size_t len, void *ud)
{
    (void)req;
    sk_grpc_call *c = ud;
    if (c->cancelled || c->df.error)
        return;
    /* A malformed body makes the deframer's error sticky; reading goes on to
     * the end, where the trailers may explain it and done reports it. */
    c->depth++;
    int rc = sk_grpc_deframer_feed(&c->df, data, len, grpc_on_message, c);
    c->depth--;
    if (c->cancelled) {
        if (c->depth == 0)
            grpc_call_free(c);
        return;
    }
    if (rc == SK_GRPC_DEFRAME_TOO_LARGE && c->depth == 0)
        grpc_fail_too_large(c);
}

/* What grpc-js reports when no grpc-status arrived. */
static int grpc_transport_code(sk_http_err err)
{
    switch (err) {
    case SK_HTTP_ERR_TIMEOUT: return SK_GRPC_DEADLINE_EXCEEDED;
    case SK_HTTP_ERR_RESOLVE:
    case SK_HTTP_ERR_CONNECT:
    case SK_HTTP_ERR_TLS:
    case SK_HTTP_ERR_NETWORK: return SK_GRPC_UNAVAILABLE;
    case SK_HTTP_ERR_PROTOCOL: return SK_GRPC_INTERNAL; /* RST_STREAM and the like */
    default: return SK_GRPC_UNKNOWN;
    }
}

static void grpc_on_done(sk_http *req, const sk_http_result *res, void *ud)
{
    (void)req;
    sk_grpc_call *c = ud;
    c->http = NULL;
    c->in_done = true;
    sk_grpc_status st;
    sk_grpc_status_init(&st);
    st.http_status = res->status;
    bool oom = false;
    for (size_t i = 0; i < res->n_headers; i++)
        oom |= sk_grpc_status_header(&st, res->headers[i].name, strlen(res->headers[i].name),
                                     res->headers[i].value, strlen(res->headers[i].value)) != 0;
    for (size_t i = 0; i < res->n_trailers; i++)
        oom |= sk_grpc_status_header(&st, res->trailers[i].name, strlen(res->trailers[i].name),
                                     res->trailers[i].value, strlen(res->trailers[i].value)) != 0;
    int dferr = sk_grpc_deframer_finish(&c->df);
    sk_grpc_outcome o = { 0 };
    char msg[512];
    o.http_status = res->status;
    o.messages = c->messages;
    o.details_bin = st.details_bin;
    if (oom) {
        o.code = SK_GRPC_INTERNAL;
        o.message = "out of memory reading the response";
    } else if (st.grpc_status >= 0) {
        o.code = st.grpc_status;
        o.message = st.grpc_message ? st.grpc_message : "";
        if (o.code == SK_GRPC_OK && dferr != SK_GRPC_DEFRAME_OK) {
            o.code = sk_grpc_deframe_code(dferr);
            snprintf(msg, sizeof msg, "malformed response body: %s", sk_grpc_deframe_strerror(dferr));
            o.message = msg;
        }
    } else if (res->err != SK_HTTP_OK) {
        o.code = grpc_transport_code(res->err);
        o.transport = true;
        o.message = res->error ? res->error : sk_http_err_name(res->err);
    } else {
        o.code = sk_grpc_status_code(&st);
        o.transport = true;
        if (res->status != 200)
            snprintf(msg, sizeof msg, "HTTP status %d without grpc-status", res->status);
        else {
            snprintf(msg, sizeof msg, "the stream ended without grpc-status");
            o.status_missing = true;
        }
        o.message = msg;
    }
    if (!c->cb.message && c->messages > 0) {
        o.response = (const uint8_t *)(c->first.data ? c->first.data : "");
        o.response_len = c->first.len;
    }
    c->cb.done(c, &o, c->ud);
    sk_grpc_status_free(&st);
    grpc_call_free(c);
}

static const sk_http_callbacks grpc_http_callbacks = {
    .data = grpc_on_data,
    .done = grpc_on_done,
};

sk_grpc_call *sk_grpc_start(sk_loop *loop, const sk_grpc_request *q, const sk_grpc_callbacks *cb,
                            void *ud, const char **errmsg)
{
    const char *err = NULL;
    sk_grpc_call *c = NULL;
    char *url = NULL;
    sk_buf body = { 0 };
    if (!loop || !q || !q->base_url || !q->path || !cb || !cb->done || q->n_metadata > GRPC_MAX_METADATA ||
        q->n_shared_metadata > GRPC_MAX_METADATA) {
        err = "invalid gRPC call arguments";
        goto fail;
    }
    const char *base = q->base_url;
    const char *scheme = "http://";
    if (strncasecmp(base, "https://", 8) == 0) {
        if (!q->plaintext)
            scheme = "https://";
        base += 8;
    } else if (strncasecmp(base, "http://", 7) == 0) {
        base += 7;
    } else {
        err = "gRPC URL scheme must be http or https";
        goto fail;
    }
    size_t blen = strlen(base);
    while (blen > 0 && base[blen - 1] == '/')
        blen--;
    if (asprintf(&url, "%s%.*s%s", scheme, (int)blen, base, q->path) < 0) {
        url = NULL;
        err = "out of memory";
        goto fail;
    }
    if (sk_grpc_frame_append(&body, q->message, q->message_len) != 0) {
        err = "out of memory";
        goto fail;
    }
    /* What changes per call, then what many calls send alike. */
    sk_http_header h[GRPC_MAX_METADATA + 1], shared[GRPC_MAX_METADATA + 6];
    size_t n = 0, ns = 0;
    for (size_t i = 0; i < q->n_metadata; i++)
        h[n++] = q->metadata[i];
    char timeout[SK_GRPC_TIMEOUT_LEN + 1];
    if (q->timeout_ms > 0) {
        size_t tl = sk_grpc_timeout_format(timeout, (uint64_t)q->timeout_ms);
        timeout[tl] = '\0';
        h[n++] = (sk_http_header){ "grpc-timeout", timeout };
    }
    for (size_t i = 0; i < q->n_shared_metadata; i++)
        shared[ns++] = q->shared_metadata[i];
    /* We never decode compressed messages, so we accept none. */
    shared[ns++] = (sk_http_header){ "grpc-accept-encoding", "identity" };
    shared[ns++] = (sk_http_header){ "accept-encoding", "identity" };
    shared[ns++] = (sk_http_header){ "user-agent", q->user_agent ? q->user_agent : "sandkit-grpc/1" };
    shared[ns++] = (sk_http_header){ "content-type", "application/grpc" };
    shared[ns++] = (sk_http_header){ "te", "trailers" };
    shared[ns++] = (sk_http_header){ "accept", NULL }; /* curl's default Accept: not gRPC's */
    c = calloc(1, sizeof *c);
    if (!c) {
        err = "out of memory";
        goto fail;
    }
    c->cb = *cb;
    c->ud = ud;
    sk_grpc_deframer_init(&c->df, q->max_message_bytes);
    sk_http_request hr = {
        .method = "POST",
        .url = url,
        .headers = h,
        .n_headers = n,
        .shared_headers = shared,
        .n_shared_headers = ns,
        .body = body.data ? body.data : "",
        .body_len = body.len,
        .timeout_ms = q->timeout_ms > 0 ? (long)q->timeout_ms : -1,
        .ca_file = q->ca_file,
        .recv_buffer_bytes = q->recv_buffer_bytes,
        .version = SK_HTTP_2_PRIOR_KNOWLEDGE,
    };
    c->http = sk_http_start(loop, &hr, &grpc_http_callbacks, c, &err);
    if (!c->http)
        goto fail;
    free(url);
    sk_buf_free(&body);
    return c;
fail:
    if (c)
        grpc_call_free(c);
    free(url);
    sk_buf_free(&body);
    if (errmsg)
        *errmsg = err ? err : "could not start the call";
    return NULL;
}

void sk_grpc_cancel(sk_grpc_call *c)
{
    if (!c || c->in_done || c->cancelled)
        return;
    c->cancelled = true;
    if (c->http) {
        sk_http_cancel(c->http);
        c->http = NULL;
    }
    if (c->depth == 0)
        grpc_call_free(c);
}
