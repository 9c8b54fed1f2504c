/* See local_host.h. */
#include "local_host.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../loop.h"

/* ---- removal ---------------------------------------------------------------
 * Iterative, holding one directory descriptor at a time: the sandbox decides
 * the tree's depth, so neither the stack nor the descriptor table may grow
 * with it. A directory is descended into, emptied, left through "..", and
 * then removed when its parent is listed again. A directory that could not
 * be emptied is remembered (device, inode) so it is not entered again. */

typedef struct rm_failed {
    dev_t *dev;
    ino_t *ino;
    size_t n, cap;
} rm_failed;

static bool rm_failed_has(const rm_failed *f, const struct stat *st)
{
    for (size_t i = 0; i < f->n; i++)
        if (f->dev[i] == st->st_dev && f->ino[i] == st->st_ino)
            return true;
    return false;
}

static int rm_failed_add(rm_failed *f, const struct stat *st)
{
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 16;
        dev_t *dev = realloc(f->dev, cap * sizeof *dev);
        if (dev)
            f->dev = dev;
        ino_t *ino = realloc(f->ino, cap * sizeof *ino);
        if (ino)
            f->ino = ino;
        if (!dev || !ino)
            return -1;
        f->cap = cap;
    }
    f->dev[f->n] = st->st_dev;
    f->ino[f->n++] = st->st_ino;
    return 0;
}

/* Opens name beneath dfd as a directory, never through a symlink; a
 * directory we own but may not read (mode 000) is opened up first. */
static int rm_open_dir(int dfd, const char *name)
{
    int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    int fd = openat(dfd, name, flags);
    if (fd < 0 && errno == EACCES && fchmodat(dfd, name, 0700, AT_SYMLINK_NOFOLLOW) == 0)
        fd = openat(dfd, name, flags);
    return fd;
}

/* One entry of a directory being emptied: 0 removed, RM_DESCEND a
 * non-empty directory to descend into, or an errno. */
enum { RM_DESCEND = -1 };
static int rm_entry(int dfd, const char *name)
{
    if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
        return 0;
    int unlink_err = errno;
    if (unlink_err != EISDIR && unlink_err != EPERM)
        return unlink_err;
    if (unlinkat(dfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
        return 0;
    if (errno == ENOTDIR) /* a file that may not be removed (EPERM) */
        return unlink_err;
    if (errno == ENOTEMPTY || errno == EEXIST)
        return RM_DESCEND;
    if (errno == EACCES && fchmodat(dfd, name, 0700, AT_SYMLINK_NOFOLLOW) == 0)
        return RM_DESCEND;
    return errno;
}

static int rm_tree_once(int parent, const char *name)
{
    int first_err = 0;
    rm_failed failed = { 0 };
    int fd = rm_open_dir(parent, name);
    if (fd < 0) {
        if (errno == ENOENT)
            return 0;
        if (errno == ENOTDIR || errno == ELOOP) /* not (or no longer) a directory */
            return unlinkat(parent, name, 0) == 0 || errno == ENOENT ? 0 : errno;
        return errno;
    }
    size_t depth = 0;
    bool dir_failed = false; /* an entry of the current directory stayed */
    DIR *d = fdopendir(fd);
    if (!d) {
        first_err = errno;
        close(fd);
        goto done;
    }
    for (;;) {
        int child = -1;
        struct dirent *e;
        errno = 0;
        while ((e = readdir(d))) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            int rc = rm_entry(dirfd(d), e->d_name);
            if (rc == RM_DESCEND) {
                struct stat st;
                if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && rm_failed_has(&failed, &st)) {
                    dir_failed = true;
                    continue;
                }
                if ((child = rm_open_dir(dirfd(d), e->d_name)) >= 0)
                    break;
                rc = errno ? errno : EIO;
            }
            if (rc != 0) {
                if (!first_err)
                    first_err = rc;
                dir_failed = true;
            }
        }
        if (child >= 0) {
            DIR *cd = fdopendir(child);
            if (!cd) { /* out of memory: give up rather than loop */
                close(child);
                if (!first_err)
                    first_err = errno ? errno : ENOMEM;
                break;
            }
            closedir(d);
            d = cd;
            depth++;
            dir_failed = false;
            continue;
        }
        /* this directory is as empty as it gets */
        if (depth == 0)
            break;
        if (dir_failed) {
            struct stat st;
            if (fstat(dirfd(d), &st) != 0 || rm_failed_add(&failed, &st) != 0) {
                if (!first_err)
                    first_err = ENOMEM;
                break; /* cannot remember it: stop rather than loop */
            }
        }
        int up = openat(dirfd(d), "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *ud = up >= 0 ? fdopendir(up) : NULL;
        if (!ud) {
            if (up >= 0)
                close(up);
            if (!first_err)
                first_err = errno ? errno : EIO;
            break;
        }
        closedir(d);
        d = ud;
        depth--;
        dir_failed = false; /* relisting tells */
    }
    closedir(d);
    if (depth == 0 && unlinkat(parent, name, AT_REMOVEDIR) != 0 && errno != ENOENT && !first_err)
        first_err = errno;
done:
    free(failed.dev);
    free(failed.ino);
    return first_err;
}

int local_rm_tree(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash || !slash[1])
        return EINVAL;
    char *parent_path = slash == path ? strdup("/") : strndup(path, (size_t)(slash - path));
    if (!parent_path)
        return ENOMEM;
    int parent = open(parent_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(parent_path);
    if (parent < 0)
        return errno == ENOENT ? 0 : errno;
    int rc = 0;
    /* Entries that appear meanwhile (a dying process finishing a write)
     * make the last rmdir fail with ENOTEMPTY: another pass takes them. */
    for (int pass = 0; pass < 20; pass++) {
        rc = rm_tree_once(parent, slash + 1);
        if (rc != ENOTEMPTY)
            break;
        struct timespec ts = { 0, 10 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    close(parent);
    return rc;
}

/* ---- processes of a group ------------------------------------------------ */

/* The process group of pid, from /proc/<pid>/stat; -1 if gone. */
static long local_pgrp_of(const char *pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%s/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    /* "pid (comm) state ppid pgrp ...": comm may hold anything, even ")" */
    char *p = strrchr(buf, ')');
    char state;
    long ppid, pgrp;
    if (!p || sscanf(p + 1, " %c %ld %ld", &state, &ppid, &pgrp) != 3)
        return -1;
    return pgrp;
}

static void local_pidfds_push(local_pidfds *s, int fd, int pid)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        int *v = realloc(s->v, cap * sizeof *v);
        if (v)
            s->v = v;
        int *p = v ? realloc(s->pid, cap * sizeof *p) : NULL;
        if (p)
            s->pid = p;
        if (!v || !p) {
            close(fd);
            return;
        }
        s->cap = cap;
    }
    s->pid[s->n] = pid;
    s->v[s->n++] = fd;
}

static bool local_pidfds_has(const local_pidfds *s, int pid)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->pid[i] == pid)
            return true;
    return false;
}

void local_pidfds_add_group(local_pidfds *s, int pgid)
{
    DIR *d = opendir("/proc");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9' || local_pidfds_has(s, atoi(e->d_name)) ||
            local_pgrp_of(e->d_name) != pgid)
            continue;
#ifdef SYS_pidfd_open
        int fd = (int)syscall(SYS_pidfd_open, atoi(e->d_name), 0);
#else
        int fd = -1; /* no pidfds: nothing to wait on (no bwrap either) */
#endif
        if (fd < 0)
            continue;
        /* the pidfd pins the process: is it (still) the one we listed? */
        if (local_pgrp_of(e->d_name) != pgid) {
            close(fd);
            continue;
        }
        (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
        local_pidfds_push(s, fd, atoi(e->d_name));
    }
    closedir(d);
}

bool local_pidfds_prune(local_pidfds *s)
{
    size_t kept = 0;
    for (size_t i = 0; i < s->n; i++) {
        struct pollfd pfd = { s->v[i], POLLIN, 0 };
        if (poll(&pfd, 1, 0) == 1) {
            close(s->v[i]); /* readable: the process has exited */
        } else {
            s->pid[kept] = s->pid[i];
            s->v[kept++] = s->v[i];
        }
    }
    s->n = kept;
    return kept == 0;
}

bool local_pidfds_wait(local_pidfds *s, int timeout_ms)
{
    double deadline = sk_now_ms() + timeout_ms;
    while (!local_pidfds_prune(s)) {
        double left = deadline - sk_now_ms();
        if (left <= 0)
            return false;
        struct pollfd pfd = { s->v[0], POLLIN, 0 };
        (void)poll(&pfd, 1, (int)left + 1);
    }
    return true;
}

void local_pidfds_free(local_pidfds *s)
{
    for (size_t i = 0; i < s->n; i++)
        close(s->v[i]);
    free(s->v);
    free(s->pid);
    s->v = NULL;
    s->pid = NULL;
    s->n = s->cap = 0;
}
