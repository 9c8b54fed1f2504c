/* See docker_call.h. */
#include "docker_call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../buf.h"
#include "../../http.h"
#include "docker_state.h"

struct sk_dk_request {
    dk_sandbox *ds;
    dk_call *call;
    char *method, *path, *what;
    int ok[8];
    size_t n_ok;
    sk_dk_request_cb cb;
    void *ud;
};

static void request_free(sk_dk_request *r)
{
    sk_dk_api_cancel(r->call);
    free(r->method);
    free(r->path);
    free(r->what);
    free(r);
}

void sk_dk_request_cancel(sk_dk_request *r)
{
    if (r)
        request_free(r);
}

/* path with each "{container}" replaced by the escaped container id. */
static char *request_path(const char *path, const char *container_id)
{
    static const char mark[] = "{container}";
    char *id = sk_url_escape(container_id, NULL);
    sk_buf b = { 0 };
    const char *p = path, *hit;
    int rc = id ? 0 : -1;
    while (rc == 0 && (hit = strstr(p, mark))) {
        rc = sk_buf_append(&b, p, (size_t)(hit - p));
        if (rc == 0)
            rc = sk_buf_append(&b, id, strlen(id));
        p = hit + sizeof mark - 1;
    }
    if (rc == 0)
        rc = sk_buf_append(&b, p, strlen(p));
    free(id);
    char *out = rc == 0 ? sk_buf_take(&b) : NULL;
    sk_buf_free(&b);
    return out;
}

static void request_on_reply(const dk_reply *reply, const sk_error *err, void *ud)
{
    sk_dk_request *r = ud;
    r->call = NULL; /* freed by the api after this returns */
    if (err) {
        sk_error *e = sk_error_copy(err);
        sk_error_set(e, "sandbox_id", json_string(r->ds->cfg.id));
        r->cb(r->ud, 0, NULL, 0, e);
        sk_error_free(e);
        request_free(r);
        return;
    }
    for (size_t i = 0; i < r->n_ok; i++) {
        if (reply->status == r->ok[i]) {
            r->cb(r->ud, reply->status, reply->body ? reply->body : "", reply->body ? reply->body_len : 0, NULL);
            request_free(r);
            return;
        }
    }
    char *vpath = sk_dk_api_versioned(&r->ds->api, r->path);
    sk_error *e = sk_dk_api_error(&r->ds->api, r->method, vpath ? vpath : r->path, reply, r->what);
    free(vpath);
    sk_error_set(e, "sandbox_id", json_string(r->ds->cfg.id));
    if (r->ds->container_id)
        sk_error_set(e, "container_id", json_string(r->ds->container_id));
    r->cb(r->ud, 0, NULL, 0, e);
    sk_error_free(e);
    request_free(r);
}

sk_dk_request *sk_dk_request_start(sk_sandbox *sb, const sk_dk_request_spec *spec, sk_dk_request_cb cb, void *ud,
                                   sk_error **err)
{
    if (strcmp(sb->provider->id, "docker") != 0) {
        *err = sk_error_new(SK_ERR_CONFIG, json_pack("{s:s}", "provider", sb->provider->id),
                            "%s is not a DockerSandbox", sb->provider->name);
        return NULL;
    }
    dk_sandbox *ds = sb->impl;
    if (strstr(spec->path, "{container}") && !ds->container_id) {
        *err = sk_error_new(SK_ERR_SANDBOX_NOT_READY, json_pack("{s:s}", "sandbox_id", ds->cfg.id),
                            "Sandbox '%s' has no container (it has not been started, or it was destroyed)",
                            ds->cfg.id);
        return NULL;
    }
    if (spec->n_ok > sizeof ((sk_dk_request *)0)->ok / sizeof(int)) {
        *err = sk_error_new(SK_ERR_CONFIG, NULL, "too many expected statuses");
        return NULL;
    }
    sk_dk_request *r = calloc(1, sizeof *r);
    if (r) {
        r->ds = ds;
        r->cb = cb;
        r->ud = ud;
        r->n_ok = spec->n_ok;
        memcpy(r->ok, spec->ok, spec->n_ok * sizeof(int));
        r->method = strdup(spec->method);
        r->what = strdup(spec->what ? spec->what : "Calling the Docker daemon");
        r->path = ds->container_id ? request_path(spec->path, ds->container_id) : strdup(spec->path);
    }
    if (!r || !r->method || !r->what || !r->path) {
        if (r)
            request_free(r);
        *err = sk_error_oom();
        return NULL;
    }
    r->call = sk_dk_api_call(&ds->api, r->method, r->path, spec->body, 0, spec->timeout_ms, request_on_reply, r, err);
    if (!r->call) {
        request_free(r);
        return NULL;
    }
    return r;
}
