/* One binding for Lua 5.4 (the reference), 5.3, 5.1 and LuaJIT 2.1: the
 * version checks live here, nowhere else. Before 5.3 the 5.3 API comes from
 * compat-5.3 (Debian's lua-compat53-dev, header-only: its functions are
 * static in each object); what compat-5.3 lacks is below. Include this
 * instead of <lua.h> and <lauxlib.h>. */
#ifndef SKL_LUA_COMPAT_H
#define SKL_LUA_COMPAT_H

#include <stdio.h>

#include <lauxlib.h>
#include <lua.h>

#if LUA_VERSION_NUM < 503
#include <compat-5.3.h>
#endif

#if LUA_VERSION_NUM < 504
/* 5.4's numbered user values, kept before 5.4 in one table: the fenv table
 * of the userdata in 5.1 and LuaJIT (which must be a table), its single
 * user value in 5.3. The functions are static and unused in some objects. */
#if defined(__GNUC__) || defined(__clang__)
#define SKL_COMPAT_FN __attribute__((__unused__)) static
#else
#define SKL_COMPAT_FN static
#endif

#if LUA_VERSION_NUM == 501
#define skl_compat_getuv(L, idx) lua_getfenv((L), (idx))
#define skl_compat_setuv(L, idx) lua_setfenv((L), (idx))
#else
#define skl_compat_getuv(L, idx) lua_getuservalue((L), (idx))
#define skl_compat_setuv(L, idx) lua_setuservalue((L), (idx))
#endif

SKL_COMPAT_FN void *skl_compat_newuserdatauv(lua_State *L, size_t size, int nuvalue)
{
    void *p = lua_newuserdata(L, size);
    /* 5.1 gives a new userdata the running function's environment (the
     * globals): with no values of its own it gets an empty table instead */
    lua_createtable(L, nuvalue > 0 ? nuvalue : 0, 0);
    skl_compat_setuv(L, -2);
    return p;
}

/* Pushes user value n of the userdata at idx; its type, or LUA_TNONE (and
 * nil pushed) when it has no table of values. */
SKL_COMPAT_FN int skl_compat_getiuservalue(lua_State *L, int idx, int n)
{
    idx = lua_absindex(L, idx);
    skl_compat_getuv(L, idx);
    if (lua_type(L, -1) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_pushnil(L);
        return LUA_TNONE;
    }
    lua_rawgeti(L, -1, n);
    lua_remove(L, -2);
    return lua_type(L, -1);
}

/* Pops a value into user value n of the userdata at idx; 0 (and the value
 * popped) when it has no table of values. */
SKL_COMPAT_FN int skl_compat_setiuservalue(lua_State *L, int idx, int n)
{
    idx = lua_absindex(L, idx);
    skl_compat_getuv(L, idx);
    if (lua_type(L, -1) != LUA_TTABLE) {
        lua_pop(L, 2);
        return 0;
    }
    lua_insert(L, -2);
    lua_rawseti(L, -2, n);
    lua_pop(L, 1);
    return 1;
}

#define lua_newuserdatauv(L, size, n) skl_compat_newuserdatauv((L), (size), (n))
#define lua_getiuservalue(L, idx, n) skl_compat_getiuservalue((L), (idx), (n))
#define lua_setiuservalue(L, idx, n) skl_compat_setiuservalue((L), (idx), (n))
#endif

#ifndef LUA_MAXINTEGER
#define LUA_MAXINTEGER PTRDIFF_MAX
#endif

/* The FILE of an io handle (a luaL_Stream), or NULL once closed: 5.1 and
 * LuaJIT clear the FILE pointer at close, 5.3 and 5.4 clear closef (and may
 * leave f dangling). */
#if LUA_VERSION_NUM >= 503
#define skl_stream_file(s) ((s)->closef != NULL ? (s)->f : NULL)
#else
#define skl_stream_file(s) ((s)->f)
#endif

#endif
