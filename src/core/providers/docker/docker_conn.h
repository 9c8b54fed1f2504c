/* A raw byte stream to the Docker daemon for the hijacked exec stream
 * (docs/protocols/docker.md §3): libcurl connects (unix socket, TCP or TLS,
 * with the same options as every other request, CURLOPT_CONNECT_ONLY) on a
 * multi of the connection's own, driven by the loop; then the caller
 * speaks HTTP/1.1 on it itself, and bytes move with curl_easy_send/recv as
 * the socket is ready. Nothing blocks the loop.
 *
 * Callbacks run from the loop, never from inside a call of this API. The
 * caller may close the connection from inside any callback. */
#ifndef SK_DOCKER_CONN_H
#define SK_DOCKER_CONN_H

#include <stddef.h>
#include "../../loop.h"

typedef struct dk_conn dk_conn;

typedef struct dk_conn_opts {
    const char *url;         /* http://host:port/ or https://host:port/ */
    const char *unix_socket; /* or NULL */
    const char *ca_file, *client_cert, *client_key;
    int insecure;            /* no peer verification (DOCKER_TLS without VERIFY) */
    long connect_timeout_ms;
} dk_conn_opts;

typedef struct dk_conn_callbacks {
    void (*connected)(dk_conn *c, void *ud);
    void (*data)(dk_conn *c, const char *data, size_t len, void *ud);
    /* Once: the peer closed (error NULL) or the connection failed (a
     * message without secrets); nothing more is read or written after. */
    void (*closed)(dk_conn *c, const char *error, void *ud);
} dk_conn_callbacks;

/* NULL (and a static message in *errmsg) on allocation failure or bad
 * arguments; connection failures arrive in closed. */
dk_conn *sk_dk_conn_open(sk_loop *loop, const dk_conn_opts *o, const dk_conn_callbacks *cb, void *ud,
                         const char **errmsg);
/* Queues bytes (sent as the socket takes them; before connected, once it
 * is). -1 when out of memory or already closed. */
int sk_dk_conn_write(dk_conn *c, const void *data, size_t len);
/* Half-closes once the queue is sent: the daemon reads end of stdin. */
void sk_dk_conn_shutdown_write(dk_conn *c);
/* Bytes queued and not yet sent. */
size_t sk_dk_conn_pending(const dk_conn *c);
/* No callback after this; the memory goes once libuv has closed the
 * handles. NULL is a no-op. */
void sk_dk_conn_close(dk_conn *c);

#endif
