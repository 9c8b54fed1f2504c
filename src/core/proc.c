/* Child processes on the loop; see proc.h. The struct lives until the loop
 * has closed every handle it owns, so freeing a running child never races
 * libuv: sk_proc_free only detaches the callbacks and kills the group. */
#include "proc.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

enum { PROC_READ_CHUNK = 64 * 1024 };

struct sk_proc {
    uv_process_t process;
    uv_pipe_t in, out, err;
    bool has_in, in_closing;
    bool exited, out_eof, err_eof;
    bool freed, exit_reported, new_group;
    int open_handles;
    int64_t exit_status;
    int term_signal;
    int pid;
    const sk_proc_callbacks *cb;
    void *ud;
    char chunk[PROC_READ_CHUNK];
};

typedef struct proc_write {
    uv_write_t req;
    char data[];
} proc_write;

static void proc_handle_closed(uv_handle_t *h)
{
    sk_proc *p = h->data;
    if (--p->open_handles == 0)
        free(p);
}

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
    if (p->has_in && !p->in_closing) {
        p->in_closing = true;
        proc_close((uv_handle_t *)&p->in);
    }
    proc_close((uv_handle_t *)&p->process);
    if (!p->freed && p->cb && p->cb->exit)
        p->cb->exit(p, p->exit_status, p->term_signal, p->ud);
}

static void proc_on_exit(uv_process_t *h, int64_t status, int term_signal)
{
    sk_proc *p = h->data;
    p->exited = true;
    p->exit_status = status;
    p->term_signal = term_signal;
    proc_maybe_finish(p);
}

static void proc_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    sk_proc *p = h->data;
    /* Reads are consumed synchronously in proc_on_read, so one buffer
     * serves both pipes. */
    buf->base = p->chunk;
    buf->len = sizeof p->chunk;
}

static void proc_on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    sk_proc *p = s->data;
    int stream = (s == (uv_stream_t *)&p->out) ? 1 : 2;
    if (n > 0) {
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

sk_proc *sk_proc_spawn(sk_loop *loop, const sk_proc_opts *o, const sk_proc_callbacks *cb,
                       void *ud, int *uv_err)
{
    uv_loop_t *uv = sk_loop_uv(loop);
    sk_proc *p = calloc(1, sizeof *p);
    if (!p) {
        *uv_err = UV_ENOMEM;
        return NULL;
    }
    p->cb = cb;
    p->ud = ud;
    p->new_group = o->new_group;
    p->has_in = o->stdin_pipe;
    p->process.data = p->in.data = p->out.data = p->err.data = p;

    uv_pipe_init(uv, &p->out, 0);
    uv_pipe_init(uv, &p->err, 0);
    p->open_handles = 3; /* two pipes + the owner's reference */
    if (p->has_in) {
        uv_pipe_init(uv, &p->in, 0);
        p->open_handles++;
    }

    uv_stdio_container_t stdio[3];
    stdio[0].flags = p->has_in ? (UV_CREATE_PIPE | UV_READABLE_PIPE) : UV_IGNORE;
    stdio[0].data.stream = (uv_stream_t *)&p->in;
    stdio[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
    stdio[1].data.stream = (uv_stream_t *)&p->out;
    stdio[2].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
    stdio[2].data.stream = (uv_stream_t *)&p->err;

    uv_process_options_t po = {
        .exit_cb = proc_on_exit,
        .file = o->file,
        .args = o->argv,
        .env = o->envp,
        .cwd = o->cwd,
        .flags = o->new_group ? UV_PROCESS_DETACHED : 0,
        .stdio_count = 3,
        .stdio = stdio,
    };
    int rc = uv_spawn(uv, &p->process, &po);
    if (rc != 0) {
        /* uv_spawn failed: the process handle still needs closing. */
        *uv_err = rc;
        p->freed = true; /* the owner never sees p: drop its reference */
        uv_close((uv_handle_t *)&p->process, proc_handle_closed);
        uv_close((uv_handle_t *)&p->out, proc_handle_closed);
        uv_close((uv_handle_t *)&p->err, proc_handle_closed);
        if (p->has_in)
            uv_close((uv_handle_t *)&p->in, proc_handle_closed);
        return NULL;
    }
    p->open_handles++; /* the process handle */
    p->pid = p->process.pid;
    uv_read_start((uv_stream_t *)&p->out, proc_alloc, proc_on_read);
    uv_read_start((uv_stream_t *)&p->err, proc_alloc, proc_on_read);
    return p;
}

int sk_proc_pid(const sk_proc *p) { return p->pid; }

bool sk_proc_running(const sk_proc *p) { return !p->exit_reported; }

int sk_proc_kill(sk_proc *p, int sig)
{
    if (p->exit_reported)
        return UV_ESRCH;
    if (p->new_group) {
        /* The group outlives its leader while grandchildren hold the pipes. */
        if (kill(-p->pid, sig) == 0)
            return 0;
        if (p->exited)
            return UV_ESRCH;
    }
    if (p->exited)
        return UV_ESRCH;
    return uv_process_kill(&p->process, sig);
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
         * its pipes reach EOF; closing the process handle earlier would
         * leave a zombie (libuv reaps only handles it still tracks). */
        sk_proc_kill(p, SIGKILL);
        sk_proc_close_stdin(p);
    }
    if (--p->open_handles == 0)
        free(p);
}
