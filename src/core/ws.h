/* WebSocket client on the loop: libwebsockets 4.1.6 on the loop's libuv as a
 * foreign loop (docs/protocols/event-core.md §2), one lws context per loop (service slot
 * SK_SERVICE_WS, created on first use, destroyed in two steps by
 * sk_loop_free).
 *
 * Callbacks run from the loop, never from inside sk_ws_* calls. Pointers
 * handed to callbacks are valid only during the call. Every connection ends
 * with exactly one close callback (also when it never opened), unless
 * sk_ws_abort was called first; the handle is freed when the close
 * callback returns. Connections still live when the ws service is torn
 * down by sk_loop_free are dropped without callbacks (end them first: an
 * earlier hook's drain may still run them).
 *
 * Host names are resolved with uv_getaddrinfo (lws 4.1.6 would block the
 * loop). lws log lines (error, warning; notice as info) go to sk_log under
 * component "lws"; TLS failure reasons exist only there, so the last
 * error/warning line logged while a connection was being set up is
 * appended to its error string. Error strings never contain header values,
 * the offered protocol list or URL query strings. */
#ifndef SK_WS_H
#define SK_WS_H

#include <stdbool.h>
#include <stddef.h>
#include "http.h"
#include "loop.h"

typedef struct sk_ws sk_ws;

/* A header of the handshake: a name and a value, as an HTTP request's. */
typedef sk_http_header sk_ws_header;

typedef struct sk_ws_opts {
    const char *url;             /* ws://host[:port][/path[?query]] or wss://... */
    const char *path;            /* overrides the URL's path (and query) when non-NULL */
    const char *protocols;       /* Sec-WebSocket-Protocol, sent verbatim; NULL = none */
    const sk_ws_header *headers; /* extra handshake headers (e.g. Authorization); copied */
    size_t n_headers;
    const char *ca_file;         /* PEM bundle to verify against; NULL = system roots */
    bool insecure_skip_verify;   /* accept any certificate and host name */
    int close_timeout_ms;        /* wait for the peer's CLOSE after ours; 0 = 2000 */
    size_t max_message;          /* reassembled message limit; 0 = 64 MiB (close 1009) */
} sk_ws_opts;

typedef struct sk_ws_close_info {
    int code;           /* peer's close code; 1005 = CLOSE without code, 1006 = no CLOSE */
    const char *reason; /* peer's close reason, "" if none */
    bool opened;        /* the opening handshake completed */
    bool local;         /* we started the close (sk_ws_close, or a local failure) */
    int http_status;    /* status of a refused upgrade (e.g. 401), else 0 */
    const char *error;  /* local failure (connect, TLS, handshake, timeout), else NULL */
} sk_ws_close_info;

typedef struct sk_ws_callbacks {
    void (*open)(sk_ws *ws, const char *protocol /* selected, "" if none */, void *ud);
    /* One call per complete message (fragments reassembled). */
    void (*message)(sk_ws *ws, bool binary, const char *data, size_t len, void *ud);
    /* Required; exactly once, last. */
    void (*close)(sk_ws *ws, const sk_ws_close_info *info, void *ud);
} sk_ws_callbacks;

/* Starts connecting. Returns NULL (and a static message in *errmsg, if
 * non-NULL) for a bad URL or options, allocation failure, or when the lws
 * context cannot be created; network failures arrive in the close callback. */
sk_ws *sk_ws_connect(sk_loop *loop, const sk_ws_opts *o, const sk_ws_callbacks *cb, void *ud,
                     const char **errmsg);

/* Queues a message (copied); written in order once the socket is writable.
 * Messages sent before open are flushed on open. 0, or -1 once closing. */
int sk_ws_send(sk_ws *ws, bool binary, const void *data, size_t len);

/* Clean close: queued messages are flushed, then a CLOSE(code, reason) frame
 * is written (by hand: lws 4.1.6's own close path drops the socket first,
 * docs/protocols/event-core.md §8), then we wait up to close_timeout_ms for the peer's
 * CLOSE before dropping the connection. No message callbacks after this
 * call; the close callback follows (code = the peer's, 1006 on timeout).
 * code 0 = 1000; reason cut to 123 bytes. Before open: the attempt is
 * dropped and the close callback reports error "closed before open".
 * 0, or -1 when already closing or code may not be sent (1005, 1006...). */
int sk_ws_close(sk_ws *ws, int code, const char *reason);

/* Drops the connection now: no callback of ws runs after this returns and
 * the handle is freed. Safe inside any callback of ws, except close. */
void sk_ws_abort(sk_ws *ws);

/* Bytes queued but not yet handed to the socket. */
size_t sk_ws_buffered(const sk_ws *ws);

#endif
