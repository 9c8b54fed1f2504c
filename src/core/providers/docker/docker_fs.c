/* DockerSandbox's files through the Engine API's archive endpoints
 * (docs/protocols/docker.md §9): the provider's .fs operations (provider_ops.h),
 * reached from fs.lua beside this file through core.ops_open / core.ops_call.
 * open takes the sandbox (a started one: its container and API version).
 * One operation is one request, { kind, path, timeout_ms (0 or absent:
 * api_timeout) } and:
 *   kind "stat":  HEAD /containers/{id}/archive?path=<path>
 *   kind "read":  GET of the same, max_bytes (required: a larger file is
 *                 refused)
 *   kind "write": PUT /containers/{id}/archive?path=<parent> of a tar of
 *                 one new file: the body is its content, mode its bits
 * path is absolute in the container. Stream 1 carries the bytes a read
 * got (once the tar is read whole: it is held, bounded by max_bytes plus
 * DK_AR_TAR_SLACK), then stream 0 one line, "<status> <info>": status the
 * daemon's HTTP status; info, for a 200 of stat and read,
 * "<t> <size> <mtime_ms>" of the path (t: f file, d directory, l
 * symlink, o other), or a read refused: "too_large", "not_regular <t>"
 * (before a byte of the body is held) or "bad_archive: why"; for any other
 * status the daemon's message. Transport failures are the error the other
 * Engine API calls report (NetworkError, TimeoutError), naming the
 * endpoint and never the path (a path may hold anything).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../http.h"
#include "../../secrets.h"
#include "docker_archive.h"
#include "docker_state.h"

/* An error reply's body is kept up to this (a JSON message). */
#define DK_FS_ERROR_BODY_MAX ((size_t)64 << 10)

typedef enum { DK_FS_STAT = 1, DK_FS_READ, DK_FS_WRITE } dk_fs_kind;

struct sk_op {
    dk_fs_kind kind;
    sk_sandbox *sb;
    size_t max_bytes;
    sk_op_events ev;
    void *ud;
    sk_http *http;
    char *method, *vpath; /* for errors */
    sk_buf upload;        /* WRITE: the tar sent (borrowed by the request) */
    sk_buf got;           /* what arrived: READ's tar, or an error's message */
    size_t cap;           /* READ: the most of the tar kept */
    int status;
    dk_path_stat stat;
    bool have_stat;
};

static void op_free(sk_op *op)
{
    if (op->http)
        sk_http_cancel(op->http);
    sk_buf_free(&op->upload);
    sk_buf_free(&op->got);
    free(op->method);
    free(op->vpath);
    free(op);
}

static void fs_cancel(sk_op *op)
{
    if (op)
        op_free(op);
}

static void op_done(sk_op *op, int status, const char *info, const sk_error *err)
{
    if (!err) {
        char line[512];
        int n = snprintf(line, sizeof line, "%d %s", status, info ? info : "");
        op->ev.output(op->ud, 0, line, n < 0 ? 0 : (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    }
    op->ev.done(op->ud, err);
    op_free(op);
}

static void stat_info(const dk_path_stat *s, char *buf, size_t size)
{
    snprintf(buf, size, "%c %lld %lld", s->type, (long long)s->size, (long long)s->mtime_ms);
}

/* Stops a GET for reason; callbacks run from the loop, and an http
 * request's callback may cancel it. */
static void op_refuse(sk_op *op, const char *reason)
{
    sk_http_cancel(op->http);
    op->http = NULL;
    op_done(op, 200, reason, NULL);
}

static void op_on_head(sk_http *req, int status, const sk_http_header *h, size_t n, void *ud)
{
    (void)req;
    sk_op *op = ud;
    op->status = status;
    const char *v = sk_http_header_get(h, n, "X-Docker-Container-Path-Stat");
    op->have_stat = v && sk_dk_path_stat_parse(v, strlen(v), &op->stat) == 0;
    if (op->kind != DK_FS_READ || status != 200 || !op->have_stat)
        return;
    /* what the header says is refused before a byte of the body is held */
    if (op->stat.type != 'f') {
        char info[32];
        snprintf(info, sizeof info, "not_regular %c", op->stat.type);
        op_refuse(op, info);
    } else if ((uint64_t)op->stat.size > op->max_bytes) {
        op_refuse(op, "too_large");
    } else if (op->ev.size_hint) {
        op->ev.size_hint(op->ud, (size_t)op->stat.size);
    }
}

static int stop_sink(void *ud, const char *data, size_t len)
{
    (void)ud;
    (void)data;
    (void)len;
    return 1;
}

static void op_on_data(sk_http *req, const char *data, size_t len, void *ud)
{
    (void)req;
    sk_op *op = ud;
    size_t cap = op->status == 200 && op->kind == DK_FS_READ ? op->cap : DK_FS_ERROR_BODY_MAX;
    if (len > cap - op->got.len) {
        /* more than any file within max_bytes takes: too large if the
         * entry says so, else a daemon sending more than it says */
        if (op->status == 200 && op->kind == DK_FS_READ) {
            char why[128];
            int r = sk_dk_tar_read_file(op->got.data, op->got.len, op->max_bytes, stop_sink, NULL, why, sizeof why);
            op_refuse(op, r == DK_TAR_TOO_LARGE ? "too_large" : "bad_archive: more data than the entry holds");
            return;
        }
        len = cap - op->got.len; /* an error message, cut */
    }
    if (sk_buf_append(&op->got, data, len) != 0)
        op_refuse(op, "bad_archive: out of memory");
}

static int emit_piece(void *ud, const char *data, size_t len)
{
    sk_op *op = ud;
    op->ev.output(op->ud, 1, data, len);
    return 0;
}

static void op_on_done(sk_http *req, const sk_http_result *res, void *ud)
{
    (void)req;
    sk_op *op = ud;
    op->http = NULL;
    if (res->err != SK_HTTP_OK) {
        dk_sandbox *ds = op->sb->impl;
        const char *detail = res->error ? res->error : sk_http_err_name(res->err);
        const char *after = strstr(detail, ": ");
        sk_error *err = sk_dk_api_transport_error(&ds->api, op->method, op->vpath, res->err == SK_HTTP_ERR_TIMEOUT,
                                                  after ? after + 2 : detail);
        sk_error_redact(op->sb, err);
        op_done(op, 0, NULL, err);
        sk_error_free(err);
        return;
    }
    char info[160];
    const char *shown = info;
    info[0] = 0;
    if (res->status != 200) {
        dk_reply reply = { .status = res->status, .body = op->got.data ? op->got.data : "", .body_len = op->got.len };
        json_t *doc = reply.body_len && reply.body[0] == '{' ? json_loadb(reply.body, reply.body_len, 0, NULL) : NULL;
        reply.json = doc;
        snprintf(info, sizeof info, "%s", sk_dk_reply_message(&reply));
        json_decref(doc);
    } else if (op->kind == DK_FS_STAT && op->have_stat) {
        stat_info(&op->stat, info, sizeof info);
    } else if (op->kind == DK_FS_STAT) {
        shown = "bad_archive: no readable X-Docker-Container-Path-Stat header";
    } else if (op->kind == DK_FS_READ) {
        char why[128];
        int r = sk_dk_tar_read_file(op->got.data ? op->got.data : "", op->got.len, op->max_bytes, emit_piece, op, why,
                                    sizeof why);
        if (r == DK_TAR_TOO_LARGE)
            shown = "too_large";
        else if (r == DK_TAR_NOT_REGULAR)
            shown = "not_regular o";
        else if (r == DK_TAR_BAD)
            snprintf(info, sizeof info, "bad_archive: %s", why);
        else if (op->have_stat)
            stat_info(&op->stat, info, sizeof info);
    }
    op_done(op, res->status, shown, NULL);
}

static void *fs_open(sk_loop *loop, sk_sandbox *sb, const json_t *options, sk_error **err)
{
    (void)loop;
    (void)options;
    /* a DockerSandbox's provider has these files (and no call into docker.c) */
    if (!sb || sb->provider->fs != &sk_dk_fs_ops || !sb->impl) {
        *err = sk_error_new(SK_ERR_ARGUMENT, NULL, "DockerSandbox files: not a DockerSandbox");
        return NULL;
    }
    return sb; /* the binding keeps the sandbox alive while this is open */
}

static void fs_close(void *fs) { (void)fs; /* the sandbox's own state */ }

static const struct {
    const char *name, *method;
    dk_fs_kind kind;
} FS_KINDS[] = {
    { "stat", "HEAD", DK_FS_STAT },
    { "read", "GET", DK_FS_READ },
    { "write", "PUT", DK_FS_WRITE },
};

/* "/containers/<id>/archive?path=<path or, writing, its parent>[&...]",
 * malloc'd; NULL with *err. */
static char *archive_path(const dk_sandbox *ds, dk_fs_kind kind, const char *path, const char **name,
                          sk_error **err)
{
    char *parent = NULL;
    if (kind == DK_FS_WRITE) {
        /* PUT extracts into the parent directory */
        const char *slash = strrchr(path, '/');
        if (!slash[1]) {
            *err = sk_error_new(SK_ERR_ARGUMENT, NULL, "DockerSandbox files: a write needs a file path");
            return NULL;
        }
        parent = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
        *name = slash + 1;
        if (!parent) {
            *err = sk_error_oom();
            return NULL;
        }
    }
    char *id = sk_url_escape(ds->container_id, NULL);
    char *qp = sk_url_escape(parent ? parent : path, "/");
    char *rel = NULL;
    if (!id || !qp ||
        asprintf(&rel, "/containers/%s/archive?path=%s%s", id, qp,
                 kind == DK_FS_WRITE ? "&noOverwriteDirNonDir=1&copyUIDGID=1" : "") < 0) {
        rel = NULL;
        *err = sk_error_oom();
    }
    free(parent);
    free(id);
    free(qp);
    return rel;
}

static sk_op *fs_start(void *fs, const json_t *req, const char *body, size_t len, const sk_op_events *ev,
                          void *ud, sk_error **err)
{
    sk_sandbox *sb = fs;
    dk_sandbox *ds = sb->impl;
    sk_op *op = calloc(1, sizeof *op);
    if (!op) {
        *err = sk_error_oom();
        return NULL;
    }
    op->sb = sb;
    op->ev = *ev;
    op->ud = ud;
    const char *kind = json_string_value(json_object_get(req, "kind"));
    const char *method = NULL;
    for (size_t i = 0; kind && i < sizeof FS_KINDS / sizeof FS_KINDS[0]; i++)
        if (strcmp(kind, FS_KINDS[i].name) == 0) {
            op->kind = FS_KINDS[i].kind;
            method = FS_KINDS[i].method;
        }
    const char *path = json_string_value(json_object_get(req, "path"));
    json_t *max = json_object_get(req, "max_bytes"), *mode = json_object_get(req, "mode");
    if (!op->kind || !path || path[0] != '/' || (op->kind == DK_FS_READ && !max) ||
        (max && (!json_is_integer(max) || json_integer_value(max) < 0)) ||
        (mode && (!json_is_integer(mode) || json_integer_value(mode) < 0 || json_integer_value(mode) > 07777))) {
        op_free(op);
        *err = sk_error_new(SK_ERR_ARGUMENT, NULL, "DockerSandbox files: malformed operation %s",
                            kind ? kind : "(none)");
        return NULL;
    }
    if (!ds->container_id || !ds->api.version[0]) {
        op_free(op);
        *err = sk_error_new(SK_ERR_SANDBOX_NOT_READY, json_pack("{s:s}", "sandbox_id", ds->cfg.id),
                            "Sandbox '%s' has no container (it has not been started, or it was destroyed)",
                            ds->cfg.id);
        return NULL;
    }
    op->max_bytes = max ? (size_t)json_integer_value(max) : 0;
    op->cap = op->max_bytes > SIZE_MAX - DK_AR_TAR_SLACK ? SIZE_MAX : op->max_bytes + DK_AR_TAR_SLACK;
    json_t *t = json_object_get(req, "timeout_ms");
    long timeout_ms = json_is_integer(t) && json_integer_value(t) > 0 ? (long)json_integer_value(t) : 0;
    const char *name = NULL;
    char *rel = archive_path(ds, op->kind, path, &name, err);
    if (!rel) {
        op_free(op);
        return NULL;
    }
    char *v = sk_dk_api_versioned(&ds->api, rel), *url = NULL, *id = sk_url_escape(ds->container_id, NULL);
    free(rel);
    op->method = strdup(method);
    /* errors name the container and the endpoint, never the path */
    if (!id || asprintf(&op->vpath, "/containers/%s/archive", id) < 0)
        op->vpath = NULL;
    free(id);
    if (!op->method || !op->vpath || !v || asprintf(&url, "%s%s", ds->api.base_url, v) < 0) {
        free(v);
        op_free(op);
        *err = sk_error_oom();
        return NULL;
    }
    free(v);
    if (op->kind == DK_FS_WRITE) {
        const char *why;
        unsigned bits = mode ? (unsigned)json_integer_value(mode) : 0644;
        if (sk_dk_tar_write_file(&op->upload, name, body ? body : "", len, bits, time(NULL), &why) != 0) {
            free(url);
            op_free(op);
            *err = sk_error_new(SK_ERR_FILESYSTEM, NULL, "DockerSandbox files: %s", why);
            return NULL;
        }
    }
    sk_http_header headers[1] = { { "content-type", op->kind == DK_FS_WRITE ? "application/x-tar" : NULL } };
    sk_http_request rq = {
        .method = op->method,
        .url = url,
        .headers = headers,
        .n_headers = 1,
        .body = op->kind == DK_FS_WRITE ? (op->upload.data ? op->upload.data : "") : NULL,
        .body_len = op->kind == DK_FS_WRITE ? op->upload.len : 0,
        .body_borrowed = true,
        .timeout_ms = timeout_ms,
        .recv_buffer_bytes = op->kind == DK_FS_READ ? (size_t)256 << 10 : 0,
    };
    sk_dk_api_http_target(&ds->api, &rq);
    static const sk_http_callbacks cbs = { .head = op_on_head, .data = op_on_data, .done = op_on_done };
    const char *why = NULL;
    op->http = sk_http_start(sb->loop, &rq, &cbs, op, &why);
    free(url);
    if (!op->http) {
        *err = sk_dk_api_transport_error(&ds->api, op->method, op->vpath, false, why ? why : "cannot start");
        sk_error_redact(sb, *err);
        op_free(op);
        return NULL;
    }
    return op;
}

const sk_ops sk_dk_fs_ops = {
    .open = fs_open,
    .start = fs_start,
    .cancel = fs_cancel,
    .close = fs_close,
};
