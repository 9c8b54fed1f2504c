/* Confined file access beneath a root directory descriptor (fs_local.h). */
#include "fs_local.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h> /* renameat */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"

static atomic_bool force_fallback;
static atomic_bool no_openat2; /* the kernel (or valgrind) said ENOSYS once */

void sk_fs_force_fallback(bool on) { atomic_store(&force_fallback, on); }

static int neg_errno(void) { return errno ? -errno : -EIO; }

static bool is_symlink_at(int dirfd, const char *name)
{
    struct stat st;
    return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
}

/* The walk used without openat2: no component may be "..", and no
 * component (the last one included) may be a symlink. Directories on the
 * way are opened with SK_O_DIR_REF (O_PATH where there is one). */
static int open_fallback(int rootfd, const char *rel, int flags, mode_t mode)
{
    size_t n = strlen(rel);
    char *copy = malloc(n + 1);
    if (!copy)
        return -ENOMEM;
    memcpy(copy, rel, n + 1);
    int cur = rootfd;
    int rc;
    char *save = NULL;
    char *comp = strtok_r(copy, "/", &save);
    while (comp && strcmp(comp, ".") == 0)
        comp = strtok_r(NULL, "/", &save);
    if (!comp) { /* the root itself */
        rc = openat(rootfd, ".", (flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW)) | O_CLOEXEC);
        rc = rc < 0 ? neg_errno() : rc;
        goto out;
    }
    for (;;) {
        char *next = strtok_r(NULL, "/", &save);
        while (next && strcmp(next, ".") == 0)
            next = strtok_r(NULL, "/", &save);
        if (strcmp(comp, "..") == 0) {
            rc = -EXDEV;
            goto out;
        }
        if (!next) { /* last component */
            rc = openat(cur, comp, flags | O_NOFOLLOW | O_CLOEXEC, mode);
            if (rc < 0) {
                rc = neg_errno();
                if ((rc == -ELOOP || rc == -ENOTDIR) && is_symlink_at(cur, comp))
                    rc = -EXDEV;
            } else {
                /* O_PATH | O_NOFOLLOW opens a symlink itself */
                struct stat st;
                if (fstat(rc, &st) == 0 && S_ISLNK(st.st_mode)) {
                    close(rc);
                    rc = -EXDEV;
                }
            }
            goto out;
        }
        int fd = openat(cur, comp, SK_O_DIR_REF | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            rc = neg_errno();
            if ((rc == -ELOOP || rc == -ENOTDIR) && is_symlink_at(cur, comp))
                rc = -EXDEV;
            goto out;
        }
        if (cur != rootfd)
            close(cur);
        cur = fd;
        comp = next;
    }
out:
    if (cur != rootfd)
        close(cur);
    free(copy);
    return rc;
}

int sk_fs_open(int rootfd, const char *rel, int flags, mode_t mode)
{
    if (!rel[0])
        rel = ".";
    if (!atomic_load(&force_fallback) && !atomic_load(&no_openat2)) {
        int fd = sk_openat_beneath(rootfd, rel, flags, mode);
        if (fd >= 0)
            return fd;
        /* The walk answers instead when openat2 is missing (ENOSYS: an old
         * kernel, the portable build, valgrind), after renames kept it
         * from finishing (EAGAIN), and for EPERM, which old container
         * seccomp profiles give for every system call they do not know
         * (a real EPERM comes back from the walk too). */
        if (errno == ENOSYS)
            atomic_store(&no_openat2, true);
        else if (errno != EAGAIN && errno != EPERM)
            return neg_errno();
    }
    return open_fallback(rootfd, rel, flags, mode);
}

int sk_fs_mkdir_p(const char *path, mode_t mode)
{
    size_t n = strlen(path);
    char *p = malloc(n + 1);
    if (!p)
        return -ENOMEM;
    memcpy(p, path, n + 1);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, mode) != 0 && errno != EEXIST) {
            int rc = neg_errno();
            free(p);
            return rc;
        }
        *s = '/';
    }
    int rc = mkdir(p, mode) != 0 && errno != EEXIST ? neg_errno() : 0;
    free(p);
    return rc;
}

int sk_fs_root_open(const char *path, bool create)
{
    /* the root is the caller's own choice, so plain paths */
    int rc = create ? sk_fs_mkdir_p(path, 0777) : 0;
    if (rc)
        return rc;
    int fd = open(path, SK_O_DIR_REF | O_CLOEXEC);
    return fd < 0 ? neg_errno() : fd;
}

int sk_fs_open_parent(int rootfd, const char *rel, const char **leaf)
{
    const char *slash = strrchr(rel, '/');
    const char *name = slash ? slash + 1 : rel;
    if (!name[0] || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return -EINVAL;
    *leaf = name;
    if (!slash)
        return sk_fs_open(rootfd, ".", SK_O_DIR_REF, 0);
    size_t n = (size_t)(slash - rel);
    char *dir = malloc(n + 1);
    if (!dir)
        return -ENOMEM;
    memcpy(dir, rel, n);
    dir[n] = '\0';
    int fd = sk_fs_open(rootfd, dir, SK_O_DIR_REF, 0);
    free(dir);
    return fd;
}

static bool is_root(const char *rel)
{
    return !rel[0] || strcmp(rel, ".") == 0;
}

int sk_fs_stat(int rootfd, const char *rel, bool nofollow, struct stat *st)
{
    if (is_root(rel))
        return fstat(rootfd, st) == 0 ? 0 : neg_errno();
#if SK_HAVE_O_PATH
    if (!nofollow) {
        int fd = sk_fs_open(rootfd, rel, SK_O_REF, 0);
        if (fd < 0)
            return fd;
        int rc = fstat(fd, st) == 0 ? 0 : neg_errno();
        close(fd);
        return rc;
    }
#endif
    /* Without O_PATH, opening the file itself could block or act (a FIFO,
     * a device): its parent is opened and a final symlink is refused, as
     * the fallback walk refuses every symlink. */
    const char *leaf;
    int dfd = sk_fs_open_parent(rootfd, rel, &leaf);
    if (dfd < 0)
        return dfd;
    int rc = fstatat(dfd, leaf, st, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : neg_errno();
    close(dfd);
    if (rc == 0 && !nofollow && S_ISLNK(st->st_mode))
        rc = -EXDEV;
    return rc;
}

int sk_fs_mkdir(int rootfd, const char *rel, mode_t mode)
{
    if (is_root(rel))
        return -EEXIST;
    const char *leaf;
    int dfd = sk_fs_open_parent(rootfd, rel, &leaf);
    if (dfd < 0)
        return dfd;
    int rc = mkdirat(dfd, leaf, mode) == 0 ? 0 : neg_errno();
    close(dfd);
    return rc;
}

static int unlink_common(int rootfd, const char *rel, int flag)
{
    if (is_root(rel))
        return -EBUSY;
    const char *leaf;
    int dfd = sk_fs_open_parent(rootfd, rel, &leaf);
    if (dfd < 0)
        return dfd;
    int rc = unlinkat(dfd, leaf, flag) == 0 ? 0 : neg_errno();
    close(dfd);
    return rc;
}

int sk_fs_unlink(int rootfd, const char *rel) { return unlink_common(rootfd, rel, 0); }
int sk_fs_rmdir(int rootfd, const char *rel) { return unlink_common(rootfd, rel, AT_REMOVEDIR); }

int sk_fs_rename(int rootfd, const char *from, const char *to, bool noreplace)
{
    if (is_root(from) || is_root(to))
        return -EBUSY;
    const char *lf, *lt;
    int df = sk_fs_open_parent(rootfd, from, &lf);
    if (df < 0)
        return df;
    int dt = sk_fs_open_parent(rootfd, to, &lt);
    if (dt < 0) {
        close(df);
        return dt;
    }
    int rc = (noreplace ? sk_renameat_noreplace(df, lf, dt, lt) : renameat(df, lf, dt, lt)) == 0 ? 0 : neg_errno();
    if (rc == -EXDEV) /* keep -EXDEV for "outside the root" */
        rc = -ENOTSUP;
    close(df);
    close(dt);
    return rc;
}

ssize_t sk_fs_readlink(int rootfd, const char *rel, char *buf, size_t size)
{
    if (size == 0)
        return -EINVAL;
    const char *leaf;
    int dfd = sk_fs_open_parent(rootfd, rel, &leaf);
    if (dfd < 0)
        return dfd;
    ssize_t n = readlinkat(dfd, leaf, buf, size - 1);
    ssize_t rc = n < 0 ? neg_errno() : n;
    if (n >= 0)
        buf[n] = '\0';
    close(dfd);
    return rc;
}

int sk_fs_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return neg_errno();
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int copy_fds(int in, int out)
{
    for (;;) {
        ssize_t n = sk_copy_range(in, out, 1 << 30);
        if (n == 0)
            return 0;
        if (n > 0)
            continue;
        if (errno == EINTR)
            continue;
        if (errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP)
            return neg_errno();
        break; /* not supported here: copy through a buffer */
    }
    enum { BUF = 1 << 20 };
    char *buf = malloc(BUF);
    if (!buf)
        return -ENOMEM;
    int rc = 0;
    for (;;) {
        ssize_t n = read(in, buf, BUF);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = n < 0 ? neg_errno() : 0;
            break;
        }
        if ((rc = sk_fs_write_all(out, buf, (size_t)n)) != 0)
            break;
    }
    free(buf);
    return rc;
}

/* How a copy opens its two ends: beneath a root, or in a view. */
typedef int (*fs_opener)(const void *where, const char *path, int flags, mode_t mode);

static int fs_copy_with(fs_opener open_at, const void *where, const char *from, const char *to, bool excl)
{
    /* O_NONBLOCK: a FIFO planted by sandboxed code must not hang the caller */
    int in = open_at(where, from, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
    if (in < 0)
        return in;
    struct stat sst, dst;
    int rc = 0, out = -1;
    if (fstat(in, &sst) != 0) {
        rc = neg_errno();
        goto done;
    }
    if (!S_ISREG(sst.st_mode)) {
        rc = S_ISDIR(sst.st_mode) ? -EISDIR : -EINVAL;
        goto done;
    }
    if (fcntl(in, F_SETFL, 0) != 0) {
        rc = neg_errno();
        goto done;
    }
    /* no O_TRUNC yet: copying a file onto itself must not empty it */
    out = open_at(where, to, O_WRONLY | O_CREAT | O_NONBLOCK | O_NOCTTY | (excl ? O_EXCL : 0), 0666);
    if (out < 0) {
        rc = out;
        out = -1;
        goto done;
    }
    if (fstat(out, &dst) != 0) {
        rc = neg_errno();
        goto done;
    }
    if (!S_ISREG(dst.st_mode)) {
        rc = S_ISDIR(dst.st_mode) ? -EISDIR : -EINVAL;
        goto done;
    }
    if (dst.st_dev == sst.st_dev && dst.st_ino == sst.st_ino)
        goto done;
    if (fcntl(out, F_SETFL, 0) != 0 || ftruncate(out, 0) != 0) {
        rc = neg_errno();
        goto done;
    }
    rc = copy_fds(in, out);
done:
    close(in);
    if (out >= 0 && close(out) != 0 && rc == 0)
        rc = neg_errno();
    return rc;
}

static int root_opener(const void *where, const char *path, int flags, mode_t mode)
{
    return sk_fs_open(*(const int *)where, path, flags, mode);
}

int sk_fs_copy(int rootfd, const char *from, const char *to, bool excl)
{
    return fs_copy_with(root_opener, &rootfd, from, to, excl);
}

/* ---- views ------------------------------------------------------------------ */

enum { VIEW_MAX_LINKS = 40 };

static void view_unmount(sk_fs_mount *m)
{
    if (m->fd >= 0)
        close(m->fd);
    free(m->path);
    free(m->host);
}

/* Adds a mount (fd, or host when fd is -1; both taken, released on
 * failure too). */
static int view_add(sk_fs_view *v, const char *path, int fd, char *host, bool ro)
{
    size_t len = strlen(path);
    char *copy = path[0] == '/' && (fd >= 0 || host) ? malloc(len + 1) : NULL;
    sk_fs_mount *m = copy ? realloc(v->mounts, (v->n + 1) * sizeof *m) : NULL;
    if (!m) {
        int rc = path[0] != '/' ? -EINVAL : -ENOMEM;
        free(copy);
        view_unmount(&(sk_fs_mount){ NULL, fd, host, ro });
        return rc;
    }
    v->mounts = m;
    memcpy(copy, path, len + 1);
    /* a later mount hides what was mounted at or under its path */
    size_t kept = 0;
    for (size_t i = 0; i < v->n; i++) {
        const char *p = m[i].path;
        if (len == 1 || (strncmp(p, path, len) == 0 && (p[len] == '\0' || p[len] == '/')))
            view_unmount(&m[i]);
        else
            m[kept++] = m[i];
    }
    m[kept] = (sk_fs_mount){ copy, fd, host, ro };
    v->n = kept + 1;
    return 0;
}

int sk_fs_view_mount(sk_fs_view *v, const char *path, int fd, bool ro)
{
    return fd < 0 ? -EBADF : view_add(v, path, fd, NULL, ro);
}

int sk_fs_view_mount_path(sk_fs_view *v, const char *path, const char *host, bool ro)
{
    return view_add(v, path, -1, strdup(host), ro);
}

void sk_fs_view_clear(sk_fs_view *v)
{
    for (size_t i = 0; i < v->n; i++)
        view_unmount(&v->mounts[i]);
    free(v->mounts);
    v->mounts = NULL;
    v->n = 0;
}

static const sk_fs_mount *view_mount_at(const sk_fs_view *v, const char *path, size_t len)
{
    for (size_t i = 0; i < v->n; i++)
        if (strlen(v->mounts[i].path) == len && memcmp(v->mounts[i].path, path, len) == 0)
            return &v->mounts[i];
    return NULL;
}

/* Some mount lies below path (the first len bytes of it). */
static bool view_above_mount(const sk_fs_view *v, const char *path, size_t len)
{
    for (size_t i = 0; i < v->n; i++) {
        const char *p = v->mounts[i].path;
        if (strlen(p) <= len)
            continue;
        if (len == 1 || (memcmp(p, path, len) == 0 && p[len] == '/'))
            return true;
    }
    return false;
}

/* A directory the walk stands in: a descriptor (owned or a mount's), or
 * -1 for one that exists only on the way to a mount. */
typedef struct {
    int fd;
    bool own;
    const sk_fs_mount *mount; /* the mount fd lies in; NULL: none (read-only) */
} view_dir;

/* Where a path resolved: the directory holding leaf, or ("") dir itself. */
typedef struct {
    view_dir dir;
    char leaf[NAME_MAX + 1];
} view_at;

static void view_dir_set(view_dir *d, int fd, bool own, const sk_fs_mount *m)
{
    if (d->own && d->fd >= 0)
        close(d->fd);
    *d = (view_dir){ fd, own, m };
}

static void view_at_release(view_at *at) { view_dir_set(&at->dir, -1, false, NULL); }

/* The walk enters mount m: its descriptor, or its host directory opened
 * now. 0 or -errno. */
static int view_enter(view_dir *d, const sk_fs_mount *m)
{
    if (m->fd >= 0) {
        view_dir_set(d, m->fd, false, m);
        return 0;
    }
    int fd = open(m->host, SK_O_DIR_REF | O_CLOEXEC);
    view_dir_set(d, fd, true, fd < 0 ? NULL : m);
    return fd < 0 ? neg_errno() : 0;
}

static bool view_at_ro(const view_at *at) { return !at->dir.mount || at->dir.mount->ro; }

/* The walk restarts at the view's root: vp = "/". 0 or -errno. */
static int view_root(const sk_fs_view *v, view_dir *d, char *vp, size_t *vlen)
{
    const sk_fs_mount *m = view_mount_at(v, "/", 1);
    vp[0] = '/';
    vp[1] = '\0';
    *vlen = 1;
    if (m)
        return view_enter(d, m);
    view_dir_set(d, -1, false, NULL);
    return 0;
}

/* *rest (from *off on) becomes prefix + "/" + what was left of it. */
static int view_splice(char **rest, size_t *off, const char *prefix, size_t plen)
{
    size_t left = strlen(*rest + *off);
    char *joined = malloc(plen + 1 + left + 1);
    if (!joined)
        return -ENOMEM;
    memcpy(joined, prefix, plen);
    joined[plen] = '/';
    memcpy(joined + plen + 1, *rest + *off, left + 1);
    free(*rest);
    *rest = joined;
    *off = 0;
    return 0;
}

/* The walk may start at the deepest mount whose path begins `path`: every
 * directory above a mount passes through to it, so walking there from the
 * root ends in the same place, unless a ".." comes first. */
static const sk_fs_mount *view_shortcut(const sk_fs_view *v, const char *path)
{
    for (const char *p = path; (p = strstr(p, "..")); p += 2)
        if (p > path && p[-1] == '/' && (p[2] == '/' || p[2] == '\0'))
            return NULL;
    const sk_fs_mount *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < v->n; i++) {
        const char *mp = v->mounts[i].path;
        size_t len = strlen(mp);
        bool prefix = len == 1 || (strncmp(path, mp, len) == 0 && (path[len] == '\0' || path[len] == '/'));
        if (prefix && len >= best_len) {
            best = &v->mounts[i];
            best_len = len;
        }
    }
    return best;
}

/* Resolves path (absolute) in v: *at holds the directory the last
 * component lies in (a descriptor the caller releases) and that component,
 * which is not a symlink when it exists and `follow` is set. 0 or -errno. */
static int view_resolve(const sk_fs_view *v, const char *path, bool follow, view_at *at)
{
    *at = (view_at){ .dir = { -1, false, NULL } };
    if (path[0] != '/')
        return -EINVAL;
    char *rest = strdup(path);
    if (!rest)
        return -ENOMEM;
    char vp[PATH_MAX];
    size_t vlen, off = 0;
    view_dir d = { -1, false, NULL };
    int links = 0, rc;
    const sk_fs_mount *start = view_shortcut(v, path);
    if (start) {
        vlen = strlen(start->path);
        memcpy(vp, start->path, vlen + 1);
        rc = view_enter(&d, start);
        off = vlen == 1 ? 0 : vlen;
    } else {
        rc = view_root(v, &d, vp, &vlen);
    }
    while (rc == 0) {
        while (rest[off] == '/')
            off++;
        if (!rest[off]) { /* the directory the walk stands in */
            at->dir = d;
            d.own = false;
            break;
        }
        size_t len = strcspn(rest + off, "/");
        if (len > NAME_MAX) {
            rc = -ENAMETOOLONG;
            break;
        }
        char comp[NAME_MAX + 1];
        memcpy(comp, rest + off, len);
        comp[len] = '\0';
        off += len;
        size_t q = off;
        while (rest[q] == '/')
            q++;
        bool last = !rest[q];
        if (strcmp(comp, ".") == 0)
            continue;
        if (strcmp(comp, "..") == 0) {
            /* the parent of what was resolved so far, walked again */
            size_t plen = vlen;
            while (plen > 1 && vp[plen - 1] != '/')
                plen--;
            if (plen > 1)
                plen--;
            if ((rc = view_splice(&rest, &off, vp, plen)) == 0)
                rc = view_root(v, &d, vp, &vlen);
            continue;
        }
        size_t old = vlen;
        if (vlen + 1 + len >= sizeof vp) {
            rc = -ENAMETOOLONG;
            break;
        }
        if (vlen > 1)
            vp[vlen++] = '/';
        memcpy(vp + vlen, comp, len + 1);
        vlen += len;
        const sk_fs_mount *m = view_mount_at(v, vp, vlen);
        if (m) {
            rc = view_enter(&d, m);
            continue;
        }
        bool above = view_above_mount(v, vp, vlen);
        if (d.fd < 0) {
            if (above)
                continue;
            rc = -EXDEV;
            break;
        }
        struct stat st;
        if (fstatat(d.fd, comp, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            rc = neg_errno();
            if (rc == -ENOENT && above) {
                rc = 0;
                view_dir_set(&d, -1, false, NULL);
                continue;
            }
            if (rc == -ENOENT && last) { /* to be created */
                rc = 0;
                at->dir = d;
                d.own = false;
                memcpy(at->leaf, comp, len + 1);
            }
            break;
        }
        if (above && !S_ISDIR(st.st_mode)) { /* bwrap makes a directory there */
            view_dir_set(&d, -1, false, NULL);
            continue;
        }
        if (last && (!follow || !S_ISLNK(st.st_mode))) {
            at->dir = d;
            d.own = false;
            memcpy(at->leaf, comp, len + 1);
            break;
        }
        if (S_ISLNK(st.st_mode)) {
            if (++links > VIEW_MAX_LINKS) {
                rc = -ELOOP;
                break;
            }
            char target[PATH_MAX];
            ssize_t n = readlinkat(d.fd, comp, target, sizeof target - 1);
            if (n <= 0) {
                rc = n == 0 ? -ENOENT : neg_errno();
                break;
            }
            target[n] = '\0';
            vlen = old;
            vp[vlen] = '\0';
            if ((rc = view_splice(&rest, &off, target, (size_t)n)) == 0 && target[0] == '/')
                rc = view_root(v, &d, vp, &vlen);
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            rc = -ENOTDIR;
            break;
        }
        /* swapped for a symlink since the fstatat: an error, not followed */
        int fd = openat(d.fd, comp, SK_O_DIR_REF | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            rc = neg_errno();
            break;
        }
        view_dir_set(&d, fd, true, d.mount);
    }
    view_dir_set(&d, -1, false, NULL);
    free(rest);
    if (rc != 0)
        view_at_release(at);
    return rc;
}

/* Opens the resolved directory itself (a mount's root). A bound file
 * (a read_only_paths entry that is a file) is not opened: its descriptor
 * only names it, and reopening one needs /proc. */
static int view_open_self(const view_at *at, int flags)
{
    struct stat st;
    if (fstat(at->dir.fd, &st) != 0)
        return neg_errno();
    if (!S_ISDIR(st.st_mode))
        return -ENOTSUP;
    int fd = openat(at->dir.fd, ".", (flags & ~(O_CREAT | O_EXCL | O_TRUNC | O_NOFOLLOW)) | O_CLOEXEC);
    return fd < 0 ? neg_errno() : fd;
}

int sk_fs_view_open(const sk_fs_view *v, const char *path, int flags, mode_t mode)
{
    view_at at;
    int rc = view_resolve(v, path, true, &at);
    if (rc < 0)
        return rc;
    bool writes = (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC | O_APPEND));
    if (at.dir.fd < 0)
        rc = -EXDEV;
    else if (!at.leaf[0])
        rc = view_open_self(&at, flags);
    else if (writes && view_at_ro(&at))
        rc = -EROFS;
    else if ((rc = openat(at.dir.fd, at.leaf, flags | O_NOFOLLOW | O_CLOEXEC, mode)) < 0)
        rc = neg_errno();
    view_at_release(&at);
    return rc;
}

int sk_fs_view_stat(const sk_fs_view *v, const char *path, bool nofollow, struct stat *st)
{
    view_at at;
    int rc = view_resolve(v, path, !nofollow, &at);
    if (rc < 0)
        return rc;
    if (at.dir.fd < 0)
        rc = -EXDEV;
    else if (!at.leaf[0])
        rc = fstat(at.dir.fd, st) == 0 ? 0 : neg_errno();
    else
        rc = fstatat(at.dir.fd, at.leaf, st, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : neg_errno();
    view_at_release(&at);
    return rc;
}

/* Resolves path for a change to its last component (never followed):
 * -EBUSY for a mount's root, -EROFS inside a read-only mount. */
static int view_resolve_change(const sk_fs_view *v, const char *path, view_at *at)
{
    int rc = view_resolve(v, path, false, at);
    if (rc < 0)
        return rc;
    if (at->dir.fd < 0)
        rc = -EXDEV;
    else if (!at->leaf[0])
        rc = -EBUSY;
    else if (view_at_ro(at))
        rc = -EROFS;
    if (rc < 0)
        view_at_release(at);
    return rc;
}

int sk_fs_view_mkdir(const sk_fs_view *v, const char *path, mode_t mode)
{
    view_at at;
    int rc = view_resolve_change(v, path, &at);
    if (rc == -EBUSY)
        return -EEXIST;
    if (rc == -EROFS) { /* as the kernel: an existing name is EEXIST first */
        struct stat st;
        return sk_fs_view_stat(v, path, true, &st) == 0 ? -EEXIST : -EROFS;
    }
    if (rc < 0)
        return rc;
    rc = mkdirat(at.dir.fd, at.leaf, mode) == 0 ? 0 : neg_errno();
    view_at_release(&at);
    return rc;
}

static int view_unlink_common(const sk_fs_view *v, const char *path, int flag)
{
    view_at at;
    int rc = view_resolve_change(v, path, &at);
    if (rc < 0)
        return rc;
    rc = unlinkat(at.dir.fd, at.leaf, flag) == 0 ? 0 : neg_errno();
    view_at_release(&at);
    return rc;
}

int sk_fs_view_unlink(const sk_fs_view *v, const char *path) { return view_unlink_common(v, path, 0); }
int sk_fs_view_rmdir(const sk_fs_view *v, const char *path) { return view_unlink_common(v, path, AT_REMOVEDIR); }

int sk_fs_view_rename(const sk_fs_view *v, const char *from, const char *to, bool noreplace)
{
    view_at a, b;
    int rc = view_resolve_change(v, from, &a);
    if (rc < 0)
        return rc;
    if ((rc = view_resolve_change(v, to, &b)) < 0) {
        view_at_release(&a);
        return rc;
    }
    rc = (noreplace ? sk_renameat_noreplace(a.dir.fd, a.leaf, b.dir.fd, b.leaf)
                    : renameat(a.dir.fd, a.leaf, b.dir.fd, b.leaf)) == 0
             ? 0
             : neg_errno();
    if (rc == -EXDEV) /* keep -EXDEV for "outside the view" */
        rc = -ENOTSUP;
    view_at_release(&a);
    view_at_release(&b);
    return rc;
}

ssize_t sk_fs_view_readlink(const sk_fs_view *v, const char *path, char *buf, size_t size)
{
    if (size == 0)
        return -EINVAL;
    view_at at;
    int rc = view_resolve(v, path, false, &at);
    if (rc < 0)
        return rc;
    ssize_t n;
    if (at.dir.fd < 0)
        n = -EXDEV;
    else if (!at.leaf[0])
        n = -EINVAL;
    else if ((n = readlinkat(at.dir.fd, at.leaf, buf, size - 1)) < 0)
        n = neg_errno();
    else
        buf[n] = '\0';
    view_at_release(&at);
    return n;
}

static int view_opener(const void *where, const char *path, int flags, mode_t mode)
{
    return sk_fs_view_open(where, path, flags, mode);
}

int sk_fs_view_copy(const sk_fs_view *v, const char *from, const char *to, bool excl)
{
    return fs_copy_with(view_opener, v, from, to, excl);
}
