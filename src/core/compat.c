/* Portability wrappers; see compat.h for what each SK_HAVE_* selects. */
#include "compat.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h> /* renameat, renameat2 */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if SK_HAVE_GETRANDOM
#include <sys/random.h>
#endif
#if SK_HAVE_PIDFD || SK_HAVE_KEYRINGS || SK_HAVE_OPENAT2 || SK_HAVE_FSUID || SK_HAVE_CLONE_SPAWN
#include <sys/syscall.h>
#endif
#if SK_HAVE_CLONE_SPAWN
#include <linux/close_range.h>
#include <sched.h>
#endif
#if SK_HAVE_KEYRINGS
#include <linux/keyctl.h>
#endif
#if defined(__linux__)
#include <sys/xattr.h>
#endif
#if SK_HAVE_OPENAT2
#include <linux/openat2.h>
#endif
#if defined(__APPLE__)
#include <crt_externs.h>
#endif

char **sk_environ(void)
{
#if defined(__APPLE__)
    return *_NSGetEnviron();
#else
    extern char **environ;
    return environ;
#endif
}

char *sk_find_executable(const char *name)
{
    if (strchr(name, '/'))
        return strdup(name);
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    char *copy = strdup(path), *save = NULL, *found = NULL;
    for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir && !found; dir = strtok_r(NULL, ":", &save)) {
        char *full = NULL;
        struct stat st;
        if (asprintf(&full, "%s/%s", dir, name) < 0)
            break;
        if (stat(full, &st) == 0 && S_ISREG(st.st_mode) && access(full, X_OK) == 0)
            found = full;
        else
            free(full);
    }
    free(copy);
    return found;
}

int sk_openat_ref_nofollow(int dirfd, const char *name, struct stat *st)
{
    memset(st, 0, sizeof *st);
    int fd = openat(dirfd, name, SK_O_REF | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        if (fstat(fd, st) == 0)
            return fd;
        int e = errno;
        close(fd);
        memset(st, 0, sizeof *st);
        errno = e;
        return -1;
    }
#if !SK_HAVE_O_PATH
    if (errno == ELOOP) {
        if (fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(st->st_mode))
            memset(st, 0, sizeof *st);
        errno = ELOOP;
    }
#endif
    return -1;
}

int sk_random_bytes(void *buf, size_t n)
{
    unsigned char *b = buf;
#if SK_HAVE_GETRANDOM
    while (n > 0) {
        ssize_t got = getrandom(b, n, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -1;
        b += got;
        n -= (size_t)got;
    }
    return 0;
#elif SK_HAVE_ARC4RANDOM
    arc4random_buf(b, n);
    return 0;
#else
    int fd;
    do
        fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return -1;
    while (n > 0) {
        ssize_t got = read(fd, b, n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            close(fd);
            return -1;
        }
        b += got;
        n -= (size_t)got;
    }
    close(fd);
    return 0;
#endif
}

int sk_pipe_cloexec(int fds[2])
{
#if SK_HAVE_PIPE2
    return pipe2(fds, O_CLOEXEC);
#else
    /* Another thread's fork could inherit the ends in between: spawns here
     * close every inherited descriptor anyway (sk_spawn_close_inherited). */
    if (pipe(fds) != 0)
        return -1;
    if (fcntl(fds[0], F_SETFD, FD_CLOEXEC) != 0 || fcntl(fds[1], F_SETFD, FD_CLOEXEC) != 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        fds[0] = fds[1] = -1;
        errno = e;
        return -1;
    }
    return 0;
#endif
}

void sk_pipe_grow(int fd, int bytes)
{
#if SK_HAVE_SETPIPE_SZ
    (void)fcntl(fd, F_SETPIPE_SZ, bytes); /* capped by /proc/sys/fs/pipe-max-size */
#else
    (void)fd;
    (void)bytes;
#endif
}

int sk_pidfd_open(pid_t pid)
{
#if SK_HAVE_PIDFD
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}

#if SK_HAVE_CLONE_SPAWN && defined(__has_attribute)
#if __has_attribute(no_sanitize)
/* runs in the spawned child, before execve (child.c) */
#define COMPAT_CHILD_SAFE __attribute__((no_sanitize("address", "undefined")))
#endif
#endif
#ifndef COMPAT_CHILD_SAFE
#define COMPAT_CHILD_SAFE
#endif

pid_t sk_clone_vfork_files(int (*fn)(void *), void *stack_top, void *arg)
{
#if SK_HAVE_CLONE_SPAWN
    return clone(fn, stack_top, CLONE_VM | CLONE_VFORK | CLONE_FILES | SIGCHLD, arg);
#else
    (void)fn;
    (void)stack_top;
    (void)arg;
    errno = ENOSYS;
    return -1;
#endif
}

COMPAT_CHILD_SAFE int sk_close_range(unsigned from, bool unshare)
{
#if SK_HAVE_CLONE_SPAWN
    return (int)syscall(SYS_close_range, from, ~0U, unshare ? CLOSE_RANGE_UNSHARE : 0U);
#else
    (void)from;
    (void)unshare;
    errno = ENOSYS;
    return -1;
#endif
}

int sk_join_new_session_keyring(void)
{
#if SK_HAVE_KEYRINGS && defined(SYS_keyctl)
    if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0 && errno != ENOSYS)
        return errno;
#endif
    return 0;
}

bool sk_has_posix_acl(const char *path)
{
#if defined(__linux__)
    return getxattr(path, "system.posix_acl_access", NULL, 0) > 0;
#else
    (void)path; /* macOS's getxattr differs, and bwrap (the only user) is Linux-only */
    return false;
#endif
}

#if !SK_HAVE_SPAWN_CLOSEFROM && !SK_HAVE_SPAWN_CLOEXEC_DEFAULT
/* Adds a close action for every open descriptor from 3 up that is not
 * close-on-exec (ours all are; a host's may not be). poll() reports the
 * closed ones as POLLNVAL, 256 descriptors per call. */
static int spawn_close_scan(posix_spawn_file_actions_t *fa, int from)
{
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > (1L << 20))
        max = 1L << 20;
    struct pollfd set[256];
    for (long base = from; base < max; base += 256) {
        int n = 0;
        for (long fd = base; fd < max && n < 256; fd++, n++)
            set[n] = (struct pollfd){ .fd = (int)fd, .events = 0 };
        int rc;
        do
            rc = poll(set, (nfds_t)n, 0);
        while (rc < 0 && errno == EINTR);
        if (rc < 0)
            return errno;
        for (int i = 0; i < n; i++) {
            if (set[i].revents & POLLNVAL)
                continue;
            int fl = fcntl(set[i].fd, F_GETFD);
            if (fl < 0 || (fl & FD_CLOEXEC))
                continue;
            int e = posix_spawn_file_actions_addclose(fa, set[i].fd);
            if (e)
                return e;
        }
    }
    return 0;
}
#endif

int sk_spawn_close_inherited(posix_spawn_file_actions_t *fa, short *flags, int from)
{
#if SK_HAVE_SPAWN_CLOSEFROM
    (void)flags;
    return posix_spawn_file_actions_addclosefrom_np(fa, from);
#elif SK_HAVE_SPAWN_CLOEXEC_DEFAULT
    /* every descriptor not named by a file action is closed */
    (void)fa;
    (void)from; /* dup2 targets are named by file actions: kept */
    *flags |= POSIX_SPAWN_CLOEXEC_DEFAULT;
    return 0;
#else
    (void)flags;
    return spawn_close_scan(fa, from);
#endif
}

int sk_spawn_new_group(posix_spawnattr_t *attr, short *flags)
{
#if SK_HAVE_SPAWN_SETSID
    (void)attr;
    *flags |= POSIX_SPAWN_SETSID;
    return 0;
#else
    /* a process group of its own (no new session): enough to signal the
     * whole tree with kill(-pid) */
    *flags |= POSIX_SPAWN_SETPGROUP;
    return posix_spawnattr_setpgroup(attr, 0);
#endif
}

int sk_spawnp_in(pid_t *pid, const char *file, posix_spawn_file_actions_t *fa,
                 const posix_spawnattr_t *attr, char *const argv[], char *const envp[], const char *cwd)
{
#if SK_HAVE_SPAWN_CHDIR
    if (cwd) {
        int rc = posix_spawn_file_actions_addchdir_np(fa, cwd);
        if (rc)
            return rc;
    }
    return posix_spawnp(pid, file, fa, attr, argv, envp);
#else
    if (!cwd)
        return posix_spawnp(pid, file, fa, attr, argv, envp);
    if (strlen(cwd) >= PATH_MAX)
        return ENAMETOOLONG; /* as chdir would say (not E2BIG for the argv) */
    /* sh -c '<cd to $1>; shift; exec "$@"' sh <cwd> <file> argv[1..]; cd
     * would export OLDPWD, so the child's own value (or its absence) is kept */
    size_t n = 0;
    while (argv[n])
        n++;
    char **tv = calloc(n + 6, sizeof *tv);
    if (!tv)
        return ENOMEM;
    tv[0] = "/bin/sh";
    tv[1] = "-c";
    tv[2] = "if [ -n \"${OLDPWD+x}\" ]; then o=$OLDPWD; cd -- \"$1\" || exit 127; OLDPWD=$o; "
            "else cd -- \"$1\" || exit 127; unset OLDPWD; fi; shift; exec \"$@\"";
    tv[3] = "sh";
    tv[4] = (char *)cwd;
    tv[5] = (char *)file;
    for (size_t i = 1; i < n; i++)
        tv[5 + i] = argv[i];
    int rc = posix_spawn(pid, "/bin/sh", fa, attr, tv, envp);
    free(tv);
    return rc;
#endif
}

int sk_openat_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
#if SK_HAVE_OPENAT2 && defined(SYS_openat2)
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = (unsigned long long)(flags | O_CLOEXEC);
    how.mode = (flags & O_CREAT) ? mode : 0;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    /* EAGAIN: a rename raced the lookup. Bounded, so that sandboxed code
     * renaming in a loop cannot keep the caller spinning. */
    int again = 0;
    for (;;) {
        long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
        if (fd >= 0)
            return (int)fd;
        if (errno == EINTR || (errno == EAGAIN && ++again < 16))
            continue;
        return -1;
    }
#else
    (void)dirfd;
    (void)path;
    (void)flags;
    (void)mode;
    errno = ENOSYS;
    return -1;
#endif
}

int sk_renameat_noreplace(int fromfd, const char *from, int tofd, const char *to)
{
#if SK_HAVE_RENAMEAT2
    return renameat2(fromfd, from, tofd, to, RENAME_NOREPLACE);
#elif SK_HAVE_RENAMEATX_NP
    return renameatx_np(fromfd, from, tofd, to, RENAME_EXCL);
#else
    struct stat st;
    if (fstatat(fromfd, from, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        /* flags 0: a symlink is linked itself, never followed */
        if (linkat(fromfd, from, tofd, to, 0) == 0) {
            if (unlinkat(fromfd, from, 0) == 0)
                return 0;
            int e = errno;
            (void)unlinkat(tofd, to, 0); /* the file keeps its old name only */
            errno = e;
            return -1;
        }
        /* EPERM/EACCES: no hard links on this file system, or the kernel
         * protects this file from them (fs.protected_hardlinks);
         * EMLINK: too many links already */
        if (errno != EPERM && errno != EACCES && errno != EMLINK && errno != ENOTSUP
#if EOPNOTSUPP != ENOTSUP
            && errno != EOPNOTSUPP
#endif
        )
            return -1;
    }
    if (fstatat(tofd, to, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        errno = EEXIST;
        return -1;
    }
    if (errno != ENOENT)
        return -1;
    return renameat(fromfd, from, tofd, to);
#endif
}

ssize_t sk_copy_range(int in, int out, size_t len)
{
#if SK_HAVE_COPY_FILE_RANGE
    return copy_file_range(in, NULL, out, NULL, len, 0);
#else
    (void)in;
    (void)out;
    (void)len;
    errno = ENOSYS;
    return -1;
#endif
}

#if SK_HAVE_FSUID
/* The raw system calls: glibc's setgroups changes every thread of the
 * process (its setxid broadcast); the kernel's changes the caller only.
 * 32-bit x86 and ARM name the 32-bit-id versions *32. */
#if defined(SYS_setfsuid32)
#define SK_SYS_SETFSUID SYS_setfsuid32
#define SK_SYS_SETFSGID SYS_setfsgid32
#define SK_SYS_SETGROUPS SYS_setgroups32
#define SK_SYS_GETGROUPS SYS_getgroups32
#else
#define SK_SYS_SETFSUID SYS_setfsuid
#define SK_SYS_SETFSGID SYS_setfsgid
#define SK_SYS_SETGROUPS SYS_setgroups
#define SK_SYS_GETGROUPS SYS_getgroups
#endif

/* setfsuid/setfsgid return the previous id and never fail visibly: an id
 * of -1 changes nothing and tells the current one. */
static uid_t thread_fsuid(void) { return (uid_t)syscall(SK_SYS_SETFSUID, (uid_t)-1); }
static gid_t thread_fsgid(void) { return (gid_t)syscall(SK_SYS_SETFSGID, (gid_t)-1); }

static bool set_fsuid(uid_t uid)
{
    (void)syscall(SK_SYS_SETFSUID, uid);
    return thread_fsuid() == uid;
}

static bool set_fsgid(gid_t gid)
{
    (void)syscall(SK_SYS_SETFSGID, gid);
    return thread_fsgid() == gid;
}

static bool set_groups(int n, const gid_t *groups)
{
    return syscall(SK_SYS_SETGROUPS, (size_t)n, groups) == 0;
}
#endif

int sk_thread_fs_ids_enter(uid_t uid, gid_t gid, sk_thread_fs_ids *saved)
{
    memset(saved, 0, sizeof *saved);
#if SK_HAVE_FSUID
    saved->fsuid = thread_fsuid();
    saved->fsgid = thread_fsgid();
    long n = syscall(SK_SYS_GETGROUPS, 0, NULL);
    if (n < 0)
        return errno;
    if (n > 0) {
        saved->groups = malloc((size_t)n * sizeof *saved->groups);
        if (!saved->groups)
            return ENOMEM;
        n = syscall(SK_SYS_GETGROUPS, (int)n, saved->groups);
        if (n < 0) { /* the list changed in between: only another setgroups of ours could */
            int e = errno;
            free(saved->groups);
            saved->groups = NULL;
            return e;
        }
    }
    saved->ngroups = (int)n;
    /* the groups first: root's supplementary groups (group 0 among them)
     * would otherwise still open group-readable files (none to drop, as
     * for a root started without any: one credential change less) */
    if (saved->ngroups > 0 && !set_groups(0, NULL)) {
        int e = errno ? errno : EPERM; /* no CAP_SETGID: nothing changed */
        free(saved->groups);
        saved->groups = NULL;
        return e;
    }
    if (set_fsgid(gid) && set_fsuid(uid))
        return 0;
    /* undo only what changed: groups could be set, so they can be restored */
    sk_thread_fs_ids_leave(saved);
    return EPERM;
#else
    (void)uid;
    (void)gid;
    return ENOTSUP;
#endif
}

void sk_thread_fs_ids_leave(sk_thread_fs_ids *saved)
{
#if SK_HAVE_FSUID
    /* the uid first: it gives back the file capabilities a non-zero fsuid
     * took away (CAP_SETGID, needed for the rest, was never taken) */
    bool ok = set_fsuid(saved->fsuid);
    ok = set_fsgid(saved->fsgid) && ok;
    ok = (saved->ngroups == 0 || set_groups(saved->ngroups, saved->groups)) && ok;
    free(saved->groups);
    saved->groups = NULL;
    if (!ok)
        abort();
#else
    (void)saved;
#endif
}
