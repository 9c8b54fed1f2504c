/* The sandkit.Buffer userdata: captured output handed to Lua without the
 * copy into a Lua string (exec option capture = "buffer"). A buffer takes
 * over the bytes of the process's capture buffer; its methods read them in
 * place and tostring() makes the one copy when the caller wants a string.
 * close() (or a to-be-closed variable, or the GC) frees the bytes; any other
 * method on a closed buffer raises. See docs/capture.md. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binding.h"

#define SKL_BUFFER "sandkit.Buffer"

typedef struct skl_buffer {
    sk_buf bytes; /* owned (heap or mapping, buf.h); data NULL when empty or closed */
    int closed;
} skl_buffer;

static skl_buffer *buffer_check(lua_State *L, int idx)
{
    skl_buffer *b = skl_checkudata(L, idx, SKL_BUFFER);
    if (b->closed)
        skl_argerror(L, idx, "sandkit.Buffer is closed");
    return b;
}

static skl_buffer *buffer_new(lua_State *L)
{
    skl_buffer *b = lua_newuserdatauv(L, sizeof *b, 0);
    memset(&b->bytes, 0, sizeof b->bytes);
    b->closed = 0;
    luaL_setmetatable(L, SKL_BUFFER);
    return b;
}

void skl_buffer_push_take(lua_State *L, sk_buf *src)
{
    skl_buffer *b = buffer_new(L); /* may raise: src still owns its bytes */
    if (src->len) {
        sk_buf_move(&b->bytes, src);
        /* Doubling left up to half the allocation unused: give it back
         * (mremap, no copy, for large ones). */
        sk_buf_shrink(&b->bytes);
    }
    sk_buf_free(src);
    /* The bytes are outside the Lua heap: tell the collector about them, so
     * a loop dropping large buffers paces the GC as strings would. */
    if (b->bytes.len >= 65536)
        lua_gc(L, LUA_GCSTEP, (int)(b->bytes.len >> 10 > INT_MAX ? INT_MAX : b->bytes.len >> 10));
}

/* string.sub's index rules: negative counts from the end, clamped. */
static size_t buffer_start(lua_Integer pos, size_t len)
{
    if (pos > 0)
        return (size_t)pos;
    if (pos == 0)
        return 1;
    if (pos < -(lua_Integer)len)
        return 1;
    return len + (size_t)pos + 1;
}

static size_t buffer_end(lua_Integer pos, size_t len)
{
    if (pos > (lua_Integer)len)
        return len;
    if (pos >= 0)
        return (size_t)pos;
    if (pos < -(lua_Integer)len)
        return 0;
    return len + (size_t)pos + 1;
}

/* buf:sub(i [, j]) -> string, as string.sub */
static int buffer_sub(lua_State *L)
{
    skl_buffer *b = buffer_check(L, 1);
    size_t i = buffer_start(skl_checkinteger(L, 2), b->bytes.len);
    size_t j = buffer_end(skl_optinteger(L, 3, -1), b->bytes.len);
    if (i > j)
        lua_pushliteral(L, "");
    else
        lua_pushlstring(L, b->bytes.data + i - 1, j - i + 1);
    return 1;
}

/* buf:byte([i [, j]]) -> integers, as string.byte */
static int buffer_byte(lua_State *L)
{
    skl_buffer *b = buffer_check(L, 1);
    lua_Integer pi = skl_optinteger(L, 2, 1);
    size_t i = buffer_start(pi, b->bytes.len);
    size_t j = buffer_end(skl_optinteger(L, 3, pi), b->bytes.len);
    if (i > j)
        return 0;
    if (j - i >= (size_t)INT_MAX)
        return luaL_error(L, "sandkit.Buffer:byte: range too long");
    int n = (int)(j - i + 1);
    luaL_checkstack(L, n, "sandkit.Buffer:byte: range too long");
    for (int k = 0; k < n; k++)
        lua_pushinteger(L, (unsigned char)b->bytes.data[i - 1 + (size_t)k]);
    return n;
}

static int has_magic(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] && strchr("^$*+?.([%-", s[i]))
            return 1;
    return 0;
}

/* buf:find(text [, init [, plain]]) -> start, end | nil. A plain search:
 * the same answers as string.find gives for text without pattern magic.
 * Text with magic characters needs plain = true (patterns would need the
 * bytes as a Lua string: tostring(buf)). */
static int buffer_find(lua_State *L)
{
    skl_buffer *b = buffer_check(L, 1);
    size_t nlen;
    const char *needle = skl_checklstring(L, 2, &nlen);
    size_t init = buffer_start(skl_optinteger(L, 3, 1), b->bytes.len);
    int plain = lua_toboolean(L, 4);
    if (!plain && has_magic(needle, nlen))
        return skl_argerror(L, 2, "sandkit.Buffer:find searches for plain text; pass plain = true, "
                                   "or match patterns on tostring(buf)");
    if (init > b->bytes.len + 1) {
        lua_pushnil(L);
        return 1;
    }
    if (nlen == 0) {
        lua_pushinteger(L, (lua_Integer)init);
        lua_pushinteger(L, (lua_Integer)init - 1);
        return 2;
    }
    const char *hay = b->bytes.data ? b->bytes.data + init - 1 : "";
    const char *at = memmem(hay, b->bytes.len - (init - 1), needle, nlen);
    if (!at) {
        lua_pushnil(L);
        return 1;
    }
    lua_Integer start = (lua_Integer)(at - b->bytes.data) + 1;
    lua_pushinteger(L, start);
    lua_pushinteger(L, start + (lua_Integer)nlen - 1);
    return 2;
}

/* buf:write_to(file) -> true | nil, err (IOError). file: an open io handle;
 * the bytes are written and the handle flushed. */
static int buffer_write_to(lua_State *L)
{
    skl_buffer *b = buffer_check(L, 1);
    FILE *f = skl_stream_file((luaL_Stream *)skl_checkudata(L, 2, LUA_FILEHANDLE));
    if (f == NULL)
        return skl_argerror(L, 2, "attempt to use a closed file");
    /* flushed, so that a full disk shows here and not at a later close */
    if ((b->bytes.len && fwrite(b->bytes.data, 1, b->bytes.len, f) != b->bytes.len) || fflush(f) != 0) {
        int e = errno;
        skl_state *st = skl_state_get(L);
        sk_error *err = sk_error_new(SK_ERR_IO, NULL, "sandkit.Buffer:write_to: %s", strerror(e));
        lua_pushnil(L);
        skl_push_error_take(L, st, err, NULL);
        return 2;
    }
    lua_pushboolean(L, 1);
    return 1;
}

/* buf:close(): frees the bytes now; idempotent. */
static int buffer_close(lua_State *L)
{
    skl_buffer *b = skl_checkudata(L, 1, SKL_BUFFER);
    sk_buf_free(&b->bytes);
    b->closed = 1;
    return 0;
}

static int buffer_len(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)buffer_check(L, 1)->bytes.len);
    return 1;
}

static int buffer_tostring(lua_State *L)
{
    skl_buffer *b = buffer_check(L, 1);
    lua_pushlstring(L, b->bytes.data ? b->bytes.data : "", b->bytes.len);
    return 1;
}

static int buffer_is_closed(lua_State *L)
{
    lua_pushboolean(L, ((skl_buffer *)skl_checkudata(L, 1, SKL_BUFFER))->closed);
    return 1;
}

/* core.buffer(s): a buffer holding a copy of s (results that never ran,
 * such as a cancelled exec, still give the type the caller asked for). */
static int buffer_from_string(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    skl_buffer *b = buffer_new(L); /* empty first: a failed malloc leaks nothing */
    if (len && (sk_buf_reserve_within(&b->bytes, len, len + 1) != 0 || sk_buf_append(&b->bytes, s, len) != 0))
        return luaL_error(L, "not enough memory");
    return 1;
}

void skl_open_buffer(lua_State *L, int state_idx)
{
    static const luaL_Reg methods[] = {
        { "sub", buffer_sub },
        { "byte", buffer_byte },
        { "find", buffer_find },
        { "write_to", buffer_write_to },
        { "close", buffer_close },
        { "is_closed", buffer_is_closed },
        { NULL, NULL },
    };
    static const luaL_Reg metamethods[] = {
        { "__len", buffer_len }, { "__tostring", buffer_tostring }, { "__gc", buffer_close },
        { "__close", buffer_close }, { NULL, NULL },
    };
    if (luaL_newmetatable(L, SKL_BUFFER)) {
        lua_newtable(L);
        lua_pushvalue(L, state_idx); /* write_to makes error objects */
        luaL_setfuncs(L, methods, 1);
        lua_setfield(L, -2, "__index");
        luaL_setfuncs(L, metamethods, 0);
    }
    lua_setfield(L, -2, "Buffer"); /* core.Buffer: the metatable */
    lua_pushcfunction(L, buffer_from_string);
    lua_setfield(L, -2, "buffer");
}
