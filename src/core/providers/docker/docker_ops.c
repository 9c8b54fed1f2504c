/* DockerSandbox's operations for its Lua methods (sb:get_port_url,
 * sb:snapshot: methods.lua), as sk_fs_ops (fs_ops.h) so that the one
 * binding of provider operations (src/lua/fs_op_ud.c) reaches them. An
 * operation is one Engine API call through the sandbox's own client
 * (docker_call.h); its request object:
 *   method, path ("{container}" becomes the container id),
 *   ok (array of the statuses that are answers), what (for errors),
 *   timeout_ms (0 or absent: api_timeout), body (a JSON value, sent as is).
 * Stream 0 yields the status (decimal), stream 1 the answer's body. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../fs_ops.h"
#include "docker_call.h"

#define DK_OPS_MAX_OK 8

typedef struct {
    sk_dk_request *req;
    const sk_fs_events *ev;
    void *ud;
} dk_op;

static void *ops_open(sk_loop *loop, sk_sandbox *sb, const json_t *options, sk_error **err)
{
    (void)loop;
    (void)options;
    if (!sb) {
        *err = sk_error_new(SK_ERR_CONFIG, NULL, "DockerSandbox has no filesystem standing alone");
        return NULL;
    }
    return sb; /* the binding keeps the sandbox alive while this is open */
}

static void ops_on_done(void *ud, int status, const char *body, size_t len, const sk_error *err)
{
    dk_op *op = ud;
    if (!err) {
        char s[16];
        int n = snprintf(s, sizeof s, "%d", status);
        op->ev->output(op->ud, 0, s, (size_t)n);
        op->ev->output(op->ud, 1, body, len);
    }
    op->ev->done(op->ud, err);
    free(op);
}

static sk_fs_op *ops_start(void *fs, const json_t *req, const char *body, size_t len, const sk_fs_events *ev,
                           void *ud, sk_error **err)
{
    (void)body;
    (void)len;
    int ok[DK_OPS_MAX_OK];
    sk_dk_request_spec spec = { .ok = ok };
    const json_t *oks = json_object_get(req, "ok");
    spec.method = json_string_value(json_object_get(req, "method"));
    spec.path = json_string_value(json_object_get(req, "path"));
    spec.what = json_string_value(json_object_get(req, "what"));
    spec.body = json_object_get(req, "body");
    spec.timeout_ms = (long)json_integer_value(json_object_get(req, "timeout_ms"));
    spec.n_ok = json_array_size(oks);
    if (!spec.method || !spec.path || spec.n_ok < 1 || spec.n_ok > DK_OPS_MAX_OK) {
        *err = sk_error_new(SK_ERR_CONFIG, NULL, "a Docker call needs method, path and 1 to %d ok statuses",
                            DK_OPS_MAX_OK);
        return NULL;
    }
    for (size_t i = 0; i < spec.n_ok; i++)
        ok[i] = (int)json_integer_value(json_array_get(oks, i));
    dk_op *op = calloc(1, sizeof *op);
    if (!op) {
        *err = sk_error_oom();
        return NULL;
    }
    op->ev = ev;
    op->ud = ud;
    op->req = sk_dk_request_start(fs, &spec, ops_on_done, op, err);
    if (!op->req) {
        free(op);
        return NULL;
    }
    return (sk_fs_op *)op;
}

static void ops_cancel(sk_fs_op *o)
{
    dk_op *op = (dk_op *)o;
    if (!op)
        return;
    sk_dk_request_cancel(op->req);
    free(op);
}

static void ops_close(void *fs) { (void)fs; }

const sk_fs_ops sk_dk_ops = {
    .open = ops_open,
    .start = ops_start,
    .cancel = ops_cancel,
    .close = ops_close,
};
