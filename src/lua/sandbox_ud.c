/* The sandkit.Sandbox userdata class. Its user-facing methods are Lua
 * functions (lua/sandkit/sandbox.lua) placed in the method table this file
 * creates; the C functions here are the primitives those methods build on,
 * handed to sandbox.lua alone through core.primitives() and never
 * reachable from a sandbox. Processes are in process_ud.c. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/secrets.h"
#include "binding.h"

skl_sandbox *skl_sandbox_check(lua_State *L, int idx)
{
    skl_sandbox *s = luaL_checkudata(L, idx, SKL_SANDBOX);
    if (!s->sb)
        luaL_error(L, "sandkit.Sandbox is closed");
    return s;
}

sk_sandbox *skl_check_sandbox(lua_State *L, int idx) { return skl_sandbox_check(L, idx)->sb; }

/* ---- core callbacks: queue only -------------------------------------------- */

static void sandbox_lifecycle_done(sk_sandbox *sb, const sk_error *err, void *ud)
{
    skl_target *t = ud;
    skl_finish(t, SKL_EV_LIFECYCLE, err, sb);
    free(t);
}

/* ---- construction ----------------------------------------------------------- */

/* new_sandbox(provider_id, options) -> Sandbox; raises ConfigError & co. */
int skl_new_sandbox(lua_State *L)
{
    skl_state *st = skl_state_get(L);
    const char *id = luaL_checkstring(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    const sk_provider *prov = sk_provider_find(id);
    if (!prov)
        return luaL_error(L, "unknown sandbox provider '%s'", id);
    /* Everything that may raise comes before the JSON exists: nothing can
     * leak it. */
    skl_sandbox *s = lua_newuserdatauv(L, sizeof *s, 1);
    s->sb = NULL;
    s->st = st;
    luaL_setmetatable(L, SKL_SANDBOX);
    lua_newtable(L);
    lua_pushboolean(L, sk_provider_stops_when_idle(prov));
    lua_setfield(L, -2, "stop_when_idle");
    lua_setiuservalue(L, -2, 1);
    json_t *opts = skl_to_json(L, 2, "options");
    sk_error *err = NULL;
    s->sb = sk_sandbox_new(st->loop, prov, opts, &err);
    json_decref(opts);
    if (!s->sb) {
        static const char tokens_only; /* a scope no env value belongs to */
        skl_push_error_take(L, st, err, &tokens_only);
        return lua_error(L);
    }
    return 1;
}

/* ---- Sandbox ----------------------------------------------------------------- */

static int sandbox_lifecycle(lua_State *L, void (*op)(sk_sandbox *, sk_lifecycle_cb, void *))
{
    skl_sandbox *s = skl_sandbox_check(L, 1);
    lua_Integer token = luaL_checkinteger(L, 2);
    skl_target *t = malloc(sizeof *t);
    if (!t || skl_target_init(t, s->st, token) != 0) {
        free(t);
        return luaL_error(L, "out of memory");
    }
    op(s->sb, sandbox_lifecycle_done, t);
    return 0;
}

static int sandbox_start(lua_State *L) { return sandbox_lifecycle(L, sk_sandbox_start); }
static int sandbox_stop(lua_State *L) { return sandbox_lifecycle(L, sk_sandbox_stop); }
static int sandbox_destroy(lua_State *L) { return sandbox_lifecycle(L, sk_sandbox_destroy); }
static int sandbox_refresh(lua_State *L) { return sandbox_lifecycle(L, sk_sandbox_refresh); }

/* A start hook failed: the sandbox is in error until the next start. */
static int sandbox_mark_error(lua_State *L)
{
    sk_sandbox_mark_error(skl_sandbox_check(L, 1)->sb);
    return 0;
}

static int sandbox_state(lua_State *L) { return skl_push_state(L, SKL_SANDBOX, 1); }

static int sandbox_info(lua_State *L)
{
    skl_sandbox *s = skl_sandbox_check(L, 1);
    sk_sandbox *sb = s->sb;
    lua_createtable(L, 0, 6);
    lua_pushstring(L, sk_sandbox_id(sb));
    lua_setfield(L, -2, "id");
    lua_pushstring(L, sk_sandbox_name(sb));
    lua_setfield(L, -2, "name");
    lua_pushstring(L, sk_provider_id(sk_sandbox_provider(sb)));
    lua_setfield(L, -2, "provider");
    lua_pushstring(L, sk_status_name(sk_sandbox_status(sb)));
    lua_setfield(L, -2, "status");
    double created_at_ms = sk_sandbox_created_at_ms(sb);
    time_t secs = (time_t)(created_at_ms / 1000.0);
    struct tm tm;
    char iso[40];
    gmtime_r(&secs, &tm);
    size_t n = strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(iso + n, sizeof iso - n, ".%03dZ", (int)((long long)created_at_ms % 1000));
    lua_pushstring(L, iso);
    lua_setfield(L, -2, "created_at");
    json_t *meta = sk_sandbox_metadata(sb);
    /* metadata holds a server's strings (ids, statuses): a token it echoes
     * there is cut as in errors. Tokens only: paths and names in it may
     * well contain an env value. */
    static const char tokens_only;
    if (meta && sk_json_redact(&tokens_only, meta) != 0) {
        json_decref(meta);
        meta = NULL; /* out of memory: withheld rather than half redacted */
    }
    if (meta)
        skl_push_json_take(L, meta);
    else
        lua_newtable(L);
    lua_setfield(L, -2, "metadata");
    return 1;
}

static int sandbox_default_instructions(lua_State *L)
{
    skl_sandbox *s = skl_sandbox_check(L, 1);
    char *text = sk_sandbox_instructions(s->sb);
    if (!text)
        return 0;
    lua_pushstring(L, text);
    free(text);
    return 1;
}

/* get(sb, pid) -> Process | nil (prune-on-read in the core) */
static int sandbox_get(lua_State *L)
{
    skl_sandbox *s = skl_sandbox_check(L, 1);
    const char *pid = luaL_checkstring(L, 2);
    sk_process *p = sk_process_get(s->sb, pid);
    if (!p || !skl_process_push(L, p))
        return 0;
    return 1;
}

/* list(sb) -> array of Process (tracked ones, newest last) */
static int sandbox_list(lua_State *L)
{
    skl_sandbox *s = skl_sandbox_check(L, 1);
    lua_newtable(L);
    int n = 0;
    for (sk_process *p = sk_sandbox_processes(s->sb); p; p = sk_process_next(p)) {
        if (!sk_process_tracked(p) || !skl_process_push(L, p))
            continue;
        lua_rawseti(L, -2, ++n);
    }
    /* procs is newest first; report in spawn order */
    for (int i = 1, j = n; i < j; i++, j--) {
        lua_rawgeti(L, -1, i);
        lua_rawgeti(L, -2, j);
        lua_rawseti(L, -3, i);
        lua_rawseti(L, -2, j);
    }
    return 1;
}

enum { SANDBOX_ID, SANDBOX_NAME, SANDBOX_PROVIDER, SANDBOX_STATUS, SANDBOX_PROCESSES, SANDBOX_FS };
static const char *const sandbox_fields[] = {
    [SANDBOX_ID] = "id",         [SANDBOX_NAME] = "name",           [SANDBOX_PROVIDER] = "provider",
    [SANDBOX_STATUS] = "status", [SANDBOX_PROCESSES] = "processes", [SANDBOX_FS] = "fs",
    NULL,
};

static int sandbox_index(lua_State *L)
{
    skl_sandbox *s = luaL_checkudata(L, 1, SKL_SANDBOX);
    int field = skl_index(L, sandbox_fields);
    if (field < 0)
        return field == -1;
    sk_sandbox *sb = s->sb;
    if (!sb) { /* closed */
        if (field != SANDBOX_STATUS)
            return 0;
        lua_pushliteral(L, "destroyed");
        return 1;
    }
    switch (field) {
    case SANDBOX_ID:
        lua_pushstring(L, sk_sandbox_id(sb));
        break;
    case SANDBOX_NAME:
        lua_pushstring(L, sk_sandbox_name(sb));
        break;
    case SANDBOX_PROVIDER:
        lua_pushstring(L, sk_provider_id(sk_sandbox_provider(sb)));
        break;
    case SANDBOX_STATUS:
        lua_pushstring(L, sk_status_name(sk_sandbox_status(sb)));
        break;
    default:
        /* the process manager and the filesystem are Lua objects kept in
         * the state table */
        lua_getiuservalue(L, 1, 1);
        lua_getfield(L, -1, sandbox_fields[field]);
    }
    return 1;
}

static int sandbox_newindex(lua_State *L)
{
    luaL_checkudata(L, 1, SKL_SANDBOX);
    return luaL_error(L, "sandkit.Sandbox field '%s' is read-only", luaL_tolstring(L, 2, NULL));
}

static int sandbox_tostring(lua_State *L)
{
    skl_sandbox *s = luaL_checkudata(L, 1, SKL_SANDBOX);
    if (s->sb)
        lua_pushfstring(L, "sandkit.Sandbox (%s %s, %s): %p", sk_provider_id(sk_sandbox_provider(s->sb)),
                        sk_sandbox_id(s->sb), sk_status_name(sk_sandbox_status(s->sb)), (void *)s);
    else
        lua_pushfstring(L, "sandkit.Sandbox (closed): %p", (void *)s);
    return 1;
}

static int sandbox_gc(lua_State *L)
{
    skl_sandbox *s = luaL_checkudata(L, 1, SKL_SANDBOX);
    if (s->sb) {
        sk_sandbox_free(s->sb);
        s->sb = NULL;
    }
    return 0;
}

/* ---- registration -------------------------------------------------------------- */


/* core.primitives() -> { sandbox = {...}, process = {...} } once; later
 * calls raise, so only sandbox.lua (loaded with the module) holds them. */
static int core_primitives(lua_State *L)
{
    if (lua_isnil(L, lua_upvalueindex(1)))
        return luaL_error(L, "sandkit.core.primitives: already taken (by sandkit.sandbox); to reload "
                             "sandkit, clear package.loaded[\"sandkit.core\"] too");
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushnil(L);
    lua_replace(L, lua_upvalueindex(1));
    return 1;
}

void skl_open_sandbox(lua_State *L)
{
    static const luaL_Reg sandbox_prims[] = {
        { "start", sandbox_start },
        { "stop", sandbox_stop },
        { "destroy", sandbox_destroy },
        { "spawn", skl_process_spawn },
        { "state", sandbox_state },
        { "mark_error", sandbox_mark_error },
        { "info", sandbox_info },
        { "refresh", sandbox_refresh },
        { "default_instructions", sandbox_default_instructions },
        { "get", sandbox_get },
        { "list", sandbox_list },
        { NULL, NULL },
    };
    int state_idx = lua_gettop(L);
    int module_idx = state_idx - 1;
    skl_class(L, SKL_SANDBOX, sandbox_index, sandbox_tostring, sandbox_gc, sandbox_newindex,
              "sandbox_methods", "Sandbox", module_idx);
    lua_createtable(L, 0, 2);
    lua_newtable(L);
    lua_pushvalue(L, state_idx);
    luaL_setfuncs(L, sandbox_prims, 1);
    lua_setfield(L, -2, "sandbox");
    lua_newtable(L);
    skl_open_process(L, state_idx, module_idx);
    lua_setfield(L, -2, "process");
    lua_pushcclosure(L, core_primitives, 1);
    lua_setfield(L, module_idx, "primitives");
    lua_pop(L, 1); /* the state */
}
