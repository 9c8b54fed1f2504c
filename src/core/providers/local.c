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

/* The user's binds (working directory, read_write_paths, read_only_paths)
 * in mount order: a path before the paths nested in it, so that a
 * read-only path inside the working directory is mounted over it and stays
 * read-only (the same path given both ways ends up read-only). A writable
 * path nested in another writable one is not bound again: it is writable
 * already, and a bind would follow whatever symlink a command put in its
 * place (local_bind_intact). */
typedef struct local_bind {
    const char *path;
    bool ro;
    size_t order;
} local_bind;

static int local_bind_cmp(const void *a, const void *b)
{
    const local_bind *x = a, *y = b;
    size_t lx = strlen(x->path), ly = strlen(y->path);
    if (lx != ly)
        return lx < ly ? -1 : 1;
    if (x->ro != y->ro)
        return x->ro ? 1 : -1;
    return x->order < y->order ? -1 : (x->order > y->order);
}

/* path strictly inside dir (both absolute and folded). */
static bool local_path_inside(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/')
        return path[1] != '\0';
    return strncmp(path, dir, n) == 0 && path[n] == '/';
}

static bool local_in_writable(const local_sandbox *ls, const char *path)
{
    if (local_path_inside(path, ls->workdir))
        return true;
    for (char **w = ls->rw_paths; *w; w++)
        if (local_path_inside(path, *w))
            return true;
    return false;
}

static size_t local_list_len(char **list)
{
    size_t n = 0;
    while (list[n])
        n++;
    return n;
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
    /* run by root, bwrap keeps root's capabilities for the command, which
     * could then remount the read-only binds writable (the host's /usr,
     * /etc...) or mount devices */
    argv_push(a, "--cap-drop");
    argv_push(a, "ALL");
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
    argv_push3(a, "--bind", ls->tmpdir, "/tmp");
    size_t n_ro = local_list_len(ls->ro_paths), n_rw = local_list_len(ls->rw_paths), n = 0;
    local_bind *binds = malloc((1 + n_ro + n_rw) * sizeof *binds);
    if (!binds) {
        a->failed = true;
        return;
    }
    if (!local_in_writable(ls, ls->workdir)) {
        binds[n] = (local_bind){ ls->workdir, false, n };
        n++;
    }
    for (size_t i = 0; i < n_rw; i++)
        if (!local_in_writable(ls, ls->rw_paths[i])) {
            binds[n] = (local_bind){ ls->rw_paths[i], false, n };
            n++;
        }
    for (size_t i = 0; i < n_ro; i++, n++)
        binds[n] = (local_bind){ ls->ro_paths[i], true, n };
    qsort(binds, n, sizeof *binds, local_bind_cmp);
    for (size_t i = 0; i < n; i++)
        argv_push3(a, binds[i].ro ? "--ro-bind" : "--bind", binds[i].path, binds[i].path);
    free(binds);
    /* bwrap's root is a writable tmpfs; the binds above stay writable */
    argv_push(a, "--remount-ro");
    argv_push(a, "/");
    argv_push(a, "--chdir");
    argv_push(a, cwd);
    argv_push(a, "--die-with-parent");
    argv_push(a, "--");
    argv_push3(a, "/bin/sh", "-c", command);
}

/* bwrap follows symlinks in a bind's source. A read-only path nested in a
 * directory the sandbox can write could be swapped by a command (rename a
 * parent, put a relative symlink in its place) so that the next command
 * gets the symlink's target — say the host's /etc — mounted instead. Before
 * each command, the part of such a path below its writable ancestor must
 * still be free of symlinks. (A command running meanwhile could swap it
 * between this check and bwrap's mount, exposing a host path read-only;
 * binding by descriptor would close that window.) */
static bool local_bind_intact(const char *path, const char *writable)
{
    if (!local_path_inside(path, writable))
        return true;
    char *rp = realpath(path, NULL), *rw = realpath(writable, NULL);
    size_t wl = strlen(writable), rl = rw ? strlen(rw) : 0;
    /* missing: bwrap reports it (the command fails) */
    bool ok = !rp || !rw || (strncmp(rp, rw, rl) == 0 && strcmp(rp + rl, path + wl) == 0);
    free(rp);
    free(rw);
    return ok;
}

static int local_check_binds(local_sandbox *ls, sk_error **err)
{
    for (char **s = ls->ro_paths; *s; s++) {
        bool ok = local_bind_intact(*s, ls->workdir);
        for (char **w = ls->rw_paths; ok && *w; w++)
            ok = local_bind_intact(*s, *w);
        if (!ok) {
            *err = sk_error_new("SandboxError", json_pack("{s:s,s:s}", "key", "read_only_paths", "path", *s),
                                "Refusing to run the command: read_only_paths entry %s, inside a writable "
                                "directory of the sandbox, has been replaced by a symlink", *s);
            return -1;
        }
    }
    return 0;
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
    if (ls->bwrap && local_check_binds(ls, err) != 0)
        goto done;
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
    /* checked here too: posix_spawn reports the child's chdir failure only
     * where its vfork shares memory (not under valgrind, which forks) */
    struct stat st;
    if (!ls->bwrap && strlen(cwd) < PATH_MAX && (stat(cwd, &st) != 0 || !S_ISDIR(st.st_mode)))
        uv_err = UV_ENOENT;
    sk_proc *proc = uv_err ? NULL : sk_proc_spawn(sb->loop, &po, &local_proc_callbacks, p, &uv_err);
    if (!proc) {
        if (uv_err == UV_ENOENT && !ls->bwrap)
            *err = sk_error_new("SandboxError", json_pack("{s:s}", "cwd", cwd),
                                "Cannot run command: working directory %s does not exist", cwd);
        else if (uv_err == UV_E2BIG) /* named: the OS message alone blames "arguments" */
            *err = sk_error_new("SandboxError", NULL,
                                "Cannot run command: its command line and environment exceed the "
                                "system limit (argument list too long)");
        else if (uv_err == UV_ENAMETOOLONG)
            *err = sk_error_new("SandboxError", NULL, "Cannot run command: the cwd (working directory) "
                                "name is too long");
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
    json_t *m = json_pack("{s:s,s:s}", "working_directory", ls->workdir, "isolation",
                          ls->bwrap ? "bwrap" : "none");
    /* where the sandbox's /tmp lives on the host (sb.fs reaches it there) */
    if (m && ls->tmpdir)
        json_object_set_new(m, "tmp_directory", json_string(ls->tmpdir));
    return m;
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
