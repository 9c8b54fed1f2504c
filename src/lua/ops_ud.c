/* Every provider's own operations (src/core/provider_ops.h), for Lua: the
 * one binding of them, so that no binding file is any provider's own.
 *
 * core.ops_open(target, which[, options]) -> a sandkit.ProviderOps: which
 * is "fs" (the provider's files) or "calls" (the calls behind its own
 * sandbox methods); target is a sandbox (its provider's table, on it) or a
 * provider id with options (a resource standing alone, e.g. "platform",
 * "fs": a bucket); raises the provider's ConfigError.
 * core.ops_info(ops) -> what the opened state says of itself (a table).
 * core.ops_call(ops, req, body, token) -> a handle: starts one operation,
 * req a table as the provider's table documents it (req.collect: gather
 * stream 1 here, without per-chunk strings, for core.ops_body once done;
 * req.max_collect: a longer stream 1, or a size hint above it, ends the
 * operation with ResponseTooLargeError { limit } at once),
 * body a string or nil, sent in place: the handle holds it until it is
 * collected, and collecting it cancels the operation first (Lua never runs
 * inside a core callback, so a transfer is never mid-send then). Events to
 * the token: "output" with the stream and its bytes, then "lifecycle" with
 * nil or the error. The handle cancels the operation when cancelled or
 * collected; it keeps its ProviderOps (and the sandbox) alive meanwhile.
 * core.ops_body(handle) -> the collected stream 1 of a finished operation
 * (handed over: the handle keeps no copy; "" when there was none), or nil,
 * message when Lua has no memory for the string. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <lauxlib.h>
#include <lua.h>

#include "binding.h"

#define OPS_NAME "sandkit.ProviderOps"
#define OP_NAME "sandkit.ProviderOp"

/* Presizing the collected body trusts a size hint (Content-Length) up to
 * this; past it the buffer grows as bytes arrive (a lying header costs
 * address space only: untouched pages of a large malloc are never faulted
 * in). */
#define COLLECT_PRESIZE_MAX ((size_t)1 << 30)
/* From this size on the buffer asks for huge pages: faulting in 4 KiB pages
 * cost 100-150 ms per 100 MiB here, as much as receiving them. */
#define COLLECT_HUGE_MIN ((size_t)4 << 20)

/* A collected stream 1: plain malloc'd memory (realloc'd as it grows, huge
 * pages for a large one), kept until core.ops_body takes it. */
typedef struct {
    char *data;
    size_t len, cap;
} collected;

typedef struct {
    const sk_ops *ops; /* NULL once closed */
    void *state;       /* what ops->open made */
    const void *scope; /* whose secrets errors are redacted against: the sandbox, or NULL (all) */
} ops_box;

typedef struct {
    const sk_ops *ops;
    sk_op *op; /* NULL once done or cancelled */
    const void *scope;
    skl_target target;
    bool collect;  /* stream 1 gathered here, handed over whole */
    bool oom;      /* collecting ran out of memory: the rest is dropped */
    bool too_large; /* past max_collect: finished with the error, the rest is dropped */
    size_t max_collect; /* collect: a longer stream 1 (or size hint) fails; 0 = none */
    collected body;
} op_box;

static void body_free(collected *b)
{
    free(b->data);
    *b = (collected){ 0 };
}

static int body_resize(collected *b, size_t cap)
{
    char *d = realloc(b->data, cap);
    if (!d)
        return -1;
    b->data = d;
    b->cap = cap;
#ifdef MADV_HUGEPAGE
    if (cap >= COLLECT_HUGE_MIN) {
        /* advice only: the page-aligned inside of the allocation */
        uintptr_t lo = ((uintptr_t)d + 4095) & ~(uintptr_t)4095;
        uintptr_t hi = ((uintptr_t)d + cap) & ~(uintptr_t)4095;
        if (hi > lo)
            (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
    }
#endif
    return 0;
}

static int body_append(collected *b, const char *data, size_t len)
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

/* Stream 1 passed max_collect: the error now. A callback may not cancel
 * its op (provider_ops.h): the rest is dropped as it comes, until Lua,
 * woken by the error, cancels the handle. */
static void too_large(op_box *box)
{
    box->too_large = true;
    body_free(&box->body);
    sk_error *err = sk_error_new(SK_ERR_RESPONSE_TOO_LARGE, json_pack("{s:I}", "limit", (json_int_t)box->max_collect),
                                 "The response body is longer than %zu bytes", box->max_collect);
    skl_finish(&box->target, SKL_EV_LIFECYCLE, err, box->scope);
    sk_error_free(err);
}

static void on_size(void *ud, size_t len)
{
    op_box *box = ud;
    if (!box->collect || box->too_large || len == 0)
        return;
    if (box->max_collect && len > box->max_collect) {
        too_large(box);
        return;
    }
    if (len > COLLECT_PRESIZE_MAX)
        return;
    body_free(&box->body); /* output before the size (none today) is not this one's */
    (void)body_resize(&box->body, len); /* else grown as bytes arrive */
}

static void on_output(void *ud, int stream, const char *data, size_t len)
{
    op_box *box = ud;
    if (box->too_large)
        return;
    if (!box->collect || stream != 1)
        skl_emit(&box->target, stream, data, len);
    else if (box->max_collect && len > box->max_collect - box->body.len)
        too_large(box);
    else if (!box->oom && body_append(&box->body, data, len) != 0) {
        box->oom = true;
        body_free(&box->body);
    }
}

static void on_done(void *ud, const sk_error *err)
{
    op_box *box = ud;
    box->op = NULL; /* freed when this returns */
    if (box->too_large)
        return; /* finished already */
    if (!err && box->oom)
        box->target.lost = true; /* skl_finish reports it */
    if (err || box->oom || !box->collect)
        body_free(&box->body); /* else kept for core.ops_body */
    skl_finish(&box->target, SKL_EV_LIFECYCLE, err, box->scope);
}

static int op_cancel(lua_State *L)
{
    op_box *box = luaL_checkudata(L, 1, OP_NAME);
    if (box->op) {
        box->ops->cancel(box->op);
        box->op = NULL;
    }
    body_free(&box->body);
    skl_target_release(&box->target);
    return 0;
}

static int ops_gc(lua_State *L)
{
    ops_box *box = luaL_checkudata(L, 1, OPS_NAME);
    if (box->ops) {
        box->ops->close(box->state);
        box->ops = NULL;
    }
    return 0;
}

int skl_ops_open(lua_State *L)
{
    static const char *const which_names[] = { "fs", "calls", NULL };
    skl_state *st = skl_state_get(L);
    const sk_provider *prov;
    sk_sandbox *sb = NULL;
    int which = luaL_checkoption(L, 2, NULL, which_names);
    if (lua_type(L, 1) == LUA_TSTRING) {
        const char *id = lua_tostring(L, 1);
        if (!(prov = sk_provider_find(id)))
            return luaL_error(L, "ops_open: unknown provider '%s'", id);
        luaL_checktype(L, 3, LUA_TTABLE);
    } else {
        sb = skl_check_sandbox(L, 1);
        prov = sk_sandbox_provider(sb);
    }
    const sk_ops *ops = which == 0 ? sk_provider_fs(prov) : sk_provider_calls(prov);
    if (!ops)
        return luaL_error(L, "ops_open: %s has no '%s' operations of its own", sk_provider_name(prov),
                          which_names[which]);
    ops_box *box = lua_newuserdatauv(L, sizeof *box, 1);
    *box = (ops_box){ 0 };
    if (luaL_newmetatable(L, OPS_NAME)) {
        lua_pushcfunction(L, ops_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1); /* the sandbox outlives its operations */
    json_t *opts = sb ? NULL : skl_to_json(L, 3, "options");
    sk_error *err = NULL;
    void *state = ops->open(st->loop, sb, opts, &err);
    json_decref(opts);
    if (!state) {
        static const char tokens_only; /* no sandbox's env values apply */
        skl_push_error_take(L, st, err, sb ? (const void *)sb : &tokens_only);
        return lua_error(L);
    }
    box->ops = ops;
    box->state = state;
    box->scope = sb;
    return 1;
}

int skl_ops_info(lua_State *L)
{
    ops_box *ob = luaL_checkudata(L, 1, OPS_NAME);
    luaL_argcheck(L, ob->ops != NULL, 1, "closed operations");
    json_t *info = ob->ops->info ? ob->ops->info(ob->state) : NULL;
    if (info)
        skl_push_json_take(L, info);
    else
        lua_newtable(L);
    return 1;
}

int skl_ops_call(lua_State *L)
{
    skl_state *st = skl_state_get(L);
    ops_box *ob = luaL_checkudata(L, 1, OPS_NAME);
    luaL_checktype(L, 2, LUA_TTABLE);
    size_t body_len = 0;
    const char *body = luaL_optlstring(L, 3, NULL, &body_len);
    lua_Integer token = luaL_checkinteger(L, 4);
    luaL_argcheck(L, ob->ops != NULL, 1, "closed operations");
    lua_getfield(L, 2, "collect");
    bool collect = lua_toboolean(L, -1);
    lua_getfield(L, 2, "max_collect");
    lua_Integer max_collect = luaL_optinteger(L, -1, 0);
    luaL_argcheck(L, max_collect >= 0, 2, "max_collect must be >= 0");
    lua_pop(L, 2);
    op_box *box = lua_newuserdatauv(L, sizeof *box, 2);
    memset(box, 0, sizeof *box);
    box->ops = ob->ops;
    box->scope = ob->scope;
    box->collect = collect;
    box->max_collect = (size_t)max_collect;
    skl_push_cancel_meta(L, OP_NAME, op_cancel, op_cancel);
    lua_setmetatable(L, -2);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1); /* the ProviderOps outlives its operations */
    lua_pushvalue(L, 3);
    lua_setiuservalue(L, -2, 2); /* the borrowed body lives as long as the handle */
    if (skl_target_init(&box->target, st, token) != 0)
        return luaL_error(L, "out of memory");
    json_t *req = skl_to_json(L, 2, "ops_call");
    static const sk_op_events ev = { .output = on_output, .size_hint = on_size, .done = on_done };
    sk_error *err = NULL;
    box->op = ob->ops->start(ob->state, req, body, body_len, &ev, box, &err);
    json_decref(req);
    if (!box->op) {
        skl_push_error_take(L, st, err, ob->scope);
        return lua_error(L);
    }
    return 1;
}

int skl_ops_body(lua_State *L)
{
    op_box *box = luaL_checkudata(L, 1, OP_NAME);
    luaL_argcheck(L, !box->op, 1, "the operation is still running");
    int rc = skl_push_lstring_protected(L, box->body.data, box->body.len);
    body_free(&box->body);
    if (rc == 0)
        return 1;
    lua_pushnil(L);
    lua_pushliteral(L, "out of memory for the response body");
    return 2;
}
