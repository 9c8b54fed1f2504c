/* benchclock: the clock and process meters the benchmark runner reads (Lua
 * has only os.clock, which is CPU time of no defined scope, and os.time,
 * which is seconds).
 *   local clock = require "benchclock"
 *   clock.now()          --> seconds since an arbitrary point, as a float
 *   clock.cpu()          --> user + system CPU seconds of this process (all threads)
 *   clock.fds()          --> open descriptors of this process
 *   clock.raise_nofile() --> soft RLIMIT_NOFILE raised to the hard limit: soft, hard
 *   clock.heap_kb()      --> malloc'd bytes in use (glibc mallinfo2), in KiB */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <malloc.h>
#include <sys/resource.h>
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

static int clock_cpu(lua_State *L)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return luaL_error(L, "getrusage failed");
    lua_pushnumber(L, (lua_Number)ru.ru_utime.tv_sec + (lua_Number)ru.ru_utime.tv_usec / 1e6 +
                          (lua_Number)ru.ru_stime.tv_sec + (lua_Number)ru.ru_stime.tv_usec / 1e6);
    return 1;
}

static int clock_fds(lua_State *L)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return luaL_error(L, "cannot list /proc/self/fd");
    lua_Integer n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    lua_pushinteger(L, n - 1); /* not the directory's own descriptor */
    return 1;
}

static int clock_raise_nofile(lua_State *L)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return luaL_error(L, "getrlimit failed");
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl); /* best effort: the caller reads back */
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    lua_pushinteger(L, rl.rlim_cur == RLIM_INFINITY ? -1 : (lua_Integer)rl.rlim_cur);
    lua_pushinteger(L, rl.rlim_max == RLIM_INFINITY ? -1 : (lua_Integer)rl.rlim_max);
    return 2;
}

static int clock_heap_kb(lua_State *L)
{
    struct mallinfo2 mi = mallinfo2();
    lua_pushnumber(L, (lua_Number)(mi.uordblks + mi.hblkhd) / 1024.0);
    return 1;
}

int luaopen_benchclock(lua_State *L)
{
    static const luaL_Reg fns[] = {
        { "now", clock_now },
        { "cpu", clock_cpu },
        { "fds", clock_fds },
        { "raise_nofile", clock_raise_nofile },
        { "heap_kb", clock_heap_kb },
        { NULL, NULL },
    };
    luaL_newlib(L, fns);
    return 1;
}
