/* LocalSandbox: commands as local processes, optionally under bubblewrap.
 * Each command runs in its own process group (session) so a timeout or kill
 * reaches its whole tree. Under bwrap the sandbox gets a private /tmp that
 * lives as long as the sandbox (upstream mounts a fresh tmpfs per command,
 * which loses files between commands), and the root is remounted read-only
 * (upstream leaves bwrap's tmpfs root writable).
 *
 * Against the sandboxed code (docs/security.md §"LocalSandbox"): a root
 * caller's commands run as an unprivileged user (bwrap started through
 * setpriv, so it builds its own user namespace); every bind is made from a
 * descriptor opened at the first start, so no later symlink swap redirects
 * it; each command gets a fresh session keyring; and the private /tmp is
 * removed only once every process of the sandbox is gone. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../buf.h"
#include "../../cgroup.h"
#include "../../compat.h"
#include "../../fs_local.h"
#include "../../proc.h"
#include "../../provider.h"
#include "local_fs.h"
#include "local_state.h"

/* Default sandbox user for a root caller: nobody/nogroup, present on every
 * Linux system, owning no files and no login. */
enum { LOCAL_DEFAULT_UID = 65534 };
/* How long destroy waits for the killed processes before it reports them. */
enum { LOCAL_REAP_TIMEOUT_MS = 10000 };


/* How long destroy waits for killed processes to leave the cgroup. */
enum { LOCAL_CGROUP_WAIT_MS = 2000 };

/* Processes and threads a sandbox may have at once where cgroups allow a
 * limit and the option pids_limit is absent: a fork storm stays inside,
 * while 1,000 commands in flight (bench/scale.lua), each a shell (three
 * tasks under bwrap), and thread-heavy runtimes fit. */
enum { LOCAL_DEFAULT_PIDS_LIMIT = 4096 };
/* Docker's bounds for the same options. */
#define LOCAL_MIN_MEMORY ((int64_t)6 * 1024 * 1024)
enum { LOCAL_MIN_CPU_US = 1000, LOCAL_MAX_CPU_PERIOD_US = 1000000 };

static char *local_path_join(const char *a, const char *b)
{
    char *out = NULL;
    size_t n = strlen(a);
    if (asprintf(&out, "%s%s%s", a, (n && a[n - 1] == '/') ? "" : "/", b) < 0)
        return NULL;
    return out;
}

/* Absolute path without touching the filesystem: ~ expanded, relative
 * paths joined to the process's cwd, "." and ".." segments folded. */
static char *local_absolute(const char *path)
{
    char *joined = NULL;
    if (path[0] == '~' && (path[1] == '/' || path[1] == '\0')) {
        const char *home = getenv("HOME");
        joined = local_path_join(home ? home : "/", path[1] ? path + 2 : "");
    } else if (path[0] == '/') {
        joined = strdup(path);
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd))
            return NULL;
        joined = local_path_join(cwd, path);
    }
    if (!joined)
        return NULL;
    /* fold segments in place */
    char *out = malloc(strlen(joined) + 2);
    if (!out) {
        free(joined);
        return NULL;
    }
    size_t o = 0;
    char *save = NULL;
    for (char *seg = strtok_r(joined, "/", &save); seg; seg = strtok_r(NULL, "/", &save)) {
        if (strcmp(seg, ".") == 0)
            continue;
        if (strcmp(seg, "..") == 0) {
            while (o > 0 && out[o - 1] != '/')
                o--;
            if (o > 0)
                o--;
            continue;
        }
        out[o++] = '/';
        size_t n = strlen(seg);
        memcpy(out + o, seg, n);
        o += n;
    }
    if (o == 0)
        out[o++] = '/';
    out[o] = '\0';
    free(joined);
    return out;
}

static void local_free_list(char **list)
{
    for (char **p = list; p && *p; p++)
        free(*p);
    free(list);
}

/* NULL-terminated copy of a JSON string array; absolute folds each entry as a path. */
static char **local_json_list(const json_t *arr, bool absolute)
{
    size_t n = json_is_array(arr) ? json_array_size(arr) : 0;
    char **list = calloc(n + 1, sizeof *list);
    if (!list)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(arr, i));
        if (!s)
            s = "";
        if (!(list[i] = absolute ? local_absolute(s) : strdup(s))) {
            local_free_list(list);
            return NULL;
        }
    }
    return list;
}

/* ---- the private /tmp, and os.exit -----------------------------------------
 * A script that ends with os.exit skips every finalizer. Sandboxes with a
 * private /tmp are listed here, and an atexit handler kills what is left of
 * their processes, waits for them, and removes each /tmp. Under a lock as
 * Lua states may live in different threads; a fork's copy is not ours. */
static pthread_mutex_t local_live_lock = PTHREAD_MUTEX_INITIALIZER;
static local_sandbox *local_live;
static pid_t local_live_owner;
static bool local_live_hooked;

/* ---- removal off the loop ---------------------------------------------------
 * A private /tmp may hold hundreds of thousands of files (seconds to
 * remove), so it is removed on libuv's thread pool while the loop runs on.
 * The job owns a copy of the path; the sandbox may be freed meanwhile
 * (ls NULL: nobody is told). Listed for the exit handler, which waits for
 * a job in flight and removes what is left (os.exit while a destroy
 * runs). Under local_live_lock: the list, `finished`, `rc`, ls->removing. */
struct local_rm_job {
    sk_work work;
    char *path;
    int rc;                  /* the removal's errno; 0: gone */
    bool finished;           /* the pool thread is done with it */
    local_sandbox *ls;       /* NULL once detached */
    sk_provider_done done;   /* destroy's, or NULL (a freed sandbox's /tmp) */
    struct local_rm_job *next;
};
static local_rm_job *local_removals;
static pthread_cond_t local_removal_done = PTHREAD_COND_INITIALIZER;

/* Any signal may end a command (bwrap dies of SIGTERM and its PID
 * namespace with it), so its processes are listed first: once the group's
 * leader is reaped they are no longer ours to find. */
static int local_signal_group(local_sandbox *ls, sk_proc *proc, int sig)
{
    sk_local_pidfds_prune(&ls->dying);
    sk_local_pidfds_add_group(&ls->dying, sk_proc_pid(proc));
    return sk_proc_kill(proc, sig);
}

static void local_kill_group(local_sandbox *ls, sk_proc *proc) { local_signal_group(ls, proc, SIGKILL); }

static void local_live_cleanup(void)
{
    pthread_mutex_lock(&local_live_lock);
    if (local_live_owner == getpid()) {
        for (local_sandbox *ls = local_live; ls; ls = ls->next_live)
            for (sk_process *p = ls->sb->procs; p; p = p->next)
                if (p->impl && sk_proc_running(p->impl))
                    local_kill_group(ls, p->impl);
        /* one budget for all: exit must not wait 10 s per sandbox */
        double deadline = sk_now_ms() + LOCAL_REAP_TIMEOUT_MS;
        for (local_sandbox *ls = local_live; ls; ls = ls->next_live) {
            if (ls->removing)
                continue; /* its job, below */
            double left = deadline - sk_now_ms();
            sk_local_pidfds_wait(&ls->dying, left > 0 ? (int)left : 0);
            sk_local_rm_tree(ls->tmpdir);
            sk_local_remove_relays(ls);
        }
        /* a removal in flight finishes (the pool thread lives until exit
         * is done), then whatever it could not take is tried again */
        for (local_rm_job *j = local_removals; j; j = j->next) {
            while (!j->finished)
                pthread_cond_wait(&local_removal_done, &local_live_lock);
            if (j->rc != 0)
                sk_local_rm_tree(j->path);
        }
    }
    local_live = NULL;
    local_removals = NULL;
    pthread_mutex_unlock(&local_live_lock);
}

/* Under local_live_lock, before adding to the lists. */
static void local_live_claim(void)
{
    if (local_live_owner != getpid()) {
        local_live = NULL;     /* a fork's copy: not ours */
        local_removals = NULL; /* nor are its pool threads */
        local_live_owner = getpid();
    }
    if (!local_live_hooked)
        local_live_hooked = atexit(local_live_cleanup) == 0;
}

static void local_live_add(local_sandbox *ls)
{
    pthread_mutex_lock(&local_live_lock);
    local_live_claim();
    ls->next_live = local_live;
    local_live = ls;
    pthread_mutex_unlock(&local_live_lock);
}

static void local_live_remove(local_sandbox *ls)
{
    pthread_mutex_lock(&local_live_lock);
    for (local_sandbox **pp = &local_live; *pp; pp = &(*pp)->next_live) {
        if (*pp == ls) {
            *pp = ls->next_live;
            break;
        }
    }
    ls->next_live = NULL;
    pthread_mutex_unlock(&local_live_lock);
}

static void local_rm_job_run(sk_work *w)
{
    local_rm_job *j = (local_rm_job *)w;
    int rc = sk_local_rm_tree(j->path);
    pthread_mutex_lock(&local_live_lock);
    j->rc = rc;
    j->finished = true;
    pthread_cond_broadcast(&local_removal_done);
    pthread_mutex_unlock(&local_live_lock);
}

static void local_rm_job_done(sk_work *w)
{
    local_rm_job *j = (local_rm_job *)w;
    pthread_mutex_lock(&local_live_lock);
    for (local_rm_job **pp = &local_removals; *pp; pp = &(*pp)->next) {
        if (*pp == j) {
            *pp = j->next;
            break;
        }
    }
    local_sandbox *ls = j->ls;
    if (ls)
        ls->removing = NULL;
    pthread_mutex_unlock(&local_live_lock);
    if (ls) {
        sk_error *err = NULL;
        if (j->rc == 0) {
            local_live_remove(ls);
            if (ls->tmp_fd >= 0)
                close(ls->tmp_fd);
            ls->tmp_fd = -1;
            free(ls->tmpdir);
            ls->tmpdir = NULL;
            sk_local_unpin(ls);
        } else {
            err = sk_error_new(SK_ERR_SANDBOX, json_pack("{s:s}", "path", j->path),
                               "Cannot remove the sandbox's /tmp (%s) completely: %s", j->path,
                               strerror(j->rc));
        }
        j->done(ls->sb, err);
    }
    free(j->path);
    free(j);
}

/* Queues the removal of path; ls (NULL: nobody waits) is told through done
 * once it is over. -1 on ENOMEM (nothing queued). */
static int local_rm_start(sk_loop *loop, local_sandbox *ls, const char *path, sk_provider_done done)
{
    local_rm_job *j = calloc(1, sizeof *j);
    if (!j || !(j->path = strdup(path))) {
        free(j);
        return -1;
    }
    j->ls = ls;
    j->done = done;
    pthread_mutex_lock(&local_live_lock);
    local_live_claim();
    j->next = local_removals;
    local_removals = j;
    if (ls)
        ls->removing = j;
    pthread_mutex_unlock(&local_live_lock);
    /* uv_queue_work fails only for a missing callback */
    (void)sk_work_queue(loop, &j->work, local_rm_job_run, local_rm_job_done);
    return 0;
}

/* The sandbox goes while its /tmp is being removed: the job finishes
 * alone. Whether one was in flight. */
static bool local_rm_detach(local_sandbox *ls)
{
    pthread_mutex_lock(&local_live_lock);
    bool in_flight = ls->removing != NULL;
    if (in_flight)
        ls->removing->ls = NULL;
    ls->removing = NULL;
    pthread_mutex_unlock(&local_live_lock);
    return in_flight;
}

/* ---- the cgroup off the loop -----------------------------------------------
 * Removing a sandbox's cgroup directories waits until its killed processes
 * have left them (seconds with thousands of processes): on the thread
 * pool too. The kill itself is sent before destroy goes on. */
struct local_cg_job {
    sk_work work;
    sk_cgroup_dirs *dirs;
    local_sandbox *ls;       /* NULL once detached; read on the loop thread only */
    sk_provider_done done;
};

static void local_destroy_wait_procs(local_sandbox *ls, sk_provider_done done);

static void local_cg_job_run(sk_work *w)
{
    local_cg_job *j = (local_cg_job *)w;
    sk_cgroup_remove(j->dirs, LOCAL_CGROUP_WAIT_MS); /* what stays is swept at exit */
    j->dirs = NULL;
}

static void local_cg_job_done(sk_work *w)
{
    local_cg_job *j = (local_cg_job *)w;
    local_sandbox *ls = j->ls;
    if (ls) {
        ls->cg_removing = NULL;
        local_destroy_wait_procs(ls, j->done);
    }
    free(j);
}

/* Kills what is left in cg and removes it off the loop; ls (NULL: nobody)
 * then goes on with its destroy. false when there was nothing to wait
 * for (the tree was empty, or no memory: removed here). */
static bool local_cg_remove(sk_loop *loop, sk_cgroup *cg, local_sandbox *ls, sk_provider_done done)
{
    sk_cgroup_dirs *dirs = sk_cgroup_retire(cg);
    if (!dirs)
        return false;
    local_cg_job *j = calloc(1, sizeof *j);
    if (!j) {
        sk_cgroup_remove(dirs, LOCAL_CGROUP_WAIT_MS);
        return false;
    }
    j->dirs = dirs;
    j->ls = ls;
    j->done = done;
    if (ls)
        ls->cg_removing = j;
    (void)sk_work_queue(loop, &j->work, local_cg_job_run, local_cg_job_done);
    return true;
}

static void local_destroy_detach(local_sandbox *ls);

static void local_free(sk_sandbox *sb)
{
    local_sandbox *ls = sb->impl;
    if (!ls)
        return;
    local_destroy_detach(ls);
    bool removing = local_rm_detach(ls);
    if (ls->cg_removing)
        ls->cg_removing->ls = NULL;
    local_live_remove(ls);
    local_cg_remove(sb->loop, ls->cgroup, NULL, NULL);
    if (ls->tmpdir) {
        /* the sandbox has killed its processes: wait for them, then clean
         * (off the loop; a job in flight for it already does) */
        sk_local_pidfds_wait(&ls->dying, LOCAL_REAP_TIMEOUT_MS);
        if (!removing && local_rm_start(sb->loop, NULL, ls->tmpdir, NULL) != 0)
            sk_local_rm_tree(ls->tmpdir);
        free(ls->tmpdir);
    }
    if (ls->tmp_fd >= 0)
        close(ls->tmp_fd);
    sk_local_unpin(ls);
    sk_local_pidfds_free(&ls->dying);
    free(ls->workdir);
    free(ls->bwrap_exe);
    free(ls->setpriv_exe);
    free(ls->unshare_exe);
    free(ls->mount_exe);
    local_free_list(ls->ro_paths);
    local_free_list(ls->rw_paths);
    local_free_list(ls->inherit);
    free(ls);
    sb->impl = NULL;
}

static sk_error *local_config_error(const char *key, const char *detail)
{
    return sk_error_new(SK_ERR_CONFIG, json_pack("{s:s,s:s}", "provider", "local", "key", key),
                        "LocalSandbox option '%s' %s", key, detail);
}

/* The `user` option: a uid or a user name, never root; its gid is the
 * user's primary group (the uid's number when it has no passwd entry). */
static int local_resolve_user(local_sandbox *ls, const json_t *user, sk_error **err)
{
    uid_t uid = LOCAL_DEFAULT_UID;
    char buf[4096];
    struct passwd pwd, *pw = NULL;
    if (user && json_is_number(user)) {
        double v = json_number_value(user);
        if (v != (double)(long long)v || v < 0 || v > 4294967294.0) {
            *err = local_config_error("user", "must be a uid from 1 to 4294967294 or a user name");
            return -1;
        }
        uid = (uid_t)v;
    } else if (user && json_is_string(user)) {
        const char *name = json_string_value(user);
        if (getpwnam_r(name, &pwd, buf, sizeof buf, &pw) != 0 || !pw) {
            char *msg = NULL;
            int n = asprintf(&msg, "names no user on this system (got \"%.64s\")", name);
            *err = local_config_error("user", n < 0 ? "names no user on this system" : msg);
            free(msg);
            return -1;
        }
        uid = pw->pw_uid;
    } else if (user) {
        *err = local_config_error("user", "must be a uid (integer) or a user name (string)");
        return -1;
    }
    if (uid == 0) {
        *err = local_config_error("user", "must not be root: sandboxed commands never run as host root");
        return -1;
    }
    if (!pw && (getpwuid_r(uid, &pwd, buf, sizeof buf, &pw) != 0))
        pw = NULL;
    ls->uid = uid;
    ls->gid = pw ? pw->pw_gid : (gid_t)uid;
    if (ls->gid == 0) {
        *err = local_config_error("user", "names a user whose primary group is root (gid 0)");
        return -1;
    }
    return 0;
}

/* ---- resource limits ------------------------------------------------------- */

static bool local_has_limits(const sk_cgroup_limits *l)
{
    return l->memory > 0 || l->pids > 0 || l->cpu_quota > 0 || l->cpu_period > 0;
}

static const char *const local_limit_keys[SK_CGROUP_NCTL] = { "memory", "pids_limit", "cpu_quota" };

/* A whole-number option in [min, max]; absent leaves *out as it is. */
static int local_whole_option(const json_t *o, const char *key, int64_t min, int64_t max, const char *range,
                              int64_t *out, bool *given, sk_error **err)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    double d = json_number_value(v);
    if (!json_is_number(v) || d != (double)(int64_t)d || d < (double)min || d > (double)max) {
        *err = local_config_error(key, range);
        return -1;
    }
    *out = (int64_t)d;
    *given = true;
    return 0;
}

/* memory, pids_limit, cpu_quota, cpu_period (Docker's names and bounds). */
static int local_parse_limits(local_sandbox *ls, const json_t *o, sk_error **err)
{
    sk_cgroup_limits *l = &ls->limits;
    bool mem = false, pids = false, quota = false, period = false;
    l->pids = LOCAL_DEFAULT_PIDS_LIMIT;
    if (local_whole_option(o, "memory", LOCAL_MIN_MEMORY, INT64_C(1) << 53,
                           "must be a whole number of bytes, at least 6291456 (6 MiB)", &l->memory, &mem, err) ||
        local_whole_option(o, "pids_limit", -1, INT32_MAX,
                           "must be a whole number of processes, at least 1 (0 or -1: no limit)", &l->pids, &pids,
                           err) ||
        local_whole_option(o, "cpu_quota", LOCAL_MIN_CPU_US, INT64_C(1) << 53,
                           "must be a whole number of microseconds, at least 1000", &l->cpu_quota, &quota, err) ||
        local_whole_option(o, "cpu_period", LOCAL_MIN_CPU_US, LOCAL_MAX_CPU_PERIOD_US,
                           "must be a whole number of microseconds from 1000 to 1000000", &l->cpu_period, &period,
                           err))
        return -1;
    if (l->pids <= 0) { /* turned off */
        l->pids = 0;
        pids = false;
    }
    ls->limits_given = (mem ? 1u << SK_CGROUP_MEMORY : 0) | (pids ? 1u << SK_CGROUP_PIDS : 0) |
                       (quota || period ? 1u << SK_CGROUP_CPU : 0);
    return 0;
}

static bool local_limit_set(const sk_cgroup_limits *l, sk_cgroup_ctl c)
{
    return c == SK_CGROUP_MEMORY ? l->memory > 0 : c == SK_CGROUP_PIDS ? l->pids > 0
                                                                       : l->cpu_quota > 0 || l->cpu_period > 0;
}

static void local_limit_clear(sk_cgroup_limits *l, sk_cgroup_ctl c)
{
    if (c == SK_CGROUP_MEMORY)
        l->memory = 0;
    else if (c == SK_CGROUP_PIDS)
        l->pids = 0;
    else
        l->cpu_quota = l->cpu_period = 0;
}

/* The sandbox's cgroup with its limits. A limit given as an option that
 * cannot be enforced here fails start; the default process limit is
 * dropped where it cannot be (not root, no cgroups); without any limit
 * the cgroup is best effort, as for killing alone. */
static sk_error *local_make_cgroup(local_sandbox *ls)
{
    sk_cgroup_limits lim = ls->limits;
    for (int c = 0; c < SK_CGROUP_NCTL; c++) {
        const char *why = local_limit_set(&lim, c) ? sk_cgroup_unlimitable(c) : NULL;
        if (!why)
            continue;
        if (ls->limits_given & (1u << c))
            return sk_error_new(SK_ERR_ISOLATION_UNAVAILABLE,
                                json_pack("{s:s,s:s,s:s}", "provider", "local", "key", local_limit_keys[c],
                                          "backend", "cgroup"),
                                "LocalSandbox option '%s' cannot be enforced on this machine: %s",
                                local_limit_keys[c], why);
        local_limit_clear(&lim, c);
    }
    int e = 0;
    ls->cgroup = sk_cgroup_new(NULL, &lim, &e);
    if (!ls->cgroup && ls->limits_given) {
        int c = 0;
        while (!(ls->limits_given & (1u << c)))
            c++;
        return sk_error_new(SK_ERR_ISOLATION_UNAVAILABLE,
                            json_pack("{s:s,s:s,s:s}", "provider", "local", "key", local_limit_keys[c], "backend",
                                      "cgroup"),
                            "LocalSandbox option '%s' cannot be enforced: the sandbox's cgroup could not be made "
                            "with its limits (%s)", local_limit_keys[c], e ? strerror(e) : "no cgroups here");
    }
    if (!ls->cgroup && local_has_limits(&lim))
        ls->cgroup = sk_cgroup_new(NULL, NULL, &e); /* the default limit alone failed: kill only */
    else if (ls->cgroup)
        ls->enforced = lim;
    if (ls->enforced.cpu_quota > 0 && !ls->enforced.cpu_period)
        ls->enforced.cpu_period = 100000; /* written with the quota (cgroup.c) */
    return NULL;
}

static int local_init(sk_sandbox *sb, const json_t *o, sk_error **err)
{
    local_sandbox *ls = calloc(1, sizeof *ls);
    if (!ls)
        goto oom;
    sb->impl = ls;
    ls->sb = sb;
    ls->wd_fd = ls->tmp_fd = -1;
    const char *wd = json_string_value(json_object_get(o, "working_directory"));
    if (wd && !*wd) {
        *err = sk_error_new(SK_ERR_CONFIG, json_pack("{s:s,s:s}", "provider", "local", "key", "working_directory"),
                            "LocalSandbox option 'working_directory' must not be empty");
        return -1;
    }
    ls->workdir = local_absolute(wd ? wd : "./.sandbox");
    if (!ls->workdir)
        goto oom;
    const char *iso = json_string_value(json_object_get(o, "isolation"));
    if (iso && strcmp(iso, "none") != 0 && strcmp(iso, "bwrap") != 0) {
        *err = sk_error_new(SK_ERR_CONFIG, json_pack("{s:s,s:s}", "provider", "local", "key", "isolation"),
                            "LocalSandbox option 'isolation' must be \"none\" or \"bwrap\" (got \"%s\")", iso);
        return -1;
    }
    ls->bwrap = iso && strcmp(iso, "bwrap") == 0;
    const json_t *user = json_object_get(o, "user");
    if (user && !ls->bwrap) {
        *err = local_config_error("user", "needs isolation = \"bwrap\" (with \"none\" commands run as "
                                          "the calling user, unchanged)");
        return -1;
    }
    if (ls->bwrap && local_resolve_user(ls, user, err) != 0)
        return -1;
    /* bwrap run by root would keep the command root on the host; anyone
     * else's bwrap maps the caller's own uid */
    ls->drop_ids = ls->bwrap && geteuid() == 0;
    if (ls->bwrap && !ls->drop_ids && user && ls->uid != geteuid()) {
        *err = local_config_error("user", "needs a root caller: bubblewrap runs the commands of a "
                                          "non-root caller as that caller");
        return -1;
    }
    ls->allow_network = json_is_true(json_object_get(o, "allow_network"));
    ls->ro_paths = local_json_list(json_object_get(o, "read_only_paths"), true);
    ls->rw_paths = local_json_list(json_object_get(o, "read_write_paths"), true);
    ls->inherit = local_json_list(json_object_get(o, "inherit_env"), false);
    if (!ls->ro_paths || !ls->rw_paths || !ls->inherit)
        goto oom;
    if (local_parse_limits(ls, o, err) != 0)
        return -1;
    struct stat exe_st;
    if (ls->bwrap && (ls->bwrap_exe = sk_find_executable("bwrap")))
        ls->bwrap_setuid = stat(ls->bwrap_exe, &exe_st) == 0 && (exe_st.st_mode & S_ISUID);
    if (ls->drop_ids)
        ls->setpriv_exe = sk_find_executable("setpriv");
    if (ls->bwrap && !ls->bwrap_exe) {
        *err = sk_error_new(SK_ERR_ISOLATION_UNAVAILABLE, json_pack("{s:s}", "backend", "bwrap"),
                            "bubblewrap (bwrap) is not installed; install it with: "
                            "apt-get install bubblewrap (or: dnf install bubblewrap)");
        return -1;
    }
    if (ls->drop_ids && !ls->setpriv_exe) {
        *err = sk_error_new(SK_ERR_ISOLATION_UNAVAILABLE, json_pack("{s:s}", "backend", "bwrap"),
                            "setpriv (util-linux) is needed to run bubblewrap as an unprivileged user; "
                            "install it with: apt-get install util-linux");
        return -1;
    }
    return 0;
oom:
    *err = sk_error_oom();
    return -1;
}

static sk_error *local_make_tmpdir(local_sandbox *ls)
{
    char tmpl[] = "/tmp/sandkit-tmp-XXXXXX";
    if (!mkdtemp(tmpl))
        return sk_error_new(SK_ERR_SANDBOX, NULL, "Cannot create the sandbox's /tmp: %s", strerror(errno));
    int fd = open(tmpl, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || (ls->drop_ids && fchown(fd, ls->uid, ls->gid) != 0) || !(ls->tmpdir = strdup(tmpl))) {
        sk_error *err = sk_error_new(SK_ERR_SANDBOX, NULL, "Cannot prepare the sandbox's /tmp (%s): %s", tmpl,
                                     strerror(errno ? errno : ENOMEM));
        if (fd >= 0)
            close(fd);
        rmdir(tmpl);
        return err;
    }
    ls->tmp_fd = fd;
    local_live_add(ls);
    return NULL;
}

static void local_start(sk_sandbox *sb, sk_provider_done done)
{
    local_sandbox *ls = sb->impl;
    /* bwrap: the first start makes the directory as it resolves the path
     * (local_open_trusted), never through a planted symlink */
    int mk = ls->bwrap ? 0 : sk_fs_mkdir_p(ls->workdir, 0755);
    if (mk != 0) {
        done(sb, sk_error_new(SK_ERR_SANDBOX, json_pack("{s:s}", "path", ls->workdir),
                              "Cannot create working directory %s: %s", ls->workdir, strerror(-mk)));
        return;
    }
    sk_error *err = NULL;
    /* sb.fs's view (local_fs.h) follows what is pinned from now on */
    bool repin = ls->bwrap && (!ls->pinned || !ls->tmpdir);
    if (!ls->bwrap)
        err = sk_local_check_paths(ls);
    else if (!ls->pinned)
        err = sk_local_pin(ls);
    if (!err && ls->bwrap && !ls->tmpdir)
        err = local_make_tmpdir(ls);
    if (!err && repin)
        ls->fs_gen++;
    if (!err && !ls->cgroup)
        err = local_make_cgroup(ls);
    done(sb, err);
}

static void local_stop(sk_sandbox *sb, sk_provider_done done)
{
    local_sandbox *ls = sb->impl;
    sk_cgroup_kill(ls->cgroup); /* daemons of finished commands too */
    done(sb, NULL);
}

/* ---- destroy: after the processes are gone ---------------------------------
 * The sandbox has sent SIGKILL to every command's group; destroy waits
 * until those are reaped and the processes listed at the kill (a bwrap
 * command's PID namespace among them) have exited, so nothing writes to
 * the private /tmp while it is removed. */
struct local_destroy_wait {
    uv_timer_t timer;
    local_sandbox *ls; /* NULL once detached */
    sk_provider_done done;
    double deadline;
};

static bool local_all_gone(local_sandbox *ls)
{
    for (sk_process *p = ls->sb->procs; p; p = p->next)
        if (p->started && !p->exited)
            return false;
    return sk_local_pidfds_prune(&ls->dying);
}

static void local_destroy_finish(local_sandbox *ls, sk_provider_done done, bool gone)
{
    if (!gone) {
        done(ls->sb, sk_error_new(SK_ERR_SANDBOX, json_pack("{s:s?}", "path", ls->tmpdir),
                                  "Processes of the sandbox were still running %d s after SIGKILL; "
                                  "its /tmp (%s) was left in place", LOCAL_REAP_TIMEOUT_MS / 1000,
                                  ls->tmpdir ? ls->tmpdir : "?"));
    } else if (ls->tmpdir) {
        /* done comes from the job, once the tree is gone */
        if (local_rm_start(ls->sb->loop, ls, ls->tmpdir, done) != 0)
            done(ls->sb, sk_error_oom());
    } else {
        sk_local_unpin(ls);
        done(ls->sb, NULL);
    }
}

static void local_destroy_timer_closed(uv_handle_t *h) { free(h->data); }

static void local_destroy_detach(local_sandbox *ls)
{
    local_destroy_wait *w = ls->destroying;
    if (!w)
        return;
    ls->destroying = NULL;
    w->ls = NULL;
    w->timer.data = w;
    uv_close((uv_handle_t *)&w->timer, local_destroy_timer_closed);
}

static void local_destroy_tick(uv_timer_t *t)
{
    local_destroy_wait *w = t->data;
    local_sandbox *ls = w->ls;
    if (!ls)
        return;
    bool gone = local_all_gone(ls);
    if (!gone && sk_now_ms() < w->deadline)
        return;
    sk_provider_done done = w->done;
    local_destroy_detach(ls);
    local_destroy_finish(ls, done, gone);
}

static void local_destroy(sk_sandbox *sb, sk_provider_done done)
{
    local_sandbox *ls = sb->impl;
    sk_cgroup *cg = ls->cgroup;
    ls->cgroup = NULL;
    memset(&ls->enforced, 0, sizeof ls->enforced);
    /* escaped descendants too (cgroup.h), before /tmp goes */
    if (!local_cg_remove(sb->loop, cg, ls, done))
        local_destroy_wait_procs(ls, done);
}

static void local_destroy_wait_procs(local_sandbox *ls, sk_provider_done done)
{
    sk_sandbox *sb = ls->sb;
    if (!ls->tmpdir || local_all_gone(ls)) {
        local_destroy_finish(ls, done, true);
        return;
    }
    local_destroy_wait *w = calloc(1, sizeof *w);
    if (!w) {
        done(sb, sk_error_oom());
        return;
    }
    w->ls = ls;
    w->done = done;
    w->deadline = sk_now_ms() + LOCAL_REAP_TIMEOUT_MS;
    w->timer.data = w;
    uv_timer_init(sk_loop_uv(sb->loop), &w->timer);
    sk_timer_arm(&w->timer, local_destroy_tick, 2, 5);
    ls->destroying = w;
}

/* ---- processes ---------------------------------------------------------- */

static void local_on_output(sk_proc *proc, int stream, const char *data, size_t len, void *ud)
{
    (void)proc;
    sk_process_output(ud, stream, data, len);
}

/* bwrap's init reports a command killed by signal N as exit status 128 + N
 * (it cannot die of the signal itself), so under bwrap such a status
 * counts as killed: a command that calls exit(128 + N) is reported killed
 * too (docs/security.md). */
enum { LOCAL_MAX_SIGNAL = 64 };

static void local_on_exit(sk_proc *proc, int64_t status, int term_signal, void *ud)
{
    sk_process *p = ud;
    local_sandbox *ls = p->sb ? p->sb->impl : NULL;
    sk_result r = { 0 };
    if (term_signal) {
        r.exit_code = 128 + term_signal;
        r.killed = true;
    } else {
        r.exit_code = (int)status;
        r.killed = ls && ls->bwrap && status > 128 && status <= 128 + LOCAL_MAX_SIGNAL;
    }
    /* the sandbox's memory limit: the kernel counted the kill in the command's cgroup */
    r.oom_killed = sk_cgroup_oom_kills(sk_proc_cgroup(proc)) > 0;
    sk_process_finish(p, &r, NULL);
}

static char *local_capture_slot(sk_proc *proc, int stream, size_t *len, void *ud)
{
    (void)proc;
    return sk_process_capture_slot(ud, stream, len);
}

static const sk_proc_callbacks local_proc_callbacks = {
    .output = local_on_output,
    .exit = local_on_exit,
    .buffer = local_capture_slot,
};

/* The host's "NAME=value" entry for name, or NULL (getenv's, whole). */
static const char *local_host_entry(const char *name)
{
    size_t len = strlen(name);
    for (char **e = sk_environ(); *e; e++)
        if (strncmp(*e, name, len) == 0 && (*e)[len] == '=')
            return *e;
    return NULL;
}

/* PATH (the host's unless set), the inherit_env variables the host has,
 * then the sandbox env merged with the command's, which win over both. */
static char **local_envp(sk_sandbox *sb, const json_t *per_command)
{
    local_sandbox *ls = sb->impl;
    json_t *env = sk_sandbox_merged_env(sb, per_command);
    if (!env)
        return NULL;
    size_t n_inherit = 0;
    while (ls->inherit[n_inherit])
        n_inherit++;
    const char **base = calloc(n_inherit + 2, sizeof *base);
    char **envp = NULL;
    if (!base)
        goto done;
    size_t i = 0;
    for (char **name = ls->inherit; *name; name++) {
        const char *entry = local_host_entry(*name);
        if (!entry || strcmp(*name, "PATH") == 0)
            continue;
        bool seen = false; /* a name listed twice is passed once */
        for (char **prev = ls->inherit; prev < name && !seen; prev++)
            seen = strcmp(*prev, *name) == 0;
        if (!seen)
            base[i++] = entry;
    }
    const char *path = local_host_entry("PATH");
    base[i] = path ? path : "PATH=/usr/local/bin:/usr/bin:/bin";
    envp = sk_envp_new(base, env);
done:
    free(base);
    json_decref(env);
    return envp;
}

static char *local_resolve_cwd(local_sandbox *ls, const char *cwd)
{
    if (!cwd)
        return strdup(ls->workdir);
    if (cwd[0] == '/' || cwd[0] == '~')
        return local_absolute(cwd);
    char *joined = local_path_join(ls->workdir, cwd);
    char *abs = joined ? local_absolute(joined) : NULL;
    free(joined);
    return abs;
}

typedef struct argv_builder {
    char **v;
    size_t n, cap;
    bool failed;
} argv_builder;

static void argv_push(argv_builder *a, const char *s)
{
    if (a->failed)
        return;
    if (a->n + 2 > a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        char **v = realloc(a->v, cap * sizeof *v);
        if (!v) {
            a->failed = true;
            return;
        }
        a->v = v;
        a->cap = cap;
    }
    if (!(a->v[a->n] = strdup(s))) {
        a->failed = true;
        return;
    }
    a->v[++a->n] = NULL;
}

static void argv_push3(argv_builder *a, const char *x, const char *y, const char *z)
{
    argv_push(a, x);
    argv_push(a, y);
    argv_push(a, z);
}

/* Descriptors the bwrap child keeps: keep[i] is its fd 3 + i. */
typedef struct local_keep {
    int *fds;
    int n;
} local_keep;

static void local_push_fd_bind(argv_builder *a, local_keep *k, const char *flag, int fd, const char *dest)
{
    char num[16];
    snprintf(num, sizeof num, "%d", 3 + k->n);
    k->fds[k->n++] = fd;
    argv_push3(a, flag, num, dest);
}

/* Run as root in a mount namespace of the command's own, in front of
 * setpriv: binds each relayed path onto its relay directory, checks that
 * what got there is the pinned directory (its descriptor, then closed, so
 * that the command never holds a way out of its binds), and runs the rest.
 * Arguments: mount, then (fd, path, relay) triples, then "--". */
static const char local_relay_script[] =
    "m=$1; shift\n"
    "while [ \"$1\" != -- ]; do\n"
    "  if ! \"$m\" --bind -- \"$2\" \"$3\" 2>/dev/null || ! [ \"/proc/self/fd/$1\" -ef \"$3\" ]; then\n"
    "    echo \"sandkit: $2 is not the directory the sandbox started with; refusing to run\" >&2\n"
    "    exit 125\n"
    "  fi\n"
    "  eval \"exec $1<&-\"; shift 3\n"
    "done\n"
    "shift; exec \"$@\"\n";

static void local_push_relays(argv_builder *a, const local_sandbox *ls)
{
    if (!ls->relay_dir)
        return;
    argv_push3(a, ls->unshare_exe, "--mount", "--propagation");
    argv_push3(a, "private", "--", "/bin/sh");
    argv_push3(a, "-c", local_relay_script, "sh");
    argv_push(a, ls->mount_exe);
    for (size_t i = 0; i < ls->n_binds; i++) {
        const local_bind *b = &ls->binds[i];
        if (!b->relay)
            continue;
        char num[16];
        snprintf(num, sizeof num, "%zu", 4 + i); /* local_bwrap_argv: /tmp is fd 3, then the binds */
        argv_push3(a, num, b->path, b->relay);
    }
    argv_push(a, "--");
}

/* The bubblewrap argv (docs/protocols/conformance.md §2), with the sandbox's own /tmp and
 * --chdir to the command's cwd instead of always the workspace; started
 * through setpriv for a root caller (bwrap then builds a user namespace
 * that maps only the sandbox user), behind the relay for binds that user
 * cannot reach. */
static void local_bwrap_argv(argv_builder *a, local_keep *k, local_sandbox *ls, const char *cwd,
                             const char *command)
{
    static const char *const system_ro[] = {
        "/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc/alternatives", "/etc/ssl",
        "/etc/ca-certificates", "/etc/resolv.conf", "/etc/hosts", "/etc/passwd", "/etc/group",
        "/etc/nsswitch.conf", "/etc/ld.so.cache", "/etc/localtime", NULL,
    };
    k->fds = malloc((1 + ls->n_binds) * sizeof *k->fds);
    k->n = 0;
    if (!k->fds) {
        a->failed = true;
        return;
    }
    local_push_relays(a, ls);
    if (ls->drop_ids) {
        char reuid[32], regid[32];
        snprintf(reuid, sizeof reuid, "--reuid=%u", (unsigned)ls->uid);
        snprintf(regid, sizeof regid, "--regid=%u", (unsigned)ls->gid);
        argv_push3(a, ls->setpriv_exe, reuid, regid);
        argv_push(a, "--clear-groups");
        argv_push(a, "--");
    }
    argv_push(a, ls->bwrap_exe);
    /* with no user namespace (a setuid bwrap), bwrap would keep a root
     * caller's capabilities for the command */
    argv_push(a, "--cap-drop");
    argv_push(a, "ALL");
    /* no user namespaces inside: a command could otherwise make its own
     * and hold CAP_SYS_ADMIN/CAP_NET_ADMIN over namespaces of its own
     * (netfilter, mounts), the kernel surface most escapes go through.
     * An unprivileged bwrap makes a user namespace anyway; a setuid one
     * may run where unprivileged user namespaces are off. */
    if (!ls->bwrap_setuid) {
        argv_push(a, "--unshare-user");
        argv_push(a, "--disable-userns");
    }
    argv_push(a, "--unshare-pid");
    argv_push(a, "--unshare-ipc");
    argv_push(a, "--unshare-uts");
    if (!ls->allow_network)
        argv_push(a, "--unshare-net");
    argv_push(a, "--proc");
    argv_push(a, "/proc");
    argv_push(a, "--dev");
    argv_push(a, "/dev");
    for (int i = 0; system_ro[i]; i++)
        argv_push3(a, "--ro-bind-try", system_ro[i], system_ro[i]);
    argv_push3(a, "--ro-bind-try", "/opt", "/opt");
    local_push_fd_bind(a, k, "--bind-fd", ls->tmp_fd, "/tmp");
    for (size_t i = 0; i < ls->n_binds; i++) {
        const local_bind *b = &ls->binds[i];
        if (b->relay) {
            k->fds[k->n++] = b->fd; /* for the relay's check, which closes it */
            argv_push3(a, b->ro ? "--ro-bind" : "--bind", b->relay, b->path);
        } else {
            local_push_fd_bind(a, k, b->ro ? "--ro-bind-fd" : "--bind-fd", b->fd, b->path);
        }
    }
    /* bwrap's root is a writable tmpfs; the binds above stay writable */
    argv_push(a, "--remount-ro");
    argv_push(a, "/");
    argv_push(a, "--chdir");
    argv_push(a, cwd);
    argv_push(a, "--die-with-parent");
    argv_push(a, "--");
    argv_push3(a, "/bin/sh", "-c", command);
}

/* A read-only path nested in a directory the sandbox can write is bound
 * from its pinned descriptor, but at its path, which a command may have
 * changed: renamed a parent away (the original, now elsewhere in the
 * writable directory, would be writable) or put a symlink in its place
 * (bwrap follows it for the destination). Before each command the path
 * must still lead, without a symlink below its writable ancestor, to the
 * pinned directory. (A command running meanwhile could still swap it
 * between this check and bwrap's mount: docs/security.md.) */
static bool local_bind_intact(const char *path, int fd, const char *writable)
{
    if (!sk_local_path_inside(path, writable))
        return true;
    char *rp = realpath(path, NULL), *rw = realpath(writable, NULL);
    size_t wl = strlen(writable), rl = rw ? strlen(rw) : 0;
    bool ok = rp && rw && strncmp(rp, rw, rl) == 0 && strcmp(rp + rl, path + wl) == 0;
    struct stat now, pinned;
    ok = ok && stat(rp, &now) == 0 && fstat(fd, &pinned) == 0 && now.st_dev == pinned.st_dev &&
         now.st_ino == pinned.st_ino;
    free(rp);
    free(rw);
    return ok;
}

static int local_check_binds(local_sandbox *ls, sk_error **err)
{
    struct stat st;
    if (fstat(ls->wd_fd, &st) == 0 && st.st_nlink == 0) {
        *err = sk_error_new(SK_ERR_SANDBOX, json_pack("{s:s}", "path", ls->workdir),
                            "Refusing to run the command: the working directory %s was removed after "
                            "the sandbox started", ls->workdir);
        return -1;
    }
    for (size_t i = 0; ls->ro_paths[i]; i++) {
        const char *s = ls->ro_paths[i];
        bool ok = local_bind_intact(s, ls->ro_fds[i], ls->workdir);
        for (char **w = ls->rw_paths; ok && *w; w++)
            ok = local_bind_intact(s, ls->ro_fds[i], *w);
        if (!ok) {
            *err = sk_error_new(SK_ERR_SANDBOX, json_pack("{s:s,s:s}", "key", "read_only_paths", "path", s),
                                "Refusing to run the command: read_only_paths entry %s, inside a writable "
                                "directory of the sandbox, has been moved or replaced by a symlink", s);
            return -1;
        }
    }
    return 0;
}

/* The child enters its command's cgroup before anything else runs
 * (cgroup.h): in front of our own `sh -c` script, or through a wrapper
 * around bwrap. -1 on ENOMEM. */
static int local_enter_cgroup(argv_builder *a, sk_cgroup *cg, bool bwrap)
{
    if (!bwrap) {
        char *script = sk_cgroup_enter_script(cg, a->v[2]);
        if (!script)
            return -1;
        free(a->v[2]);
        a->v[2] = script;
        return 0;
    }
    int added = 0;
    char **wrapped = sk_cgroup_enter_argv(cg, a->v, &added);
    if (!wrapped)
        return -1;
    for (size_t i = 0; i < a->n; i++)
        free(a->v[i]);
    free(a->v);
    a->v = wrapped;
    a->n += (size_t)added;
    a->cap = a->n + 1;
    return 0;
}

static int local_spawn(sk_sandbox *sb, sk_process *p, const sk_spawn_opts *o, sk_error **err)
{
    local_sandbox *ls = sb->impl;
    argv_builder a = { 0 };
    local_keep keep = { 0 };
    char **envp = local_envp(sb, o->env);
    char *cwd = local_resolve_cwd(ls, o->cwd);
    sk_cgroup *cg = NULL;
    int rc = -1;
    if (!envp || !cwd) {
        *err = sk_error_oom();
        goto done;
    }
    if (ls->bwrap && local_check_binds(ls, err) != 0)
        goto done;
    if (ls->bwrap)
        local_bwrap_argv(&a, &keep, ls, cwd, o->command);
    else
        argv_push3(&a, "/bin/sh", "-c", o->command);
    int cg_err = 0;
    if (!a.failed && ls->cgroup && (cg = sk_cgroup_new(ls->cgroup, NULL, &cg_err)))
        a.failed = local_enter_cgroup(&a, cg, ls->bwrap) != 0;
    if (a.failed) {
        *err = sk_error_oom();
        goto done;
    }
    /* without its cgroup a command would run outside the sandbox's limits */
    if (ls->cgroup && !cg && local_has_limits(&ls->enforced)) {
        *err = sk_error_new(SK_ERR_SANDBOX, NULL, "Cannot run command: its cgroup, which holds the sandbox's "
                            "resource limits, cannot be made: %s", strerror(cg_err ? cg_err : EIO));
        goto done;
    }
    sk_proc_opts po = {
        .file = a.v[0],
        .argv = a.v,
        .envp = envp,
        /* bwrap changes directory inside and binds by descriptor: outside
         * it needs no path at all */
        .cwd = ls->bwrap ? "/" : cwd,
        .new_group = true,
        .stdin_pipe = o->has_stdin || o->keep_stdin_open,
        .keep_fds = keep.fds,
        .n_keep_fds = keep.n,
        .fresh_session_keyring = ls->bwrap,
        .cgroup = cg,
    };
    int uv_err = 0;
    /* checked here too: posix_spawn reports the child's chdir failure only
     * where its vfork shares memory (not under valgrind, which forks) */
    struct stat st;
    if (!ls->bwrap && strlen(cwd) < PATH_MAX && (stat(cwd, &st) != 0 || !S_ISDIR(st.st_mode)))
        uv_err = UV_ENOENT;
    sk_proc *proc = uv_err ? NULL : sk_proc_spawn(sb->loop, &po, &local_proc_callbacks, p, &uv_err);
    if (!proc) {
        if (uv_err == UV_ENOENT && !ls->bwrap)
            *err = sk_error_new(SK_ERR_SANDBOX, json_pack("{s:s}", "cwd", cwd),
                                "Cannot run command: working directory %s does not exist", cwd);
        else if (uv_err == UV_E2BIG) /* named: the OS message alone blames "arguments" */
            *err = sk_error_new(SK_ERR_SANDBOX, NULL,
                                "Cannot run command: its command line and environment exceed the "
                                "system limit (argument list too long)");
        else if (ls->bwrap && uv_err == -EDQUOT)
            /* the new session keyring is charged to the user's key quota */
            *err = sk_error_new(SK_ERR_SANDBOX, NULL,
                                "Cannot run command: no new session keyring for it (%s; a non-root user "
                                "may hold kernel.keys.maxkeys keys, one per running command)",
                                uv_strerror(uv_err));
        else if (uv_err == UV_ENAMETOOLONG)
            *err = sk_error_new(SK_ERR_SANDBOX, NULL, "Cannot run command: the cwd (working directory) "
                                "name is too long");
        else
            *err = sk_error_new(SK_ERR_SANDBOX, NULL, "Cannot spawn %s: %s", a.v[0], uv_strerror(uv_err));
        goto done;
    }
    p->impl = proc;
    cg = NULL; /* the proc's now */
    snprintf(p->pid, sizeof p->pid, "%d", sk_proc_pid(proc));
    if (o->has_stdin) {
        if (o->stdin_len)
            sk_proc_write(proc, o->stdin_data, o->stdin_len);
        if (!o->keep_stdin_open)
            sk_proc_close_stdin(proc);
    }
    rc = 0;
done:
    sk_cgroup_release(cg);
    for (size_t i = 0; i < a.n; i++)
        free(a.v[i]);
    free(a.v);
    free(keep.fds);
    sk_envp_free(envp);
    free(cwd);
    return rc;
}

static int local_kill(sk_process *p, int sig)
{
    if (!p->impl)
        return -1;
    local_sandbox *ls = p->sb ? p->sb->impl : NULL;
    if (ls && ls->bwrap && sk_proc_running(p->impl))
        return local_signal_group(ls, p->impl, sig) == 0 ? 0 : -1;
    return sk_proc_kill(p->impl, sig) == 0 ? 0 : -1;
}

static int local_write_stdin(sk_process *p, const char *data, size_t len, sk_error **err)
{
    int rc = p->impl ? sk_proc_write(p->impl, data, len) : UV_EPIPE;
    if (rc != 0) {
        *err = sk_error_new(SK_ERR_PROCESS_EXITED, NULL, "Cannot write to stdin of process %s: %s",
                            p->pid, rc == UV_EPIPE ? "stdin is closed" : uv_strerror(rc));
        return -1;
    }
    return 0;
}

static int local_close_stdin(sk_process *p) { return p->impl ? sk_proc_close_stdin(p->impl) : -1; }

static void local_release(sk_process *p)
{
    sk_proc_free(p->impl);
    p->impl = NULL;
}

static json_t *local_metadata(sk_sandbox *sb)
{
    local_sandbox *ls = sb->impl;
    json_t *meta = json_pack("{s:s,s:s}", "working_directory", ls->workdir, "isolation",
                             ls->bwrap ? "bwrap" : "none");
    /* where escaped descendants can be killed (docs/security.md), and
     * where each limit lives */
    if (meta && ls->cgroup) {
        json_t *cg = json_pack("{s:s,s:s}", "version", sk_cgroup_backend(), "path", sk_cgroup_path(ls->cgroup));
        json_t *ctls = json_object();
        for (int c = 0; cg && ctls && c < SK_CGROUP_NCTL; c++) {
            const char *version = NULL;
            const char *dir = sk_cgroup_ctl_path(ls->cgroup, c, &version);
            if (dir)
                json_object_set_new(ctls, sk_cgroup_ctl_name(c),
                                    json_pack("{s:s,s:s}", "version", version, "path", dir));
        }
        if (cg && ctls)
            json_object_set(cg, "controllers", ctls);
        json_decref(ctls);
        json_object_set_new(meta, "cgroup", cg);
    }
    /* the resource limits in force (none without a cgroup) */
    if (meta) {
        const sk_cgroup_limits *l = &ls->enforced;
        json_t *lim = json_object();
        if (lim && l->memory > 0)
            json_object_set_new(lim, "memory", json_integer(l->memory));
        if (lim && l->pids > 0)
            json_object_set_new(lim, "pids_limit", json_integer(l->pids));
        if (lim && l->cpu_quota > 0)
            json_object_set_new(lim, "cpu_quota", json_integer(l->cpu_quota));
        if (lim && l->cpu_period > 0)
            json_object_set_new(lim, "cpu_period", json_integer(l->cpu_period));
        json_object_set_new(meta, "limits", lim);
    }
    /* where the sandbox's /tmp lives on the host (sb.fs reaches it there) */
    if (meta && ls->tmpdir)
        json_object_set_new(meta, "tmp_directory", json_string(ls->tmpdir));
    /* whom the commands run as when that is not the caller (a root caller
     * under bwrap): sb.fs acts as that user too */
    if (meta && ls->drop_ids)
        json_object_set_new(meta, "sandbox_user", json_pack("{s:I,s:I}", "uid", (json_int_t)ls->uid, "gid",
                                                            (json_int_t)ls->gid));
    return meta;
}

static char *local_instructions(sk_sandbox *sb)
{
    local_sandbox *ls = sb->impl;
    char *s = NULL;
    if (asprintf(&s, "Local command execution. Working directory: %s.%s", ls->workdir,
                 ls->bwrap ? (ls->allow_network
                                  ? " Commands run under bubblewrap: the system is read-only; the working directory and /tmp are writable."
                                  : " Commands run under bubblewrap: the system is read-only; the working directory and /tmp are writable; there is no network.")
                           : "") < 0)
        return NULL;
    return s;
}

const sk_provider sk_provider_local = {
    .id = "local",
    .name = "LocalSandbox",
    .init = local_init,
    .start = local_start,
    .stop = local_stop,
    .destroy = local_destroy,
    .spawn = local_spawn,
    .kill = local_kill,
    .write_stdin = local_write_stdin,
    .close_stdin = local_close_stdin,
    .release = local_release,
    .metadata = local_metadata,
    .instructions = local_instructions,
    .fs_generation = sk_local_fs_generation,
    .fs_get = sk_local_fs_get,
    .free = local_free,
};
