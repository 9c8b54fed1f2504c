/* The Modal client behind ModalSandbox, as the JS SDK modal@0.7.6 behaves
 * (docs/protocols/modal.md §1, §3; spec/servers/modal/README.md):
 *
 * - control-plane unary calls (modal.client.ModalClient) with the SDK's
 *   auth middleware (x-modal-* metadata, AuthTokenGet JWT fetched on first
 *   use and refreshed within 300 s of `exp`) and retry middleware (codes
 *   1/2/4/13/14, 3 retries, 100 ms doubling to 1 s, one x-idempotency-key
 *   per logical call, x-retry-* headers, server-directed throttling from
 *   grpc-status-details-bin);
 * - the task command router (one per sandbox task): `authorization: Bearer
 *   <jwt>`, re-fetched through TaskGetCommandRouterAccess on UNAUTHENTICATED
 *   when it expires within 30 s, per-call retry loops, and TaskExecStdioRead
 *   streams resumed by byte offset.
 *
 * Everything runs on the loop. A call's reply function runs exactly once,
 * from the loop (never from inside the function that started the call),
 * unless the call is cancelled first; the call is freed when it returns.
 * Messages never contain the token secret, the auth token or router JWTs. */
#ifndef SK_MODAL_CLIENT_H
#define SK_MODAL_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../../buf.h"
#include "../../error.h"
#include "../../loop.h"
#include "modal_config.h"

/* The SDK whose wire behaviour the client reproduces. */
#define MC_SDK_VERSION "0.7.6"
#define MC_USER_AGENT "grpc-node-js/1.14.7"

typedef struct mc_client mc_client;
typedef struct mc_call mc_call;
typedef struct mc_router mc_router;

typedef struct mc_reply {
    int code;              /* gRPC status; 0 = OK */
    const char *rpc;       /* full method path */
    const char *message;   /* grpc-message or a client-side description */
    sk_error_kind local;   /* SK_ERR_NONE, or the kind of a client-side failure
                            * (SK_ERR_CONFIG, SK_ERR_TIMEOUT, SK_ERR_MODAL, ...) */
    const uint8_t *data;   /* the response message (OK only) */
    size_t len;
    size_t limit;          /* local SK_ERR_RESPONSE_TOO_LARGE: the message size limit */
} mc_reply;

typedef void (*mc_reply_fn)(void *ud, const mc_reply *r);

/* Largest response message accepted (0 = SK_GRPC_MAX_MESSAGE); a longer
 * one fails its call with ResponseTooLargeError, never retried. */
void sk_mc_client_set_max_message(mc_client *c, size_t max);
typedef void (*mc_data_fn)(void *ud, const uint8_t *data, size_t len);

/* cfg's contents are taken over (cfg is zeroed). rpc_timeout_ms: per-attempt
 * deadline of control-plane calls, <= 0 for none (the SDK sets none). */
mc_client *sk_mc_client_new(sk_loop *loop, sk_modal_config *cfg, int64_t rpc_timeout_ms);
/* Cancels every call (no callbacks). Routers must be unreferenced first. */
void sk_mc_client_free(mc_client *c);
const sk_modal_config *sk_mc_client_config(const mc_client *c);
/* The control plane is on a loopback host (docs/protocols/modal.md §1.2). */
bool sk_mc_client_localhost(const mc_client *c);

/* A control-plane unary call. msg is copied. poll_ms: how long the server
 * may block (long polls), added to the per-attempt deadline. */
mc_call *sk_mc_unary(mc_client *c, const char *rpc, const sk_buf *msg, int64_t poll_ms, mc_reply_fn fn, void *ud);
/* A control-plane server-streaming call: auth metadata, no retries (the
 * SDK's retry middleware skips streams). data gets each raw message and may
 * cancel the call; fn with OK = the stream ended cleanly. */
mc_call *sk_mc_stream(mc_client *c, const char *rpc, const sk_buf *msg, int64_t poll_ms, mc_data_fn data,
                   mc_reply_fn fn, void *ud);
/* No callback runs afterwards. NULL is ignored; a no-op inside fn. */
void sk_mc_call_cancel(mc_call *call);

/* ---- router ---- */

/* callWithRetriesOnTransientErrors: codes 1/2/4/13/14 retried, delays
 * base_ms * factor^n, at most max_retries (< 0: forever), until
 * deadline_ms (sk_now_ms clock; 0: none); codes in no_retry_mask (bit per
 * code) are not retried; attempt_timeout_ms (> 0) bounds each attempt. */
typedef struct mc_retry {
    int base_ms;
    int factor;
    int max_retries;
    double deadline_ms;
    int64_t attempt_timeout_ms;
    unsigned no_retry_mask;
} mc_retry;
extern const mc_retry sk_mc_retry_router; /* 10 ms x2, 10 retries */

/* From a TaskGetCommandRouterAccess response: url must be https://. One
 * reference for the caller. */
mc_router *sk_mc_router_new(mc_client *c, const char *task_id, const char *jwt, const char *url, sk_error **err);
void sk_mc_router_ref(mc_router *r);
/* The last reference cancels its calls (no callbacks) and frees it. */
void sk_mc_router_unref(mc_router *r);

mc_call *sk_mc_router_unary(mc_router *r, const char *rpc, const sk_buf *msg, const mc_retry *policy,
                         mc_reply_fn fn, void *ud);
/* TaskExecStdioRead from offset 0, resumed from the bytes received after a
 * retryable failure (up to 10 times, 10 ms doubling, reset on data). fd:
 * SK_MODAL_TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDOUT or _STDERR. fn with OK =
 * end of output. */
mc_call *sk_mc_stdio_read(mc_router *r, const char *exec_id, int fd, mc_data_fn data, mc_reply_fn fn, void *ud);
const char *sk_mc_router_task_id(const mc_router *r);
/* A router call waiting to repeat an attempt whose answer lost its
 * grpc-status tries again now (the caller saw the stream that held the
 * connection paused end; docs/reliability.md §"Lost trailers"). Any other
 * state, or NULL: nothing. Never runs a callback from inside the call. */
void sk_mc_call_wake(mc_call *call);

/* ---- helpers ---- */

/* A ModalError (grpc_status, grpc_code, grpc_message, rpc[, sdk_error]) or
 * the reply's local kind; secrets redacted. sdk_error: the SDK's error class
 * for this failure, or NULL for the default by code (NOT_FOUND
 * "NotFoundError", ALREADY_EXISTS "AlreadyExistsError", DEADLINE_EXCEEDED
 * "TimeoutError"). */
sk_error *sk_mc_error(const mc_client *c, const mc_reply *r, const char *sdk_error);
/* A random UUIDv4, lower-case, NUL-terminated. */
void sk_mc_uuid4(char out[37]);
bool sk_mc_retryable(int code);

#endif
