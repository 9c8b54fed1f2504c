/* ModalSandbox filesystem operations (Sandbox.open() and its file handle):
 * ContainerFilesystemExec, then its output through
 * ContainerFilesystemExecGetOutput, for sb.fs (docs/modal-filesystem.md).
 * The provider's sk_ops (provider_ops.h): open takes the sandbox; one
 * operation is { kind = "open"|"read"|"write"|"flush"|"close", fd, path,
 * mode, n, timeout_ms } with the data of a write as its body. Stream 0
 * carries the file descriptor an open returned, stream 1 the bytes read.
 * Errors: ModalFilesystemError (error_code = the errno the sandbox
 * reported, a path-free message), ModalError/NotFoundError from the RPCs,
 * TimeoutError when no result came within timeout_ms. The sandbox is
 * provisioned or reconnected first if needed. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../grpc_frame.h"
#include "modal_state.h"

/* ---- filesystem operations (Sandbox.open) ------------------------------------- */

#define MODAL_FS_POLL_S 55 /* ContainerFilesystemExecGetOutput timeout, as the SDK */

struct sk_op {
    modal_sandbox *ms;
    sk_modal_container_filesystem_exec_req req; /* strings and data owned */
    char *exec_id, *fd_out;
    sk_op_events ev;
    void *ud;
    mc_call *call;
    bool waiting; /* on a waiter list */
    bool eof;
    int retries; /* GetOutput attempts retried (the SDK allows 10) */
    uint64_t delivered, seen; /* bytes read: handed over, met in this attempt */
    sk_error *batch_error;
    uv_timer_t *timer; /* deadline, then the deferred finish */
    sk_error *final_err;
    bool finishing;
};

static void fs_op_free(sk_op *op)
{
    free((char *)op->req.fd);
    free((char *)op->req.path);
    free((char *)op->req.mode);
    free((void *)op->req.data);
    free(op->exec_id);
    free(op->fd_out);
    sk_error_free(op->batch_error);
    sk_error_free(op->final_err);
    sk_timer_close(&op->timer);
    free(op);
}

static void fs_op_detach(sk_op *op)
{
    if (op->waiting) {
        sk_waiters_remove(&op->ms->prov.waiters, op);
        sk_waiters_remove(&op->ms->ready.waiters, op);
        op->waiting = false;
    }
    sk_mc_call_cancel(op->call);
    op->call = NULL;
}

static void modal_fs_cancel(sk_op *op)
{
    if (!op)
        return;
    fs_op_detach(op);
    fs_op_free(op);
}

static void fs_on_finish_timer(uv_timer_t *t)
{
    sk_op *op = t->data;
    if (!op->final_err && op->fd_out)
        op->ev.output(op->ud, 0, op->fd_out, strlen(op->fd_out));
    op->ev.done(op->ud, op->final_err);
    fs_op_free(op);
}

/* Ends the operation from the loop (never inside a call's callback chain). */
static void fs_finish(sk_op *op, sk_error *err)
{
    if (op->finishing) {
        sk_error_free(err);
        return;
    }
    op->finishing = true;
    fs_op_detach(op);
    op->final_err = err;
    if (sk_timer_start(op->ms->sb->loop, &op->timer, op, 0, fs_on_finish_timer) != 0)
        abort(); /* a few bytes; the operation could never end without them */
}

static void fs_on_deadline(uv_timer_t *t)
{
    sk_op *op = t->data;
    fs_finish(op, sk_error_new(SK_ERR_TIMEOUT, json_pack("{s:s}", "rpc", SK_MODAL_RPC_CONTAINER_FILESYSTEM_EXEC),
                               "The filesystem operation did not finish in time"));
}

static void fs_on_output(void *ud, const uint8_t *data, size_t len)
{
    sk_op *op = ud;
    if (op->req.kind != SK_MODAL_FS_READ || op->batch_error || op->eof)
        return;
    /* A retried GetOutput starts the same output again: skip what was
     * already handed over. */
    uint64_t start = op->seen;
    op->seen += len;
    if (op->seen <= op->delivered)
        return;
    size_t skip = start < op->delivered ? (size_t)(op->delivered - start) : 0;
    op->delivered = op->seen;
    op->ev.output(op->ud, 1, (const char *)data + skip, len - skip);
}

static void fs_on_batch(void *ud, const uint8_t *data, size_t len)
{
    sk_op *op = ud;
    if (op->finishing)
        return;
    sk_modal_fs_batch b;
    if (sk_modal_decode_fs_batch(data, len, &b, fs_on_output, op) != 0) {
        fs_finish(op, sk_error_new(SK_ERR_MODAL, json_pack("{s:s}", "rpc",
                                                           SK_MODAL_RPC_CONTAINER_FILESYSTEM_EXEC_GET_OUTPUT),
                                   "malformed FilesystemRuntimeOutputBatch"));
        return;
    }
    if (b.has_error && !op->batch_error) {
        int n = b.error_message_len > 1024 ? 1024 : (int)b.error_message_len;
        op->batch_error = sk_error_new(SK_ERR_MODAL_FILESYSTEM, json_pack("{s:i}", "error_code", b.error_code),
                                       "%.*s", n, b.error_message ? b.error_message : "");
    }
    if (b.eof)
        op->eof = true;
}

static void fs_get_output(sk_op *op);

static void fs_on_output_end(void *ud, const mc_reply *r)
{
    sk_op *op = ud;
    op->call = NULL;
    if (op->batch_error) {
        sk_error *e = op->batch_error;
        op->batch_error = NULL;
        fs_finish(op, e);
    } else if (op->eof) {
        fs_finish(op, NULL);
    } else if (r->code != 0 && sk_mc_retryable(r->code) && !r->local && op->retries < 10) {
        op->retries++; /* runFilesystemExec: a retryable status asks again */
        fs_get_output(op);
    } else if (r->code != 0) {
        fs_finish(op, sk_mc_error(op->ms->client, r, NULL));
    } else {
        fs_get_output(op); /* the server's poll ended before the result */
    }
}

static void fs_get_output(sk_op *op)
{
    sk_buf msg = { 0 };
    op->seen = 0;
    sk_modal_container_filesystem_exec_get_output_request m = { .exec_id = op->exec_id,
                                                                .timeout = (float)MODAL_FS_POLL_S };
    if (sk_modal_encode_container_filesystem_exec_get_output(&msg, &m) == 0)
        op->call = sk_mc_stream(op->ms->client, SK_MODAL_RPC_CONTAINER_FILESYSTEM_EXEC_GET_OUTPUT, &msg,
                             MODAL_FS_POLL_S * 1000, fs_on_batch, fs_on_output_end, op);
    sk_buf_free(&msg);
    if (!op->call)
        fs_finish(op, sk_error_oom());
}

static void fs_on_exec(void *ud, const mc_reply *r)
{
    sk_op *op = ud;
    op->call = NULL;
    if (r->code != 0) {
        fs_finish(op, sk_mc_error(op->ms->client, r, r->code == SK_GRPC_NOT_FOUND ? "NotFoundError" : NULL));
        return;
    }
    sk_modal_container_filesystem_exec_response resp;
    if (sk_modal_decode_container_filesystem_exec(r->data, r->len, &resp) != 0) {
        fs_finish(op, sk_error_new(SK_ERR_MODAL, json_pack("{s:s}", "rpc", r->rpc),
                                   "malformed ContainerFilesystemExec response"));
        return;
    }
    op->exec_id = resp.exec_id;
    op->fd_out = resp.file_descriptor;
    if (op->req.kind == SK_MODAL_FS_OPEN && (!op->fd_out || !*op->fd_out)) {
        fs_finish(op, sk_error_new(SK_ERR_MODAL, json_pack("{s:s}", "rpc", r->rpc),
                                   "ContainerFilesystemExec opened no file descriptor"));
        return;
    }
    fs_get_output(op);
}

static void fs_acquire(sk_op *op);

static void fs_on_waited(sk_sandbox *sb, const sk_error *err, void *ud)
{
    (void)sb;
    sk_op *op = ud;
    op->waiting = false;
    if (err) {
        fs_finish(op, sk_error_copy(err));
        return;
    }
    fs_acquire(op);
}

/* The task id first (provisioning or reconnecting as commands do). */
static void fs_acquire(sk_op *op)
{
    modal_sandbox *ms = op->ms;
    op->waiting = true;
    if (ms->task_id && ms->router && !ms->prov.active) {
        op->waiting = false;
        sk_buf msg = { 0 };
        op->req.task_id = ms->task_id;
        if (sk_modal_encode_fs_op(&msg, &op->req) == 0)
            op->call = sk_mc_unary(ms->client, SK_MODAL_RPC_CONTAINER_FILESYSTEM_EXEC, &msg, 0, fs_on_exec, op);
        op->req.task_id = NULL;
        sk_buf_free(&msg);
        if (!op->call)
            fs_finish(op, sk_error_oom());
    } else if (ms->sandbox_id && !ms->prov.active) {
        sk_modal_ready(ms, fs_on_waited, op);
    } else {
        sk_modal_provision(ms, fs_on_waited, op);
    }
}

static char *fs_dup(const char *s, bool *bad)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *bad = true;
    return d;
}

static const struct {
    const char *name;
    sk_modal_fs_kind kind;
} FS_KINDS[] = {
    { "open", SK_MODAL_FS_OPEN },   { "read", SK_MODAL_FS_READ },   { "write", SK_MODAL_FS_WRITE },
    { "flush", SK_MODAL_FS_FLUSH }, { "close", SK_MODAL_FS_CLOSE },
};

static void *modal_fs_open(sk_loop *loop, sk_sandbox *sb, const json_t *options, sk_error **err)
{
    (void)loop;
    (void)options;
    if (!sb || sb->provider != &sk_provider_modal || !sb->impl) {
        *err = sk_error_new(SK_ERR_ARGUMENT, NULL, "ModalSandbox files: not a ModalSandbox");
        return NULL;
    }
    return sb->impl;
}

static void modal_fs_close(void *fs) { (void)fs; /* the sandbox's own state */ }

/* req: see the head of this file. A malformed one is the caller's bug. */
static sk_op *modal_fs_start(void *fs, const json_t *req, const char *body, size_t len,
                             const sk_op_events *ev, void *ud, sk_error **err)
{
    modal_sandbox *ms = fs;
    sk_modal_container_filesystem_exec_req r = { 0 };
    const char *kind = json_string_value(json_object_get(req, "kind"));
    for (size_t i = 0; kind && i < sizeof FS_KINDS / sizeof FS_KINDS[0]; i++)
        if (strcmp(kind, FS_KINDS[i].name) == 0)
            r.kind = FS_KINDS[i].kind;
    r.fd = json_string_value(json_object_get(req, "fd"));
    r.path = json_string_value(json_object_get(req, "path"));
    r.mode = json_string_value(json_object_get(req, "mode"));
    json_t *n = json_object_get(req, "n");
    if (!r.kind || (r.kind == SK_MODAL_FS_OPEN ? !r.path || !r.mode : !r.fd) ||
        (n && (!json_is_integer(n) || json_integer_value(n) < 0 || json_integer_value(n) > UINT32_MAX))) {
        *err = sk_error_new(SK_ERR_ARGUMENT, NULL, "ModalSandbox files: malformed operation %s", kind ? kind : "(none)");
        return NULL;
    }
    if (n) {
        r.has_n = true;
        r.n = (uint32_t)json_integer_value(n);
    }
    json_t *t = json_object_get(req, "timeout_ms");
    int64_t timeout_ms = json_is_integer(t) ? (int64_t)json_integer_value(t) : 0;
    sk_op *op = calloc(1, sizeof *op);
    if (!op) {
        *err = sk_error_oom();
        return NULL;
    }
    bool bad = false;
    op->ms = ms;
    op->ev = *ev;
    op->ud = ud;
    op->req = r;
    op->req.fd = fs_dup(r.fd, &bad);
    op->req.path = fs_dup(r.path, &bad);
    op->req.mode = fs_dup(r.mode, &bad);
    if (body && len) {
        void *copy = malloc(len);
        if (copy)
            memcpy(copy, body, len);
        else
            bad = true;
        op->req.data = copy;
        op->req.len = len;
    }
    if (bad || (timeout_ms > 0 && sk_timer_start(ms->sb->loop, &op->timer, op, (uint64_t)timeout_ms,
                                                 fs_on_deadline) != 0)) {
        fs_op_free(op);
        *err = sk_error_oom();
        return NULL;
    }
    fs_acquire(op);
    return op;
}

const sk_ops sk_modal_fs_ops = {
    .open = modal_fs_open,
    .start = modal_fs_start,
    .cancel = modal_fs_cancel,
    .close = modal_fs_close,
};
