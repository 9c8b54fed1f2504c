/* The calls behind DockerSandbox's own methods (sb:get_port_url,
 * sb:snapshot: methods.lua), as the provider's `calls` (provider_ops.h),
 * which the one binding of provider operations (src/lua/ops_ud.c:
 * core.ops_open(sb, "calls"), core.ops_call) reaches. An operation is one
 * Engine API call through the sandbox's own client (docker_call.h); its
 * request object:
 *   method, path ("{container}" becomes the container id),
 *   ok (array of the statuses that are answers), what (for errors),
 *   timeout_ms (0 or absent: api_timeout), body (a JSON value, sent as is).
 * Stream 0 yields the status (decimal), stream 1 the answer's body. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../provider_ops.h"
#include "docker_call.h"

#define DK_OPS_MAX_OK 8

struct sk_op {
    sk_dk_request *req;
    const sk_op_events *ev;
    void *ud;
};

static void *calls_open(sk_loop *loop, sk_sandbox *sb, const json_t *options, sk_error **err)
{
    (void)loop;
    (void)options;
    if (!sb) {
        *err = sk_error_new(SK_ERR_CONFIG, NULL, "DockerSandbox's calls need a sandbox");
        return NULL;
    }
    return sb; /* the binding keeps the sandbox alive while this is open */
}

static void calls_on_done(void *ud, int status, const char *body, size_t len, const sk_error *err)
{
    sk_op *op = ud;
    if (!err) {
        char s[16];
        int n = snprintf(s, sizeof s, "%d", status);
        op->ev->output(op->ud, 0, s, (size_t)n);
        op->ev->output(op->ud, 1, body, len);
    }
    op->ev->done(op->ud, err);
    free(op);
}

static sk_op *calls_start(void *sb, const json_t *req, const char *body, size_t len, const sk_op_events *ev,
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
    sk_op *op = calloc(1, sizeof *op);
    if (!op) {
        *err = sk_error_oom();
        return NULL;
    }
    op->ev = ev;
    op->ud = ud;
    op->req = sk_dk_request_start(sb, &spec, calls_on_done, op, err);
    if (!op->req) {
        free(op);
        return NULL;
    }
    return op;
}

static void calls_cancel(sk_op *op)
{
    if (!op)
        return;
    sk_dk_request_cancel(op->req);
    free(op);
}

static void calls_close(void *sb) { (void)sb; }

const sk_ops sk_dk_calls = {
    .open = calls_open,
    .start = calls_start,
    .cancel = calls_cancel,
    .close = calls_close,
};
