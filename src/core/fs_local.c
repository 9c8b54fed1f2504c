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

int sk_fs_copy(int rootfd, const char *from, const char *to, bool excl)
{
    /* O_NONBLOCK: a FIFO planted by sandboxed code must not hang the caller */
    int in = sk_fs_open(rootfd, from, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
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
    out = sk_fs_open(rootfd, to, O_WRONLY | O_CREAT | O_NONBLOCK | O_NOCTTY | (excl ? O_EXCL : 0), 0666);
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
