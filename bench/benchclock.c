/* benchclock: the monotonic clock the benchmark runner times with (Lua has
 * only os.clock, which is CPU time, and os.time, which is seconds).
 *   local clock = require "benchclock"
 *   clock.now()  --> seconds since an arbitrary point, as a float */
#define _POSIX_C_SOURCE 200809L
#include <time.h>
#include <lauxlib.h>
#include <lua.h>

static int clock_now(lua_State *L)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec / 1e9);
    return 1;
}

int luaopen_benchclock(lua_State *L)
{
    static const luaL_Reg fns[] = { { "now", clock_now }, { NULL, NULL } };
    luaL_newlib(L, fns);
    return 1;
}
