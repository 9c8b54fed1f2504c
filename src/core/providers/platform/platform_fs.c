/* PlatformFilesystem's wire: the bucket routes of the workspace proxy
 * (docs/platform-filesystem.md), as the platform provider's sk_ops
 * (provider_ops.h). open makes a bucket standing alone from options (the
 * settings every Platform client resolves, platform_api.h, plus
 * bucket_name else MASTRA_PLATFORM_BUCKET_NAME, request_timeout_ms,
 * ca_file, insecure_skip_verify); the token never leaves C, info() shows
 * the bucket_name it resolved. One operation
 * is one request { method, key, query = { {name, value}, ... }, headers =
 * { {name, value}, ... }, bulk }: the URL is the bucket's route of key,
 * authorization and x-acting-user-id are added, body is sent as it is.
 * Stream 0 carries the response head ("<status>\n", then "name: value\n"
 * lines), stream 1 the body as it arrives. A transport failure is an
 * HttpTransportError (reason: timeout, connect, ...; the message never
 * holds a header value). What the answers mean is the Lua side's
 * (src/core/providers/platform/fs.lua). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../buf.h"
#include "platform_state.h"

/* Receive buffer for object bodies: 16 KiB (curl's default) made a 100 MiB
 * read 6,400 loop turns; curl's own tool uses 100 KiB. */
#define PLATFORM_FS_BULK_RECV ((size_t)128 * 1024)

typedef struct platform_bucket {
    platform_api *api;
    char *name;  /* as resolved: info() shows it */
    char *route; /* "/fs/<enc(bucket)>/" */
} platform_bucket;

struct sk_op {
    sk_http *http;
    sk_op_events ev;
    void *ud;
};

static void bucket_close(void *fs)
{
    platform_bucket *b = fs;
    if (!b)
        return;
    sk_platform_api_free(b->api);
    free(b->name);
    free(b->route);
    free(b);
}

static void *bucket_open(sk_loop *loop, sk_sandbox *sb, const json_t *o, sk_error **err)
{
    (void)sb;
    platform_api *api = sk_platform_api_open(loop, o, "PlatformFilesystem", NULL, err);
    if (!api)
        return NULL;
    const char *bucket = sk_platform_setting(o, "bucket_name", "MASTRA_PLATFORM_BUCKET_NAME");
    if (!bucket) {
        sk_platform_api_free(api);
        *err = sk_platform_config_error("bucket_name", "%s",
                                        "PlatformFilesystem: bucket_name is required (option bucket_name or "
                                        "MASTRA_PLATFORM_BUCKET_NAME)");
        return NULL;
    }
    platform_bucket *b = calloc(1, sizeof *b);
    char *enc = sk_platform_enc(bucket);
    if (b) {
        b->api = api;
        api = NULL;
        if (!enc || asprintf(&b->route, "/fs/%s/", enc) < 0)
            b->route = NULL;
        b->name = strdup(bucket);
    }
    free(enc);
    if (!b || !b->route || !b->name) {
        sk_platform_api_free(api);
        bucket_close(b);
        *err = sk_error_oom();
        return NULL;
    }
    return b;
}

/* A key on the wire: each segment as encodeURIComponent writes it, the '/'
 * between them kept (docs/platform-filesystem.md). */
static int bucket_append_key(sk_buf *out, const char *key)
{
    int rc = 0;
    for (const char *p = key; *p && rc == 0;) {
        size_t n = strcspn(p, "/");
        char *seg = strndup(p, n), *enc = seg ? sk_platform_enc(seg) : NULL;
        rc = enc ? sk_buf_append(out, enc, strlen(enc)) : -1;
        free(seg);
        free(enc);
        p += n;
        if (*p == '/' && rc == 0) {
            rc = sk_buf_append(out, "/", 1);
            p++;
        }
    }
    return rc;
}

/* URLSearchParams form encoding: space as '+'. */
static int bucket_append_form(sk_buf *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    int rc = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && rc == 0; p++) {
        char esc[3] = { '%', hex[*p >> 4], hex[*p & 15] };
        if (*p == ' ')
            rc = sk_buf_append(out, "+", 1);
        else if ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                 strchr("-_.*", *p))
            rc = sk_buf_append(out, (const char *)p, 1);
        else
            rc = sk_buf_append(out, esc, 3);
    }
    return rc;
}

/* Side `which` (0 name, 1 value) of pair i of list, an array of
 * {name, value} arrays; NULL when that is not a string. */
static const char *pair_at(const json_t *list, size_t i, int which)
{
    return json_string_value(json_array_get(json_array_get(list, i), (size_t)which));
}

static void bucket_on_head(sk_http *req, int status, const sk_http_header *h, size_t n, void *ud)
{
    (void)req;
    sk_op *op = ud;
    sk_buf b = { 0 };
    char line[32];
    int len = snprintf(line, sizeof line, "%d\n", status);
    int rc = sk_buf_append(&b, line, (size_t)len);
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc |= sk_buf_append(&b, h[i].name, strlen(h[i].name));
        rc |= sk_buf_append(&b, ": ", 2);
        rc |= sk_buf_append(&b, h[i].value, strlen(h[i].value));
        rc |= sk_buf_append(&b, "\n", 1);
    }
    /* out of memory: an empty head, which the reader takes as no answer */
    op->ev.output(op->ud, 0, rc == 0 ? b.data : "", rc == 0 ? b.len : 0);
    sk_buf_free(&b);
    const char *cl = sk_http_header_get(h, n, "content-length");
    char *end;
    unsigned long long declared = cl ? strtoull(cl, &end, 10) : 0;
    if (cl && end != cl && !*end && op->ev.size_hint)
        op->ev.size_hint(op->ud, (size_t)declared);
}

static void bucket_on_data(sk_http *req, const char *data, size_t len, void *ud)
{
    (void)req;
    sk_op *op = ud;
    op->ev.output(op->ud, 1, data, len);
}

static void bucket_on_done(sk_http *req, const sk_http_result *res, void *ud)
{
    (void)req;
    sk_op *op = ud;
    sk_error *err = NULL;
    if (res->err != SK_HTTP_OK)
        err = sk_error_new(SK_ERR_HTTP_TRANSPORT, json_pack("{s:s}", "reason", sk_http_err_name(res->err)),
                           "HTTP request failed: %s", res->error ? res->error : sk_http_err_name(res->err));
    op->ev.done(op->ud, err);
    sk_error_free(err);
    free(op);
}

static sk_op *bucket_start(void *fs, const json_t *req, const char *body, size_t len, const sk_op_events *ev,
                              void *ud, sk_error **err)
{
    platform_bucket *b = fs;
    const char *method = json_string_value(json_object_get(req, "method"));
    const char *key = json_string_value(json_object_get(req, "key"));
    json_t *query = json_object_get(req, "query"), *headers = json_object_get(req, "headers");
    if (!method || !key) {
        *err = sk_error_new(SK_ERR_ARGUMENT, NULL, "PlatformFilesystem: a request needs method and key");
        return NULL;
    }
    sk_buf path = { 0 };
    int rc = sk_buf_append(&path, b->route, strlen(b->route));
    rc |= bucket_append_key(&path, key);
    const char *sep = "?";
    for (size_t i = 0; i < json_array_size(query) && rc == 0; i++) {
        if (!pair_at(query, i, 0) || !pair_at(query, i, 1))
            continue;
        rc |= sk_buf_append(&path, sep, 1);
        sep = "&";
        rc |= bucket_append_form(&path, pair_at(query, i, 0));
        rc |= sk_buf_append(&path, "=", 1);
        rc |= bucket_append_form(&path, pair_at(query, i, 1));
    }
    size_t nh = json_array_size(headers);
    sk_http_header *h = calloc(nh ? nh : 1, sizeof *h);
    size_t n = 0;
    for (size_t i = 0; h && i < nh; i++)
        if (pair_at(headers, i, 0) && pair_at(headers, i, 1))
            h[n++] = (sk_http_header){ pair_at(headers, i, 0), pair_at(headers, i, 1) };
    sk_op *op = calloc(1, sizeof *op);
    if (rc != 0 || !h || !op) {
        sk_buf_free(&path);
        free(h);
        free(op);
        *err = sk_error_oom();
        return NULL;
    }
    op->ev = *ev;
    op->ud = ud;
    static const sk_http_callbacks cb = { .head = bucket_on_head, .data = bucket_on_data, .done = bucket_on_done };
    const char *why = NULL;
    op->http = sk_platform_api_request(b->api, method, path.data, h, n, body, len,
                                       json_is_true(json_object_get(req, "bulk")) ? PLATFORM_FS_BULK_RECV : 0, &cb,
                                       op, &why);
    sk_buf_free(&path);
    free(h);
    if (!op->http) {
        free(op);
        *err = sk_error_new(SK_ERR_HTTP_TRANSPORT, json_pack("{s:s}", "reason", "usage"),
                            "HTTP request not started: %s", why ? why : "unknown error");
        return NULL;
    }
    return op;
}

static void bucket_cancel(sk_op *op)
{
    if (!op)
        return;
    sk_http_cancel(op->http);
    free(op);
}

static json_t *bucket_info(void *fs)
{
    platform_bucket *b = fs;
    return json_pack("{s:s}", "bucket_name", b->name);
}

const sk_ops sk_platform_fs_ops = {
    .open = bucket_open,
    .start = bucket_start,
    .cancel = bucket_cancel,
    .close = bucket_close,
    .info = bucket_info,
};
