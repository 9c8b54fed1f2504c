/* The sandkit.Process userdata class: a command started in a sandbox.
 * Its user-facing methods are Lua functions (lua/sandkit/sandbox.lua); the
 * C functions here are the primitives they build on, handed to sandbox.lua
 * alone (core.primitives()). spawn, the constructor, is a primitive of the
 * sandbox. */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "binding.h"

#define SKL_PROCESS "sandkit.Process"
#define SKL_PROCS "sandkit.procs" /* weak: sk_process* -> userdata */

typedef struct skl_process {
    sk_process *p; /* NULL once released */
    skl_target target;
    skl_event *queued_exit; /* its exit event while queued (owned by the queue) */
    int want_output; /* queue output events (someone streams) */
    int capture_buffer; /* capture = "buffer": output as sandkit.Buffer */
} skl_process;

static skl_process *process_check(lua_State *L, int idx)
{
    skl_process *p = luaL_checkudata(L, idx, SKL_PROCESS);
    if (!p->p)
        luaL_error(L, "sandkit.Process is closed");
    return p;
}

/* ---- core callbacks: queue only -------------------------------------------- */

static void process_on_output(sk_process *p, int stream, const char *data, size_t len, void *ud)
{
    (void)p;
    skl_process *box = ud;
    if (box->want_output)
        skl_emit(&box->target, stream, data, len);
}

/* The result is read from the process when the event is delivered. */
static void process_on_exit(sk_process *p, const sk_result *r, const sk_error *err, void *ud)
{
    (void)p;
    (void)r;
    (void)err;
    skl_process *box = ud;
    skl_event *e = box->target.last;
    if (e) {
        e->owner = box;
        box->queued_exit = e;
    }
    skl_finish(&box->target, SKL_EV_EXIT, NULL, NULL);
}

void skl_process_exit_freed(skl_event *e)
{
    skl_process *box = e->owner;
    if (box)
        box->queued_exit = NULL;
}

static const sk_process_events process_events = { process_on_output, process_on_exit };

/* ---- construction ----------------------------------------------------------- */

static void process_remember(lua_State *L, sk_process *p, int ud_idx)
{
    ud_idx = lua_absindex(L, ud_idx);
    lua_getfield(L, LUA_REGISTRYINDEX, SKL_PROCS);
    lua_pushvalue(L, ud_idx);
    lua_rawsetp(L, -2, p);
    lua_pop(L, 1);
}

int skl_process_push(lua_State *L, sk_process *p)
{
    lua_getfield(L, LUA_REGISTRYINDEX, SKL_PROCS);
    int t = lua_rawgetp(L, -1, p);
    lua_remove(L, -2);
    if (t == LUA_TUSERDATA)
        return 1;
    lua_pop(L, 1);
    return 0;
}

/* spawn(sb, command, tracked, token, cwd, env, timeout_ms, max_output,
 * stdin, capture, stream) -> Process | nil, err | false when the sandbox is
 * not running. The command's options arrive checked and resolved by
 * sandbox.lua (options.exec, the sandbox's defaults applied), one argument
 * each: cwd and stdin strings or nil, env a table or nil, timeout_ms and
 * max_output whole numbers (0: none, the default cap), capture true, false
 * or "buffer", stream whether anyone takes the output as it comes. A
 * tracked (background) process keeps its stdin open. */
int skl_process_spawn(lua_State *L)
{
    skl_sandbox *s = luaL_checkudata(L, 1, SKL_SANDBOX);
    size_t clen;
    const char *command = luaL_checklstring(L, 2, &clen);
    luaL_argcheck(L, !memchr(command, '\0', clen), 2, "command contains a NUL byte");
    int tracked = lua_toboolean(L, 3);
    lua_Integer token = luaL_checkinteger(L, 4);
    if (!s->sb || sk_sandbox_status(s->sb) != SK_RUNNING) { /* closed: status "destroyed" */
        lua_pushboolean(L, 0);
        return 1;
    }
    /* strings stay anchored in the arguments */
    sk_spawn_opts o = { .command = command,
                        .cwd = luaL_optstring(L, 5, NULL),
                        .timeout_ms = (int64_t)luaL_optinteger(L, 7, 0),
                        .capture = lua_toboolean(L, 10),
                        .keep_stdin_open = tracked };
    bool has_env = lua_istable(L, 6);
    lua_Integer max_output = luaL_optinteger(L, 8, 0);
    if (max_output >= 1)
        o.max_output = (uint64_t)max_output >= SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)max_output;
    if (lua_type(L, 9) == LUA_TSTRING) {
        o.stdin_data = lua_tolstring(L, 9, &o.stdin_len);
        o.has_stdin = true;
    }
    bool capture_buffer = lua_type(L, 10) == LUA_TSTRING;
    bool stream = lua_toboolean(L, 11);

    /* Everything that may raise comes before the env JSON exists. */
    skl_process *box = lua_newuserdatauv(L, sizeof *box, 2);
    box->p = NULL;
    box->target.last = NULL;
    box->queued_exit = NULL;
    box->want_output = stream;
    box->capture_buffer = capture_buffer;
    luaL_setmetatable(L, SKL_PROCESS);
    if (skl_target_init(&box->target, s->st, token) != 0)
        return luaL_error(L, "out of memory");
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1); /* the sandbox outlives its processes */
    lua_newtable(L);
    lua_setiuservalue(L, -2, 2);
    json_t *env = NULL;
    if (has_env)
        env = skl_to_json(L, 6, "the command's env");
    o.env = env;

    sk_error *err = NULL;
    box->p = sk_sandbox_spawn(s->sb, &o, tracked, &process_events, box, &err);
    json_decref(env);
    if (!box->p) {
        lua_pushnil(L);
        skl_push_error_take(L, s->st, err, s->sb);
        return 2;
    }
    process_remember(L, box->p, -1);
    return 1;
}

/* ---- Process ----------------------------------------------------------------- */

/* stdout (stream 1) or stderr (2) of the process at idx: a string, or with
 * capture = "buffer" once it has exited, a sandkit.Buffer that takes over
 * the bytes (no copy), made once and kept in the process's state table. */
static void process_push_output(lua_State *L, int idx, skl_process *box, int stream)
{
    sk_process *p = box->p;
    sk_buf *b = sk_process_capture(p, stream);
    if (!box->capture_buffer || !sk_process_exited(p)) {
        lua_pushlstring(L, b->data ? b->data : "", b->len);
        return;
    }
    const char *key = stream == 1 ? "stdout_buffer" : "stderr_buffer";
    lua_getiuservalue(L, idx, 2);
    if (lua_getfield(L, -1, key) != LUA_TUSERDATA) {
        lua_pop(L, 1);
        /* The slot first: storing into a key that exists cannot raise, so
         * once the bytes are taken the Buffer is kept (a memory error
         * between the two lost them: stdout read empty after). */
        lua_pushboolean(L, 0);
        lua_setfield(L, -2, key);
        skl_buffer_push_take(L, b);
        lua_pushvalue(L, -1);
        lua_setfield(L, -3, key);
    }
    lua_remove(L, -2);
}

/* The result table of the exited process at index 1; run protected: the
 * copies of the output may not fit in memory. */
static int process_result_table(lua_State *L)
{
    skl_process *box = lua_touserdata(L, 1);
    const sk_process *p = box->p;
    const sk_result *r = sk_process_result(p);
    lua_createtable(L, 0, 10);
    lua_pushinteger(L, r->exit_code);
    lua_setfield(L, -2, "exit_code");
    lua_pushboolean(L, r->exit_code == 0 && !r->timed_out && !r->cancelled);
    lua_setfield(L, -2, "success");
    process_push_output(L, 1, box, 1);
    lua_setfield(L, -2, "stdout");
    process_push_output(L, 1, box, 2);
    lua_setfield(L, -2, "stderr");
    lua_pushnumber(L, r->execution_time_ms);
    lua_setfield(L, -2, "execution_time_ms");
    lua_pushboolean(L, r->timed_out);
    lua_setfield(L, -2, "timed_out");
    lua_pushboolean(L, r->killed);
    lua_setfield(L, -2, "killed");
    lua_pushboolean(L, r->truncated);
    lua_setfield(L, -2, "truncated");
    if (r->cancelled) {
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, "cancelled");
    }
    if (r->oom_killed) {
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, "oom_killed");
    }
    lua_pushstring(L, sk_process_command(p));
    lua_setfield(L, -2, "command");
    return 1;
}

/* Pushes the outcome of the exited process at idx: its result table and
 * nil, or nil and the error (a transport failure, output lost on the way
 * to Lua: ev's error, or no memory for the result). */
static void process_push_result(lua_State *L, int idx, skl_process *box, const skl_event *ev)
{
    sk_process *p = box->p;
    lua_getiuservalue(L, idx, 1);
    skl_sandbox *s = lua_touserdata(L, -1);
    lua_pop(L, 1);
    if (sk_process_error(p)) {
        lua_pushnil(L);
        skl_push_error(L, s->st, sk_process_error(p), s->sb);
        return;
    }
    if (ev->err || ev->err_lost) {
        lua_pushnil(L);
        skl_push_error(L, s->st, ev->err, ev->scope);
        return;
    }
    lua_pushcfunction(L, process_result_table);
    lua_pushvalue(L, idx);
    int rc = lua_pcall(L, 1, 1, 0);
    if (rc == LUA_OK) {
        lua_pushnil(L);
        return;
    }
    if (rc != LUA_ERRMEM)
        lua_error(L);
    lua_pop(L, 1);
    /* the partial copies are garbage now: the error object fits */
    sk_error *err = sk_error_new(SK_ERR_OUT_OF_MEMORY,
                                 json_pack("{s:I,s:I}", "stdout_bytes", (json_int_t)sk_process_capture(p, 1)->len,
                                           "stderr_bytes", (json_int_t)sk_process_capture(p, 2)->len),
                                 "out of memory copying the command's output into Lua (lower "
                                 "max_output_bytes, or stream it with capture = false)");
    lua_pushnil(L);
    skl_push_error_take(L, s->st, err, s->sb);
}

void skl_process_push_exit(lua_State *L, const skl_event *e)
{
    skl_process *box = e->owner;
    if (!box || !box->p || !skl_process_push(L, box->p)) {
        lua_pushnil(L);
        lua_pushnil(L);
        return;
    }
    int idx = lua_gettop(L);
    process_push_result(L, idx, box, e);
    lua_remove(L, idx);
}

static int process_kill(lua_State *L)
{
    skl_process *box = process_check(L, 1);
    int sig = (int)luaL_optinteger(L, 2, SIGKILL);
    luaL_argcheck(L, sig > 0 && sig < 65, 2, "not a signal number");
    lua_pushboolean(L, sk_process_kill(box->p, sig) == 0);
    return 1;
}

static int process_cancel(lua_State *L)
{
    sk_process_cancel(process_check(L, 1)->p);
    return 0;
}

static int process_write(lua_State *L)
{
    skl_process *box = process_check(L, 1);
    size_t len;
    const char *data = luaL_checklstring(L, 2, &len);
    sk_error *err = NULL;
    if (sk_process_write_stdin(box->p, data, len, &err) != 0) {
        lua_getiuservalue(L, 1, 1);
        skl_sandbox *s = lua_touserdata(L, -1);
        lua_pushnil(L);
        skl_push_error_take(L, s->st, err, s->sb);
        return 2;
    }
    lua_pushboolean(L, 1);
    return 1;
}

static int process_close_stdin(lua_State *L)
{
    lua_pushboolean(L, sk_process_close_stdin(process_check(L, 1)->p) == 0);
    return 1;
}

static int process_untrack(lua_State *L)
{
    sk_process_untrack(process_check(L, 1)->p);
    return 0;
}

static int process_state(lua_State *L) { return skl_push_state(L, SKL_PROCESS, 2); }

enum { PROCESS_PID, PROCESS_COMMAND, PROCESS_EXIT_CODE, PROCESS_STDOUT, PROCESS_STDERR, PROCESS_RUNNING };
static const char *const process_fields[] = {
    [PROCESS_PID] = "pid",       [PROCESS_COMMAND] = "command", [PROCESS_EXIT_CODE] = "exit_code",
    [PROCESS_STDOUT] = "stdout", [PROCESS_STDERR] = "stderr",   [PROCESS_RUNNING] = "running",
    NULL,
};

static int process_index(lua_State *L)
{
    skl_process *box = luaL_checkudata(L, 1, SKL_PROCESS);
    int field = skl_index(L, process_fields);
    sk_process *p = box->p;
    if (field < 0 || !p)
        return field == -1;
    switch (field) {
    case PROCESS_PID:
        lua_pushstring(L, sk_process_pid(p));
        break;
    case PROCESS_COMMAND:
        lua_pushstring(L, sk_process_command(p));
        break;
    case PROCESS_EXIT_CODE:
        if (!sk_process_exited(p) || sk_process_error(p))
            return 0;
        lua_pushinteger(L, sk_process_result(p)->exit_code);
        break;
    case PROCESS_RUNNING:
        lua_pushboolean(L, !sk_process_exited(p));
        break;
    default: /* stdout, stderr */
        process_push_output(L, 1, box, field == PROCESS_STDOUT ? 1 : 2);
    }
    return 1;
}

static int process_tostring(lua_State *L)
{
    skl_process *box = luaL_checkudata(L, 1, SKL_PROCESS);
    if (box->p)
        lua_pushfstring(L, "sandkit.Process (pid %s, %s): %p", sk_process_pid(box->p),
                        sk_process_exited(box->p) ? "exited" : "running", (void *)box);
    else
        lua_pushfstring(L, "sandkit.Process (closed): %p", (void *)box);
    return 1;
}

static int process_gc(lua_State *L)
{
    skl_process *box = luaL_checkudata(L, 1, SKL_PROCESS);
    if (box->p) {
        /* no more callbacks into this box; the sandbox may keep tracking */
        sk_process_detach(box->p);
        sk_process_unref(box->p);
        box->p = NULL;
    }
    if (box->queued_exit)
        box->queued_exit->owner = NULL;
    skl_target_release(&box->target);
    return 0;
}

/* ---- registration -------------------------------------------------------------- */

void skl_open_process(lua_State *L, int state_idx, int module_idx)
{
    static const luaL_Reg process_prims[] = {
        { "kill", process_kill },
        { "cancel", process_cancel },
        { "write", process_write },
        { "close_stdin", process_close_stdin },
        { "untrack", process_untrack },
        { "state", process_state },
        { NULL, NULL },
    };
    lua_pushvalue(L, state_idx);
    luaL_setfuncs(L, process_prims, 1);
    skl_class(L, SKL_PROCESS, process_index, process_tostring, process_gc, NULL, "process_methods",
              "Process", module_idx);
    /* weak-valued map from core process to its userdata */
    if (lua_getfield(L, LUA_REGISTRYINDEX, SKL_PROCS) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_newtable(L);
        lua_pushliteral(L, "v");
        lua_setfield(L, -2, "__mode");
        lua_setmetatable(L, -2);
        lua_setfield(L, LUA_REGISTRYINDEX, SKL_PROCS);
    } else {
        lua_pop(L, 1);
    }
}
