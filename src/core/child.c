/* How a child process starts; see child.h.
 *
 * posix_spawn (glibc: clone(CLONE_VM|CLONE_VFORK)) gives the child a copy
 * of our whole descriptor table, and the child then closes every copy but
 * its own few: two passes over every descriptor we hold, each close a
 * flush of its file. With a thousand commands in flight (three descriptors
 * each) a spawn cost about 0.4 ms more than with none
 * (docs/performance.md §"Spawning with many descriptors open").
 *
 * On Linux the child here shares our table (CLONE_FILES) and leaves it with
 * close_range(cut, ~0, CLOSE_RANGE_UNSHARE), which copies only the
 * descriptors below cut into a table of its own. Below cut sits a window:
 * slots reserved at the bottom of our table (at the first spawn, when few
 * descriptors are open) that hold /dev/null, except while a spawn puts the
 * child's stdio in them. The child copies its stdio from the window to
 * 0, 1, 2 and closes the rest; the slots get /dev/null back. A spawn's cost
 * no longer grows with the descriptors we hold. Only one spawn uses the
 * window at a time (a lock), and one stack serves every child: the parent
 * waits (CLONE_VFORK) until its child has called execve or exited.
 *
 * posix_spawn stays the way where the window cannot work: other systems,
 * valgrind (it cannot run such a clone), kernels that refuse
 * CLOSE_RANGE_UNSHARE (< 5.9) or the clone (found out at the first spawn),
 * more keep_fds than the window has, no window found low in the table, or
 * a window that is no longer ours (a host closed it). */
#include "child.h"
#include "compat.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#if SK_HAVE_CLONE_SPAWN
#include <sys/mman.h>
#endif

/* We ignore SIGPIPE (and a host may have changed others): the child starts
 * with these at their default and nothing blocked. */
static const int spawn_reset[] = { SIGPIPE, SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGCHLD, SIGUSR1,
                                   SIGUSR2, SIGALRM, SIGTSTP, SIGTTIN, SIGTTOU, SIGXFSZ };

static void spawn_defaults(sigset_t *set)
{
    sigemptyset(set);
    for (size_t i = 0; i < sizeof spawn_reset / sizeof spawn_reset[0]; i++)
        sigaddset(set, spawn_reset[i]);
}

/* ---- posix_spawn ----------------------------------------------------------- */

static int spawn_posix(const sk_proc_opts *o, int in_fd, int out_fd, int err_fd, const int *keep, pid_t *pid)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc)
        return rc;
    rc = posix_spawnattr_init(&attr);
    if (rc) {
        posix_spawn_file_actions_destroy(&fa);
        return rc;
    }
    if (in_fd >= 0)
        rc = posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
    else
        rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (!rc)
        rc = posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    if (!rc)
        rc = posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
    int n_keep = o->n_keep_fds > 0 ? o->n_keep_fds : 0;
    for (int i = 0; !rc && i < n_keep; i++)
        rc = posix_spawn_file_actions_adddup2(&fa, keep[i], 3 + i);
    /* Nothing of ours but stdio (and keep_fds) reaches the child, CLOEXEC or not. */
    short flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK;
    if (!rc)
        rc = sk_spawn_close_inherited(&fa, &flags, 3 + n_keep);
    sigset_t defaults, empty;
    sigemptyset(&empty);
    spawn_defaults(&defaults);
    if (!rc && o->new_group)
        rc = sk_spawn_new_group(&attr, &flags);
    if (!rc)
        rc = posix_spawnattr_setflags(&attr, flags);
    if (!rc)
        rc = posix_spawnattr_setsigdefault(&attr, &defaults);
    if (!rc)
        rc = posix_spawnattr_setsigmask(&attr, &empty);
    if (!rc)
        rc = sk_spawnp_in(pid, o->file, &fa, &attr, o->argv, o->envp ? o->envp : sk_environ(), o->cwd);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

/* ---- clone with a private table of a few descriptors ------------------------ */

#if SK_HAVE_CLONE_SPAWN

#if defined(__has_attribute)
#if __has_attribute(no_sanitize)
/* The child runs on our memory, on a stack of its own, before execve:
 * sanitizer bookkeeping there would be the parent thread's. */
#define SPAWN_CHILD_CODE __attribute__((no_sanitize("address", "undefined")))
#endif
#endif
#ifndef SPAWN_CHILD_CODE
#define SPAWN_CHILD_CODE
#endif

enum {
    /* bwrap binds by descriptor: two or three, one per extra path */
    SPAWN_KEEP_MAX = 16,
    /* the child's 0 .. 2 + SPAWN_KEEP_MAX, then /dev/null for good */
    SPAWN_SLOTS = 3 + SPAWN_KEEP_MAX + 1,
    /* the window starts above every descriptor the child copies to, so no
     * copy overwrites a slot still to be copied */
    SPAWN_WINDOW_MIN = 3 + SPAWN_KEEP_MAX,
    /* a window higher up saves little (the child copies what is below) */
    SPAWN_WINDOW_MAX = 256,
    SPAWN_STACK = 64 * 1024,
};

typedef struct spawn_child {
    const sk_proc_opts *o;
    char *const *envp;
    const char *path; /* where a file without '/' is looked for */
    int window;       /* the child's descriptor i comes from window + i */
    int n_fds;        /* 3 + keep_fds */
    sigset_t defaults;
    /* written by a child that gives up before execve */
    int err;
    bool no_unshare;
} spawn_child;

static pthread_mutex_t spawn_lock = PTHREAD_MUTEX_INITIALIZER;
static bool spawn_tried;       /* the window was looked for */
static int spawn_window = -1;  /* its first slot, while the slots are ours */
static bool spawn_usable;      /* false: posix_spawn from now on */
static struct stat spawn_null; /* what the last slot holds */
static char *spawn_map;        /* the children's stack, a guard page below */
static size_t spawn_map_len;

static SPAWN_CHILD_CODE size_t spawn_strlen(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

/* As posix_spawnp: a name with a '/' is run as it is, any other through
 * each PATH entry in turn (an empty entry: the working directory); EACCES
 * from any entry wins over ENOENT at the end. Returns only on failure. */
static SPAWN_CHILD_CODE void spawn_exec(const spawn_child *c)
{
    const char *file = c->o->file;
    size_t flen = spawn_strlen(file);
    for (size_t i = 0; i < flen; i++) {
        if (file[i] == '/') {
            execve(file, c->o->argv, c->envp);
            return;
        }
    }
    char full[PATH_MAX];
    bool denied = false;
    for (const char *p = c->path;;) {
        const char *end = p;
        while (*end && *end != ':')
            end++;
        size_t dlen = (size_t)(end - p), k = 0;
        if (dlen + 1 + flen < sizeof full) {
            for (; k < dlen; k++)
                full[k] = p[k];
            if (dlen)
                full[k++] = '/';
            for (size_t i = 0; i <= flen; i++)
                full[k + i] = file[i];
            execve(full, c->o->argv, c->envp);
            switch (errno) {
            case EACCES:
                denied = true;
                break;
            case ENOENT:
            case ENOTDIR:
            case ESTALE:
            case ENODEV:
            case ETIMEDOUT:
                break;
            default:
                return;
            }
        }
        if (!*end)
            break;
        p = end + 1;
    }
    errno = denied ? EACCES : ENOENT;
}

static SPAWN_CHILD_CODE int spawn_child_main(void *arg)
{
    spawn_child *c = arg;
    const sk_proc_opts *o = c->o;
    /* a table of our own, holding only what is below the window's end */
    if (sk_close_range((unsigned)(c->window + SPAWN_SLOTS), true) != 0) {
        c->no_unshare = true;
        goto fail;
    }
    for (int i = 0; i < c->n_fds; i++)
        if (dup2(c->window + i, i) < 0) /* the copy is not close-on-exec */
            goto fail;
    if (sk_close_range((unsigned)c->n_fds, false) != 0)
        goto fail;
    /* handlers are ours and cannot run in the new program: default them,
     * with the listed ones; then nothing blocked */
    struct sigaction dfl, cur;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (int sig = 1; sig < NSIG; sig++) {
        if (sig == SIGKILL || sig == SIGSTOP || sigaction(sig, NULL, &cur) != 0)
            continue;
        bool handled = cur.sa_handler != SIG_DFL && cur.sa_handler != SIG_IGN;
        if ((handled || sigismember(&c->defaults, sig) == 1) && sigaction(sig, &dfl, NULL) != 0)
            goto fail;
    }
    sigset_t none;
    sigemptyset(&none);
    if (sigprocmask(SIG_SETMASK, &none, NULL) != 0)
        goto fail;
    if (o->new_group && setsid() < 0)
        goto fail;
    if (o->cwd && chdir(o->cwd) != 0)
        goto fail;
    spawn_exec(c);
fail:
    c->err = errno ? errno : ENOEXEC;
    _exit(127);
}

/* Under spawn_lock: reserves SPAWN_SLOTS consecutive descriptors of
 * /dev/null low in the table, and the children's stack. */
static void spawn_window_open(void)
{
    spawn_tried = true;
    /* valgrind runs no CLONE_VM clone but a vfork-like one */
    const char *preload = getenv("LD_PRELOAD");
    if (preload && strstr(preload, "vgpreload"))
        return;
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0)
        return;
    int got[SPAWN_SLOTS], window = -1;
    for (int base = SPAWN_WINDOW_MIN; window < 0 && base <= SPAWN_WINDOW_MAX;) {
        int n = 0, next = -1;
        while (n < SPAWN_SLOTS) {
            int fd = fcntl(null_fd, F_DUPFD_CLOEXEC, n ? got[0] + n : base);
            if (fd < 0)
                break;
            got[n++] = fd;
            if (fd != got[0] + n - 1) { /* the one before was taken: go on from here */
                next = fd;
                break;
            }
        }
        if (n == SPAWN_SLOTS && next < 0) {
            window = got[0];
        } else {
            for (int i = 0; i < n; i++)
                close(got[i]);
            if (next < 0)
                break; /* out of descriptors */
            base = next;
        }
    }
    close(null_fd);
    if (window < 0)
        return;
    if (fstat(window + SPAWN_SLOTS - 1, &spawn_null) != 0) {
        for (int i = 0; i < SPAWN_SLOTS; i++)
            close(window + i);
        return;
    }
    /* a guard page below: an overflow faults instead of writing our heap */
    long page = sysconf(_SC_PAGESIZE);
    size_t guard = page > 0 ? (size_t)page : 4096;
    char *stack = mmap(NULL, SPAWN_STACK + guard, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
                       -1, 0);
    if (stack == MAP_FAILED || mprotect(stack, guard, PROT_NONE) != 0) {
        if (stack != MAP_FAILED)
            munmap(stack, SPAWN_STACK + guard);
        for (int i = 0; i < SPAWN_SLOTS; i++)
            close(window + i);
        return;
    }
    spawn_map = stack;
    spawn_map_len = SPAWN_STACK + guard;
    spawn_window = window;
    spawn_usable = true;
}

/* Whether the window is still ours: a host that closed every descriptor
 * above stderr (as daemons do) may have reused the numbers. */
static bool spawn_window_intact(void)
{
    struct stat st;
    return fstat(spawn_window + SPAWN_SLOTS - 1, &st) == 0 && st.st_dev == spawn_null.st_dev &&
           st.st_ino == spawn_null.st_ino && st.st_rdev == spawn_null.st_rdev;
}

/* Under spawn_lock, with a usable window. Returns 0, an errno value, or -1
 * when the window cannot serve (then posix_spawn from now on). */
static int spawn_clone(const sk_proc_opts *o, int in_fd, int out_fd, int err_fd, const int *keep, pid_t *pid)
{
    if (!spawn_window_intact()) {
        spawn_window = -1; /* the numbers are someone else's now */
        return -1;
    }
    int n_keep = o->n_keep_fds > 0 ? o->n_keep_fds : 0;
    int null_slot = spawn_window + SPAWN_SLOTS - 1;
    int src[SPAWN_SLOTS - 1] = { in_fd, out_fd, err_fd };
    for (int i = 0; i < n_keep; i++)
        src[3 + i] = keep[i];
    spawn_child c = { .o = o, .envp = o->envp ? o->envp : sk_environ(), .window = spawn_window,
                      .n_fds = 3 + n_keep };
    spawn_defaults(&c.defaults);
    c.path = getenv("PATH");
    if (!c.path)
        c.path = "/usr/bin:/bin"; /* glibc's posix_spawnp without PATH */
    int rc = 0, used = 0;
    for (; used < c.n_fds; used++) {
        if (src[used] >= 0 && dup3(src[used], spawn_window + used, O_CLOEXEC) < 0) {
            rc = errno;
            break;
        }
    }
    pid_t child = -1;
    if (!rc) {
        /* no handler of ours may run in the child, on our memory */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        child = sk_clone_vfork_files(spawn_child_main, spawn_map + spawn_map_len, &c);
        if (child < 0)
            rc = errno == EAGAIN || errno == ENOMEM ? errno : -1; /* refused (EINVAL, EPERM): not here */
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    /* the slots drop their references to the child's ends */
    for (int i = 0; i < used; i++)
        if (src[i] >= 0)
            dup3(null_slot, spawn_window + i, O_CLOEXEC);
    if (child > 0 && c.err) {
        while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {
        }
        return c.no_unshare ? -1 : c.err;
    }
    if (!rc)
        *pid = child;
    return rc;
}

#endif /* SK_HAVE_CLONE_SPAWN */

void sk_child_spawn_release(void)
{
#if SK_HAVE_CLONE_SPAWN
    pthread_mutex_lock(&spawn_lock);
    if (spawn_window >= 0 && spawn_window_intact())
        for (int i = 0; i < SPAWN_SLOTS; i++)
            close(spawn_window + i);
    if (spawn_map)
        munmap(spawn_map, spawn_map_len);
    spawn_map = NULL;
    spawn_window = -1;
    spawn_usable = spawn_tried = false;
    pthread_mutex_unlock(&spawn_lock);
#endif
}

/* When the module is unloaded (a host that closes its Lua state and opens
 * another loads it afresh): the next load reserves a window of its own. */
__attribute__((destructor)) static void spawn_unload(void) { sk_child_spawn_release(); }

int sk_child_spawn(const sk_proc_opts *o, int in_fd, int out_fd, int err_fd, const int *keep, pid_t *pid)
{
#if SK_HAVE_CLONE_SPAWN
    if (o->n_keep_fds <= SPAWN_KEEP_MAX) {
        pthread_mutex_lock(&spawn_lock);
        if (!spawn_tried)
            spawn_window_open();
        int rc = spawn_usable ? spawn_clone(o, in_fd, out_fd, err_fd, keep, pid) : -2;
        if (rc == -1)
            spawn_usable = false;
        pthread_mutex_unlock(&spawn_lock);
        if (rc >= 0)
            return rc;
    }
#endif
    return spawn_posix(o, in_fd, out_fd, err_fd, keep, pid);
}
