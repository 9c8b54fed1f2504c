/* Child processes on the loop; see proc.h.
 *
 * Spawned without copying our address space (child.h) rather than with
 * uv_spawn, whose fork() copies the whole page table of the Lua process and
 * made a trivial exec about 1.8x the cost of posix_spawn (bench/README.md).
 * Output comes through real pipes (libuv would use socketpairs, slower for
 * bulk output). Exit is observed through a pidfd polled on the loop, with a
 * SIGCHLD watcher as the fallback on kernels without pidfd_open (< 5.3).
 *
 * The struct lives until the loop has closed every handle it owns, so
 * freeing a running child never races libuv: sk_proc_free only detaches the
 * callbacks and kills the group; the child is still reaped. */
#include "proc.h"
#include "compat.h"
#include "child.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Bigger pipes mean fewer wake-ups for bulk output (Linux caps this at
 * /proc/sys/fs/pipe-max-size, 1 MiB by default). A pipe grows once a read
 * finds its default 64 KiB full, so commands with little output never pay
 * for it: the kernel charges pipe pages to the caller's user, and past
 * /proc/sys/fs/pipe-user-pages-soft an unprivileged user's new pipes get
 * 2 pages and F_SETPIPE_SZ fails (EPERM). Failure is harmless: the pipe
 * keeps its size, the output only takes more wake-ups. */
enum { PROC_PIPE_SIZE = 1024 * 1024, PROC_PIPE_GROW_AT = 64 * 1024 };
/* Per read: larger reads made streaming consumers slower (each chunk
 * becomes a Lua string) without helping capture. */
enum { PROC_READ_SIZE = 64 * 1024 };
/* After a SIGKILL the killed processes close their pipe ends as they exit,
 * within milliseconds; longer means a descendant outside the group holds
 * them (proc.h). */
enum { PROC_KILL_DRAIN_MS = 500 };

struct sk_proc {
    uv_pipe_t in, out, err;
    union {
        uv_poll_t poll;     /* on the pidfd */
        uv_signal_t signal; /* SIGCHLD fallback */
    } exit_watch;
    uv_timer_t drain;   /* after SIGKILL: stop waiting for EOF */
    bool drain_armed;
    sk_cgroup *cgroup;  /* owned; NULL: none */
    bool signalled;     /* by sk_proc_kill: the cgroup dies with the child */
    bool use_pidfd;
    int pidfd;
    bool has_in, in_closing;
    bool exited, out_eof, err_eof;
    bool out_grown, err_grown; /* F_SETPIPE_SZ tried (proc_on_read) */
    bool freed, exit_reported, new_group;
    int open_handles; /* handles not yet closed + the owner's reference */
    int64_t exit_status;
    int term_signal;
    int pid;
    const sk_proc_callbacks *cb;
    void *ud;
    sk_loop *loop;
    char small[4096]; /* when the loop's scratch buffer cannot be had */
};

typedef struct proc_write {
    uv_write_t req;
    char data[];
} proc_write;

/* ---- no child outlives us ---------------------------------------------------
 * A script that ends with os.exit(n) skips every finalizer, so nothing would
 * kill the children still running. Each child is listed here from its spawn
 * until its exit is reported or it is freed, and an atexit handler (which
 * dlclose of the module also runs) SIGKILLs whatever is left. Process-wide
 * because exit is; under a lock because Lua states may live in different
 * threads; a fork inherits the list but not its ownership. */
typedef struct proc_live {
    int pid;
    bool group;
} proc_live;

static pthread_mutex_t proc_live_lock = PTHREAD_MUTEX_INITIALIZER;
static proc_live *proc_live_v;
static size_t proc_live_n, proc_live_cap;
static pid_t proc_live_owner;
static bool proc_live_hooked;

static void proc_live_kill_all(void)
{
    pthread_mutex_lock(&proc_live_lock);
    if (proc_live_owner == getpid())
        for (size_t i = 0; i < proc_live_n; i++)
            kill(proc_live_v[i].group ? -proc_live_v[i].pid : proc_live_v[i].pid, SIGKILL);
    free(proc_live_v);
    proc_live_v = NULL;
    proc_live_n = proc_live_cap = 0;
    pthread_mutex_unlock(&proc_live_lock);
}

/* Best effort: a child that cannot be listed (ENOMEM) is still killed by
 * its owner's free, just not at exit. */
static void proc_live_add(int pid, bool group)
{
    pthread_mutex_lock(&proc_live_lock);
    if (proc_live_owner != getpid()) {
        proc_live_n = 0; /* a fork's copy: those children are not ours */
        proc_live_owner = getpid();
    }
    if (!proc_live_hooked)
        proc_live_hooked = atexit(proc_live_kill_all) == 0;
    if (proc_live_n == proc_live_cap) {
        size_t cap = proc_live_cap ? proc_live_cap * 2 : 16;
        proc_live *v = realloc(proc_live_v, cap * sizeof *v);
        if (v) {
            proc_live_v = v;
            proc_live_cap = cap;
        }
    }
    if (proc_live_n < proc_live_cap)
        proc_live_v[proc_live_n++] = (proc_live){ pid, group };
    pthread_mutex_unlock(&proc_live_lock);
}

static void proc_live_remove(int pid)
{
    pthread_mutex_lock(&proc_live_lock);
    for (size_t i = 0; i < proc_live_n; i++) {
        if (proc_live_v[i].pid == pid) {
            proc_live_v[i] = proc_live_v[--proc_live_n];
            break;
        }
    }
    pthread_mutex_unlock(&proc_live_lock);
}

static void proc_release(sk_proc *p)
{
    if (--p->open_handles == 0) {
        if (!p->exit_reported)
            proc_live_remove(p->pid);
        if (p->pidfd >= 0)
            close(p->pidfd);
        sk_cgroup_release(p->cgroup);
        free(p);
    }
}

static void proc_handle_closed(uv_handle_t *h) { proc_release(h->data); }

static void proc_close(uv_handle_t *h)
{
    if (!uv_is_closing(h))
        uv_close(h, proc_handle_closed);
}

static void proc_maybe_finish(sk_proc *p)
{
    if (!p->exited || !p->out_eof || !p->err_eof || p->exit_reported)
        return;
    p->exit_reported = true;
    proc_live_remove(p->pid);
    /* a child we signalled (timeout, kill) takes its escaped descendants
     * along, also those that outlived a SIGTERM without holding a pipe */
    if (p->signalled && p->cgroup)
        sk_cgroup_kill(p->cgroup);
    if (p->drain_armed)
        proc_close((uv_handle_t *)&p->drain);
    if (p->has_in && !p->in_closing) {
        p->in_closing = true;
        proc_close((uv_handle_t *)&p->in);
    }
    if (!p->freed && p->cb && p->cb->exit)
        p->cb->exit(p, p->exit_status, p->term_signal, p->ud);
}

/* Reaps the child if it has exited; true when it has. */
static bool proc_reap(sk_proc *p)
{
    int status = 0;
    pid_t r;
    do
        r = waitpid(p->pid, &status, WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r == 0)
        return false;
    if (r == p->pid) {
        if (WIFSIGNALED(status)) {
            p->term_signal = WTERMSIG(status);
            p->exit_status = 0;
        } else {
            p->exit_status = WEXITSTATUS(status);
        }
    } else {
        p->exit_status = 127; /* reaped by someone else: status unknown */
    }
    p->exited = true;
    proc_close((uv_handle_t *)&p->exit_watch);
    if (!p->freed && p->cb && p->cb->reaped)
        p->cb->reaped(p, p->exit_status, p->term_signal, p->ud);
    proc_maybe_finish(p);
    return true;
}

static void proc_on_pidfd(uv_poll_t *h, int status, int events)
{
    (void)status;
    (void)events;
    proc_reap(h->data);
}

static void proc_on_sigchld(uv_signal_t *h, int signum)
{
    (void)signum;
    proc_reap(h->data);
}

static void proc_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    sk_proc *p = h->data;
    if (!p->freed && p->cb && p->cb->buffer) {
        size_t len = PROC_READ_SIZE;
        int stream = (h == (uv_handle_t *)&p->out) ? 1 : 2;
        char *where = p->cb->buffer(p, stream, &len, p->ud);
        if (where) {
            buf->base = where;
            buf->len = len;
            return;
        }
    }
    /* Reads are consumed synchronously in proc_on_read, so the loop's one
     * scratch buffer serves every pipe. */
    buf->base = sk_loop_scratch(p->loop);
    buf->len = PROC_READ_SIZE;
    if (!buf->base) {
        buf->base = p->small;
        buf->len = sizeof p->small;
    }
}

static void proc_on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    sk_proc *p = s->data;
    int stream = (s == (uv_stream_t *)&p->out) ? 1 : 2;
    if (n > 0) {
        bool *grown = stream == 1 ? &p->out_grown : &p->err_grown;
        uv_os_fd_t fd;
        if (!*grown && n >= PROC_PIPE_GROW_AT && uv_fileno((uv_handle_t *)s, &fd) == 0) {
            *grown = true;
            sk_pipe_grow(fd, PROC_PIPE_SIZE);
        }
        if (!p->freed && p->cb && p->cb->output)
            p->cb->output(p, stream, buf->base, (size_t)n, p->ud);
        return;
    }
    if (n == 0)
        return;
    /* EOF or error: this pipe is done either way. */
    uv_read_stop(s);
    proc_close((uv_handle_t *)s);
    if (stream == 1)
        p->out_eof = true;
    else
        p->err_eof = true;
    proc_maybe_finish(p);
}

/* The killed group's last output is in the pipe by now: read what is
 * buffered (at most a pipe's worth: a live writer could keep us here), then
 * close our end so a writer outside the group cannot hold the result. */
static void proc_drain_pipe(uv_pipe_t *pipe)
{
    if (uv_is_closing((uv_handle_t *)pipe))
        return;
    uv_os_fd_t fd;
    if (uv_fileno((uv_handle_t *)pipe, &fd) == 0) {
        size_t left = PROC_PIPE_SIZE;
        while (left > 0) {
            uv_buf_t buf;
            proc_alloc((uv_handle_t *)pipe, 0, &buf);
            ssize_t n;
            do
                n = read(fd, buf.base, buf.len < left ? buf.len : left);
            while (n < 0 && errno == EINTR);
            if (n <= 0)
                break;
            proc_on_read((uv_stream_t *)pipe, n, &buf);
            left -= (size_t)n;
        }
    }
    proc_on_read((uv_stream_t *)pipe, UV_EOF, NULL);
}

static void proc_on_drain(uv_timer_t *t)
{
    sk_proc *p = t->data;
    proc_close((uv_handle_t *)&p->drain);
    if (!p->out_eof)
        proc_drain_pipe(&p->out);
    if (!p->err_eof)
        proc_drain_pipe(&p->err);
}

static void proc_arm_drain(sk_proc *p)
{
    if (p->drain_armed || (p->out_eof && p->err_eof))
        return;
    p->drain_armed = true;
    uv_timer_init(sk_loop_uv(p->loop), &p->drain);
    p->drain.data = p;
    p->open_handles++;
    sk_timer_arm(&p->drain, proc_on_drain, PROC_KILL_DRAIN_MS, 0);
}

static void proc_close_fds(int *fds, int n)
{
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* ---- a fresh session keyring ----------------------------------------------
 * The session keyring belongs to a thread's credentials (Linux >= 3.8) and a
 * child inherits the spawning thread's. Such spawns are made by one spawner
 * thread that joins a new anonymous session keyring before each: every
 * child gets its own, and no other thread of ours changes. The thread lives
 * as long as the process (or the module): a child's parent-death signal
 * (bwrap --die-with-parent) fires when the thread that spawned it exits. */
typedef struct proc_spawn_job {
    const sk_proc_opts *o;
    int in_fd, out_fd, err_fd;
    const int *keep;
    pid_t pid;
    int rc;
    bool done;
} proc_spawn_job;

static pthread_mutex_t spawner_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t spawner_cond = PTHREAD_COND_INITIALIZER;
static proc_spawn_job *spawner_job;
static pthread_t spawner_thread;
static pid_t spawner_owner; /* a fork has no spawner thread */
static bool spawner_stop;

static void proc_spawn_job_run(proc_spawn_job *j)
{
    int rc = sk_join_new_session_keyring();
    if (rc != 0)
        j->rc = rc;
    else
        j->rc = sk_child_spawn(j->o, j->in_fd, j->out_fd, j->err_fd, j->keep, &j->pid);
}

static void *proc_spawner_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&spawner_lock);
    for (;;) {
        while (!spawner_job && !spawner_stop)
            pthread_cond_wait(&spawner_cond, &spawner_lock);
        if (!spawner_job)
            break;
        proc_spawn_job_run(spawner_job);
        spawner_job->done = true;
        spawner_job = NULL;
        pthread_cond_broadcast(&spawner_cond);
    }
    pthread_mutex_unlock(&spawner_lock);
    return NULL;
}

static int proc_spawn_fresh_keyring(proc_spawn_job *j)
{
    pthread_mutex_lock(&spawner_lock);
    if (spawner_owner != getpid()) {
        /* the thread runs with every signal blocked: handlers stay on ours */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        spawner_stop = false;
        spawner_job = NULL;
        int rc = pthread_create(&spawner_thread, NULL, proc_spawner_main, NULL);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc != 0) {
            pthread_mutex_unlock(&spawner_lock);
            return rc;
        }
        spawner_owner = getpid();
    }
    while (spawner_job) /* another thread's spawn is in progress */
        pthread_cond_wait(&spawner_cond, &spawner_lock);
    spawner_job = j;
    pthread_cond_broadcast(&spawner_cond);
    while (!j->done)
        pthread_cond_wait(&spawner_cond, &spawner_lock);
    pthread_mutex_unlock(&spawner_lock);
    return j->rc;
}

/* At exit or when the module is unloaded: its code must not outlive it. */
__attribute__((destructor)) static void proc_spawner_end(void)
{
    pthread_mutex_lock(&spawner_lock);
    bool ours = spawner_owner == getpid();
    spawner_stop = true;
    pthread_cond_broadcast(&spawner_cond);
    pthread_mutex_unlock(&spawner_lock);
    if (ours)
        pthread_join(spawner_thread, NULL);
    spawner_owner = 0;
}

sk_proc *sk_proc_spawn(sk_loop *loop, const sk_proc_opts *o, const sk_proc_callbacks *cb,
                       void *ud, int *uv_err)
{
    uv_loop_t *uv = sk_loop_uv(loop);
    int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
    int n_keep = o->n_keep_fds > 0 ? o->n_keep_fds : 0;
    int *keep = NULL;
    sk_proc *p = calloc(1, sizeof *p);
    if (!p || (n_keep && !(keep = malloc((size_t)n_keep * sizeof *keep)))) {
        free(p);
        *uv_err = UV_ENOMEM;
        return NULL;
    }
    /* Copies numbered above every target (3 .. 2 + n), so no dup2 in the
     * child overwrites a source it has yet to copy. */
    for (int i = 0; i < n_keep; i++)
        keep[i] = -1;
    for (int i = 0; i < n_keep; i++) {
        if ((keep[i] = fcntl(o->keep_fds[i], F_DUPFD_CLOEXEC, 3 + n_keep)) < 0) {
            *uv_err = uv_translate_sys_error(errno);
            goto fail;
        }
    }
    p->pidfd = -1;
    if ((o->stdin_pipe && sk_pipe_cloexec(in) != 0) || sk_pipe_cloexec(out) != 0 ||
        sk_pipe_cloexec(err) != 0) {
        *uv_err = uv_translate_sys_error(errno);
        goto fail;
    }
    pid_t pid = 0;
    int rc;
    if (o->fresh_session_keyring) {
        proc_spawn_job job = { o, in[0], out[1], err[1], keep, 0, 0, false };
        rc = proc_spawn_fresh_keyring(&job);
        pid = job.pid;
    } else {
        rc = sk_child_spawn(o, in[0], out[1], err[1], keep, &pid);
    }
    proc_close_fds(keep, n_keep);
    free(keep);
    keep = NULL;
    if (rc != 0) {
        *uv_err = uv_translate_sys_error(rc);
        goto fail;
    }
    /* The child has its copies; ours of the child's ends go. */
    close(out[1]);
    close(err[1]);
    if (in[0] >= 0)
        close(in[0]);

    proc_live_add(pid, o->new_group);
    p->cb = cb;
    p->ud = ud;
    p->loop = loop;
    p->pid = pid;
    p->new_group = o->new_group;
    p->cgroup = o->cgroup;
    p->has_in = o->stdin_pipe;
    p->in.data = p->out.data = p->err.data = p->exit_watch.poll.data = p;
    p->open_handles = 4; /* out, err, exit watch, owner */
    uv_pipe_init(uv, &p->out, 0);
    uv_pipe_init(uv, &p->err, 0);
    uv_pipe_open(&p->out, out[0]);
    uv_pipe_open(&p->err, err[0]);
    if (p->has_in) {
        uv_pipe_init(uv, &p->in, 0);
        uv_pipe_open(&p->in, in[1]);
        p->open_handles++;
    }
    p->pidfd = sk_pidfd_open(pid);
    p->use_pidfd = p->pidfd >= 0;
    if (p->use_pidfd) {
        uv_poll_init(uv, &p->exit_watch.poll, p->pidfd);
        uv_poll_start(&p->exit_watch.poll, UV_READABLE, proc_on_pidfd);
    } else {
        uv_signal_init(uv, &p->exit_watch.signal);
        uv_signal_start(&p->exit_watch.signal, proc_on_sigchld, SIGCHLD);
        p->exit_watch.signal.data = p;
        proc_reap(p); /* it may have exited before the watcher existed */
    }
    p->exit_watch.poll.data = p;
    uv_read_start((uv_stream_t *)&p->out, proc_alloc, proc_on_read);
    uv_read_start((uv_stream_t *)&p->err, proc_alloc, proc_on_read);
    return p;
fail:
    if (keep)
        proc_close_fds(keep, n_keep);
    free(keep);
    proc_close_fds(in, 2);
    proc_close_fds(out, 2);
    proc_close_fds(err, 2);
    free(p);
    return NULL;
}

/* Whether env has a key equal to the name before entry's '='. */
static bool envp_overridden(const json_t *env, const char *entry)
{
    size_t len = strcspn(entry, "=");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)env, k, v) {
        if (strncmp(k, entry, len) == 0 && k[len] == '\0')
            return true;
    }
    return false;
}

char **sk_envp_new(const char *const *base, const json_t *env)
{
    size_t n = 0;
    while (base[n])
        n++;
    char **envp = calloc(n + json_object_size(env) + 1, sizeof *envp);
    if (!envp)
        return NULL;
    size_t i = 0;
    for (const char *const *e = base; *e; e++) {
        if (envp_overridden(env, *e))
            continue;
        if (!(envp[i++] = strdup(*e)))
            goto fail;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)env, k, v) {
        if (asprintf(&envp[i], "%s=%s", k, json_is_string(v) ? json_string_value(v) : "") < 0) {
            envp[i] = NULL;
            goto fail;
        }
        i++;
    }
    return envp;
fail:
    sk_envp_free(envp);
    return NULL;
}

void sk_envp_free(char **envp)
{
    for (char **p = envp; p && *p; p++)
        free(*p);
    free(envp);
}

int sk_proc_pid(const sk_proc *p) { return p->pid; }

const sk_cgroup *sk_proc_cgroup(const sk_proc *p) { return p->cgroup; }

bool sk_proc_running(const sk_proc *p) { return !p->exit_reported; }

int sk_proc_kill(sk_proc *p, int sig)
{
    if (p->exit_reported)
        return UV_ESRCH;
    int rc = UV_ESRCH;
    /* The group outlives its leader while grandchildren hold the pipes;
     * the leader's pid stays reserved as the group id until then. */
    if (p->new_group && kill(-p->pid, sig) == 0)
        rc = 0;
    else if (!p->exited)
        rc = kill(p->pid, sig) == 0 ? 0 : uv_translate_sys_error(errno);
    /* descendants that left the group get it through the cgroup */
    p->signalled = true;
    if (p->cgroup && sk_cgroup_signal(p->cgroup, sig) == 0 && sig != SIGKILL && rc == UV_ESRCH)
        rc = 0;
    if (sig == SIGKILL) {
        /* whatever still holds the pipes, the exit is reported soon */
        proc_arm_drain(p);
        rc = 0;
    }
    return rc;
}

static void proc_on_write(uv_write_t *req, int status)
{
    (void)status; /* EPIPE: the child stopped reading; nothing to deliver */
    free(req->data);
}

int sk_proc_write(sk_proc *p, const char *data, size_t len)
{
    if (!p->has_in || p->in_closing || p->exit_reported)
        return UV_EPIPE;
    proc_write *w = malloc(sizeof *w + len);
    if (!w)
        return UV_ENOMEM;
    memcpy(w->data, data, len);
    w->req.data = w;
    uv_buf_t buf = uv_buf_init(w->data, (unsigned)len);
    int rc = uv_write(&w->req, (uv_stream_t *)&p->in, &buf, 1, proc_on_write);
    if (rc != 0)
        free(w);
    return rc;
}

static void proc_on_shutdown(uv_shutdown_t *req, int status)
{
    (void)status;
    sk_proc *p = req->handle->data;
    proc_close((uv_handle_t *)&p->in);
    free(req);
}

int sk_proc_close_stdin(sk_proc *p)
{
    if (!p->has_in || p->in_closing)
        return 0;
    p->in_closing = true;
    uv_shutdown_t *req = malloc(sizeof *req);
    if (req && uv_shutdown(req, (uv_stream_t *)&p->in, proc_on_shutdown) == 0)
        return 0;
    free(req);
    proc_close((uv_handle_t *)&p->in);
    return 0;
}

void sk_proc_free(sk_proc *p)
{
    if (!p)
        return;
    p->freed = true;
    p->cb = NULL;
    if (!p->exit_reported) {
        /* The handles close themselves once the killed child is reaped and
         * its pipes reach EOF. */
        sk_proc_kill(p, SIGKILL);
        sk_proc_close_stdin(p);
    }
    proc_release(p);
}
