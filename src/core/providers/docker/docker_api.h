/* The Docker Engine API client of one sandbox (docs/protocols/docker.md):
 * where the daemon is (DOCKER_HOST, DOCKER_TLS_VERIFY, DOCKER_CERT_PATH as
 * the docker CLI reads them, or the docker_host option), the API version
 * negotiated from GET /version before the first versioned call, and JSON
 * calls through http.c on the shared loop. */
#ifndef SK_DOCKER_API_H
#define SK_DOCKER_API_H

#include <stdbool.h>
#include <jansson.h>

#include "../../error.h"
#include "../../http.h"
#include "../../loop.h"
#include "docker_conn.h"

/* The newest API version whose semantics this client was written for;
 * a daemon offering less is spoken to at its own version, one offering more
 * at this one (moby's client negotiates the same way). */
#define DK_API_VERSION_MAX "1.47"
/* The oldest it accepts: every call and field used exists since 1.24. */
#define DK_API_VERSION_MIN "1.24"

typedef struct dk_call dk_call;

typedef struct dk_api {
    sk_loop *loop;
    const void *secret_scope; /* the sandbox: its env values are redacted from errors */
    char *host;               /* as given: "unix:///var/run/docker.sock", "tcp://h:2376" */
    const char *host_source;  /* "DOCKER_HOST", "option docker_host" or "default" */
    char *base_url;           /* "http://docker" (unix socket), "https://h:2376" */
    char *unix_socket;        /* or NULL */
    char *ca_file, *client_cert, *client_key;
    bool insecure;
    long timeout_ms;          /* each call (the pull has its own bound) */
    char version[16];         /* "1.41"; "" until negotiated */
    dk_call *negotiating;     /* GET /version in flight */
    dk_call *waiting;         /* calls waiting for it */
    dk_call *calls;           /* every call in flight (freed with the api) */
} dk_api;

enum {
    DK_CALL_JSON_LINES = 1, /* a progress stream (pull): the body is not kept; the
                             * first {"error": ...} line is the call's error */
    DK_CALL_RAW_STREAM = 2, /* the body is a multiplexed stream (an exec started
                             * without upgrade); kept up to a small bound */
};

typedef struct dk_reply {
    int status;         /* HTTP status; 0 with err */
    json_t *json;       /* parsed body when it was JSON (borrowed), else NULL */
    const char *body;   /* raw body (borrowed, NUL-terminated) */
    size_t body_len;
    const char *stream_error; /* DK_CALL_JSON_LINES: the error a 200 stream reported */
} dk_reply;

/* err: a transport failure (borrowed; copy it to keep it), or NULL with a
 * reply of any status (the caller decides what each status means). */
typedef void (*dk_call_cb)(const dk_reply *reply, const sk_error *err, void *ud);

/* Reads where the daemon is: option docker_host, else DOCKER_HOST, else the
 * default socket. A ConfigError for a form it cannot use. */
int sk_dk_api_init(dk_api *api, sk_loop *loop, const void *secret_scope, const char *docker_host,
                   long timeout_ms, sk_error **err);
/* Cancels every call in flight (no callbacks). */
void sk_dk_api_free(dk_api *api);

/* A call of path (without the version prefix; "/containers/json?all=1").
 * body (may be NULL) is sent as JSON. timeout_ms 0: the api's. Returns NULL
 * with *err when it cannot start; else cb runs exactly once, from the loop,
 * unless cancelled. */
dk_call *sk_dk_api_call(dk_api *api, const char *method, const char *path, const json_t *body, unsigned flags,
                        long timeout_ms, dk_call_cb cb, void *ud, sk_error **err);
void sk_dk_api_cancel(dk_call *c);

/* A DockerApiError for a reply of an unexpected status: the daemon's
 * message (its JSON "message", else the body), status, method, path. */
sk_error *sk_dk_api_error(const dk_api *api, const char *method, const char *path, const dk_reply *reply,
                          const char *what);
/* The daemon's message of a reply ("" when none). */
const char *sk_dk_reply_message(const dk_reply *reply);

/* The options for a raw connection to the daemon (docker_conn.h); valid
 * while api lives. */
void sk_dk_api_conn_opts(const dk_api *api, dk_conn_opts *o);
/* Sets how rq reaches the daemon (its unix socket or TLS files, HTTP/1.1)
 * and, when rq has none, api's timeout; rq's strings are borrowed from
 * api. */
void sk_dk_api_http_target(const dk_api *api, sk_http_request *rq);
/* "/v1.41" + path, malloc'd (NULL on ENOMEM). */
char *sk_dk_api_versioned(const dk_api *api, const char *path);
/* A NetworkError (or TimeoutError) naming the daemon's address and where it
 * came from, for a failure of method path: detail says what happened. */
sk_error *sk_dk_api_transport_error(const dk_api *api, const char *method, const char *path, bool timed_out,
                                    const char *detail);

#endif
