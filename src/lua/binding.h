/* Shared pieces of the Lua binding: the per-Lua-state core (loop + event
 * queue), JSON <-> Lua conversion, error objects. Core callbacks only queue
 * events here; Lua sees them when step() drains the queue. */
#ifndef SKL_BINDING_H
#define SKL_BINDING_H

#include <stdbool.h>

#include "lua_compat.h"

#include "../core/loop.h"
#include "../core/sandbox.h"

enum { SKL_EV_OUTPUT = 1, SKL_EV_EXIT, SKL_EV_LIFECYCLE, SKL_EV_TIMER };

typedef struct skl_event {
    int kind;
    lua_Integer token;
    int stream;
    char *data;
    size_t len, cap; /* cap: data's size (a reused buffer may be larger) */
    sk_error *err;
    const void *scope; /* whose secrets err is redacted against (secrets.h) */
    bool err_lost;     /* an error that could not be copied (out of memory) */
    void *owner;       /* SKL_EV_EXIT: its process's box (process_ud.c); NULL once collected */
    struct skl_event *next;
} skl_event;

/* Output buffers kept for the next output events: freed and malloc'd again
 * for every chunk, glibc's heap gave each one back and faulted it in anew
 * when nothing else of the process lived on it (LuaJIT allocates its
 * objects elsewhere): streaming under LuaJIT ran 2.5x slower. */
#define SKL_SPARES 16
#define SKL_SPARE_MIN 16384 /* smaller buffers are not worth keeping */

typedef struct skl_state {
    sk_loop *loop;
    skl_event *head, *tail;
    char *spare[SKL_SPARES];
    size_t spare_cap[SKL_SPARES];
    int nspare;
    int error_factory; /* registry ref to errors.new(kind, message, fields) */
    int dispatch;      /* registry ref to the Lua dispatcher */
} skl_state;

/* Where a core callback delivers: the state and the Lua-side token. The
 * terminal event (exit, lifecycle, timer), which its waiter cannot do
 * without, is allocated up front so that it cannot be lost; an output
 * event that cannot be queued (out of memory) turns the terminal event
 * into an OutOfMemoryError. */
typedef struct skl_target {
    skl_state *st;
    lua_Integer token;
    skl_event *last; /* the terminal event; NULL once queued */
    bool lost;       /* an output event was dropped */
} skl_target;

#define SKL_STATE_UPVALUE lua_upvalueindex(1)

/* The module's one exported symbol. The Makefile builds with
 * -fvisibility=hidden; luarocks' builtin backend takes no compiler flags,
 * so a rock built without it in CFLAGS exports the core's symbols too. */
#define SKL_EXPORT __attribute__((visibility("default")))
int luaopen_sandkit_core(lua_State *L) SKL_EXPORT;

skl_state *skl_state_get(lua_State *L); /* from upvalue 1 */
/* Sets t up for token; -1 when its terminal event cannot be allocated
 * (the caller reports it before starting anything). */
int skl_target_init(skl_target *t, skl_state *st, lua_Integer token);
/* Frees the terminal event if it was never queued. */
void skl_target_release(skl_target *t);
/* Queues an output event (stream, a copy of data); out of memory: t->lost. */
void skl_emit(skl_target *t, int stream, const char *data, size_t len);
/* Queues the terminal event of kind, at most once; never fails. err is
 * copied and redacted at once against scope's secrets (the sandbox it came
 * from; NULL: every held secret), while a failed process's own env is
 * still held; a copy that does not fit, or t->lost, delivers an
 * out-of-memory error. */
void skl_finish(skl_target *t, int kind, const sk_error *err, const void *scope);

/* Pushes data as a string under lua_pcall: 0, or -1 with nothing pushed
 * when Lua has no memory for it (a large read reports that, never raises). */
int skl_push_lstring_protected(lua_State *L, const char *data, size_t len);

/* Pushes the metatable `name` of a cancellable handle (__gc = gc, one
 * method, cancel), made on first use. */
void skl_push_cancel_meta(lua_State *L, const char *name, lua_CFunction gc, lua_CFunction cancel);

/* Argument checks of the methods a user calls directly (sandkit.Buffer):
 * as luaL_argerror and luaL_check*, but the error is sandkit's
 * ArgumentError, raised at the caller's line (errors.argument, registered
 * by errors.lua through core.set_argument_error). */
int skl_argerror(lua_State *L, int arg, const char *msg);
lua_Integer skl_checkinteger(lua_State *L, int arg);
lua_Integer skl_optinteger(lua_State *L, int arg, lua_Integer def);
const char *skl_checklstring(lua_State *L, int arg, size_t *len);
void *skl_checkudata(lua_State *L, int arg, const char *tname);

/* JSON conversion. skl_to_json returns NULL and pushes nothing on success
 * failure: it raises a Lua error naming `what` for unconvertible values. */
json_t *skl_to_json(lua_State *L, int idx, const char *what);
void skl_push_json(lua_State *L, const json_t *v);
/* The same for a value the caller owns: v is released, also when pushing
 * raises (out of memory). */
void skl_push_json_take(lua_State *L, json_t *v);
/* Pushes an error object made by the Lua error factory, with the secrets
 * of scope redacted (the sandbox it came from; NULL: every held secret).
 * Every error reaches Lua through here. */
void skl_push_error(lua_State *L, skl_state *st, const sk_error *err, const void *scope);
/* The same for an error the caller owns: err is freed, also when pushing
 * raises (out of memory). */
void skl_push_error_take(lua_State *L, skl_state *st, sk_error *err, const void *scope);

/* Makes the metatable `name` (luaL_newmetatable) of a class whose methods
 * live in a table the module exposes as methods_field (Lua fills it):
 * __index = index with that table as upvalue 1, and the metatable as the
 * module's class_field. */
void skl_class(lua_State *L, const char *name, lua_CFunction index, lua_CFunction tostring,
               lua_CFunction gc, lua_CFunction newindex, const char *methods_field,
               const char *class_field, int module_idx);

/* __index of a class made by skl_class: pushes the method named by the key
 * (from the method table in upvalue 1) and returns -1; else returns the
 * index of the key in fields (NULL-terminated), or -2 for no such field. */
int skl_index(lua_State *L, const char *const fields[]);
/* Pushes user value n of the object at index 1 (a tname): its state table. */
int skl_push_state(lua_State *L, const char *tname, int n);

/* sandkit.Sandbox (sandbox_ud.c) */
#define SKL_SANDBOX "sandkit.Sandbox"
typedef struct skl_sandbox {
    sk_sandbox *sb; /* NULL once freed */
    skl_state *st;
} skl_sandbox;
void skl_open_sandbox(lua_State *L); /* registers the classes; expects the state upvalue on top */
int skl_new_sandbox(lua_State *L);
skl_sandbox *skl_sandbox_check(lua_State *L, int idx); /* raises unless an open sandkit.Sandbox */
sk_sandbox *skl_check_sandbox(lua_State *L, int idx);

/* sandkit.Process (process_ud.c) */
/* spawn(sb, command, tracked, token, cwd, env, timeout_ms, max_output,
 * stdin, capture, stream) -> Process | nil, err | false (the sandbox is not
 * running) */
int skl_process_spawn(lua_State *L);
/* Pushes the userdata of p, when it still has one; returns whether. */
int skl_process_push(lua_State *L, sk_process *p);
/* The values an exit event delivers: the result table and nil, or nil and
 * the error (nil, nil when nobody holds the process any more). */
void skl_process_push_exit(lua_State *L, const skl_event *e);
/* An exit event is freed: its box no longer points at it. */
void skl_process_exit_freed(skl_event *e);
/* The Process class, and its primitives into the table on top. */
void skl_open_process(lua_State *L, int state_idx, int module_idx);
int skl_ops_open(lua_State *L); /* core.ops_open (ops_ud.c) */
int skl_ops_call(lua_State *L); /* core.ops_call (ops_ud.c) */
int skl_ops_info(lua_State *L); /* core.ops_info (ops_ud.c) */
int skl_ops_body(lua_State *L); /* core.ops_body (ops_ud.c) */
void skl_open_fs(lua_State *L); /* adds fs_root & co. to the module table on top */

/* sandkit.Buffer (buffer_ud.c): adds core.Buffer and core.buffer to the
 * table on top; state_idx is the state userdata's stack index. */
void skl_open_buffer(lua_State *L, int state_idx);
/* Pushes a buffer that takes over src's bytes (src is left empty). */
void skl_buffer_push_take(lua_State *L, sk_buf *src);

#endif
