/* Fault injection for spec/oom_spec.lua: preloaded (LD_PRELOAD) into a
 * child lua5.4, it interposes malloc, calloc and realloc and, once armed,
 * fails the n-th call made directly from sandkit's core.so; loaded as a
 * Lua module it offers arm(n) and disarm() -> how many calls it failed.
 * Calls from elsewhere (libc, libuv, Lua's own allocator) are never failed:
 * what is under test is how the binding and the core meet a NULL. */
#include <link.h>
#include <stdint.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#define EXPORT __attribute__((visibility("default")))

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);

static uintptr_t core_lo, core_hi; /* core.so's mapped range */
static long countdown = -1;        /* fail when it reaches 0; < 0: disarmed */
static long failed;

static int fail_now(void *ra)
{
    uintptr_t a = (uintptr_t)ra;
    if (countdown < 0 || a < core_lo || a >= core_hi)
        return 0;
    if (--countdown > 0)
        return 0;
    countdown = -1;
    failed++;
    return 1;
}

EXPORT void *malloc(size_t n) { return fail_now(__builtin_return_address(0)) ? NULL : __libc_malloc(n); }

EXPORT void *calloc(size_t n, size_t size)
{
    return fail_now(__builtin_return_address(0)) ? NULL : __libc_calloc(n, size);
}

EXPORT void *realloc(void *p, size_t n)
{
    return fail_now(__builtin_return_address(0)) ? NULL : __libc_realloc(p, n);
}

static int find_core(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    static const char suffix[] = "/sandkit/core.so";
    const char *name = info->dlpi_name;
    size_t len = strlen(name), slen = sizeof suffix - 1;
    if (len < slen || strcmp(name + len - slen, suffix) != 0)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (!core_lo || lo < core_lo)
            core_lo = lo;
        if (hi > core_hi)
            core_hi = hi;
    }
    return 1;
}

/* arm(n): fail the n-th allocation core.so makes from now on. */
static int inject_arm(lua_State *L)
{
    lua_Integer n = luaL_checkinteger(L, 1);
    if (!core_hi && !dl_iterate_phdr(find_core, NULL))
        return luaL_error(L, "oom_inject: sandkit/core.so is not loaded");
    failed = 0;
    countdown = (long)n;
    return 0;
}

static int inject_disarm(lua_State *L)
{
    countdown = -1;
    lua_pushinteger(L, failed);
    return 1;
}

EXPORT int luaopen_oom_inject(lua_State *L)
{
    static const luaL_Reg f[] = { { "arm", inject_arm }, { "disarm", inject_disarm }, { NULL, NULL } };
    countdown = -1;
    luaL_newlib(L, f);
    return 1;
}
