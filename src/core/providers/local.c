/* LocalSandbox: commands as local processes, optionally under bubblewrap.
 * Each command runs in its own process group (session) so a timeout or kill
 * reaches its whole tree. Under bwrap the sandbox gets a private /tmp that
 * lives as long as the sandbox (upstream mounts a fresh tmpfs per command,
 * which loses files between commands), and the root is remounted read-only
 * (upstream leaves bwrap's tmpfs root writable). */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../buf.h"
#include "../proc.h"
#include "../sandbox.h"

typedef struct local_sandbox {
    char *workdir;            /* absolute */
    char *tmpdir;             /* bwrap: the sandbox's /tmp on the host */
    bool bwrap;
    bool allow_network;
    char **ro_paths, **rw_paths; /* NULL-terminated, absolute */
} local_sandbox;

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

static int local_mkdir_p(const char *path)
{
    char *copy = strdup(path);
    if (!copy)
        return -1;
    for (char *p = copy + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(copy, 0755) != 0 && errno != EEXIST) {
            free(copy);
            return -1;
        }
        *p = '/';
    }
    int rc = (mkdir(copy, 0755) != 0 && errno != EEXIST) ? -1 : 0;
    free(copy);
    return rc;
}

static bool local_find_in_path(const char *name)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    char *copy = strdup(path), *save = NULL;
    bool found = false;
    for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir && !found;
         dir = strtok_r(NULL, ":", &save)) {
        char *full = local_path_join(dir, name);
        found = full && access(full, X_OK) == 0;
        free(full);
    }
    free(copy);
    return found;
}

static void local_free_list(char **list)
{
    for (char **p = list; p && *p; p++)
        free(*p);
    free(list);
}

static char **local_path_list(const json_t *arr)
{
    size_t n = json_is_array(arr) ? json_array_size(arr) : 0;
    char **list = calloc(n + 1, sizeof *list);
    if (!list)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (!(list[i] = local_absolute(json_string_value(json_array_get(arr, i))))) {
            local_free_list(list);
            return NULL;
        }
    }
    return list;
}

static void local_rm_tmpdir(local_sandbox *ls);

static void local_free(sk_sandbox *sb)
{
    local_sandbox *ls = sb->impl;
    if (!ls)
        return;
    local_rm_tmpdir(ls);
    free(ls->workdir);
    local_free_list(ls->ro_paths);
    local_free_list(ls->rw_paths);
    free(ls);
    sb->impl = NULL;
}

static int local_init(sk_sandbox *sb, const json_t *o, sk_error **err)
{
    local_sandbox *ls = calloc(1, sizeof *ls);
    if (!ls)
        goto oom;
    sb->impl = ls;
    const char *wd = json_string_value(json_object_get(o, "working_directory"));
    if (wd && !*wd) {
        *err = sk_error_new("ConfigError", json_pack("{s:s,s:s}", "provider", "local", "key", "working_directory"),
                            "LocalSandbox option 'working_directory' must not be empty");
        return -1;
    }
    ls->workdir = local_absolute(wd ? wd : "./.sandbox");
    if (!ls->workdir)
        goto oom;
    const char *iso = json_string_value(json_object_get(o, "isolation"));
    if (iso && strcmp(iso, "none") != 0 && strcmp(iso, "bwrap") != 0) {
        *err = sk_error_new("ConfigError", json_pack("{s:s,s:s}", "provider", "local", "key", "isolation"),
                            "LocalSandbox option 'isolation' must be \"none\" or \"bwrap\" (got \"%s\")", iso);
        return -1;
    }
    ls->bwrap = iso && strcmp(iso, "bwrap") == 0;
    ls->allow_network = json_is_true(json_object_get(o, "allow_network"));
    ls->ro_paths = local_path_list(json_object_get(o, "read_only_paths"));
    ls->rw_paths = local_path_list(json_object_get(o, "read_write_paths"));
    if (!ls->ro_paths || !ls->rw_paths)
        goto oom;
    if (ls->bwrap && !local_find_in_path("bwrap")) {
        *err = sk_error_new("IsolationUnavailableError", json_pack("{s:s}", "backend", "bwrap"),
                            "bubblewrap (bwrap) is not installed; install it with: "
                            "apt-get install bubblewrap (or: dnf install bubblewrap)");
        return -1;
    }
    return 0;
oom:
    *err = sk_error_new("Error", NULL, "out of memory");
    return -1;
}

static void local_start(sk_sandbox *sb, sk_provider_done done)
{
    local_sandbox *ls = sb->impl;
    if (local_mkdir_p(ls->workdir) != 0) {
        done(sb, sk_error_new("SandboxError", json_pack("{s:s}", "path", ls->workdir),
                              "Cannot create working directory %s: %s", ls->workdir, strerror(errno)));
        return;
    }
    if (ls->bwrap && !ls->tmpdir) {
        char tmpl[] = "/tmp/sandkit-tmp-XXXXXX";
        if (!mkdtemp(tmpl)) {
            done(sb, sk_error_new("SandboxError", NULL, "Cannot create the sandbox's /tmp: %s", strerror(errno)));
            return;
        }
        ls->tmpdir = strdup(tmpl);
    }
    done(sb, NULL);
}

static void local_stop(sk_sandbox *sb, sk_provider_done done) { done(sb, NULL); }

static int local_rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return type == FTW_DP ? rmdir(path) : unlink(path);
}

static void local_rm_tmpdir(local_sandbox *ls)
{
    if (!ls->tmpdir)
        return;
    nftw(ls->tmpdir, local_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(ls->tmpdir);
    ls->tmpdir = NULL;
}

static void local_destroy(sk_sandbox *sb, sk_provider_done done)
{
    local_rm_tmpdir(sb->impl);
    done(sb, NULL);
}

/* ---- processes ---------------------------------------------------------- */

static void local_on_output(sk_proc *proc, int stream, const char *data, size_t len, void *ud)
{
    (void)proc;
    sk_process_output(ud, stream, data, len);
}

static void local_on_exit(sk_proc *proc, int64_t status, int term_signal, void *ud)
{
    (void)proc;
    sk_result r = { 0 };
    if (term_signal) {
        r.exit_code = 128 + term_signal;
        r.killed = true;
    } else {
        r.exit_code = (int)status;
    }
    sk_process_finish(ud, &r, NULL);
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

static char **local_envp(sk_sandbox *sb, const json_t *per_command)
{
    json_t *env = sk_sandbox_merged_env(sb, per_command);
    if (!env)
        return NULL;
    size_t n = json_object_size(env);
    char **envp = calloc(n + 2, sizeof *envp);
    size_t i = 0;
    if (!envp)
        goto done;
    const char *path = getenv("PATH");
    if (!json_object_get(env, "PATH") &&
        asprintf(&envp[i++], "PATH=%s", path ? path : "/usr/local/bin:/usr/bin:/bin") < 0) {
        envp[--i] = NULL;
        goto fail;
    }
    const char *k;
    json_t *v;
    json_object_foreach(env, k, v) {
        if (asprintf(&envp[i], "%s=%s", k, json_is_string(v) ? json_string_value(v) : "") < 0) {
            envp[i] = NULL;
            goto fail;
        }
        i++;
    }
    goto done;
fail:
    local_free_list(envp);
    envp = NULL;
done:
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

/* The bubblewrap argv (conformance.md §9), with the sandbox's own /tmp and
 * --chdir to the command's cwd instead of always the workspace. */
static void local_bwrap_argv(argv_builder *a, local_sandbox *ls, const char *cwd, const char *command)
{
    static const char *const system_ro[] = {
        "/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc/alternatives", "/etc/ssl",
        "/etc/ca-certificates", "/etc/resolv.conf", "/etc/hosts", "/etc/passwd", "/etc/group",
        "/etc/nsswitch.conf", "/etc/ld.so.cache", "/etc/localtime", NULL,
    };
    argv_push(a, "bwrap");
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
    for (char **p = ls->ro_paths; *p; p++)
        argv_push3(a, "--ro-bind", *p, *p);
    argv_push3(a, "--ro-bind-try", "/opt", "/opt");
    argv_push3(a, "--bind", ls->tmpdir, "/tmp");
    argv_push3(a, "--bind", ls->workdir, ls->workdir);
    for (char **p = ls->rw_paths; *p; p++)
        argv_push3(a, "--bind", *p, *p);
    /* bwrap's root is a writable tmpfs; the binds above stay writable */
    argv_push(a, "--remount-ro");
    argv_push(a, "/");
    argv_push(a, "--chdir");
    argv_push(a, cwd);
    argv_push(a, "--die-with-parent");
    argv_push(a, "--");
    argv_push3(a, "/bin/sh", "-c", command);
}

static int local_spawn(sk_sandbox *sb, sk_process *p, const sk_spawn_opts *o, sk_error **err)
{
    local_sandbox *ls = sb->impl;
    argv_builder a = { 0 };
    char **envp = local_envp(sb, o->env);
    char *cwd = local_resolve_cwd(ls, o->cwd);
    int rc = -1;
    if (!envp || !cwd) {
        *err = sk_error_new("Error", NULL, "out of memory");
        goto done;
    }
    if (ls->bwrap)
        local_bwrap_argv(&a, ls, cwd, o->command);
    else
        argv_push3(&a, "/bin/sh", "-c", o->command);
    if (a.failed) {
        *err = sk_error_new("Error", NULL, "out of memory");
        goto done;
    }
    sk_proc_opts po = {
        .file = a.v[0],
        .argv = a.v,
        .envp = envp,
        /* bwrap changes directory inside; outside it needs only a cwd that exists */
        .cwd = ls->bwrap ? ls->workdir : cwd,
        .new_group = true,
        .stdin_pipe = o->has_stdin || o->keep_stdin_open,
    };
    int uv_err = 0;
    sk_proc *proc = sk_proc_spawn(sb->loop, &po, &local_proc_callbacks, p, &uv_err);
    if (!proc) {
        if (uv_err == UV_ENOENT && !ls->bwrap)
            *err = sk_error_new("SandboxError", json_pack("{s:s}", "cwd", cwd),
                                "Cannot run command: working directory %s does not exist", cwd);
        else
            *err = sk_error_new("SandboxError", NULL, "Cannot spawn %s: %s", a.v[0], uv_strerror(uv_err));
        goto done;
    }
    p->impl = proc;
    snprintf(p->pid, sizeof p->pid, "%d", sk_proc_pid(proc));
    if (o->has_stdin) {
        if (o->stdin_len)
            sk_proc_write(proc, o->stdin_data, o->stdin_len);
        if (!o->keep_stdin_open)
            sk_proc_close_stdin(proc);
    }
    rc = 0;
done:
    for (size_t i = 0; i < a.n; i++)
        free(a.v[i]);
    free(a.v);
    local_free_list(envp);
    free(cwd);
    return rc;
}

static int local_kill(sk_process *p, int sig)
{
    return p->impl && sk_proc_kill(p->impl, sig) == 0 ? 0 : -1;
}

static int local_write_stdin(sk_process *p, const char *data, size_t len, sk_error **err)
{
    int rc = p->impl ? sk_proc_write(p->impl, data, len) : UV_EPIPE;
    if (rc != 0) {
        *err = sk_error_new("ProcessExitedError", NULL, "Cannot write to stdin of process %s: %s",
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
    return json_pack("{s:s,s:s}", "working_directory", ls->workdir, "isolation",
                     ls->bwrap ? "bwrap" : "none");
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
    .free = local_free,
};
