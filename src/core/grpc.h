/* gRPC calls over http.c (HTTP/2): one request message, then any number of
 * response messages (unary and server-streaming calls), the status from the
 * trailers or from a trailers-only response, per-call deadlines, and
 * cancellation (RST_STREAM). Provider-neutral: no retries, no auth; callers
 * (e.g. providers/modal/modal_client.c) layer those on top. Framing and status
 * parsing live in grpc_frame.c.
 *
 * Transport: http:// is h2c with prior knowledge; https:// is TLS with ALPN
 * h2; `plaintext` dials an https:// URL as h2c (Modal's rule for a router on
 * a loopback control plane, docs/protocols/modal.md §1.8).
 *
 * Callbacks run from the loop, never from inside sk_grpc_start. A message
 * callback may cancel its own call (nothing more is delivered); done runs
 * exactly once for a call that was not cancelled, and the call is freed when
 * it returns. Messages in outcomes never contain metadata values. */
#ifndef SK_GRPC_H
#define SK_GRPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "http.h"
#include "loop.h"

typedef struct sk_grpc_call sk_grpc_call;

typedef struct sk_grpc_request {
    const char *base_url;           /* "scheme://host[:port]", no path */
    const char *path;               /* "/package.Service/Method" */
    bool plaintext;                 /* dial an https:// base_url as h2c */
    const sk_http_header *metadata; /* custom metadata, copied (names lower-case) */
    size_t n_metadata;
    const sk_http_header *shared_metadata; /* more, the same for many calls (credentials):
                                             * sent after metadata, one copy per distinct
                                             * set (sk_http_request.shared_headers) */
    size_t n_shared_metadata;
    const char *user_agent;         /* NULL: "sandkit-grpc/1" */
    const void *message;            /* the request message, unframed (may be NULL when 0) */
    size_t message_len;
    int64_t timeout_ms;             /* deadline; <= 0: none. Sent as grpc-timeout too */
    const char *ca_file;            /* TLS: PEM bundle; NULL = system roots */
    size_t recv_buffer_bytes;       /* libcurl's receive buffer; 0 = its default (sk_http_request) */
    size_t max_message_bytes;       /* per response message; 0 = SK_GRPC_MAX_MESSAGE. A length
                                     * prefix above it ends the call at once (too_large) */
} sk_grpc_request;

typedef struct sk_grpc_outcome {
    int code;                  /* gRPC status code (sk_grpc_code) */
    const char *message;       /* grpc-message, or what went wrong; never NULL */
    const char *details_bin;   /* grpc-status-details-bin (base64) or NULL */
    int http_status;           /* 0 if none arrived */
    bool transport;            /* no gRPC status: connection, deadline, protocol failure */
    bool status_missing;       /* an HTTP 200 stream ended cleanly without grpc-status; libcurl
                                * 7.88 can drop trailers, docs/reliability.md §"Lost trailers" */
    uint64_t messages;         /* response messages received */
    const uint8_t *response;   /* first response message when no message callback was given */
    size_t response_len;
    bool too_large;            /* a response message (its length prefix) was over the limit:
                                * code RESOURCE_EXHAUSTED, as grpc-js */
    size_t limit;              /* that limit */
} sk_grpc_outcome;

typedef struct sk_grpc_callbacks {
    /* One response message (valid during the call). NULL: the first message
     * is kept and handed to done (unary calls). */
    void (*message)(sk_grpc_call *c, const uint8_t *data, size_t len, void *ud);
    /* Required. */
    void (*done)(sk_grpc_call *c, const sk_grpc_outcome *o, void *ud);
} sk_grpc_callbacks;

/* NULL (and a static message in *errmsg) only for invalid arguments,
 * allocation failure or a loop being freed. */
sk_grpc_call *sk_grpc_start(sk_loop *loop, const sk_grpc_request *req, const sk_grpc_callbacks *cb,
                            void *ud, const char **errmsg);
/* No callback of the call runs afterwards; a no-op inside its done. */
void sk_grpc_cancel(sk_grpc_call *c);

#endif
