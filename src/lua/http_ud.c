/* core.http_request(opts, token): one HTTP request on the loop for Lua
 * (PlatformFilesystem). Events to the token: "output" stream 0 = the
 * response head ("<status>\n" then "name: value\n" lines), stream 1 = body
 * bytes as they arrive (with opts.collect: the whole body in one event, at
 * the end); then "lifecycle" with nil or a transport error (kind
 * HttpTransportError; the message never holds header values). The returned
 * handle cancels the request when closed or collected. */
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <lauxlib.h>
#include <lua.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/buf.h"
#include "../core/http.h"
#include "binding.h"

#define HTTP_NAME "sandkit.HttpRequest"

/* Presizing the collected body trusts Content-Length up to this; past it
 * the buffer grows as bytes arrive (a lying header costs address space
 * only: untouched pages of a large malloc are never faulted in). */
#define HTTP_PRESIZE_MAX ((size_t)1 << 30)
/* From this size on the buffer asks for huge pages: faulting in 4 KiB pages
 * cost 100-150 ms per 100 MiB here, as much as receiving them. */
#define HTTP_HUGE_MIN ((size_t)4 << 20)

/* The collected body: plain malloc'd memory, whatever sk_buf's policy for
 * large buffers, since skl_emit_take hands it on to be free()d. */
typedef struct {
    char *data;
    size_t len, cap;
} http_body;

typedef struct {
    sk_http *req;
    skl_target target;
    bool collect;  /* body gathered here, handed over whole */
    bool oom;      /* collecting ran out of memory: the rest is dropped */
    http_body body;
} http_box;

static void body_free(http_body *b)
{
    free(b->data);
    *b = (http_body){ 0 };
}

static int body_resize(http_body *b, size_t cap)
{
    char *d = realloc(b->data, cap);
    if (!d)
        return -1;
    b->data = d;
    b->cap = cap;
#ifdef MADV_HUGEPAGE
    if (cap >= HTTP_HUGE_MIN) {
        /* advice only: the page-aligned inside of the allocation */
        uintptr_t lo = ((uintptr_t)d + 4095) & ~(uintptr_t)4095;
        uintptr_t hi = ((uintptr_t)d + cap) & ~(uintptr_t)4095;
        if (hi > lo)
            (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
    }
#endif
    return 0;
}

static int body_append(http_body *b, const char *data, size_t len)
{
    if (len > b->cap - b->len) {
        if (len > SIZE_MAX / 2 - b->len)
            return -1;
        size_t cap = b->cap ? b->cap : 65536;
        while (cap < b->len + len)
            cap *= 2;
        if (body_resize(b, cap) != 0)
            return -1;
    }
    memcpy(b->data + b->len, data, len);
    b->len += len;
    return 0;
}

/* The collected body's final size, when the server says it. */
static void presize(http_box *box, const sk_http_header *h, size_t n)
{
    const char *cl = sk_http_header_get(h, n, "content-length");
    if (!cl)
        return;
    char *end;
    errno = 0;
    unsigned long long len = strtoull(cl, &end, 10);
    if (end == cl || *end || errno || len == 0 || len > HTTP_PRESIZE_MAX)
        return;
    (void)body_resize(&box->body, (size_t)len); /* else grown as bytes arrive */
}

static void on_head(sk_http *req, int status, const sk_http_header *h, size_t n, void *ud)
{
    (void)req;
    http_box *box = ud;
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
    if (rc == 0)
        skl_emit(&box->target, 0, b.data, b.len);
    else
        box->target.lost = true;
    sk_buf_free(&b);
    if (box->collect) {
        body_free(&box->body); /* a body before this head (none today) is not this one's */
        presize(box, h, n);
    }
}

static void on_data(sk_http *req, const char *data, size_t len, void *ud)
{
    (void)req;
    http_box *box = ud;
    if (!box->collect)
        skl_emit(&box->target, 1, data, len);
    else if (!box->oom && body_append(&box->body, data, len) != 0) {
        box->oom = true;
        body_free(&box->body);
    }
}

static void on_done(sk_http *req, const sk_http_result *res, void *ud)
{
    (void)req;
    http_box *box = ud;
    box->req = NULL; /* freed when this returns */
    sk_error *err = NULL;
    if (res->err != SK_HTTP_OK)
        err = sk_error_new(SK_ERR_HTTP_TRANSPORT, json_pack("{s:s}", "reason", sk_http_err_name(res->err)),
                           "HTTP request failed: %s", res->error ? res->error : sk_http_err_name(res->err));
    else if (box->oom)
        box->target.lost = true; /* skl_finish reports it */
    else if (box->collect && box->body.len) {
        size_t len = box->body.len;
        char *data = box->body.data;
        box->body = (http_body){ 0 };
        skl_emit_take(&box->target, 1, data, len);
    }
    body_free(&box->body);
    skl_finish(&box->target, SKL_EV_LIFECYCLE, err, NULL);
    sk_error_free(err);
}

static int http_close(lua_State *L)
{
    http_box *box = luaL_checkudata(L, 1, HTTP_NAME);
    if (box->req) {
        sk_http_cancel(box->req);
        box->req = NULL;
    }
    body_free(&box->body);
    skl_target_release(&box->target);
    return 0;
}

/* opts: method, url, headers (array of { name, value }), body, timeout_ms,
 * collect (boolean), recv_buffer_bytes (curl's receive buffer; large for
 * bulk bodies: fewer wakeups and calls per byte). The body string is not
 * copied: the handle holds it (user value 1) until it is collected, and
 * collecting it cancels the request first; Lua code never runs inside a
 * curl callback, so curl is never mid-send when that happens. */
int skl_http_request(lua_State *L)
{
    skl_state *st = skl_state_get(L);
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_Integer token = luaL_checkinteger(L, 2);
    lua_getfield(L, 1, "method");
    const char *method = luaL_checkstring(L, -1);
    lua_getfield(L, 1, "url");
    const char *url = luaL_checkstring(L, -1);
    lua_getfield(L, 1, "body");
    size_t body_len = 0;
    const char *body = lua_isnil(L, -1) ? NULL : luaL_checklstring(L, -1, &body_len);
    int body_idx = lua_gettop(L);
    lua_getfield(L, 1, "timeout_ms");
    long timeout = (long)luaL_optinteger(L, -1, 0);
    lua_getfield(L, 1, "collect");
    bool collect = lua_toboolean(L, -1);
    lua_getfield(L, 1, "recv_buffer_bytes");
    lua_Integer recv_buffer = luaL_optinteger(L, -1, 0);
    if (recv_buffer != 0 && (recv_buffer < 1024 || recv_buffer > (lua_Integer)1 << 30))
        return luaL_error(L, "recv_buffer_bytes must be between 1024 and 2^30");
    lua_getfield(L, 1, "headers");
    size_t n = lua_istable(L, -1) ? lua_rawlen(L, -1) : 0;
    int hidx = lua_gettop(L);
    sk_http_header *h = lua_newuserdatauv(L, (n ? n : 1) * sizeof *h, 0); /* owned by Lua */
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, hidx, (lua_Integer)i + 1);
        lua_rawgeti(L, -1, 1);
        lua_rawgeti(L, -2, 2);
        h[i].name = luaL_checkstring(L, -2);
        h[i].value = luaL_checkstring(L, -1);
        /* the strings stay alive: the header table holds them until return */
        lua_pop(L, 3);
    }
    http_box *box = lua_newuserdatauv(L, sizeof *box, 1);
    memset(box, 0, sizeof *box);
    box->collect = collect;
    skl_push_cancel_meta(L, HTTP_NAME, http_close, http_close);
    lua_setmetatable(L, -2);
    lua_pushvalue(L, body_idx);
    lua_setiuservalue(L, -2, 1); /* the borrowed body lives as long as the handle */
    if (skl_target_init(&box->target, st, token) != 0)
        return luaL_error(L, "out of memory");
    sk_http_request rq = {
        .method = method, .url = url, .headers = h, .n_headers = n,
        .body = body, .body_len = body_len, .body_borrowed = true, .timeout_ms = timeout,
        .recv_buffer_bytes = (size_t)recv_buffer,
    };
    static const sk_http_callbacks cb = { .head = on_head, .data = on_data, .done = on_done };
    const char *msg = NULL;
    box->req = sk_http_start(st->loop, &rq, &cb, box, &msg);
    if (!box->req)
        return luaL_error(L, "http request not started: %s", msg ? msg : "unknown error");
    return 1;
}

/* core.json_decode(s): the value, or nil, message. */
int skl_json_decode(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    json_error_t e;
    json_t *v = json_loadb(s, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    if (!v) {
        lua_pushnil(L);
        lua_pushstring(L, e.text);
        return 2;
    }
    skl_push_json_take(L, v);
    return 1;
}
