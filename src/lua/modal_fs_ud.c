/* core.modal_fs(sandbox, op, token): one Sandbox.open() filesystem
 * operation on a ModalSandbox (src/core/providers/modal/modal_fs.h), for sb.fs.
 * op: { kind = "open"|"read"|"write"|"flush"|"close", fd, path, mode,
 * data, n, timeout_ms }. Events to the token: "output" stream 1 = bytes
 * read, stream 0 = the file descriptor an open returned; then "lifecycle"
 * with nil or the error. The returned handle cancels the operation when
 * cancelled or collected; it keeps the sandbox alive meanwhile. */
#include <lauxlib.h>
#include <lua.h>
#include <stdlib.h>
#include <string.h>

#include "../core/providers/modal/modal_fs.h"
#include "binding.h"

#define MODAL_FS_NAME "sandkit.ModalFsOp"

typedef struct {
    sk_modal_fs_op *op;
    const sk_sandbox *sb; /* the scope errors are redacted against */
    skl_target target;
} modal_fs_box;

static void on_data(void *ud, const uint8_t *data, size_t len)
{
    modal_fs_box *box = ud;
    skl_emit(&box->target, 1, (const char *)data, len);
}

static void on_done(void *ud, const char *fd, const sk_error *err)
{
    modal_fs_box *box = ud;
    box->op = NULL; /* freed when this returns */
    if (fd)
        skl_emit(&box->target, 0, fd, strlen(fd));
    skl_finish(&box->target, SKL_EV_LIFECYCLE, err, box->sb);
}

static int modal_fs_cancel(lua_State *L)
{
    modal_fs_box *box = luaL_checkudata(L, 1, MODAL_FS_NAME);
    sk_modal_fs_cancel(box->op);
    box->op = NULL;
    skl_target_release(&box->target);
    return 0;
}

static const struct {
    const char *name;
    sk_modal_fs_kind kind;
} KINDS[] = {
    { "open", SK_MODAL_FS_OPEN },   { "read", SK_MODAL_FS_READ },   { "write", SK_MODAL_FS_WRITE },
    { "flush", SK_MODAL_FS_FLUSH }, { "close", SK_MODAL_FS_CLOSE },
};

static const char *opt_str(lua_State *L, int t, const char *key, size_t *len)
{
    lua_getfield(L, t, key);
    const char *s = lua_isnil(L, -1) ? NULL : luaL_checklstring(L, -1, len);
    lua_pop(L, 1); /* the op table keeps the string alive */
    return s;
}

int skl_modal_fs(lua_State *L)
{
    skl_state *st = skl_state_get(L);
    sk_sandbox *sb = skl_check_sandbox(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_Integer token = luaL_checkinteger(L, 3);
    sk_modal_container_filesystem_exec_req req = { 0 };
    const char *kind = opt_str(L, 2, "kind", NULL);
    for (size_t i = 0; kind && i < sizeof KINDS / sizeof KINDS[0]; i++)
        if (strcmp(kind, KINDS[i].name) == 0)
            req.kind = KINDS[i].kind;
    if (!req.kind)
        return luaL_error(L, "modal_fs: unknown operation %s", kind ? kind : "(none)");
    req.fd = opt_str(L, 2, "fd", NULL);
    req.path = opt_str(L, 2, "path", NULL);
    req.mode = opt_str(L, 2, "mode", NULL);
    req.data = opt_str(L, 2, "data", &req.len);
    if (req.kind == SK_MODAL_FS_OPEN ? !req.path || !req.mode : !req.fd)
        return luaL_error(L, "modal_fs: %s needs %s", kind, req.kind == SK_MODAL_FS_OPEN ? "path and mode" : "fd");
    lua_getfield(L, 2, "n");
    if (!lua_isnil(L, -1)) {
        lua_Integer n = luaL_checkinteger(L, -1);
        if (n < 0 || n > UINT32_MAX)
            return luaL_error(L, "modal_fs: n out of range");
        req.has_n = true;
        req.n = (uint32_t)n;
    }
    lua_getfield(L, 2, "timeout_ms");
    lua_Integer timeout_ms = luaL_optinteger(L, -1, 0);
    lua_pop(L, 2);
    modal_fs_box *box = lua_newuserdatauv(L, sizeof *box, 1);
    memset(box, 0, sizeof *box);
    skl_push_cancel_meta(L, MODAL_FS_NAME, modal_fs_cancel, modal_fs_cancel);
    lua_setmetatable(L, -2);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1); /* the sandbox outlives the operation */
    box->sb = sb;
    if (skl_target_init(&box->target, st, token) != 0)
        return luaL_error(L, "out of memory");
    static const sk_modal_fs_events ev = { .data = on_data, .done = on_done };
    sk_error *err = NULL;
    box->op = sk_modal_fs_start(sb, &req, (int64_t)timeout_ms, &ev, box, &err);
    if (!box->op) {
        skl_push_error_take(L, st, err, sb);
        return lua_error(L);
    }
    return 1;
}
