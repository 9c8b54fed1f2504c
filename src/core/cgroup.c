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
 * SIGKILL every pid listed, thaw so the signals are taken. */
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

struct sk_cgroup {
    char *path;
    sk_cgroup *parent;   /* referenced; NULL for a sandbox's */
    int refs;            /* the owner's + one per live child */
    bool gone;           /* destroyed: the directory no longer exists */
    char *spare[CGROUP_SPARES];
    int n_spare;
};

static pthread_mutex_t cgroup_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t cgroup_owner;   /* the process the probe below belongs to */
static int cgroup_version;   /* 0: none */
static char *cgroup_base;    /* <own cgroup>/sandkit-<pid> */
static unsigned long cgroup_seq;
static bool cgroup_hooked;

static void cgroup_pause_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static int cgroup_write(const char *dir, const char *file, const char *text)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, file) >= (int)sizeof path)
        return -1;
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t n = strlen(text);
    ssize_t w;
    do
        w = write(fd, text, n);
    while (w < 0 && errno == EINTR);
    close(fd);
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

static bool cgroup_has_token(const char *list, const char *token)
{
    size_t n = strlen(token);
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, token, n) == 0)
            return true;
        p = end ? end + 1 : NULL;
    }
    return false;
}

/* The mount point and mount root of the v2 hierarchy or the v1 freezer. */
static int cgroup_find_mount(int version, char *mnt, char *root, size_t cap)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return -1;
    char *line = NULL;
    size_t len = 0;
    int rc = -1;
    while (rc != 0 && getline(&line, &len, f) > 0) {
        char *save = NULL, *fields[6] = { 0 };
        char *t = strtok_r(line, " \n", &save);
        int i = 0;
        while (t && i < 6) {
            fields[i++] = t;
            t = strtok_r(NULL, " \n", &save);
        }
        if (i < 6)
            continue;
        while (t && strcmp(t, "-") != 0) /* optional fields end at "-" */
            t = strtok_r(NULL, " \n", &save);
        char *fstype = t ? strtok_r(NULL, " \n", &save) : NULL;
        char *source = fstype ? strtok_r(NULL, " \n", &save) : NULL;
        char *super = source ? strtok_r(NULL, " \n", &save) : NULL;
        if (!fstype)
            continue;
        bool match = version == CGROUP_V2 ? strcmp(fstype, "cgroup2") == 0
                                          : strcmp(fstype, "cgroup") == 0 && super &&
                                                cgroup_has_token(super, "freezer");
        if (!match || strlen(fields[4]) >= cap || strlen(fields[3]) >= cap)
            continue;
        strcpy(mnt, fields[4]);
        strcpy(root, fields[3]);
        cgroup_unescape(mnt);
        cgroup_unescape(root);
        rc = 0;
    }
    free(line);
    fclose(f);
    return rc;
}

/* This process's cgroup in the hierarchy, from /proc/self/cgroup. */
static int cgroup_own_path(int version, char *out, size_t cap)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f)
        return -1;
    char *line = NULL;
    size_t len = 0;
    int rc = -1;
    while (rc != 0 && getline(&line, &len, f) > 0) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c1 = *c2 = '\0';
        const char *controllers = c1 + 1;
        bool match = version == CGROUP_V2 ? strcmp(line, "0") == 0 && !*controllers
                                          : cgroup_has_token(controllers, "freezer");
        if (match && strlen(c2 + 1) < cap) {
            strcpy(out, c2 + 1);
            rc = 0;
        }
    }
    free(line);
    fclose(f);
    return rc;
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

/* Kill, then wait for the killed tasks to leave and remove the tree. */
static int cgroup_destroy_dir(int version, const char *dir, int wait_ms)
{
    cgroup_kill_dir(version, dir);
    double deadline = sk_now_ms() + wait_ms;
    for (;;) {
        if (cgroup_walk(dir, cgroup_rmdir, 0) == 0)
            return 0;
        if (sk_now_ms() >= deadline)
            return -1;
        /* a SIGKILLed task needs a moment to exit (freeing a large address
         * space first); it cannot run our code any more */
        cgroup_pause_ms(1);
    }
}

/* ---- the process's sandkit directory ------------------------------------ */

static void cgroup_at_exit(void)
{
    pthread_mutex_lock(&cgroup_lock);
    if (cgroup_base && cgroup_owner == getpid())
        cgroup_destroy_dir(cgroup_version, cgroup_base, CGROUP_EXIT_WAIT_MS);
    free(cgroup_base);
    cgroup_base = NULL;
    cgroup_version = 0;
    pthread_mutex_unlock(&cgroup_lock);
}

static char *cgroup_make_base(int version)
{
    char mnt[PATH_MAX], root[PATH_MAX], own[PATH_MAX];
    if (cgroup_find_mount(version, mnt, root, sizeof mnt) != 0 || cgroup_own_path(version, own, sizeof own) != 0)
        return NULL;
    /* inside a cgroup namespace the mount root and our path may share a
     * prefix that the mount point already stands for */
    const char *rel = own;
    size_t rl = strlen(root);
    if (strcmp(root, "/") != 0 && strncmp(own, root, rl) == 0 && (own[rl] == '/' || own[rl] == '\0'))
        rel = own + rl;
    /* a random part: a directory left by a killed process that had our
     * pid, or one of another PID namespace, is never ours to reuse */
    unsigned char rnd[4] = { 0 };
    if (sk_random_bytes(rnd, sizeof rnd) != 0)
        memcpy(rnd, &(unsigned){ (unsigned)sk_now_ms() }, sizeof rnd);
    char *base = NULL;
    if (asprintf(&base, "%s%s%ssandkit-%ld-%02x%02x%02x%02x", mnt, rel,
                 rel[0] && rel[strlen(rel) - 1] == '/' ? "" : "/", (long)getpid(), rnd[0], rnd[1], rnd[2],
                 rnd[3]) < 0)
        return NULL;
    if (mkdir(base, 0755) != 0) {
        free(base);
        return NULL;
    }
    /* usable only if we can put a task in it and kill it there */
    char probe[PATH_MAX];
    int ok = snprintf(probe, sizeof probe, "%s/%s", base, version == CGROUP_V2 ? "cgroup.kill" : "freezer.state") <
                 (int)sizeof probe &&
             access(probe, W_OK) == 0 &&
             snprintf(probe, sizeof probe, "%s/cgroup.procs", base) < (int)sizeof probe && access(probe, W_OK) == 0;
    if (!ok) {
        rmdir(base);
        free(base);
        return NULL;
    }
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

const char *sk_cgroup_backend(void)
{
    pthread_mutex_lock(&cgroup_lock);
    cgroup_probe();
    int v = cgroup_version;
    pthread_mutex_unlock(&cgroup_lock);
    return v == CGROUP_V2 ? "v2" : v == CGROUP_V1 ? "v1" : NULL;
}

/* ---- cgroups ------------------------------------------------------------ */

sk_cgroup *sk_cgroup_new(sk_cgroup *parent)
{
    if (parent && parent->gone)
        return NULL;
    sk_cgroup *cg = calloc(1, sizeof *cg);
    if (!cg)
        return NULL;
    cg->refs = 1;
    if (parent && parent->n_spare) {
        cg->path = parent->spare[--parent->n_spare];
        cg->parent = parent;
        parent->refs++;
        return cg;
    }
    pthread_mutex_lock(&cgroup_lock);
    cgroup_probe();
    char *path = NULL;
    if (cgroup_base) {
        unsigned long n = ++cgroup_seq;
        if (asprintf(&path, "%s/%c%lu", parent ? parent->path : cgroup_base, parent ? 'c' : 's', n) < 0)
            path = NULL;
    }
    pthread_mutex_unlock(&cgroup_lock);
    if (!path || mkdir(path, 0755) != 0) {
        free(cg);
        free(path);
        return NULL;
    }
    cg->path = path;
    cg->parent = parent;
    if (parent)
        parent->refs++;
    return cg;
}

static void cgroup_unref(sk_cgroup *cg)
{
    if (!cg || --cg->refs > 0)
        return;
    cgroup_unref(cg->parent);
    for (int i = 0; i < cg->n_spare; i++)
        free(cg->spare[i]);
    free(cg->path);
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

const char *sk_cgroup_path(const sk_cgroup *cg) { return cg->path; }

static int cgroup_version_now(void)
{
    pthread_mutex_lock(&cgroup_lock);
    int v = cgroup_owner == getpid() ? cgroup_version : 0;
    pthread_mutex_unlock(&cgroup_lock);
    return v;
}

int sk_cgroup_kill(sk_cgroup *cg) { return sk_cgroup_signal(cg, SIGKILL); }

int sk_cgroup_signal(sk_cgroup *cg, int sig)
{
    int v = cg ? cgroup_version_now() : 0;
    if (!v)
        return -1;
    return sig == SIGKILL ? cgroup_kill_dir(v, cg->path) : cgroup_walk(cg->path, cgroup_signal_listed, sig);
}

/* A tree with nothing alive in it needs no kill and no walk: rmdir of a
 * cgroup fails (EBUSY) while a process or a child cgroup is in it, so
 * removing the spare command cgroups, then cg, succeeds exactly when the
 * tree was empty. 0, or -1 with whatever is left for the kill and walk. */
static int cgroup_remove_empty(sk_cgroup *cg)
{
    while (cg->n_spare > 0) {
        char *spare = cg->spare[cg->n_spare - 1];
        if (rmdir(spare) != 0 && errno != ENOENT)
            return -1;
        free(spare);
        cg->n_spare--;
    }
    return rmdir(cg->path) == 0 || errno == ENOENT ? 0 : -1;
}

int sk_cgroup_destroy(sk_cgroup *cg, int wait_ms)
{
    if (!cg)
        return 0;
    int v = cgroup_version_now();
    int rc = !v ? -1 : cgroup_remove_empty(cg) == 0 ? 0 : cgroup_destroy_dir(v, cg->path, wait_ms);
    cg->gone = true;
    cgroup_unref(cg); /* live children keep the struct until they go */
    return rc;
}

void sk_cgroup_release(sk_cgroup *cg)
{
    if (!cg)
        return;
    sk_cgroup *parent = cg->parent;
    if (parent && !parent->gone && parent->n_spare < CGROUP_SPARES && cgroup_empty(cgroup_version_now(), cg->path)) {
        parent->spare[parent->n_spare++] = cg->path;
        cg->path = NULL;
    } else if (!parent || !parent->gone) {
        rmdir(cg->path); /* EBUSY: a daemon lives on in it until the sandbox goes */
    }
    cgroup_unref(cg);
}

char *sk_cgroup_enter_script(const sk_cgroup *cg, const char *script)
{
    sk_buf b = { 0 };
    char *procs = NULL;
    if (asprintf(&procs, "%s/cgroup.procs", cg->path) < 0)
        return NULL;
    int rc = sk_buf_append(&b, "echo $$ >", 9);
    if (!rc)
        rc = sk_shell_quote(&b, procs, strlen(procs));
    if (!rc)
        rc = sk_buf_append(&b, " || exit 125; ", 14);
    if (!rc)
        rc = sk_buf_append(&b, script, strlen(script));
    free(procs);
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

char **sk_cgroup_enter_argv(const sk_cgroup *cg, char *const argv[])
{
    size_t n = 0;
    while (argv[n])
        n++;
    char **out = calloc(n + 5, sizeof *out);
    if (!out)
        return NULL;
    out[0] = strdup("/bin/sh");
    out[1] = strdup("-c");
    out[2] = strdup("echo $$ >\"$0\" || exit 125; exec \"$@\"");
    if (asprintf(&out[3], "%s/cgroup.procs", cg->path) < 0)
        out[3] = NULL;
    bool ok = out[0] && out[1] && out[2] && out[3];
    for (size_t i = 0; ok && i < n; i++)
        ok = (out[4 + i] = i == 0 ? cgroup_resolve(argv[0]) : strdup(argv[i])) != NULL;
    if (!ok) {
        for (size_t i = 0; i < n + 4; i++)
            free(out[i]);
        free(out);
        return NULL;
    }
    return out;
}
