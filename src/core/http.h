/* HTTP client on the loop: one libcurl multi per loop (service slot
 * SK_SERVICE_HTTP, created on first use, torn down by sk_loop_free).
 * All requests of a loop share its connection cache: keep-alive reuse for
 * HTTP/1.1, and HTTP/2 streams multiplexed on one connection per host.
 *
 * Callbacks run from the loop, never from inside sk_http_start. Pointers
 * handed to callbacks are valid only during the call. A callback may start
 * new requests and cancel any request (its own included, except from its
 * own done callback). Redirects are not followed. Error messages never
 * contain header values, request bodies, URL query strings or URL user
 * info.
 *
 * h2c (SK_HTTP_2_PRIOR_KNOWLEDGE on http://) uses a connection cache of its
 * own, and its streams share connections like h2 over TLS; with libcurl
 * < 8.0 (Debian 12: 7.88.1), which corrupts a reused h2c connection (curl
 * issue #10634), http.c gets there another way (http_h2c_mode). */
#ifndef SK_HTTP_H
#define SK_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include "loop.h"

typedef struct sk_http sk_http;

typedef struct sk_http_header {
    const char *name;
    const char *value;
} sk_http_header;

typedef enum sk_http_version {
    SK_HTTP_DEFAULT = 0,         /* https: h2 if ALPN agrees, else HTTP/1.1; http: HTTP/1.1 */
    SK_HTTP_1_1,                 /* HTTP/1.1 only */
    SK_HTTP_2_PRIOR_KNOWLEDGE    /* http://: h2c without Upgrade (gRPC); https: h2 via ALPN */
} sk_http_version;

typedef enum sk_http_err {
    SK_HTTP_OK = 0,      /* a response arrived (any status) */
    SK_HTTP_ERR_TIMEOUT, /* timeout_ms elapsed */
    SK_HTTP_ERR_RESOLVE, /* host name did not resolve */
    SK_HTTP_ERR_CONNECT, /* refused / unreachable */
    SK_HTTP_ERR_TLS,     /* handshake or certificate verification failed */
    SK_HTTP_ERR_NETWORK, /* connection lost mid-transfer, empty reply */
    SK_HTTP_ERR_PROTOCOL,/* malformed response, HTTP/2 stream/connection error */
    SK_HTTP_ERR_USAGE,   /* bad URL, unsupported scheme, bad option */
    SK_HTTP_ERR_OTHER,
    SK_HTTP_ERR_TOO_LARGE /* body (declared or received) or headers over the limit */
} sk_http_err;

/* Default cap on an accumulated response body: control-plane JSON is
 * kilobytes; 16 MiB leaves room for a large listing while bounding what a
 * hostile or broken server can make us hold (docs/security.md). */
#define SK_HTTP_DEFAULT_MAX_BODY ((size_t)16 << 20)
/* Cap on the response header block and on the trailers, each. */
#define SK_HTTP_MAX_HEADER_BYTES ((size_t)256 << 10)

typedef struct sk_http_request {
    const char *method;                /* NULL: "POST" with a body, else "GET" */
    const char *url;                   /* http:// or https:// */
    const sk_http_header *headers;     /* copied; names/values must not contain CR/LF; a NULL
                                        * value removes a header curl adds itself (Accept) */
    size_t n_headers;
    const sk_http_header *shared_headers; /* as headers, sent after them; for headers many
                                        * requests send alike (credentials, content type):
                                        * the loop keeps one copy per distinct set */
    size_t n_shared_headers;
    const void *body;                  /* copied unless body_borrowed; NULL = no body */
    size_t body_len;
    bool body_borrowed;                /* body is used in place (no copy): the caller keeps
                                        * it alive and unchanged until done returns or the
                                        * request is cancelled (a 100 MiB upload is not
                                        * duplicated) */
    long timeout_ms;                   /* whole request; 0 = 60000, < 0 = none */
    const char *ca_file;               /* PEM bundle to verify against; NULL = system roots */
    const char *client_cert;           /* PEM client certificate (TLS client auth), or NULL */
    const char *client_key;            /* its PEM private key, or NULL */
    const char *unix_socket;           /* connect to this unix socket path instead of the URL's
                                        * host and port (the URL still gives scheme, Host and path);
                                        * NULL = TCP */
    bool insecure_skip_verify;         /* no peer or host name verification */
    sk_http_version version;
    size_t recv_buffer_bytes;          /* curl's receive buffer (CURLOPT_BUFFERSIZE), at least
                                        * 1024; 0 = curl's default, 16 KiB. Held while the
                                        * request is in flight: small for many small
                                        * responses, large for bulk (fewer calls per byte) */
    size_t max_body_bytes;             /* accumulated body (no data callback) over this, or a
                                        * Content-Length over it: SK_HTTP_ERR_TOO_LARGE;
                                        * 0 = SK_HTTP_DEFAULT_MAX_BODY. A data callback
                                        * bounds what it keeps itself */
} sk_http_request;

typedef struct sk_http_result {
    sk_http_err err;
    const char *error;                 /* NULL when err == SK_HTTP_OK */
    int curl_code;                     /* CURLcode, 0 on success */
    int status;                        /* final HTTP status, 0 if none arrived */
    int http_version;                  /* 10, 11, 20; 0 if unknown */
    long connects;                     /* new connections this request opened (0 = reused) */
    const sk_http_header *headers;     /* final response headers, as received */
    size_t n_headers;
    const sk_http_header *trailers;    /* HTTP/2 (or chunked HTTP/1.1) trailers */
    size_t n_trailers;
    const char *body;                  /* whole body when no data callback was set; */
    size_t body_len;                   /* NUL-terminated; NULL/0 otherwise (and on an error) */
    size_t limit;                      /* SK_HTTP_ERR_TOO_LARGE: the limit that was exceeded, */
    bool headers_too_large;            /* by the header block (else by the body) */
} sk_http_result;

typedef struct sk_http_callbacks {
    /* Final status line and headers (1xx interim responses are skipped). */
    void (*head)(sk_http *req, int status, const sk_http_header *headers, size_t n, void *ud);
    /* Body bytes as they arrive. When NULL the body is accumulated into the result. */
    void (*data)(sk_http *req, const char *data, size_t len, void *ud);
    /* Trailers, once, after the last body byte and before done (only if any). */
    void (*trailers)(sk_http *req, const sk_http_header *trailers, size_t n, void *ud);
    /* Required. Exactly once per request unless it was cancelled; the handle
     * is freed when done returns. */
    void (*done)(sk_http *req, const sk_http_result *res, void *ud);
} sk_http_callbacks;

/* Starts a request. Returns NULL (and a static message in *errmsg, if
 * non-NULL) only for invalid arguments, allocation failure, or a loop being
 * freed; transfer errors (bad URL, refused, timeout...) arrive in done. */
sk_http *sk_http_start(sk_loop *loop, const sk_http_request *req, const sk_http_callbacks *cb,
                       void *ud, const char **errmsg);

/* Cancels a request still in flight: no callback of it runs after this
 * returns, and the handle is freed. A no-op on a request inside its own done
 * callback. Requests still in flight when the loop is freed are dropped the
 * same way (no callbacks). */
void sk_http_cancel(sk_http *req);

/* Case-insensitive lookup in a header array; NULL when absent. */
const char *sk_http_header_get(const sk_http_header *h, size_t n, const char *name);

const char *sk_http_err_name(sk_http_err err); /* "timeout", "connect", ... */

/* s percent-encoded for a URL (malloc'd; NULL when out of memory): every
 * byte as %XX but ASCII letters, digits, "-_.~" (RFC 3986's unreserved)
 * and those in keep (NULL: none). */
char *sk_url_escape(const char *s, const char *keep);

#endif
