/* The `container` CLI as a child on the loop; see apple_container_cli.h.
 *
 * A finished CLI normally reports through proc.c once it has exited and both
 * pipes reached EOF. After a kill that is not enough: processes started
 * through the CLI (the emulated CLI hands its pipes to them; a command's
 * background children could too) may hold the pipes long after the CLI is
 * gone. So the CLI's own exit is watched (proc.c's reaped callback), and
 * once a killed CLI has exited its output gets a short drain and the call
 * finishes, the way upstream's runner settles when the CLI's pipes close. */
#include "apple_container_cli.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../buf.h"
#include "../../compat.h"
#include "../../proc.h"

enum {
    CLI_KILL_GRACE_MS = 1000,     /* SIGTERM -> SIGKILL, as upstream */
    CLI_DRAIN_MS = 200,           /* output still in the pipes after a killed CLI exits */
    CLI_DEFAULT_RETAIN = 1 << 20, /* upstream's ProcessHandle default */
};

typedef struct cli_stream {
    sk_buf buf;
    size_t dropped;
    bool truncated;
} cli_stream;

struct ac_cli {
    sk_loop *loop;
    sk_proc *proc;
    int pid;
    const ac_cli_callbacks *cb;
    void *ud;
    uv_timer_t *timeout_timer, *kill_timer, *drain_timer;
    bool killed, timed_out, finished;
    bool gone; /* the CLI has exited (reaped), with this status */
    int gone_code, gone_signal;
    bool retain;
    size_t max;
    cli_stream out, err;
    double start_ms;
};

/* Armed once: a later start keeps the first deadline. */
static void cli_timer_start(ac_cli *c, uv_timer_t **t, double ms, uv_timer_cb fn)
{
    if (!*t)
        (void)sk_timer_start(c->loop, t, c, (uint64_t)ms, fn);
}

/* ---- output retention ---------------------------------------------------- */

/* Keeps the newest max bytes, starting on a UTF-8 character boundary. */
static void stream_trim(cli_stream *s, size_t max)
{
    if (s->buf.len <= max)
        return;
    size_t drop = s->buf.len - max;
    while (drop < s->buf.len && ((unsigned char)s->buf.data[drop] & 0xc0) == 0x80)
        drop++;
    memmove(s->buf.data, s->buf.data + drop, s->buf.len - drop);
    s->buf.len -= drop;
    s->buf.data[s->buf.len] = '\0';
    s->dropped += drop;
    s->truncated = true;
}

static void stream_add(cli_stream *s, size_t max, const char *data, size_t len)
{
    sk_buf_append(&s->buf, data, len);
    /* compact lazily so bulk output is not moved on every chunk */
    if (s->buf.len > 2 * max)
        stream_trim(s, max);
}

/* ---- finishing ------------------------------------------------------------ */

static void cli_finish(ac_cli *c, int code, int sig, bool known)
{
    if (c->finished)
        return;
    c->finished = true;
    sk_timer_close(&c->timeout_timer);
    sk_timer_close(&c->kill_timer);
    sk_timer_close(&c->drain_timer);
    if (!known) {
        code = c->gone ? c->gone_code : 0;
        sig = c->gone ? c->gone_signal : SIGKILL;
    }
    ac_cli_result r = { 0 };
    /* upstream: code ?? (killed ? 137 : 1) -- a signal death has no code */
    r.exit_code = sig ? (c->killed ? 137 : 1) : code;
    r.term_signal = sig;
    r.success = r.exit_code == 0;
    r.killed = c->killed;
    r.timed_out = c->timed_out;
    if (c->retain) {
        stream_trim(&c->out, c->max);
        stream_trim(&c->err, c->max);
    }
    r.stdout_data = c->out.buf.len ? c->out.buf.data : "";
    r.stdout_len = c->out.buf.len;
    r.stderr_data = c->err.buf.len ? c->err.buf.data : "";
    r.stderr_len = c->err.buf.len;
    r.stdout_truncated = c->out.truncated;
    r.stderr_truncated = c->err.truncated;
    r.stdout_dropped = c->out.dropped;
    r.stderr_dropped = c->err.dropped;
    r.execution_time_ms = sk_now_ms() - c->start_ms;
    /* last: the callback may free c */
    if (c->cb && c->cb->exit)
        c->cb->exit(c, &r, c->ud);
}

static void cli_on_output(sk_proc *p, int stream, const char *data, size_t len, void *ud)
{
    (void)p;
    ac_cli *c = ud;
    if (c->finished)
        return;
    if (c->retain)
        stream_add(stream == 1 ? &c->out : &c->err, c->max, data, len);
    if (c->cb && c->cb->output)
        c->cb->output(c, stream, data, len, c->ud);
}

static void cli_on_exit(sk_proc *p, int64_t status, int term_signal, void *ud)
{
    (void)p;
    cli_finish(ud, (int)status, term_signal, true);
}

static void cli_on_drained(uv_timer_t *t) { cli_finish(t->data, 0, 0, false); }

static void cli_on_reaped(sk_proc *p, int64_t status, int term_signal, void *ud)
{
    (void)p;
    ac_cli *c = ud;
    if (c->finished)
        return;
    c->gone = true;
    c->gone_code = (int)status;
    c->gone_signal = term_signal;
    if (c->killed)
        cli_timer_start(c, &c->drain_timer, CLI_DRAIN_MS, cli_on_drained);
}

static const sk_proc_callbacks cli_proc_callbacks = {
    .output = cli_on_output,
    .exit = cli_on_exit,
    .reaped = cli_on_reaped,
};

static void cli_on_kill_grace(uv_timer_t *t)
{
    ac_cli *c = t->data;
    if (c->finished)
        return;
    sk_proc_kill(c->proc, SIGKILL);
    /* a killed CLI whose pipes stay open ends within the drain, whether or
     * not its exit is seen first */
    cli_timer_start(c, &c->drain_timer, CLI_DRAIN_MS, cli_on_drained);
}

static void cli_on_timeout(uv_timer_t *t)
{
    ac_cli *c = t->data;
    c->timed_out = true;
    sk_ac_cli_kill(c, SIGTERM);
}

/* ---- the child ------------------------------------------------------------ */

/* 0 when file can be executed (a path, or a name found on PATH), else a uv
 * error. Checked before spawning so a missing CLI is reported the same way
 * whether or not posix_spawn reports exec failures (it does not under
 * valgrind, whose spawn forks). */
static int cli_find(const char *file)
{
    if (strchr(file, '/'))
        return access(file, X_OK) == 0 ? 0 : uv_translate_sys_error(errno);
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    char *copy = strdup(path), *save = NULL;
    if (!copy)
        return UV_ENOMEM;
    int rc = UV_ENOENT;
    for (char *dir = strtok_r(copy, ":", &save); dir && rc != 0; dir = strtok_r(NULL, ":", &save)) {
        char *full = NULL;
        if (asprintf(&full, "%s/%s", *dir ? dir : ".", file) >= 0 && access(full, X_OK) == 0)
            rc = 0;
        free(full);
    }
    free(copy);
    return rc;
}

ac_cli *sk_ac_cli_run(sk_loop *loop, const ac_cli_opts *o, const ac_cli_callbacks *cb, void *ud, int *uv_err)
{
    if (o->max_retained < 0) {
        *uv_err = UV_EINVAL;
        return NULL;
    }
    if ((*uv_err = cli_find(o->binary)) != 0)
        return NULL;
    ac_cli *c = calloc(1, sizeof *c);
    size_t argc = 0;
    while (o->argv[argc])
        argc++;
    char **argv = calloc(argc + 2, sizeof *argv);
    /* our environment with env's entries set (values only ever live here) */
    char **envp = o->env && json_object_size(o->env) ? sk_envp_new((const char *const *)sk_environ(), o->env) : NULL;
    if (!c || !argv || (o->env && json_object_size(o->env) && !envp)) {
        *uv_err = UV_ENOMEM;
        goto fail;
    }
    argv[0] = (char *)o->binary;
    for (size_t i = 0; i < argc; i++)
        argv[i + 1] = o->argv[i];
    c->loop = loop;
    c->cb = cb;
    c->ud = ud;
    c->retain = o->retain;
    c->max = o->max_retained > 0 ? (size_t)o->max_retained : CLI_DEFAULT_RETAIN;
    c->start_ms = sk_now_ms();
    sk_proc_opts po = {
        .file = o->binary,
        .argv = argv,
        .envp = envp,
        /* the CLI gets signals one by one (it forwards them); its children
         * are not ours to signal */
        .new_group = false,
        .stdin_pipe = o->stdin_pipe,
    };
    c->proc = sk_proc_spawn(loop, &po, &cli_proc_callbacks, c, uv_err);
    if (!c->proc)
        goto fail;
    c->pid = sk_proc_pid(c->proc);
    free(argv);
    sk_envp_free(envp);
    argv = NULL;
    envp = NULL;
    if (o->timeout_ms > 0)
        cli_timer_start(c, &c->timeout_timer, o->timeout_ms, cli_on_timeout);
    return c;
fail:
    free(argv);
    sk_envp_free(envp);
    free(c);
    return NULL;
}

int sk_ac_cli_pid(const ac_cli *c) { return c->pid; }

int sk_ac_cli_kill(ac_cli *c, int sig)
{
    if (c->finished)
        return -1;
    if (sig != SIGTERM && sig != SIGKILL && sig != SIGINT)
        return sk_proc_kill(c->proc, sig) == 0 ? 0 : -1;
    if (c->killed)
        return 0;
    c->killed = true;
    sk_proc_kill(c->proc, SIGTERM);
    cli_timer_start(c, &c->kill_timer, CLI_KILL_GRACE_MS, cli_on_kill_grace);
    if (c->gone)
        cli_timer_start(c, &c->drain_timer, CLI_DRAIN_MS, cli_on_drained);
    return 0;
}

int sk_ac_cli_write(ac_cli *c, const char *data, size_t len)
{
    return c->finished ? UV_EPIPE : sk_proc_write(c->proc, data, len);
}

int sk_ac_cli_close_stdin(ac_cli *c) { return c->finished ? -1 : sk_proc_close_stdin(c->proc); }

void sk_ac_cli_free(ac_cli *c)
{
    if (!c)
        return;
    c->finished = true;
    c->cb = NULL;
    sk_timer_close(&c->timeout_timer);
    sk_timer_close(&c->kill_timer);
    sk_timer_close(&c->drain_timer);
    sk_proc_free(c->proc);
    sk_buf_free(&c->out.buf);
    sk_buf_free(&c->err.buf);
    free(c);
}
