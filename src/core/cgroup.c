/* Control groups for local commands; see cgroup.h.
 *
 * Entering: a posix_spawn'ed child cannot be put into a cgroup race-free
 * from outside (it may fork before we write its pid), and clone3's
 * CLONE_INTO_CGROUP needs a fork-style clone (a page-table copy per
 * command) or a hand-written CLONE_VM trampoline. So the child moves itself
 * with one shell builtin before it runs anything else: in front of a
 * `sh -c` script it costs no extra exec; other programs (bwrap) get a
 * `sh -c '... exec "$@"'` wrapper. A child that cannot enter exits 125
 * without running the command (fail closed).
 *
 * Killing: v2 writes 1 to cgroup.kill (the kernel kills the subtree, forks
 * included). v1 has no such file: freeze the subtree so nothing can fork,
 * SIGKILL every pid listed, thaw so the signals are taken.
 *
 * Limits: a controller is used in the killing hierarchy when it is v2 and
 * has it (enabled in cgroup.subtree_control from this process's cgroup
 * down); otherwise in its own v1 hierarchy, where the sandbox and each of
 * its commands get a directory of the same layout, entered by the same
 * shell line. Commands get their own memory directory so that an OOM kill
 * is counted for the command it hit (v1 counts it only there). */
#include "cgroup.h"
#include "compat.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "loop.h"
#include "shell.h"

enum { CGROUP_V1 = 1, CGROUP_V2 = 2 };
/* v1: how long to wait for FREEZING to become FROZEN before killing anyway
 * (a task stuck in the kernel may keep it FREEZING). */
enum { CGROUP_FREEZE_WAIT_MS = 1000, CGROUP_EXIT_WAIT_MS = 2000 };

/* Empty command cgroups kept per sandbox for the next commands: a mkdir
 * and an rmdir cost about as much as the rest of a short exec's overhead. */
enum { CGROUP_SPARES = 8 };

/* Hierarchies a cgroup has a directory in: the killing one, then one per
 * controller that lives in a v1 hierarchy of its own. */
enum { H_KILL, H_N = 1 + SK_CGROUP_NCTL };
#define H_OF(ctl) (1 + (int)(ctl))

static const char *const cgroup_ctl_names[SK_CGROUP_NCTL] = { "memory", "pids", "cpu" };
/* v1: a file the limit is written to, so a directory we cannot use is
 * found when its base is made */
static const char *const cgroup_ctl_probe[SK_CGROUP_NCTL] = { "memory.limit_in_bytes", "pids.max",
                                                              "cpu.cfs_quota_us" };

struct sk_cgroup {
    char *path[H_N];     /* [H_KILL] always; [H_OF(ctl)] for a v1 controller's limit */
    bool limited[SK_CGROUP_NCTL]; /* a sandbox's limits (its commands: inherited) */
    sk_cgroup *parent;   /* referenced; NULL for a sandbox's */
    int refs;            /* the owner's + one per live child */
    bool gone;           /* destroyed: the directory no longer exists */
    long oom_base;       /* a command's: OOM kills counted before it was handed out */
    char *spare[CGROUP_SPARES][H_N];
    int n_spare;
};

struct sk_cgroup_dirs {
    int version;         /* of the killing hierarchy */
    char *dir[H_N];
};

/* Where a controller's limits go, probed once (under cgroup_lock). */
typedef struct cgroup_ctl_state {
    bool probed;
    int where;           /* CGROUP_V2: the killing hierarchy; CGROUP_V1: base; 0: nowhere */
    char *base;          /* v1: <its hierarchy><our cgroup>/sandkit-<pid>-<random> */
    const char *why;     /* where == 0: why not (a sentence): static, or why_owned */
    char *why_owned;
} cgroup_ctl_state;

static pthread_mutex_t cgroup_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t cgroup_owner;   /* the process the probe below belongs to */
static int cgroup_version;   /* 0: none */
static char *cgroup_base;    /* <own cgroup>/sandkit-<pid> */
static unsigned long cgroup_seq;
static bool cgroup_hooked;
static cgroup_ctl_state cgroup_ctls[SK_CGROUP_NCTL];

static void cgroup_pause_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static int cgroup_write(const char *dir, const char *file, const char *text)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, file) >= (int)sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t n = strlen(text);
    ssize_t w;
    do
        w = write(fd, text, n);
    while (w < 0 && errno == EINTR);
    int saved = errno;
    close(fd);
    errno = saved;
    return w == (ssize_t)n ? 0 : -1;
}

/* Small cgroup files only (freezer.state, cgroup.procs read in chunks
 * elsewhere). */
static int cgroup_read(const char *dir, const char *file, char *out, size_t cap)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, file) >= (int)sizeof path)
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t r;
    do
        r = read(fd, out, cap - 1);
    while (r < 0 && errno == EINTR);
    close(fd);
    if (r < 0)
        return -1;
    out[r] = '\0';
    return 0;
}

/* /proc/self/mountinfo escapes blanks as \ooo. */
static void cgroup_unescape(char *s)
{
    char *o = s;
    for (char *i = s; *i; i++) {
        if (i[0] == '\\' && i[1] >= '0' && i[1] <= '3' && i[2] >= '0' && i[2] <= '7' && i[3] >= '0' &&
            i[3] <= '7') {
            *o++ = (char)((i[1] - '0') * 64 + (i[2] - '0') * 8 + (i[3] - '0'));
            i += 3;
        } else {
            *o++ = *i;
        }
    }
    *o = '\0';
}

/* token is one of list's items separated by any of seps. */
static bool cgroup_has_item(const char *list, const char *token, const char *seps)
{
    size_t n = strlen(token);
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, seps);
        if (len == n && strncmp(p, token, n) == 0)
            return true;
        p += len;
        p += strspn(p, seps);
    }
    return false;
}

static bool cgroup_has_token(const char *list, const char *token) { return cgroup_has_item(list, token, ","); }

/* What cgroup_own_dir looks for: the hierarchy (v2, or v1 with controller
 * v1_ctl), and where what it finds goes (cap bytes each). */
typedef struct cgroup_query {
    int version;
    const char *v1_ctl;
    char *mnt, *root, *own;
    size_t cap;
} cgroup_query;

/* Gives each line of path to match until one matches: 0 then, -1 when none
 * did or path cannot be read. */
static int cgroup_scan(const char *path, bool (*match)(char *line, cgroup_query *q), cgroup_query *q)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char *line = NULL;
    size_t len = 0;
    int rc = -1;
    while (rc != 0 && getline(&line, &len, f) > 0)
        if (match(line, q))
            rc = 0;
    free(line);
    fclose(f);
    return rc;
}

/* A /proc/self/mountinfo line of the hierarchy: its mount point and mount
 * root to q->mnt and q->root. */
static bool cgroup_mount_line(char *line, cgroup_query *q)
{
    char *save = NULL, *fields[6] = { 0 };
    char *t = strtok_r(line, " \n", &save);
    int i = 0;
    while (t && i < 6) {
        fields[i++] = t;
        t = strtok_r(NULL, " \n", &save);
    }
    if (i < 6)
        return false;
    while (t && strcmp(t, "-") != 0) /* optional fields end at "-" */
        t = strtok_r(NULL, " \n", &save);
    char *fstype = t ? strtok_r(NULL, " \n", &save) : NULL;
    char *source = fstype ? strtok_r(NULL, " \n", &save) : NULL;
    char *super = source ? strtok_r(NULL, " \n", &save) : NULL;
    if (!fstype)
        return false;
    bool match = q->version == CGROUP_V2 ? strcmp(fstype, "cgroup2") == 0
                                         : strcmp(fstype, "cgroup") == 0 && super &&
                                               cgroup_has_token(super, q->v1_ctl);
    if (!match || strlen(fields[4]) >= q->cap || strlen(fields[3]) >= q->cap)
        return false;
    strcpy(q->mnt, fields[4]);
    strcpy(q->root, fields[3]);
    cgroup_unescape(q->mnt);
    cgroup_unescape(q->root);
    return true;
}

/* A /proc/self/cgroup line of the hierarchy: this process's cgroup in it
 * to q->own. */
static bool cgroup_own_line(char *line, cgroup_query *q)
{
    line[strcspn(line, "\n")] = '\0';
    char *c1 = strchr(line, ':');
    char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2)
        return false;
    *c1 = *c2 = '\0';
    const char *controllers = c1 + 1;
    bool match = q->version == CGROUP_V2 ? strcmp(line, "0") == 0 && !*controllers
                                         : cgroup_has_token(controllers, q->v1_ctl);
    if (!match || strlen(c2 + 1) >= q->cap)
        return false;
    strcpy(q->own, c2 + 1);
    return true;
}

/* This process's own cgroup directory in a hierarchy (malloc'd), without
 * a trailing slash. */
static char *cgroup_own_dir(int version, const char *v1_ctl)
{
    char mnt[PATH_MAX], root[PATH_MAX], own[PATH_MAX];
    cgroup_query q = { .version = version, .v1_ctl = v1_ctl, .mnt = mnt, .root = root, .own = own, .cap = PATH_MAX };
    if (cgroup_scan("/proc/self/mountinfo", cgroup_mount_line, &q) != 0 ||
        cgroup_scan("/proc/self/cgroup", cgroup_own_line, &q) != 0)
        return NULL;
    /* inside a cgroup namespace the mount root and our path may share a
     * prefix that the mount point already stands for */
    const char *rel = own;
    size_t rl = strlen(root);
    if (strcmp(root, "/") != 0 && strncmp(own, root, rl) == 0 && (own[rl] == '/' || own[rl] == '\0'))
        rel = own + rl;
    char *dir = NULL;
    if (asprintf(&dir, "%s%s%s", mnt, rel[0] && rel[0] != '/' ? "/" : "", rel) < 0)
        return NULL;
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        dir[--n] = '\0';
    return dir;
}

/* ---- the tree walk shared by kill (v1) and removal ---------------------- */

typedef int (*cgroup_visit)(const char *dir, int sig);

/* Post-order: children before dir. Returns the first failure (-1), having
 * visited everything. */
static int cgroup_walk(const char *dir, cgroup_visit visit, int sig)
{
    int rc = 0;
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_type != DT_DIR || strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char *sub = NULL;
            if (asprintf(&sub, "%s/%s", dir, e->d_name) < 0) {
                rc = -1;
                continue;
            }
            if (cgroup_walk(sub, visit, sig) != 0)
                rc = -1;
            free(sub);
        }
        closedir(d);
    } else if (errno != ENOENT) {
        rc = -1;
    }
    if (visit(dir, sig) != 0)
        rc = -1;
    return rc;
}

static int cgroup_signal_listed(const char *dir, int sig)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/cgroup.procs", dir) >= (int)sizeof path)
        return -1;
    FILE *f = fopen(path, "re");
    if (!f)
        return errno == ENOENT ? 0 : -1;
    long pid;
    while (fscanf(f, "%ld", &pid) == 1)
        if (pid > 0)
            kill((pid_t)pid, sig);
    fclose(f);
    return 0;
}

static int cgroup_rmdir(const char *dir, int sig)
{
    (void)sig;
    return rmdir(dir) == 0 || errno == ENOENT ? 0 : -1;
}

static int cgroup_kill_dir(int version, const char *dir)
{
    if (version == CGROUP_V2)
        return cgroup_write(dir, "cgroup.kill", "1");
    /* v1: frozen tasks cannot fork, so the listing is complete */
    if (cgroup_write(dir, "freezer.state", "FROZEN") != 0)
        return -1;
    double deadline = sk_now_ms() + CGROUP_FREEZE_WAIT_MS;
    char state[32];
    while (cgroup_read(dir, "freezer.state", state, sizeof state) == 0 && strncmp(state, "FROZEN", 6) != 0 &&
           sk_now_ms() < deadline)
        cgroup_pause_ms(1);
    int rc = cgroup_walk(dir, cgroup_signal_listed, SIGKILL);
    if (cgroup_write(dir, "freezer.state", "THAWED") != 0)
        rc = -1;
    return rc;
}

/* Waits for killed tasks to leave and removes the trees (each dir and
 * below). 0, or -1 when something stayed past wait_ms. */
static int cgroup_rmdir_trees(char *const dirs[], int n, int wait_ms)
{
    double deadline = sk_now_ms() + wait_ms;
    for (;;) {
        int rc = 0;
        for (int i = 0; i < n; i++)
            if (dirs[i] && cgroup_walk(dirs[i], cgroup_rmdir, 0) != 0)
                rc = -1;
        if (rc == 0)
            return 0;
        if (sk_now_ms() >= deadline)
            return -1;
        /* a SIGKILLed task needs a moment to exit (freeing a large address
         * space first); it cannot run our code any more */
        cgroup_pause_ms(1);
    }
}

/* ---- the process's sandkit directories ---------------------------------- */

static void cgroup_forget_ctls(void)
{
    for (int c = 0; c < SK_CGROUP_NCTL; c++) {
        free(cgroup_ctls[c].base);
        free(cgroup_ctls[c].why_owned);
        memset(&cgroup_ctls[c], 0, sizeof cgroup_ctls[c]);
    }
}

static void cgroup_at_exit(void)
{
    pthread_mutex_lock(&cgroup_lock);
    if (cgroup_base && cgroup_owner == getpid()) {
        char *dirs[H_N] = { cgroup_base };
        for (int c = 0; c < SK_CGROUP_NCTL; c++)
            dirs[H_OF(c)] = cgroup_ctls[c].base;
        cgroup_kill_dir(cgroup_version, cgroup_base);
        cgroup_rmdir_trees(dirs, H_N, CGROUP_EXIT_WAIT_MS);
    }
    free(cgroup_base);
    cgroup_base = NULL;
    cgroup_version = 0;
    cgroup_forget_ctls();
    pthread_mutex_unlock(&cgroup_lock);
}

/* Makes <dir>/<name> and checks that a task can be put in it and that
 * probe_file (relative) is writable; the directory (malloc'd) or NULL
 * with errno. */
static char *cgroup_make_dir(const char *dir, const char *name, const char *probe_file)
{
    char *base = NULL;
    if (asprintf(&base, "%s/%s", dir, name) < 0)
        return NULL;
    if (mkdir(base, 0755) != 0) {
        int saved = errno;
        free(base);
        errno = saved;
        return NULL;
    }
    char probe[PATH_MAX];
    int ok = snprintf(probe, sizeof probe, "%s/%s", base, probe_file) < (int)sizeof probe &&
             access(probe, W_OK) == 0 &&
             snprintf(probe, sizeof probe, "%s/cgroup.procs", base) < (int)sizeof probe && access(probe, W_OK) == 0;
    if (!ok) {
        int saved = errno ? errno : EACCES;
        rmdir(base);
        free(base);
        errno = saved;
        return NULL;
    }
    return base;
}

static char *cgroup_make_base(int version)
{
    char *own = cgroup_own_dir(version, "freezer");
    if (!own)
        return NULL;
    /* a random part: a directory left by a killed process that had our
     * pid, or one of another PID namespace, is never ours to reuse */
    unsigned char rnd[4] = { 0 };
    if (sk_random_bytes(rnd, sizeof rnd) != 0)
        memcpy(rnd, &(unsigned){ (unsigned)sk_now_ms() }, sizeof rnd);
    char name[64];
    snprintf(name, sizeof name, "sandkit-%ld-%02x%02x%02x%02x", (long)getpid(), rnd[0], rnd[1], rnd[2], rnd[3]);
    /* usable only if we can put a task in it and kill it there */
    char *base = cgroup_make_dir(own, name, version == CGROUP_V2 ? "cgroup.kill" : "freezer.state");
    free(own);
    return base;
}

/* Under cgroup_lock. */
static void cgroup_probe(void)
{
    if (cgroup_owner == getpid())
        return;
    if (cgroup_owner) {
        /* a fork: the parent's directory and sandboxes are not ours */
        free(cgroup_base);
        cgroup_base = NULL;
        cgroup_version = 0;
        cgroup_forget_ctls();
    }
    cgroup_owner = getpid();
    const char *want = getenv("SANDKIT_CGROUP");
    if (!SK_HAVE_CGROUP || (want && strcmp(want, "off") == 0))
        return;
    bool v2 = !want || strcmp(want, "v1") != 0;
    bool v1 = !want || strcmp(want, "v2") != 0;
    if (v2 && (cgroup_base = cgroup_make_base(CGROUP_V2)))
        cgroup_version = CGROUP_V2;
    else if (v1 && (cgroup_base = cgroup_make_base(CGROUP_V1)))
        cgroup_version = CGROUP_V1;
    if (cgroup_base && !cgroup_hooked)
        cgroup_hooked = atexit(cgroup_at_exit) == 0;
}

/* Sets c's reason to a formatted sentence (freed with the probe's state,
 * which an exit handler frees: made only where a hierarchy is ours). */
static void cgroup_why(cgroup_ctl_state *c, const char *fmt, const char *a, const char *b)
{
    char *s = NULL;
    if (asprintf(&s, fmt, a, b ? b : "") < 0)
        s = NULL;
    free(c->why_owned);
    c->why_owned = s;
    c->why = s;
}

/* v2: ctl enabled in cgroup.subtree_control from our cgroup down to the
 * sandkit directory, so each sandbox's directory has its files. Under
 * cgroup_lock. */
static int cgroup_enable_v2(const char *name, cgroup_ctl_state *c)
{
    char *own = strdup(cgroup_base);
    char *slash = own ? strrchr(own, '/') : NULL;
    if (!slash) {
        free(own);
        return -1;
    }
    *slash = '\0';
    char text[512];
    int rc = -1;
    if (cgroup_read(own, "cgroup.controllers", text, sizeof text) != 0 || !cgroup_has_item(text, name, " \n")) {
        cgroup_why(c, "the cgroup v2 hierarchy has no %s controller for this process's cgroup %s", name, own);
    } else {
        char plus[32];
        snprintf(plus, sizeof plus, "+%s", name);
        bool on = cgroup_read(own, "cgroup.subtree_control", text, sizeof text) == 0 &&
                  cgroup_has_item(text, name, " \n");
        /* our own cgroup holds processes (this one): unless it is the root,
         * the kernel refuses controllers below it (EBUSY) */
        if ((!on && cgroup_write(own, "cgroup.subtree_control", plus) != 0) ||
            cgroup_write(cgroup_base, "cgroup.subtree_control", plus) != 0)
            cgroup_why(c, "the cgroup v2 %s controller cannot be enabled below this process's cgroup %s "
                          "(it holds processes: run sandkit in a cgroup of its own, delegated with the "
                          "controller)", name, own);
        else
            rc = 0;
    }
    free(own);
    return rc;
}

/* Under cgroup_lock, after cgroup_probe. */
static void cgroup_probe_ctl(sk_cgroup_ctl ctl)
{
    cgroup_ctl_state *c = &cgroup_ctls[ctl];
    if (c->probed)
        return;
    c->probed = true;
    const char *name = cgroup_ctl_names[ctl];
    if (!cgroup_base) {
        const char *want = getenv("SANDKIT_CGROUP");
        /* static: with no hierarchy of ours no exit handler frees anything */
        c->why = !SK_HAVE_CGROUP ? "this system has no cgroups"
                 : want && strcmp(want, "off") == 0
                     ? "cgroups are turned off (SANDKIT_CGROUP=off)"
                     : "no cgroup hierarchy is writable by this process (sandkit needs root, or a delegated cgroup)";
        return;
    }
    if (cgroup_version == CGROUP_V2 && cgroup_enable_v2(name, c) == 0) {
        c->where = CGROUP_V2;
        return;
    }
    /* a hybrid machine: the controller is bound to a v1 hierarchy */
    char *own = cgroup_own_dir(CGROUP_V1, name);
    if (!own) {
        if (!c->why)
            cgroup_why(c, "no cgroup hierarchy has the %s controller%s", name, NULL);
        return;
    }
    const char *slash = strrchr(cgroup_base, '/');
    errno = 0;
    char *base = cgroup_make_dir(own, slash + 1, cgroup_ctl_probe[ctl]);
    if (!base) {
        cgroup_why(c, "the cgroup v1 %s hierarchy is not writable here (%s)", name, strerror(errno));
    } else {
        if (ctl == SK_CGROUP_MEMORY) /* kernels before 5.x default to flat accounting */
            (void)cgroup_write(base, "memory.use_hierarchy", "1");
        free(c->why_owned);
        c->why_owned = NULL;
        c->why = NULL;
        c->base = base;
        c->where = CGROUP_V1;
    }
    free(own);
}

const char *sk_cgroup_backend(void)
{
    pthread_mutex_lock(&cgroup_lock);
    cgroup_probe();
    int v = cgroup_version;
    pthread_mutex_unlock(&cgroup_lock);
    return v == CGROUP_V2 ? "v2" : v == CGROUP_V1 ? "v1" : NULL;
}

const char *sk_cgroup_ctl_name(sk_cgroup_ctl ctl) { return cgroup_ctl_names[ctl]; }

const char *sk_cgroup_unlimitable(sk_cgroup_ctl ctl)
{
    pthread_mutex_lock(&cgroup_lock);
    cgroup_probe();
    cgroup_probe_ctl(ctl);
    const char *why = cgroup_ctls[ctl].where ? NULL : cgroup_ctls[ctl].why ? cgroup_ctls[ctl].why
                                                                          : "out of memory";
    pthread_mutex_unlock(&cgroup_lock);
    return why;
}

/* ---- cgroups ------------------------------------------------------------ */

static int cgroup_version_now(void)
{
    pthread_mutex_lock(&cgroup_lock);
    int v = cgroup_owner == getpid() ? cgroup_version : 0;
    pthread_mutex_unlock(&cgroup_lock);
    return v;
}

static int cgroup_ctl_where(sk_cgroup_ctl ctl)
{
    pthread_mutex_lock(&cgroup_lock);
    int w = cgroup_owner == getpid() ? cgroup_ctls[ctl].where : 0;
    pthread_mutex_unlock(&cgroup_lock);
    return w;
}

static bool cgroup_wants(const sk_cgroup_limits *lim, sk_cgroup_ctl ctl)
{
    return ctl == SK_CGROUP_MEMORY ? lim->memory > 0
         : ctl == SK_CGROUP_PIDS   ? lim->pids > 0
                                   : lim->cpu_quota > 0 || lim->cpu_period > 0;
}

/* The directory holding ctl's files for cg, or NULL. */
static const char *cgroup_ctl_dir(const sk_cgroup *cg, sk_cgroup_ctl ctl, int *where)
{
    *where = cg->limited[ctl] ? cgroup_ctl_where(ctl) : 0;
    return *where == CGROUP_V2 ? cg->path[H_KILL] : *where == CGROUP_V1 ? cg->path[H_OF(ctl)] : NULL;
}

static int cgroup_write_num(const char *dir, const char *file, int64_t v)
{
    char text[32];
    snprintf(text, sizeof text, "%lld", (long long)v);
    return cgroup_write(dir, file, text);
}

/* Writes a new sandbox cgroup's limits; 0, or -1 with errno. */
static int cgroup_write_limits(sk_cgroup *cg, const sk_cgroup_limits *lim)
{
    int where;
    const char *dir = cgroup_ctl_dir(cg, SK_CGROUP_MEMORY, &where);
    if (dir) {
        bool v2 = where == CGROUP_V2;
        if (cgroup_write_num(dir, v2 ? "memory.max" : "memory.limit_in_bytes", lim->memory) != 0)
            return -1;
        /* no swap beyond the limit (the file is missing without swap accounting) */
        if ((v2 ? cgroup_write(dir, "memory.swap.max", "0")
                : cgroup_write_num(dir, "memory.memsw.limit_in_bytes", lim->memory)) != 0 &&
            errno != ENOENT)
            return -1;
        /* each command's directory counts the OOM kills it suffers */
        if (v2 && cgroup_write(dir, "cgroup.subtree_control", "+memory") != 0)
            return -1;
    }
    if ((dir = cgroup_ctl_dir(cg, SK_CGROUP_PIDS, &where)) && cgroup_write_num(dir, "pids.max", lim->pids) != 0)
        return -1;
    if ((dir = cgroup_ctl_dir(cg, SK_CGROUP_CPU, &where))) {
        int64_t period = lim->cpu_period > 0 ? lim->cpu_period : 100000;
        if (where == CGROUP_V2) {
            char text[64];
            if (lim->cpu_quota > 0)
                snprintf(text, sizeof text, "%lld %lld", (long long)lim->cpu_quota, (long long)period);
            else
                snprintf(text, sizeof text, "max %lld", (long long)period);
            if (cgroup_write(dir, "cpu.max", text) != 0)
                return -1;
        } else if (cgroup_write_num(dir, "cpu.cfs_period_us", period) != 0 ||
                   (lim->cpu_quota > 0 && cgroup_write_num(dir, "cpu.cfs_quota_us", lim->cpu_quota) != 0)) {
            return -1;
        }
    }
    return 0;
}

/* A number after `key ` in a flat-keyed cgroup file; -1 when missing. */
static long cgroup_read_key(const char *dir, const char *file, const char *key)
{
    char text[1024];
    if (!dir || cgroup_read(dir, file, text, sizeof text) != 0)
        return -1;
    size_t n = strlen(key);
    for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
        if (strncmp(line, key, n) == 0 && line[n] == ' ')
            return strtol(line + n + 1, NULL, 10);
    return -1;
}

static long cgroup_oom_count(const sk_cgroup *cg)
{
    int where;
    const char *dir = cgroup_ctl_dir(cg, SK_CGROUP_MEMORY, &where);
    return cgroup_read_key(dir, where == CGROUP_V2 ? "memory.events" : "memory.oom_control", "oom_kill");
}

static void cgroup_free_paths(char *path[H_N])
{
    for (int h = 0; h < H_N; h++) {
        free(path[h]);
        path[h] = NULL;
    }
}

static void cgroup_rmdir_paths(char *const path[H_N])
{
    for (int h = 0; h < H_N; h++)
        if (path[h])
            rmdir(path[h]); /* EBUSY: a daemon lives on in it until the sandbox goes */
}

sk_cgroup *sk_cgroup_new(sk_cgroup *parent, const sk_cgroup_limits *lim, int *err_no)
{
    *err_no = 0;
    if (parent && parent->gone)
        return NULL;
    sk_cgroup *cg = calloc(1, sizeof *cg);
    if (!cg) {
        *err_no = ENOMEM;
        return NULL;
    }
    cg->refs = 1;
    if (parent) {
        memcpy(cg->limited, parent->limited, sizeof cg->limited);
        cg->parent = parent;
        parent->refs++;
    }
    if (parent && parent->n_spare) {
        memcpy(cg->path, parent->spare[--parent->n_spare], sizeof cg->path);
        cg->oom_base = cgroup_oom_count(cg);
        return cg;
    }
    static const sk_cgroup_limits none = { 0 };
    if (!lim)
        lim = &none;
    int err = 0; /* 0 with no path: no cgroups here */
    pthread_mutex_lock(&cgroup_lock);
    cgroup_probe();
    if (cgroup_base) {
        unsigned long n = ++cgroup_seq;
        char kind = parent ? 'c' : 's';
        if (asprintf(&cg->path[H_KILL], "%s/%c%lu", parent ? parent->path[H_KILL] : cgroup_base, kind, n) < 0) {
            cg->path[H_KILL] = NULL;
            err = ENOMEM;
        }
        for (int c = 0; !err && c < SK_CGROUP_NCTL; c++) {
            if (!parent && cgroup_wants(lim, c)) {
                cgroup_probe_ctl(c);
                cg->limited[c] = true;
                if (!cgroup_ctls[c].where)
                    err = EOPNOTSUPP; /* callers ask sk_cgroup_unlimitable first */
            }
            if (!err && cg->limited[c] && cgroup_ctls[c].where == CGROUP_V1 &&
                asprintf(&cg->path[H_OF(c)], "%s/%c%lu", parent ? parent->path[H_OF(c)] : cgroup_ctls[c].base,
                         kind, n) < 0) {
                cg->path[H_OF(c)] = NULL;
                err = ENOMEM;
            }
        }
    }
    pthread_mutex_unlock(&cgroup_lock);
    int made = 0;
    if (!err && cg->path[H_KILL]) {
        for (; made < H_N && !err; made++)
            if (cg->path[made] && mkdir(cg->path[made], 0755) != 0)
                err = errno;
        if (err)
            made--; /* the one that failed was not made */
    }
    if (!err && cg->path[H_KILL] && !parent && cgroup_write_limits(cg, lim) != 0)
        err = errno ? errno : EIO;
    if (err || !cg->path[H_KILL]) {
        *err_no = err;
        for (int h = 0; h < made; h++)
            if (cg->path[h])
                rmdir(cg->path[h]);
        cgroup_free_paths(cg->path);
        if (parent)
            parent->refs--;
        free(cg);
        return NULL;
    }
    if (parent)
        cg->oom_base = cgroup_oom_count(cg);
    return cg;
}

static void cgroup_unref(sk_cgroup *cg)
{
    if (!cg || --cg->refs > 0)
        return;
    cgroup_unref(cg->parent);
    for (int i = 0; i < cg->n_spare; i++)
        cgroup_free_paths(cg->spare[i]);
    cgroup_free_paths(cg->path);
    free(cg);
}

/* Nothing lives in dir (v2: cgroup.events says so; v1: no pid listed). */
static bool cgroup_empty(int version, const char *dir)
{
    char text[256];
    if (version == CGROUP_V2)
        return cgroup_read(dir, "cgroup.events", text, sizeof text) == 0 && strstr(text, "populated 0");
    return cgroup_read(dir, "cgroup.procs", text, sizeof text) == 0 && text[0] == '\0';
}

const char *sk_cgroup_path(const sk_cgroup *cg) { return cg->path[H_KILL]; }

const char *sk_cgroup_ctl_path(const sk_cgroup *cg, sk_cgroup_ctl ctl, const char **version)
{
    int where;
    const char *dir = cgroup_ctl_dir(cg, ctl, &where);
    *version = where == CGROUP_V2 ? "v2" : "v1";
    return dir;
}

long sk_cgroup_oom_kills(const sk_cgroup *cg)
{
    if (!cg || !cg->limited[SK_CGROUP_MEMORY])
        return 0;
    long now = cgroup_oom_count(cg);
    return now > cg->oom_base ? now - (cg->oom_base > 0 ? cg->oom_base : 0) : 0;
}

int sk_cgroup_kill(sk_cgroup *cg) { return sk_cgroup_signal(cg, SIGKILL); }

int sk_cgroup_signal(sk_cgroup *cg, int sig)
{
    int v = cg ? cgroup_version_now() : 0;
    if (!v)
        return -1;
    return sig == SIGKILL ? cgroup_kill_dir(v, cg->path[H_KILL]) : cgroup_walk(cg->path[H_KILL], cgroup_signal_listed, sig);
}

/* A tree with nothing alive in it needs no kill and no walk: rmdir of a
 * cgroup fails (EBUSY) while a process or a child cgroup is in it, so
 * removing the spare command cgroups, then cg, succeeds exactly when the
 * tree was empty. 0, or -1 with whatever is left for the kill and walk. */
static int cgroup_remove_empty(sk_cgroup *cg)
{
    int rc = 0;
    while (rc == 0 && cg->n_spare > 0) {
        char **spare = cg->spare[cg->n_spare - 1];
        for (int h = 0; h < H_N; h++)
            if (spare[h] && rmdir(spare[h]) != 0 && errno != ENOENT)
                rc = -1;
        if (rc == 0)
            cgroup_free_paths(cg->spare[--cg->n_spare]);
    }
    for (int h = 0; rc == 0 && h < H_N; h++)
        if (cg->path[h] && rmdir(cg->path[h]) != 0 && errno != ENOENT)
            rc = -1;
    return rc;
}

sk_cgroup_dirs *sk_cgroup_retire(sk_cgroup *cg)
{
    if (!cg)
        return NULL;
    int v = cgroup_version_now();
    sk_cgroup_dirs *d = NULL;
    if (v && cgroup_remove_empty(cg) != 0) {
        cgroup_kill_dir(v, cg->path[H_KILL]);
        d = calloc(1, sizeof *d);
        bool copied = d != NULL;
        for (int h = 0; copied && h < H_N; h++)
            copied = !cg->path[h] || (d->dir[h] = strdup(cg->path[h]));
        if (copied) {
            d->version = v;
        } else {
            if (d)
                cgroup_free_paths(d->dir);
            free(d);
            d = NULL;
            cgroup_rmdir_trees(cg->path, H_N, CGROUP_EXIT_WAIT_MS); /* no memory: here, then */
        }
    }
    cg->gone = true;
    cgroup_unref(cg); /* live children keep the struct until they go */
    return d;
}

int sk_cgroup_remove(sk_cgroup_dirs *d, int wait_ms)
{
    if (!d)
        return 0;
    int rc = cgroup_rmdir_trees(d->dir, H_N, wait_ms);
    cgroup_free_paths(d->dir);
    free(d);
    return rc;
}

int sk_cgroup_destroy(sk_cgroup *cg, int wait_ms)
{
    if (!cg)
        return 0;
    if (!cgroup_version_now()) {
        sk_cgroup_retire(cg);
        return -1;
    }
    return sk_cgroup_remove(sk_cgroup_retire(cg), wait_ms);
}

void sk_cgroup_release(sk_cgroup *cg)
{
    if (!cg)
        return;
    sk_cgroup *parent = cg->parent;
    if (parent && !parent->gone && parent->n_spare < CGROUP_SPARES &&
        cgroup_empty(cgroup_version_now(), cg->path[H_KILL])) {
        memcpy(parent->spare[parent->n_spare++], cg->path, sizeof cg->path);
        memset(cg->path, 0, sizeof cg->path);
    } else if (!parent || !parent->gone) {
        cgroup_rmdir_paths(cg->path);
    }
    cgroup_unref(cg);
}

/* "echo $$ ><procs> || exit 125; " for each of cg's directories, the path
 * quoted (procs NULL) or as "$i" (the wrapper's positional parameters). */
static int cgroup_append_enter(sk_buf *b, const sk_cgroup *cg, bool positional)
{
    int rc = 0, i = 0;
    for (int h = 0; !rc && h < H_N; h++) {
        if (!cg->path[h])
            continue;
        rc = sk_buf_append(b, "echo $$ >", 9);
        if (!rc && positional) {
            char ref[8];
            int n = snprintf(ref, sizeof ref, "\"$%d\"", i);
            rc = sk_buf_append(b, ref, (size_t)n);
        } else if (!rc) {
            char *procs = NULL;
            if (asprintf(&procs, "%s/cgroup.procs", cg->path[h]) < 0)
                return -1;
            rc = sk_shell_quote(b, procs, strlen(procs));
            free(procs);
        }
        if (!rc)
            rc = sk_buf_append(b, " || exit 125; ", 14);
        i++;
    }
    return rc;
}

char *sk_cgroup_enter_script(const sk_cgroup *cg, const char *script)
{
    sk_buf b = { 0 };
    int rc = cgroup_append_enter(&b, cg, false);
    if (!rc)
        rc = sk_buf_append(&b, script, strlen(script));
    if (rc) {
        sk_buf_free(&b);
        return NULL;
    }
    return sk_buf_take(&b);
}

/* searched in our PATH, so the child's environment cannot redirect it */
static char *cgroup_resolve(const char *name)
{
    char *found = sk_find_executable(name);
    return found ? found : strdup(name);
}

char **sk_cgroup_enter_argv(const sk_cgroup *cg, char *const argv[], int *n_added)
{
    size_t n = 0;
    while (argv[n])
        n++;
    int k = 0;
    for (int h = 0; h < H_N; h++)
        k += cg->path[h] != NULL;
    /* /bin/sh -c script procs... argv... NULL */
    size_t total = 3 + (size_t)k + n;
    char **out = calloc(total + 1, sizeof *out);
    if (!out)
        return NULL;
    sk_buf script = { 0 };
    bool ok = cgroup_append_enter(&script, cg, true) == 0;
    if (ok && k > 1) {
        char shift[32];
        int len = snprintf(shift, sizeof shift, "shift %d; ", k - 1);
        ok = sk_buf_append(&script, shift, (size_t)len) == 0;
    }
    ok = ok && sk_buf_append(&script, "exec \"$@\"", 9) == 0;
    out[0] = strdup("/bin/sh");
    out[1] = strdup("-c");
    out[2] = ok ? sk_buf_take(&script) : NULL;
    sk_buf_free(&script);
    ok = out[0] && out[1] && out[2];
    int i = 3;
    for (int h = 0; ok && h < H_N; h++)
        if (cg->path[h])
            ok = asprintf(&out[i++], "%s/cgroup.procs", cg->path[h]) >= 0;
    for (size_t j = 0; ok && j < n; j++)
        ok = (out[3 + k + j] = j == 0 ? cgroup_resolve(argv[0]) : strdup(argv[j])) != NULL;
    if (!ok) {
        for (size_t j = 0; j < total; j++)
            free(out[j]);
        free(out);
        return NULL;
    }
    *n_added = 3 + k;
    return out;
}
