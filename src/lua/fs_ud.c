/* The Lua face of src/core/fs_local.c: core.fs_root(path, create[, uid,
 * gid]) gives a root object whose methods take paths relative to it;
 * failures return nil, errno name ("ENOENT", ...), message.
 * lua/sandkit/fs maps those to typed errors.
 *
 * With uid and gid (sb.fs of a sandbox whose commands run as another user:
 * a root caller's bwrap), every system call on the root's paths is made
 * with the thread's file-system ids set to that user and no supplementary
 * groups, restored before the method returns (compat.h,
 * sk_thread_fs_ids_*). Chosen over chown-after-create: what sb.fs creates
 * is the user's from the first instant (no window in which a root-owned
 * file sits in the sandbox's directories, no chown to get wrong on an
 * error path), and the kernel checks that user's permissions, so sb.fs can
 * reach no more than the sandbox's own commands can (a root-only file in
 * the working directory stays unreadable). No Lua call (which could raise
 * and skip the restore) happens while the ids are changed.
 *
 * core.local_fs_view(sb[, view]) gives sb.fs of a LocalSandbox a view
 * (sandkit.FsView: fs_local.h) over the descriptors its start pinned;
 * view:root(base) is a root whose relative paths resolve in that view from
 * `base` (an absolute path of the sandbox), with the same methods. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <lauxlib.h>
#include <lua.h>
#include <string.h>
#include <unistd.h>

#include "../core/compat.h"
#include "../core/fs_local.h"
#include "binding.h"

#define ROOT_NAME "sandkit.FsRoot"
#define FILE_NAME "sandkit.FsFile"
#define VIEW_NAME "sandkit.FsView"

/* A sandkit.FsView: the view and whom to act as. */
typedef struct {
    sk_fs_view view;
    unsigned generation;
    bool as_user;
    uid_t uid;
    gid_t gid;
    char *workdir; /* owned */
} view_box;

typedef struct {
    int fd;
    bool as_user; /* roots only: act as uid/gid */
    uid_t uid;
    gid_t gid;
    const view_box *view; /* roots in a view (user value 1 holds it); NULL: fd is the root */
    char base[];          /* roots in a view: where relative paths start */
} fs_handle;

static const struct {
    int code;
    const char *name;
} errno_names[] = {
    { ENOENT, "ENOENT" },   { EEXIST, "EEXIST" },   { ENOTDIR, "ENOTDIR" }, { EISDIR, "EISDIR" },
    { ENOTEMPTY, "ENOTEMPTY" }, { EXDEV, "EXDEV" }, { EACCES, "EACCES" },   { EPERM, "EPERM" },
    { ELOOP, "ELOOP" },     { EINVAL, "EINVAL" },   { EBUSY, "EBUSY" },     { ENOSPC, "ENOSPC" },
    { EROFS, "EROFS" },     { ENAMETOOLONG, "ENAMETOOLONG" }, { ENXIO, "ENXIO" }, { EMLINK, "EMLINK" },
    { EDQUOT, "EDQUOT" },   { ENOTSUP, "ENOTSUP" },   { EFBIG, "EFBIG" },     { ENOMEM, "ENOMEM" },
};

static int push_fail(lua_State *L, int neg)
{
    int code = -neg;
    lua_pushnil(L);
    const char *name = NULL;
    for (size_t i = 0; i < sizeof errno_names / sizeof errno_names[0]; i++)
        if (errno_names[i].code == code)
            name = errno_names[i].name;
    if (name)
        lua_pushstring(L, name);
    else
        lua_pushfstring(L, "errno %d", code);
    lua_pushstring(L, strerror(code));
    return 3;
}

static int push_result(lua_State *L, int rc)
{
    if (rc < 0)
        return push_fail(L, rc);
    lua_pushboolean(L, 1);
    return 1;
}

static fs_handle *check_open(lua_State *L, int idx, const char *tname)
{
    fs_handle *h = luaL_checkudata(L, idx, tname);
    if (h->fd < 0 && !h->view)
        luaL_error(L, "%s is closed", tname);
    return h;
}

static fs_handle *check_root(lua_State *L) { return check_open(L, 1, ROOT_NAME); }

/* Brackets each root operation's system calls: 0, or -errno when the ids
 * could not be changed (then nothing was done and nothing needs undoing). */
static int user_begin(const fs_handle *h, sk_thread_fs_ids *saved)
{
    if (!h->as_user)
        return 0;
    int e = sk_thread_fs_ids_enter(h->uid, h->gid, saved);
    return e ? -e : 0;
}

static void user_end(const fs_handle *h, sk_thread_fs_ids *saved)
{
    if (h->as_user)
        sk_thread_fs_ids_leave(saved);
}

/* Paths with NUL bytes would be cut short by the system call: refuse. */
static const char *check_rel(lua_State *L, int idx)
{
    size_t n;
    const char *s = luaL_checklstring(L, idx, &n);
    if (strlen(s) != n)
        luaL_argerror(L, idx, "path contains a NUL byte");
    return s;
}

/* ---- a root's operations: beneath its descriptor, or in its view ---------- */

/* base + "/" + rel, malloc'd (NULL: out of memory). */
static char *view_path(const fs_handle *h, const char *rel)
{
    size_t b = strlen(h->base), r = strlen(rel);
    char *p = malloc(b + 1 + r + 1);
    if (p) {
        memcpy(p, h->base, b);
        p[b] = '/';
        memcpy(p + b + 1, rel, r + 1);
    }
    return p;
}

static int h_open(const fs_handle *h, const char *rel, int flags, mode_t mode)
{
    if (!h->view)
        return sk_fs_open(h->fd, rel, flags, mode);
    char *p = view_path(h, rel);
    int rc = p ? sk_fs_view_open(&h->view->view, p, flags, mode) : -ENOMEM;
    free(p);
    return rc;
}

static int h_stat(const fs_handle *h, const char *rel, bool nofollow, struct stat *st)
{
    if (!h->view)
        return sk_fs_stat(h->fd, rel, nofollow, st);
    char *p = view_path(h, rel);
    int rc = p ? sk_fs_view_stat(&h->view->view, p, nofollow, st) : -ENOMEM;
    free(p);
    return rc;
}

static ssize_t h_readlink(const fs_handle *h, const char *rel, char *buf, size_t size)
{
    if (!h->view)
        return sk_fs_readlink(h->fd, rel, buf, size);
    char *p = view_path(h, rel);
    ssize_t rc = p ? sk_fs_view_readlink(&h->view->view, p, buf, size) : -ENOMEM;
    free(p);
    return rc;
}

static int handle_close(lua_State *L, const char *tname)
{
    fs_handle *h = luaL_checkudata(L, 1, tname);
    int rc = 0;
    if (h->fd >= 0) {
        rc = close(h->fd) == 0 ? 0 : -errno;
        h->fd = -1;
    }
    h->view = NULL;
    return push_result(L, rc);
}

static int root_close(lua_State *L) { return handle_close(L, ROOT_NAME); }
static int file_close(lua_State *L) { return handle_close(L, FILE_NAME); }

static lua_Integer check_id(lua_State *L, int idx)
{
    lua_Integer v = luaL_checkinteger(L, idx);
    luaL_argcheck(L, v > 0 && v < 4294967295, idx, "a uid/gid from 1 to 4294967294 expected");
    return v;
}

static int fs_root(lua_State *L)
{
    const char *path = check_rel(L, 1);
    bool create = lua_toboolean(L, 2);
    bool as_user = !lua_isnoneornil(L, 3);
    uid_t uid = as_user ? (uid_t)check_id(L, 3) : 0;
    gid_t gid = as_user ? (gid_t)check_id(L, 4) : 0;
    /* the userdata first: its __gc owns the descriptor from the start */
    fs_handle *h = lua_newuserdatauv(L, sizeof *h, 0);
    *h = (fs_handle){ .fd = -1, .as_user = as_user, .uid = uid, .gid = gid };
    luaL_setmetatable(L, ROOT_NAME);
    sk_thread_fs_ids saved;
    int fd = user_begin(h, &saved);
    if (fd == 0) {
        fd = sk_fs_root_open(path, create);
        user_end(h, &saved);
    }
    if (fd < 0)
        return push_fail(L, fd);
    h->fd = fd;
    return 1;
}

static int fs_getcwd(lua_State *L)
{
    char buf[4096];
    if (!getcwd(buf, sizeof buf))
        return push_fail(L, -errno);
    lua_pushstring(L, buf);
    return 1;
}

static int fs_force_fallback(lua_State *L)
{
    sk_fs_force_fallback(lua_toboolean(L, 1));
    return 0;
}

/* root:open(rel, mode): "r" read, "w" create/truncate, "x" create only,
 * "a" create/append. Only regular files open. */
static int root_open(lua_State *L)
{
    fs_handle *root = check_root(L);
    const char *rel = check_rel(L, 2);
    const char *mode = luaL_checkstring(L, 3);
    int flags;
    switch (mode[0]) {
    case 'r': flags = O_RDONLY; break;
    case 'w': flags = O_WRONLY | O_CREAT | O_TRUNC; break;
    case 'x': flags = O_WRONLY | O_CREAT | O_EXCL; break;
    case 'a': flags = O_WRONLY | O_CREAT | O_APPEND; break;
    default: return luaL_argerror(L, 3, "mode must be r, w, x or a");
    }
    fs_handle *h = lua_newuserdatauv(L, sizeof *h, 0);
    *h = (fs_handle){ .fd = -1 };
    luaL_setmetatable(L, FILE_NAME);
    sk_thread_fs_ids saved;
    int rc = user_begin(root, &saved);
    if (rc < 0)
        return push_fail(L, rc);
    /* O_NONBLOCK while opening: a FIFO planted by sandboxed code must not
     * hang the caller; it is refused below. O_TRUNC waits for the check. */
    int fd = h_open(root, rel, (flags & ~O_TRUNC) | O_NONBLOCK | O_NOCTTY, 0666);
    struct stat st;
    rc = fd < 0 ? fd : fstat(fd, &st) == 0 ? 0 : -errno;
    if (rc == 0 && !S_ISREG(st.st_mode))
        rc = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
    if (rc == 0 && fcntl(fd, F_SETFL, flags & O_APPEND) != 0)
        rc = -errno;
    if (rc == 0 && (flags & O_TRUNC) && ftruncate(fd, 0) != 0)
        rc = -errno;
    user_end(root, &saved);
    if (rc < 0) {
        if (fd >= 0)
            close(fd);
        return push_fail(L, rc);
    }
    h->fd = fd;
    lua_pushinteger(L, (lua_Integer)st.st_size);
    return 2;
}

static const char *type_of(mode_t m)
{
    return S_ISREG(m) ? "file" : S_ISDIR(m) ? "directory" : S_ISLNK(m) ? "symlink" : "other";
}

static int root_stat(lua_State *L)
{
    fs_handle *root = check_root(L);
    const char *rel = check_rel(L, 2);
    bool nofollow = lua_toboolean(L, 3);
    struct stat st;
    sk_thread_fs_ids saved;
    int rc = user_begin(root, &saved);
    if (rc == 0) {
        rc = h_stat(root, rel, nofollow, &st);
        user_end(root, &saved);
    }
    if (rc < 0)
        return push_fail(L, rc);
    lua_createtable(L, 0, 6);
    lua_pushstring(L, type_of(st.st_mode));
    lua_setfield(L, -2, "type");
    lua_pushinteger(L, (lua_Integer)st.st_size);
    lua_setfield(L, -2, "size");
    lua_pushinteger(L, (lua_Integer)(st.st_mode & 07777));
    lua_setfield(L, -2, "mode");
    lua_pushinteger(L, (lua_Integer)SK_ST_MTIM(st).tv_sec * 1000 + SK_ST_MTIM(st).tv_nsec / 1000000);
    lua_setfield(L, -2, "mtime_ms");
    lua_pushinteger(L, (lua_Integer)SK_ST_CTIM(st).tv_sec * 1000 + SK_ST_CTIM(st).tv_nsec / 1000000);
    lua_setfield(L, -2, "ctime_ms");
    return 1;
}

/* The operations of one path (a) or two (a, b) with a flag, as the user.
 * b may be relative to another root of the same view (argument 5). */
enum root_op { OP_MKDIR, OP_UNLINK, OP_RMDIR, OP_RENAME, OP_COPY };

static int root_fd_do(const fs_handle *root, enum root_op op, const char *a, const char *b, bool flag)
{
    switch (op) {
    case OP_MKDIR: return sk_fs_mkdir(root->fd, a, 0777);
    case OP_UNLINK: return sk_fs_unlink(root->fd, a);
    case OP_RMDIR: return sk_fs_rmdir(root->fd, a);
    case OP_RENAME: return sk_fs_rename(root->fd, a, b, flag);
    default: return sk_fs_copy(root->fd, a, b, flag);
    }
}

static int root_view_do(const fs_handle *root, const fs_handle *other, enum root_op op, const char *a,
                        const char *b, bool flag)
{
    const sk_fs_view *v = &root->view->view;
    char *pa = view_path(root, a), *pb = b ? view_path(other, b) : NULL;
    int rc = -ENOMEM;
    if (pa && (pb || !b)) {
        switch (op) {
        case OP_MKDIR: rc = sk_fs_view_mkdir(v, pa, 0777); break;
        case OP_UNLINK: rc = sk_fs_view_unlink(v, pa); break;
        case OP_RMDIR: rc = sk_fs_view_rmdir(v, pa); break;
        case OP_RENAME: rc = sk_fs_view_rename(v, pa, pb, flag); break;
        case OP_COPY: rc = sk_fs_view_copy(v, pa, pb, flag); break;
        }
    }
    free(pa);
    free(pb);
    return rc;
}

static int root_do(lua_State *L, enum root_op op)
{
    fs_handle *root = check_root(L);
    const char *a = check_rel(L, 2);
    const char *b = op == OP_RENAME || op == OP_COPY ? check_rel(L, 3) : NULL;
    bool flag = lua_toboolean(L, 4);
    const fs_handle *other = root;
    if (b && !lua_isnoneornil(L, 5)) {
        other = check_open(L, 5, ROOT_NAME);
        luaL_argcheck(L, other == root || (root->view && other->view == root->view), 5,
                      "a root of the same view expected");
    }
    sk_thread_fs_ids saved;
    int rc = user_begin(root, &saved);
    if (rc < 0)
        return push_fail(L, rc);
    rc = root->view ? root_view_do(root, other, op, a, b, flag) : root_fd_do(root, op, a, b, flag);
    user_end(root, &saved);
    return push_result(L, rc);
}

/* root:shares(other): whether rename and copy can go from one to the other
 * (the same root, or roots of one view). */
static int root_shares(lua_State *L)
{
    fs_handle *root = check_root(L);
    fs_handle *other = check_open(L, 2, ROOT_NAME);
    lua_pushboolean(L, other == root || (root->view && other->view == root->view));
    return 1;
}

static int root_mkdir(lua_State *L) { return root_do(L, OP_MKDIR); }
static int root_unlink(lua_State *L) { return root_do(L, OP_UNLINK); }
static int root_rmdir(lua_State *L) { return root_do(L, OP_RMDIR); }
static int root_rename(lua_State *L) { return root_do(L, OP_RENAME); }
static int root_copy(lua_State *L) { return root_do(L, OP_COPY); }

static int root_readlink(lua_State *L)
{
    fs_handle *root = check_root(L);
    const char *rel = check_rel(L, 2);
    char buf[4096];
    sk_thread_fs_ids saved;
    ssize_t n = user_begin(root, &saved);
    if (n == 0) {
        n = h_readlink(root, rel, buf, sizeof buf);
        user_end(root, &saved);
    }
    if (n < 0)
        return push_fail(L, (int)n);
    lua_pushlstring(L, buf, (size_t)n);
    return 1;
}

/* An open DIR owned by a Lua value, so that a memory error while the
 * entries are pushed does not leak it. */
#define DIR_NAME "sandkit.FsDir"

static int dir_gc(lua_State *L)
{
    DIR **d = lua_touserdata(L, 1);
    if (*d)
        closedir(*d);
    *d = NULL;
    return 0;
}

/* root:readdir(rel): array of { name, type } (type as in stat, the entry
 * itself: a symlink is "symlink"). The directory is opened, and an entry
 * without d_type stat'ed, as the user; the entries are pushed with the ids
 * back (pushing may raise). */
static int root_readdir(lua_State *L)
{
    fs_handle *root = check_root(L);
    const char *rel = check_rel(L, 2);
    DIR **box = lua_newuserdatauv(L, sizeof *box, 0);
    *box = NULL;
    luaL_setmetatable(L, DIR_NAME);
    sk_thread_fs_ids saved;
    int fd = user_begin(root, &saved);
    if (fd == 0) {
        fd = h_open(root, rel, O_RDONLY | O_DIRECTORY, 0);
        user_end(root, &saved);
    }
    if (fd < 0)
        return push_fail(L, fd);
    DIR *d = fdopendir(fd);
    if (!d) {
        int rc = -errno;
        close(fd);
        return push_fail(L, rc);
    }
    *box = d;
    lua_newtable(L);
    lua_Integer i = 0;
    struct dirent *e;
    errno = 0;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        const char *type;
        struct stat st;
        switch (e->d_type) {
        case DT_REG: type = "file"; break;
        case DT_DIR: type = "directory"; break;
        case DT_LNK: type = "symlink"; break;
        case DT_UNKNOWN: {
            sk_thread_fs_ids ids;
            bool known = user_begin(root, &ids) == 0;
            if (known) {
                known = fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0;
                user_end(root, &ids);
            }
            type = known ? type_of(st.st_mode) : "other";
            break;
        }
        default: type = "other"; break;
        }
        lua_createtable(L, 0, 2);
        lua_pushstring(L, e->d_name);
        lua_setfield(L, -2, "name");
        lua_pushstring(L, type);
        lua_setfield(L, -2, "type");
        lua_rawseti(L, -2, ++i);
        errno = 0;
    }
    int rc = errno ? -errno : 0;
    closedir(d);
    *box = NULL;
    if (rc < 0)
        return push_fail(L, rc);
    return 1;
}

/* file:read(n): up to n bytes, nil at the end; nil, "ENOMEM" when they
 * do not fit in memory. Read into malloc'd memory, not a luaL_Buffer:
 * before 5.3 (compat-5.3's buffer) a large one is a fresh userdata each
 * call, which made LuaJIT's 1 MiB reads four times slower
 * (docs/lua-versions.md §4). */
static int file_read(lua_State *L)
{
    int fd = check_open(L, 1, FILE_NAME)->fd;
    lua_Integer want = luaL_checkinteger(L, 2);
    luaL_argcheck(L, want > 0, 2, "positive byte count expected");
    char *p = malloc((size_t)want);
    if (!p)
        return push_fail(L, -ENOMEM);
    ssize_t n;
    do
        n = read(fd, p, (size_t)want);
    while (n < 0 && errno == EINTR);
    int rc = n < 0 ? -errno : 0;
    if (n == 0)
        lua_pushnil(L);
    else if (n > 0 && skl_push_lstring_protected(L, p, (size_t)n) != 0)
        rc = -ENOMEM;
    free(p);
    return rc < 0 ? push_fail(L, rc) : 1;
}

/* file:read_all(size_hint, max): the rest of the file as one string, or
 * nil, "EFBIG" once it holds more than max bytes (the hint, the file's
 * size, is checked first: nothing is read then), or nil, "ENOMEM". The
 * buffer is malloc'd (sized from the hint, grown only for a file that
 * grew) and copied into a string under lua_pcall, so running out of
 * memory is a failure to report, never a raise. */
static int file_read_all(lua_State *L)
{
    int fd = check_open(L, 1, FILE_NAME)->fd;
    lua_Integer hint = luaL_optinteger(L, 2, 0);
    lua_Integer max = luaL_optinteger(L, 3, LUA_MAXINTEGER);
    luaL_argcheck(L, max >= 0, 3, "a byte count >= 0 expected");
    if (max > (lua_Integer)(SIZE_MAX / 2))
        max = (lua_Integer)(SIZE_MAX / 2);
    if (hint > max)
        return push_fail(L, -EFBIG);
    /* one byte more than expected: the end shows without growing */
    size_t limit = (size_t)max + 1, cap = (hint > 0 ? (size_t)hint : 65536) + 1, len = 0;
    if (cap > limit)
        cap = limit;
    char *buf = malloc(cap);
    int rc = buf ? 0 : -ENOMEM;
    while (rc == 0) {
        if (len == cap) {
            if (cap == limit) {
                rc = -EFBIG;
                break;
            }
            size_t grown = cap < limit / 2 ? cap * 2 : limit;
            char *more = realloc(buf, grown);
            if (!more) {
                rc = -ENOMEM;
                break;
            }
            buf = more;
            cap = grown;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            rc = -errno;
        else if (n == 0)
            break;
        else
            len += (size_t)n;
    }
    if (rc == 0 && len > (size_t)max)
        rc = -EFBIG;
    /* (a raise other than a memory error cannot happen here) */
    if (rc == 0 && skl_push_lstring_protected(L, buf, len) != 0)
        rc = -ENOMEM;
    free(buf);
    return rc < 0 ? push_fail(L, rc) : 1;
}

static int file_write(lua_State *L)
{
    int fd = check_open(L, 1, FILE_NAME)->fd;
    size_t n;
    const char *s = luaL_checklstring(L, 2, &n);
    return push_result(L, sk_fs_write_all(fd, s, n));
}

static int handle_gc(lua_State *L)
{
    fs_handle *h = lua_touserdata(L, 1);
    if (h->fd >= 0)
        close(h->fd);
    h->fd = -1;
    return 0;
}

/* ---- sandkit.FsView ---------------------------------------------------------- */

static view_box *check_view(lua_State *L, int idx) { return luaL_checkudata(L, idx, VIEW_NAME); }

static int view_gc(lua_State *L)
{
    view_box *b = check_view(L, 1);
    sk_fs_view_clear(&b->view);
    free(b->workdir);
    b->workdir = NULL;
    return 0;
}

/* core.local_fs_view(sb[, view]): `view` while it matches what sb has
 * pinned, else a new sandkit.FsView; nil, "ENOTCONN" before sb started (or
 * after it was destroyed), nil, "EINVAL" for a sandbox whose provider pins
 * nothing (sandbox.h, sk_sandbox_fs_get). */
static int fs_local_view(lua_State *L)
{
    sk_sandbox *sb = skl_check_sandbox(L, 1);
    long generation = sk_sandbox_fs_generation(sb);
    if (!lua_isnoneornil(L, 2)) {
        const view_box *old = check_view(L, 2);
        if (generation >= 0 && old->workdir && old->generation == (unsigned long)generation) {
            lua_settop(L, 2);
            return 1;
        }
    }
    view_box *b = lua_newuserdatauv(L, sizeof *b, 0);
    *b = (view_box){ .view = { 0 } };
    luaL_setmetatable(L, VIEW_NAME);
    sk_sandbox_fs fs = { .view = { 0 } };
    int rc = sk_sandbox_fs_get(sb, &fs);
    if (rc < 0)
        return push_fail(L, rc);
    b->view = fs.view; /* the box's __gc owns the descriptors from here */
    if (!(b->workdir = strdup(fs.workdir)))
        return push_fail(L, -ENOMEM);
    b->generation = fs.generation;
    b->as_user = fs.as_user;
    b->uid = fs.uid;
    b->gid = fs.gid;
    return 1;
}

/* view:root(base): a root whose paths resolve in the view from base. */
static int view_root(lua_State *L)
{
    view_box *b = check_view(L, 1);
    size_t n;
    const char *base = luaL_checklstring(L, 2, &n);
    luaL_argcheck(L, base[0] == '/' && strlen(base) == n, 2, "an absolute path expected");
    fs_handle *h = lua_newuserdatauv(L, sizeof *h + n + 1, 1);
    *h = (fs_handle){ .fd = -1, .as_user = b->as_user, .uid = b->uid, .gid = b->gid, .view = b };
    memcpy(h->base, base, n + 1);
    luaL_setmetatable(L, ROOT_NAME);
    lua_pushvalue(L, 1);
    lua_setiuservalue(L, -2, 1); /* the view outlives its roots */
    return 1;
}

/* view:mounts(): { { path, ro }, ... } in mount order. */
static int view_mounts(lua_State *L)
{
    view_box *b = check_view(L, 1);
    lua_createtable(L, (int)b->view.n, 0);
    for (size_t i = 0; i < b->view.n; i++) {
        lua_createtable(L, 0, 2);
        lua_pushstring(L, b->view.mounts[i].path);
        lua_setfield(L, -2, "path");
        lua_pushboolean(L, b->view.mounts[i].ro);
        lua_setfield(L, -2, "ro");
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    return 1;
}

static int view_workdir(lua_State *L)
{
    view_box *b = check_view(L, 1);
    lua_pushstring(L, b->workdir ? b->workdir : "/");
    return 1;
}

void skl_open_fs(lua_State *L)
{
    static const luaL_Reg root_methods[] = {
        { "open", root_open },   { "stat", root_stat },       { "mkdir", root_mkdir },
        { "unlink", root_unlink }, { "rmdir", root_rmdir },   { "rename", root_rename },
        { "copy", root_copy },   { "readlink", root_readlink }, { "readdir", root_readdir },
        { "shares", root_shares }, { "close", root_close }, { NULL, NULL },
    };
    static const luaL_Reg file_methods[] = {
        { "read", file_read }, { "read_all", file_read_all }, { "write", file_write },
        { "close", file_close }, { NULL, NULL },
    };
    struct {
        const char *name;
        const luaL_Reg *methods;
    } classes[] = { { ROOT_NAME, root_methods }, { FILE_NAME, file_methods } };
    for (int i = 0; i < 2; i++) {
        luaL_newmetatable(L, classes[i].name);
        lua_pushcfunction(L, handle_gc);
        lua_setfield(L, -2, "__gc");
        lua_pushcfunction(L, handle_gc);
        lua_setfield(L, -2, "__close");
        lua_newtable(L);
        luaL_setfuncs(L, classes[i].methods, 0);
        lua_setfield(L, -2, "__index");
        lua_pop(L, 1);
    }
    luaL_newmetatable(L, DIR_NAME);
    lua_pushcfunction(L, dir_gc);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
    static const luaL_Reg view_methods[] = {
        { "root", view_root }, { "mounts", view_mounts }, { "working_directory", view_workdir }, { NULL, NULL },
    };
    luaL_newmetatable(L, VIEW_NAME);
    lua_pushcfunction(L, view_gc);
    lua_setfield(L, -2, "__gc");
    lua_newtable(L);
    luaL_setfuncs(L, view_methods, 0);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    lua_pushcfunction(L, fs_local_view);
    lua_setfield(L, -2, "local_fs_view");
    lua_pushcfunction(L, fs_root);
    lua_setfield(L, -2, "fs_root");
    lua_pushcfunction(L, fs_getcwd);
    lua_setfield(L, -2, "fs_getcwd");
    lua_pushcfunction(L, fs_force_fallback);
    lua_setfield(L, -2, "fs_force_fallback");
}
