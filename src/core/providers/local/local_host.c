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
#include <time.h>
#include <unistd.h>

#include "../../compat.h"
#include "../../loop.h"

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

int sk_local_rm_tree(const char *path)
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

/* ---- processes of a group ------------------------------------------------
 * Each process is held by a pidfd; where the kernel has none (before 5.3,
 * or under valgrind) by its pid and start time, read from /proc. */

typedef struct local_stat {
    char state;
    long pgrp;
    unsigned long long start; /* clock ticks after boot */
} local_stat;

/* /proc/<pid>/stat; false if the process is gone. */
static bool local_stat_of(int pid, local_stat *out)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    /* "pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
     * majflt cmajflt utime stime cutime cstime priority nice threads
     * itrealvalue starttime ...": comm may hold anything, even ")" */
    char *p = strrchr(buf, ')');
    long ppid;
    return p && sscanf(p + 1,
                       " %c %ld %ld %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
                       &out->state, &ppid, &out->pgrp, &out->start) == 4;
}

static void local_pidfds_push(local_pidfds *s, int fd, int pid, unsigned long long start)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        int *v = realloc(s->v, cap * sizeof *v);
        if (v)
            s->v = v;
        int *p = v ? realloc(s->pid, cap * sizeof *p) : NULL;
        if (p)
            s->pid = p;
        unsigned long long *st = p ? realloc(s->start, cap * sizeof *st) : NULL;
        if (st)
            s->start = st;
        if (!st) {
            if (fd >= 0)
                close(fd);
            return;
        }
        s->cap = cap;
    }
    s->pid[s->n] = pid;
    s->start[s->n] = start;
    s->v[s->n++] = fd;
}

static bool local_pidfds_has(const local_pidfds *s, int pid)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->pid[i] == pid)
            return true;
    return false;
}

void sk_local_pidfds_add_group(local_pidfds *s, int pgid)
{
    DIR *d = opendir("/proc");
    if (!d)
        return;
    struct dirent *e;
    local_stat st;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        int pid = atoi(e->d_name);
        if (local_pidfds_has(s, pid) || !local_stat_of(pid, &st) || st.pgrp != pgid || st.state == 'Z')
            continue;
        unsigned long long start = st.start;
        int fd = sk_pidfd_open(pid);
        if (fd < 0 && errno != ENOSYS)
            continue; /* gone meanwhile */
        /* the pidfd (or the start time) pins the process: is it (still)
         * the one we listed? */
        if (!local_stat_of(pid, &st) || st.pgrp != pgid || st.start != start) {
            if (fd >= 0)
                close(fd);
            continue;
        }
        local_pidfds_push(s, fd, pid, start);
    }
    closedir(d);
}

static bool local_pidfd_gone(const local_pidfds *s, size_t i)
{
    if (s->v[i] >= 0) {
        struct pollfd pfd = { s->v[i], POLLIN, 0 };
        return poll(&pfd, 1, 0) == 1; /* readable: the process has exited */
    }
    local_stat st;
    return !local_stat_of(s->pid[i], &st) || st.start != s->start[i] || st.state == 'Z' || st.state == 'X';
}

bool sk_local_pidfds_prune(local_pidfds *s)
{
    size_t kept = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (local_pidfd_gone(s, i)) {
            if (s->v[i] >= 0)
                close(s->v[i]);
        } else {
            s->pid[kept] = s->pid[i];
            s->start[kept] = s->start[i];
            s->v[kept++] = s->v[i];
        }
    }
    s->n = kept;
    return kept == 0;
}

bool sk_local_pidfds_wait(local_pidfds *s, int timeout_ms)
{
    double deadline = sk_now_ms() + timeout_ms;
    while (!sk_local_pidfds_prune(s)) {
        double left = deadline - sk_now_ms();
        if (left <= 0)
            return false;
        if (s->v[0] >= 0) {
            struct pollfd pfd = { s->v[0], POLLIN, 0 };
            (void)poll(&pfd, 1, (int)left + 1);
        } else { /* no pidfd to wait on: look again shortly */
            struct timespec ts = { 0, 5 * 1000 * 1000 };
            nanosleep(&ts, NULL);
        }
    }
    return true;
}

void sk_local_pidfds_free(local_pidfds *s)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i] >= 0)
            close(s->v[i]);
    free(s->v);
    free(s->pid);
    free(s->start);
    s->v = NULL;
    s->pid = NULL;
    s->start = NULL;
    s->n = s->cap = 0;
}
