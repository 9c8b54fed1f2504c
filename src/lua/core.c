/* luaopen_sandkit_core: the loop, the event queue and the embedding
 * surface (step, pollfd, timeout), timers, shell quoting, JSON helpers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/secrets.h"
#include "../core/shell.h"
#include "binding.h"

#define SKL_STATE_NAME "sandkit.core.state"
#define SKL_TIMER_NAME "sandkit.Timer"

skl_state *skl_state_get(lua_State *L)
{
    return (skl_state *)lua_touserdata(L, SKL_STATE_UPVALUE);
}

typedef struct {
    const char *data;
    size_t len;
} core_bytes;

static int core_push_bytes(lua_State *L)
{
    const core_bytes *b = lua_touserdata(L, 1);
    lua_pushlstring(L, b->data, b->len);
    return 1;
}

int skl_push_lstring_protected(lua_State *L, const char *data, size_t len)
{
    core_bytes b = { data ? data : "", len };
    lua_pushcfunction(L, core_push_bytes);
    lua_pushlightuserdata(L, &b);
    int rc = lua_pcall(L, 1, 1, 0);
    if (rc == LUA_OK)
        return 0;
    if (rc != LUA_ERRMEM)
        lua_error(L);
    lua_pop(L, 1);
    return -1;
}

void skl_push_cancel_meta(lua_State *L, const char *name, lua_CFunction gc, lua_CFunction cancel)
{
    if (luaL_newmetatable(L, name)) {
        lua_pushcfunction(L, gc);
        lua_setfield(L, -2, "__gc");
        lua_newtable(L);
        lua_pushcfunction(L, cancel);
        lua_setfield(L, -2, "cancel");
        lua_setfield(L, -2, "__index");
    }
}

static void core_append(skl_state *st, skl_event *e)
{
    if (st->tail)
        st->tail->next = e;
    else
        st->head = e;
    st->tail = e;
}

int skl_target_init(skl_target *t, skl_state *st, lua_Integer token)
{
    t->st = st;
    t->token = token;
    t->lost = false;
    t->last = calloc(1, sizeof *t->last);
    return t->last ? 0 : -1;
}

void skl_target_release(skl_target *t)
{
    free(t->last);
    t->last = NULL;
}

/* A buffer of at least len bytes for an output event: a spare one when one
 * is large enough. */
static char *core_buffer(skl_state *st, size_t len, size_t *cap)
{
    for (int i = st->nspare - 1; i >= 0; i--) {
        if (st->spare_cap[i] >= len) {
            char *b = st->spare[i];
            *cap = st->spare_cap[i];
            st->nspare--;
            st->spare[i] = st->spare[st->nspare];
            st->spare_cap[i] = st->spare_cap[st->nspare];
            return b;
        }
    }
    *cap = len;
    return malloc(len);
}

void skl_emit(skl_target *t, int stream, const char *data, size_t len)
{
    skl_event *e = calloc(1, sizeof *e);
    if (e && len && !(e->data = core_buffer(t->st, len, &e->cap))) {
        free(e);
        e = NULL;
    }
    if (!e) {
        t->lost = true; /* reported by the terminal event */
        return;
    }
    e->kind = SKL_EV_OUTPUT;
    e->token = t->token;
    e->stream = stream;
    if (len)
        memcpy(e->data, data, len);
    e->len = len;
    core_append(t->st, e);
}

void skl_finish(skl_target *t, int kind, const sk_error *err, const void *scope)
{
    skl_event *e = t->last;
    if (!e)
        return;
    t->last = NULL;
    e->kind = kind;
    e->token = t->token;
    if (err) {
        e->err = sk_error_copy(err);
        sk_error_redact(scope, e->err);
    } else if (t->lost) {
        e->err = sk_error_new(SK_ERR_OUT_OF_MEMORY, NULL,
                              "out of memory queueing output for Lua: part of it was lost");
    }
    e->err_lost = (err || t->lost) && !e->err; /* still a failure: "out of memory" */
    e->scope = scope;
    core_append(t->st, e);
}

static skl_event *core_pop(skl_state *st)
{
    skl_event *e = st->head;
    if (e) {
        st->head = e->next;
        if (!st->head)
            st->tail = NULL;
    }
    return e;
}

static void core_event_free(skl_state *st, skl_event *e)
{
    if (e->kind == SKL_EV_EXIT)
        skl_process_exit_freed(e);
    if (e->data && e->cap >= SKL_SPARE_MIN && st->nspare < SKL_SPARES) {
        st->spare[st->nspare] = e->data;
        st->spare_cap[st->nspare++] = e->cap;
    } else {
        free(e->data);
    }
    sk_error_free(e->err);
    free(e);
}

void skl_class(lua_State *L, const char *name, lua_CFunction index, lua_CFunction tostring,
               lua_CFunction gc, lua_CFunction newindex, const char *methods_field,
               const char *class_field, int module_idx)
{
    luaL_newmetatable(L, name);
    int mt = lua_gettop(L);
    /* methods, filled by sandbox.lua. A second open of the module
     * (package.loaded cleared) keeps the class's table: objects made
     * before, whose metatable this is, keep their methods. */
    if (lua_getfield(L, mt, "__index") != LUA_TFUNCTION || !lua_getupvalue(L, -1, 1)) {
        lua_settop(L, mt);
        lua_newtable(L);
    } else {
        lua_remove(L, -2); /* the old __index */
    }
    lua_pushvalue(L, -1);
    lua_setfield(L, module_idx, methods_field);
    lua_pushcclosure(L, index, 1);
    lua_setfield(L, mt, "__index");
    if (newindex) {
        lua_pushcfunction(L, newindex);
        lua_setfield(L, mt, "__newindex");
    }
    lua_pushcfunction(L, tostring);
    lua_setfield(L, mt, "__tostring");
    lua_pushcfunction(L, gc);
    lua_setfield(L, mt, "__gc");
    lua_setfield(L, module_idx, class_field);
}

int skl_index(lua_State *L, const char *const fields[])
{
    lua_pushvalue(L, 2);
    if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL)
        return -1;
    lua_pop(L, 1);
    if (lua_type(L, 2) != LUA_TSTRING)
        return -2;
    const char *key = lua_tostring(L, 2);
    for (int i = 0; fields[i]; i++)
        if (strcmp(fields[i], key) == 0)
            return i;
    return -2;
}

int skl_push_state(lua_State *L, const char *tname, int n)
{
    luaL_checkudata(L, 1, tname);
    lua_getiuservalue(L, 1, n);
    return 1;
}

/* ---- JSON <-> Lua ------------------------------------------------------- */

static int core_is_array(lua_State *L, int idx, size_t *n)
{
    size_t count = 0;
    lua_Integer max = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1) {
            lua_pop(L, 1);
            return 0;
        }
        lua_Integer k = lua_tointeger(L, -1);
        if (k > max)
            max = k;
        count++;
    }
    *n = count;
    return (lua_Integer)count == max;
}

/* Checked first, converted second: the conversion itself never raises, so
 * a bad value cannot leak a half-built JSON tree. */
static void core_check_json(lua_State *L, int idx, const char *what, int depth)
{
    idx = lua_absindex(L, idx);
    if (depth > 32)
        luaL_error(L, "%s: nested too deeply", what);
    /* room for this level's key and value, here and in core_build_json
     * (which must not raise) */
    luaL_checkstack(L, 3, what);
    switch (lua_type(L, idx)) {
    case LUA_TNIL:
    case LUA_TBOOLEAN:
    case LUA_TSTRING:
    case LUA_TFUNCTION: /* skipped in tables: Lua-side options */
        return;
    case LUA_TNUMBER:
        if (!lua_isinteger(L, idx) && !isfinite(lua_tonumber(L, idx)))
            luaL_error(L, "%s: number must be finite", what);
        return;
    case LUA_TTABLE:
        lua_pushnil(L);
        while (lua_next(L, idx)) {
            if (lua_type(L, -2) == LUA_TSTRING) {
                size_t klen;
                const char *k = lua_tolstring(L, -2, &klen);
                if (memchr(k, '\0', klen))
                    luaL_error(L, "%s: key contains a NUL byte", what);
            } else if (!lua_isinteger(L, -2)) {
                luaL_error(L, "%s: table keys must be strings", what);
            }
            core_check_json(L, -1, what, depth + 1);
            lua_pop(L, 1);
        }
        return;
    default:
        luaL_error(L, "%s: cannot pass a %s value", what, luaL_typename(L, idx));
    }
}

static json_t *core_build_json(lua_State *L, int idx)
{
    idx = lua_absindex(L, idx);
    switch (lua_type(L, idx)) {
    case LUA_TBOOLEAN:
        return json_boolean(lua_toboolean(L, idx));
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx))
            return json_integer((json_int_t)lua_tointeger(L, idx));
        return json_real(lua_tonumber(L, idx));
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, idx, &len);
        return json_stringn_nocheck(s, len);
    }
    case LUA_TTABLE: {
        size_t n = 0;
        if (core_is_array(L, idx, &n) && n > 0) {
            json_t *arr = json_array();
            for (size_t i = 1; i <= n; i++) {
                lua_rawgeti(L, idx, (lua_Integer)i);
                json_array_append_new(arr, core_build_json(L, -1));
                lua_pop(L, 1);
            }
            return arr;
        }
        json_t *obj = json_object();
        lua_pushnil(L);
        while (lua_next(L, idx)) {
            if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) != LUA_TFUNCTION)
                json_object_set_new_nocheck(obj, lua_tostring(L, -2), core_build_json(L, -1));
            lua_pop(L, 1);
        }
        return obj;
    }
    default:
        return json_null();
    }
}

json_t *skl_to_json(lua_State *L, int idx, const char *what)
{
    core_check_json(L, idx, what, 0);
    return core_build_json(L, idx);
}

void skl_push_json(lua_State *L, const json_t *v)
{
    /* Each level holds its table and the value being pushed: room for both
     * (jansson parses 2048 levels; a server picks the depth) */
    luaL_checkstack(L, 2, "JSON nested too deeply");
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        lua_createtable(L, 0, (int)json_object_size(v));
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x) {
            skl_push_json(L, x);
            lua_setfield(L, -2, k);
        }
        break;
    }
    case JSON_ARRAY: {
        lua_createtable(L, (int)json_array_size(v), 0);
        for (size_t i = 0; i < json_array_size(v); i++) {
            skl_push_json(L, json_array_get(v, i));
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        break;
    }
    case JSON_STRING:
        lua_pushlstring(L, json_string_value(v), json_string_length(v));
        break;
    case JSON_INTEGER:
        lua_pushinteger(L, (lua_Integer)json_integer_value(v));
        break;
    case JSON_REAL:
        lua_pushnumber(L, json_real_value(v));
        break;
    case JSON_TRUE:
        lua_pushboolean(L, 1);
        break;
    case JSON_FALSE:
        lua_pushboolean(L, 0);
        break;
    default:
        lua_pushnil(L);
        break;
    }
}

static int core_push_json_protected(lua_State *L)
{
    skl_push_json(L, lua_touserdata(L, 1));
    return 1;
}

void skl_push_json_take(lua_State *L, json_t *v)
{
    lua_pushcfunction(L, core_push_json_protected);
    lua_pushlightuserdata(L, v);
    int rc = lua_pcall(L, 1, 1, 0);
    json_decref(v);
    if (rc != LUA_OK)
        lua_error(L);
}

typedef struct error_push {
    skl_state *st;
    const sk_error *err; /* redacted; NULL: out of memory */
} error_push;

/* Run protected (pushing may raise a memory error), so the caller frees
 * the error whatever happens. */
static int core_error_object(lua_State *L)
{
    const error_push *a = lua_touserdata(L, 1);
    const sk_error *err = a->err;
    const char *kind = sk_error_kind_name(err ? err->kind : SK_ERR_OUT_OF_MEMORY);
    if (!kind)
        kind = "SandboxError"; /* not a kind of the list: a bug, still an error */
    const char *message = err ? err->message : "out of memory";
    if (a->st->error_factory == LUA_NOREF) {
        lua_pushfstring(L, "%s: %s", kind, message);
        return 1;
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, a->st->error_factory);
    lua_pushstring(L, kind);
    lua_pushstring(L, message);
    if (err && err->fields)
        skl_push_json(L, err->fields);
    else
        lua_pushnil(L);
    lua_call(L, 3, 1);
    return 1;
}

/* Pushes the error object of err (redacted already) and frees err; on a
 * memory error err is freed before the error propagates. */
static void core_push_error_owned(lua_State *L, skl_state *st, sk_error *err)
{
    error_push a = { st, err };
    lua_pushcfunction(L, core_error_object);
    lua_pushlightuserdata(L, &a);
    int rc = lua_pcall(L, 1, 1, 0);
    sk_error_free(err);
    if (rc != LUA_OK)
        lua_error(L);
}

void skl_push_error(lua_State *L, skl_state *st, const sk_error *err, const void *scope)
{
    sk_error *safe = sk_error_copy(err);
    sk_error_redact(scope, safe);
    core_push_error_owned(L, st, safe);
}

void skl_push_error_take(lua_State *L, skl_state *st, sk_error *err, const void *scope)
{
    sk_error_redact(scope, err);
    core_push_error_owned(L, st, err);
}

/* ---- the embedding surface ---------------------------------------------- */

/* step(timeout_ms): one loop turn, then every queued event is handed to the
 * dispatcher, one at a time (a dispatcher that turns the loop again keeps
 * popping from the same queue). Returns alive, dispatched. */
static int core_step(lua_State *L)
{
    skl_state *st = skl_state_get(L);
    lua_Integer timeout = luaL_optinteger(L, 1, 0);
    if (timeout < -1)
        timeout = -1;
    if (timeout > 2147483647)
        timeout = 2147483647;
    int alive = sk_loop_turn(st->loop, st->head ? 0 : (int)timeout);
    int dispatched = 0;
    skl_event *e;
    /* Pushing the arguments may raise (out of memory): the event stays
     * queued until they are all on the stack. */
    while ((e = st->head)) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, st->dispatch);
        lua_pushinteger(L, e->token);
        int nargs = 2;
        switch (e->kind) {
        case SKL_EV_OUTPUT:
            lua_pushliteral(L, "output");
            lua_pushinteger(L, e->stream);
            lua_pushlstring(L, e->data ? e->data : "", e->len);
            nargs = 4;
            break;
        case SKL_EV_EXIT:
            /* the result travels with the event: no call back for it */
            lua_pushliteral(L, "exit");
            skl_process_push_exit(L, e);
            nargs = 4;
            break;
        case SKL_EV_LIFECYCLE:
            lua_pushliteral(L, "lifecycle");
            if (e->err || e->err_lost)
                skl_push_error(L, st, e->err, e->scope);
            else
                lua_pushnil(L);
            nargs = 3;
            break;
        default:
            lua_pushliteral(L, "timer");
            break;
        }
        core_event_free(st, core_pop(st));
        dispatched++;
        lua_call(L, nargs, 0);
    }
    lua_pushboolean(L, alive || st->head != NULL);
    lua_pushinteger(L, dispatched);
    return 2;
}

static int core_pollfd(lua_State *L)
{
    lua_pushinteger(L, sk_loop_fd(skl_state_get(L)->loop));
    return 1;
}

/* Milliseconds until the loop needs a turn; 0 when events are queued;
 * -1 for "only when the descriptor is readable". */
static int core_timeout(lua_State *L)
{
    skl_state *st = skl_state_get(L);
    lua_pushinteger(L, st->head ? 0 : sk_loop_timeout(st->loop));
    return 1;
}

/* Whether the loop or the event queue can still deliver anything: false
 * means tasks still waiting wait forever (the scheduler's deadlock check). */
static int core_alive(lua_State *L)
{
    skl_state *st = skl_state_get(L);
    lua_pushboolean(L, st->head != NULL || sk_loop_alive(st->loop));
    return 1;
}

static int core_pending(lua_State *L)
{
    lua_pushboolean(L, skl_state_get(L)->head != NULL);
    return 1;
}

static int core_set_dispatch(lua_State *L)
{
    skl_state *st = skl_state_get(L);
    luaL_checktype(L, 1, LUA_TFUNCTION);
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_settop(L, 2);
    luaL_unref(L, LUA_REGISTRYINDEX, st->error_factory);
    st->error_factory = luaL_ref(L, LUA_REGISTRYINDEX);
    luaL_unref(L, LUA_REGISTRYINDEX, st->dispatch);
    st->dispatch = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

/* ---- argument errors ---------------------------------------------------- */

#define SKL_ARGERROR_NAME "sandkit.argument_error"

/* set_argument_error(errors.argument): how skl_argerror raises. */
static int core_set_argument_error(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_settop(L, 1);
    lua_setfield(L, LUA_REGISTRYINDEX, SKL_ARGERROR_NAME);
    return 0;
}

int skl_argerror(lua_State *L, int arg, const char *msg)
{
    lua_Debug ar;
    const char *name = "?";
    if (lua_getstack(L, 0, &ar)) {
        lua_getinfo(L, "n", &ar);
        if (ar.namewhat && strcmp(ar.namewhat, "method") == 0)
            arg--; /* self is not counted, as luaL_argerror has it */
        if (ar.name)
            name = ar.name;
    }
    if (lua_getfield(L, LUA_REGISTRYINDEX, SKL_ARGERROR_NAME) != LUA_TFUNCTION)
        return luaL_error(L, "bad argument #%d to '%s' (%s)", arg, name, msg);
    lua_pushinteger(L, arg);
    lua_pushstring(L, name);
    lua_pushstring(L, msg);
    lua_call(L, 3, 0); /* raises */
    return 0;
}

static int skl_typeerror(lua_State *L, int arg, const char *expected)
{
    const char *got = luaL_typename(L, arg);
    if (luaL_getmetafield(L, arg, "__name") == LUA_TSTRING)
        got = lua_tostring(L, -1);
    return skl_argerror(L, arg, lua_pushfstring(L, "%s expected, got %s", expected, got));
}

lua_Integer skl_checkinteger(lua_State *L, int arg)
{
    int isnum;
    lua_Integer v = lua_tointegerx(L, arg, &isnum);
    if (!isnum) {
        if (lua_isnumber(L, arg))
            skl_argerror(L, arg, "number has no integer representation");
        else
            skl_typeerror(L, arg, "number");
    }
    return v;
}

lua_Integer skl_optinteger(lua_State *L, int arg, lua_Integer def)
{
    return lua_isnoneornil(L, arg) ? def : skl_checkinteger(L, arg);
}

const char *skl_checklstring(lua_State *L, int arg, size_t *len)
{
    const char *s = lua_tolstring(L, arg, len);
    if (!s)
        skl_typeerror(L, arg, "string");
    return s;
}

void *skl_checkudata(lua_State *L, int arg, const char *tname)
{
    void *p = luaL_testudata(L, arg, tname);
    if (!p)
        skl_typeerror(L, arg, tname);
    return p;
}

/* ---- timers ------------------------------------------------------------- */

typedef struct core_timer {
    uv_timer_t *handle; /* NULL once closed */
    skl_target target;
} core_timer;

static void core_timer_fired(uv_timer_t *h) { skl_finish(h->data, SKL_EV_TIMER, NULL, NULL); }

static void core_timer_close(core_timer *t)
{
    sk_timer_close(&t->handle);
    skl_target_release(&t->target);
}

/* timer(ms, token) -> Timer; fires once with ("timer") for token. */
static int core_timer_new(lua_State *L)
{
    skl_state *st = skl_state_get(L);
    lua_Number ms = luaL_checknumber(L, 1);
    lua_Integer token = luaL_checkinteger(L, 2);
    luaL_argcheck(L, ms >= 0 && ms < 1e12, 1, "delay out of range");
    core_timer *t = lua_newuserdatauv(L, sizeof *t, 0);
    t->handle = NULL;
    t->target.last = NULL;
    luaL_setmetatable(L, SKL_TIMER_NAME);
    if (skl_target_init(&t->target, st, token) != 0)
        return luaL_error(L, "out of memory");
    if (sk_timer_start(st->loop, &t->handle, &t->target, (uint64_t)ceil(ms), core_timer_fired) != 0)
        return luaL_error(L, "out of memory");
    return 1;
}

static int core_timer_cancel(lua_State *L)
{
    core_timer_close(luaL_checkudata(L, 1, SKL_TIMER_NAME));
    return 0;
}

/* ---- shell quoting ------------------------------------------------------ */

/* The body of command(), run protected over the caller's buffer (argument
 * 3): a raise (a bad argument, out of memory) cannot leak it. */
static int core_command_build(lua_State *L)
{
    sk_buf *b = lua_touserdata(L, 3);
    size_t len;
    const char *cmd = luaL_checklstring(L, 1, &len);
    luaL_argcheck(L, !memchr(cmd, '\0', len), 1, "command contains a NUL byte");
    if (sk_buf_append(b, cmd, len) != 0)
        return luaL_error(L, "out of memory");
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        lua_Integer n = luaL_len(L, 2);
        for (lua_Integer i = 1; i <= n; i++) {
            lua_geti(L, 2, i);
            size_t alen;
            const char *a = lua_tolstring(L, -1, &alen);
            if (!a)
                return luaL_error(L, "bad argument #2 (args[%d] must be a string, got %s)", (int)i,
                                  luaL_typename(L, -1));
            if (memchr(a, '\0', alen))
                return luaL_error(L, "bad argument #2 (args[%d] contains a NUL byte)", (int)i);
            if (sk_shell_append_arg(b, a, alen) != 0)
                return luaL_error(L, "out of memory");
            lua_pop(L, 1);
        }
    }
    lua_pushlstring(L, b->data ? b->data : "", b->len);
    return 1;
}

/* command(cmd, args?) -> cmd followed by each arg quoted as one word. */
static int core_command(lua_State *L)
{
    sk_buf b = { 0 };
    lua_settop(L, 2);
    lua_pushlightuserdata(L, &b);
    lua_pushcfunction(L, core_command_build);
    lua_insert(L, 1);
    int rc = lua_pcall(L, 3, 1, 0);
    sk_buf_free(&b);
    if (rc != LUA_OK)
        return lua_error(L);
    return 1;
}

static int core_quote(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    sk_buf b = { 0 };
    if (sk_shell_quote(&b, s, len) != 0) {
        sk_buf_free(&b);
        return luaL_argerror(L, 1, "contains a NUL byte");
    }
    lua_pushlstring(L, b.data ? b.data : "", b.len);
    sk_buf_free(&b);
    return 1;
}

static int core_now(lua_State *L)
{
    lua_pushnumber(L, sk_now_ms());
    return 1;
}

/* An array of what get says of each registered provider, in order. */
static int core_provider_list(lua_State *L, const char *(*get)(const sk_provider *))
{
    lua_newtable(L);
    int n = 0;
    for (const sk_provider *p = sk_provider_next(NULL); p; p = sk_provider_next(p)) {
        lua_pushstring(L, get(p));
        lua_rawseti(L, -2, ++n);
    }
    return 1;
}

static int core_provider_ids(lua_State *L) { return core_provider_list(L, sk_provider_id); }
/* The class names of provider_ids(), in the same order. */
static int core_provider_names(lua_State *L) { return core_provider_list(L, sk_provider_name); }

/* core.json_decode(s): the value, or nil, message. */
static int core_json_decode(lua_State *L)
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

/* error_kinds() -> { { name, fields, doc }, ... }: SK_ERROR_KINDS in order
 * (errors.lua makes its constants from it). */
static int core_error_kinds(lua_State *L)
{
    lua_createtable(L, SK_ERR_KIND_COUNT - 1, 0);
    for (int k = SK_ERR_NONE + 1; k < SK_ERR_KIND_COUNT; k++) {
        lua_createtable(L, 0, 3);
        lua_pushstring(L, sk_error_kind_name((sk_error_kind)k));
        lua_setfield(L, -2, "name");
        lua_pushstring(L, sk_error_kind_fields((sk_error_kind)k));
        lua_setfield(L, -2, "fields");
        lua_pushstring(L, sk_error_kind_doc((sk_error_kind)k));
        lua_setfield(L, -2, "doc");
        lua_rawseti(L, -2, k);
    }
    return 1;
}

/* ---- state lifetime ----------------------------------------------------- */

static int core_state_gc(lua_State *L)
{
    skl_state *st = lua_touserdata(L, 1);
    if (!st->loop)
        return 0;
    skl_event *e;
    while ((e = core_pop(st)))
        core_event_free(st, e);
    sk_loop_free(st->loop);
    st->loop = NULL;
    /* events queued by handles closing during the free */
    while ((e = core_pop(st)))
        core_event_free(st, e);
    while (st->nspare > 0)
        free(st->spare[--st->nspare]);
    return 0;
}

static int core_timer_gc(lua_State *L)
{
    core_timer_close(lua_touserdata(L, 1));
    return 0;
}

SKL_EXPORT int luaopen_sandkit_core(lua_State *L)
{
    static const luaL_Reg funcs[] = {
        { "step", core_step },
        { "pollfd", core_pollfd },
        { "timeout", core_timeout },
        { "pending", core_pending },
        { "alive", core_alive },
        { "set_dispatch", core_set_dispatch },
        { "timer", core_timer_new },
        { "command", core_command },
        { "quote", core_quote },
        { "now", core_now },
        { "provider_ids", core_provider_ids },
        { "error_kinds", core_error_kinds },
        { "set_argument_error", core_set_argument_error },
        { "new_sandbox", skl_new_sandbox },
        { "ops_open", skl_ops_open },
        { "ops_call", skl_ops_call },
        { "ops_info", skl_ops_info },
        { "ops_body", skl_ops_body },
        { "provider_names", core_provider_names },
        { "json_decode", core_json_decode },
        { NULL, NULL },
    };
    /* One state per Lua state: a second require returns the same module,
     * but a fresh package.loaded entry must not make a second loop. */
    if (lua_getfield(L, LUA_REGISTRYINDEX, SKL_STATE_NAME) != LUA_TUSERDATA) {
        lua_pop(L, 1);
        skl_state *st = lua_newuserdatauv(L, sizeof *st, 0);
        memset(st, 0, sizeof *st);
        st->error_factory = st->dispatch = LUA_NOREF;
        lua_newtable(L);
        lua_pushcfunction(L, core_state_gc);
        lua_setfield(L, -2, "__gc");
        lua_setmetatable(L, -2);
        st->loop = sk_loop_new();
        if (!st->loop)
            return luaL_error(L, "sandkit: cannot initialise the event loop");
        lua_pushvalue(L, -1);
        lua_setfield(L, LUA_REGISTRYINDEX, SKL_STATE_NAME);
    }
    int state_idx = lua_gettop(L);

    skl_push_cancel_meta(L, SKL_TIMER_NAME, core_timer_gc, core_timer_cancel);
    lua_pop(L, 1);

    lua_newtable(L);
    lua_pushvalue(L, state_idx);
    luaL_setfuncs(L, funcs, 1);
    skl_open_buffer(L, state_idx);
    lua_pushvalue(L, state_idx);
    skl_open_sandbox(L); /* adds Sandbox/Process metatables; pops the state */
    skl_open_fs(L);
    return 1;
}
