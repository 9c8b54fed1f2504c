/* A provider's own operations beyond the lifecycle, for the Lua its
 * folder holds (docs/architecture.md §"A provider's own operations"): one
 * interface for all of them, so that one binding (src/lua/ops_ud.c:
 * core.ops_open, core.ops_call) reaches them and no binding file is any
 * provider's own. A provider has up to two tables of this shape
 * (provider.h):
 *   fs     its files, for the filesystem its Lua side builds: Modal's
 *          Sandbox.open() file handles (modal_fs.c, on a sandbox) and
 *          Platform's bucket routes (platform_fs.c, PlatformFilesystem, on
 *          a bucket standing alone). The rest of sb.fs is the shared
 *          exec-script backend (lua/sandkit/fs/exec.lua) or host system
 *          calls (fs_local.h).
 *   calls  the calls behind its own sandbox methods (a descriptor's
 *          `methods`): Docker's ports and snapshot (docker_methods.c).
 * A request is a JSON object whose keys the provider defines and documents
 * beside its table.
 *
 * Callbacks run from the loop, never from inside start. */
#ifndef SK_PROVIDER_OPS_H
#define SK_PROVIDER_OPS_H

#include <stddef.h>
#include <jansson.h>

#include "error.h"
#include "loop.h"

typedef struct sk_sandbox sk_sandbox;
typedef struct sk_op sk_op; /* one operation in flight: the provider's own */

typedef struct sk_op_events {
    /* What the operation yields, in order: stream 0 its result line (what
     * the provider's table says it holds), stream 1 the payload (file bytes,
     * an answer's body). */
    void (*output)(void *ud, int stream, const char *data, size_t len);
    /* Optional: the length stream 1 will have, when known before it comes
     * (a Content-Length), so that a caller collecting it allocates once. */
    void (*size_hint)(void *ud, size_t len);
    /* Exactly once unless cancelled first: err NULL on success (borrowed).
     * The op is freed after done returns. Neither callback may cancel the
     * op. */
    void (*done)(void *ud, const sk_error *err);
} sk_op_events;

typedef struct sk_ops {
    /* The operations on sandbox sb (options NULL), or, sb NULL, on a
     * resource standing alone made from options (a JSON object, checked for
     * types by the caller; values here), as a PlatformFilesystem's bucket.
     * Returns the provider's state for it, or NULL with *err (ConfigError
     * for a missing or bad setting, or for a target the table does not
     * serve). */
    void *(*open)(sk_loop *loop, sk_sandbox *sb, const json_t *options, sk_error **err);
    /* Starts one operation. body (len bytes, NULL: none) is borrowed until
     * done runs or the op is cancelled. NULL with *err when the request
     * itself is malformed or memory ran out. */
    sk_op *(*start)(void *state, const json_t *req, const char *body, size_t len, const sk_op_events *ev, void *ud,
                    sk_error **err);
    /* No callback of op runs afterwards; it is freed. NULL is ignored. */
    void (*cancel)(sk_op *op);
    /* Frees what open made; every op of it was cancelled or done. */
    void (*close)(void *state);
    /* Optional: what the opened state says of itself (settings it
     * resolved, never a secret), a new JSON object, or NULL. */
    json_t *(*info)(void *state);
} sk_ops;

#endif
