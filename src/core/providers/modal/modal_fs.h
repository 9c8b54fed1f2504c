/* Sandbox.open() and its file handle on a ModalSandbox: one filesystem
 * operation (ContainerFilesystemExec, then its output through
 * ContainerFilesystemExecGetOutput), for sb.fs (docs/modal-filesystem.md).
 * Implemented in modal.c, which owns the sandbox's handle. */
#ifndef SK_MODAL_FS_H
#define SK_MODAL_FS_H

#include "modal_msg.h"
#include "../../provider.h"

typedef struct sk_modal_fs_op sk_modal_fs_op;

typedef struct sk_modal_fs_events {
    /* bytes read (SK_MODAL_FS_READ), in order, as batches arrive */
    void (*data)(void *ud, const uint8_t *data, size_t len);
    /* exactly once, unless cancelled first: err NULL on success (fd: the
     * file descriptor an open returned, else NULL). err kinds:
     * ModalFilesystemError (fields error_code = the errno the sandbox
     * reported, path-free message), ModalError/NotFoundError... from the
     * RPCs, TimeoutError when no result came in time. The op is freed
     * after done returns. Neither callback may cancel the op. */
    void (*done)(void *ud, const char *fd, const sk_error *err);
} sk_modal_fs_events;

/* Starts one operation (req->task_id is ignored: the sandbox's own is
 * used; the sandbox is provisioned or reconnected first if needed).
 * timeout_ms > 0 bounds the whole operation. NULL with *err if sb is not a
 * ModalSandbox or out of memory. */
sk_modal_fs_op *sk_modal_fs_start(sk_sandbox *sb, const sk_modal_container_filesystem_exec_req *req,
                                  int64_t timeout_ms, const sk_modal_fs_events *ev, void *ud, sk_error **err);
/* No callback runs afterwards; the op is freed. NULL is ignored. */
void sk_modal_fs_cancel(sk_modal_fs_op *op);

#endif
