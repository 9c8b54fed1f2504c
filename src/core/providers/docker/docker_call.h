/* One Engine API call of a DockerSandbox on behalf of its Lua methods
 * beyond the lifecycle (sb:get_port_url, sb:snapshot:
 * methods.lua, through docker_methods.c): the sandbox's own daemon,
 * version and bounds, its container's id put into the path, and an answer
 * of an unexpected status made a DockerApiError as the lifecycle's are. */
#ifndef SK_DOCKER_CALL_H
#define SK_DOCKER_CALL_H

#include <stddef.h>
#include <jansson.h>

#include "../../error.h"
#include "../../sandbox.h"

typedef struct sk_dk_request sk_dk_request;

typedef struct sk_dk_request_spec {
    const char *method;
    /* "/containers/{container}/json": each "{container}" becomes the
     * sandbox's container id (escaped); the sandbox must have one */
    const char *path;
    const json_t *body;      /* or NULL */
    const int *ok;           /* the statuses that are answers; any other is an error */
    size_t n_ok;
    const char *what;        /* "Committing the Docker container", for errors */
    long timeout_ms;         /* 0: the sandbox's api_timeout */
} sk_dk_request_spec;

/* status and body (NUL-terminated, borrowed) of an expected answer, or err
 * (borrowed). Called once, from the loop, unless cancelled. The request is
 * freed after it returns. */
typedef void (*sk_dk_request_cb)(void *ud, int status, const char *body, size_t len, const sk_error *err);

/* NULL with *err: not a DockerSandbox (ConfigError), no container yet
 * (SandboxNotReadyError), or the call could not start. */
sk_dk_request *sk_dk_request_start(sk_sandbox *sb, const sk_dk_request_spec *spec, sk_dk_request_cb cb, void *ud,
                                   sk_error **err);
/* No callback after this; NULL is fine. */
void sk_dk_request_cancel(sk_dk_request *r);

#endif
