/* A provider's own filesystem operations, for the filesystem its Lua side
 * builds (docs/architecture.md §"Filesystems"): the one interface every
 * provider's C file operations share, so that one binding
 * (src/lua/fs_op_ud.c: core.fs_open, core.fs_op) reaches them all and no
 * binding file is any provider's own. A provider offering some sets
 * sk_provider.fs (provider.h); the rest of sb.fs is the shared exec-script
 * backend (lua/sandkit/fs/exec.lua) or host system calls (fs_local.h).
 *
 * Today: Modal's Sandbox.open() file handles (modal_fs.c, on a sandbox)
 * and Platform's bucket routes (platform_fs.c, PlatformFilesystem, on a
 * bucket standing alone), and Docker's Engine API calls for its Lua
 * methods (docker_ops.c: not files, but the same shape). An operation is described by a JSON object
 * whose keys the provider defines and documents beside its ops.
 *
 * Callbacks run from the loop, never from inside start. */
#ifndef SK_FS_OPS_H
#define SK_FS_OPS_H

#include <stddef.h>
#include <jansson.h>

#include "error.h"
#include "loop.h"

typedef struct sk_sandbox sk_sandbox;
typedef struct sk_fs_op sk_fs_op; /* one operation in flight: the provider's own */

typedef struct sk_fs_events {
    /* What the operation yields, in order: stream 0 its result line (what
     * the provider's ops say it holds), stream 1 file bytes. */
    void (*output)(void *ud, int stream, const char *data, size_t len);
    /* Optional: the length stream 1 will have, when known before it comes
     * (a Content-Length), so that a caller collecting it allocates once. */
    void (*size_hint)(void *ud, size_t len);
    /* Exactly once unless cancelled first: err NULL on success (borrowed).
     * The op is freed after done returns. Neither callback may cancel the
     * op. */
    void (*done)(void *ud, const sk_error *err);
} sk_fs_events;

typedef struct sk_fs_ops {
    /* The files of sandbox sb (options NULL), or, sb NULL, a filesystem
     * standing alone made from options (a JSON object, checked for types by
     * the caller; values here). Returns the provider's state for it, or NULL
     * with *err (ConfigError for a missing or bad setting). */
    void *(*open)(sk_loop *loop, sk_sandbox *sb, const json_t *options, sk_error **err);
    /* Starts one operation. body (len bytes, NULL: none) is borrowed until
     * done runs or the op is cancelled. NULL with *err when the request
     * itself is malformed or memory ran out. */
    sk_fs_op *(*start)(void *fs, const json_t *req, const char *body, size_t len, const sk_fs_events *ev,
                       void *ud, sk_error **err);
    /* No callback of op runs afterwards; it is freed. NULL is ignored. */
    void (*cancel)(sk_fs_op *op);
    /* Frees what open made; every op of it was cancelled or done. */
    void (*close)(void *fs);
    /* Optional: what the filesystem says of itself (settings it resolved,
     * never a secret), a new JSON object, or NULL. */
    json_t *(*info)(void *fs);
} sk_fs_ops;

#endif
