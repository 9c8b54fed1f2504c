/* ModalSandbox commands.
 *
 * - a command: `sh -c <command>` through the router (TaskExecStart, two
 *   TaskExecStdioRead streams, TaskExecWait). A dead sandbox met before the
 *   command started is re-provisioned and the command retried once
 *   (upstream retryOnDead). There is no kill RPC in the SDK: kill ends the
 *   local streams (upstream reports 137) and TaskExecStart carries a
 *   timeout_secs backstop when the command has a timeout.
 * - stdin goes through TaskExecStdinWrite, serialised by byte offset; a
 *   command run with exec() gets stdin EOF at once so it never hangs on a
 *   read. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>

#include "../../grpc_frame.h"
#include "../../log.h"
#include "modal_state.h"

#define MODAL_EXEC_WAIT_ATTEMPT_MS 60000 /* per TaskExecWait attempt */

/* The longest exec backstop sent (TaskExecStart.timeout_secs), in seconds. */
#define MODAL_MAX_BACKSTOP_S 2147483

typedef struct modal_exec {
    modal_sandbox *ms;
    sk_process *p;
    char exec_id[37];
    char *command, *cwd;
    json_t *env;             /* merged sandbox + command env */
    int64_t timeout_ms;
    bool retried;            /* the one dead-sandbox retry was used */
    bool waiting;            /* on a waiter list */
    bool started;            /* TaskExecStart succeeded */
    bool finishing;
    unsigned gen;
    mc_router *router;       /* referenced while it runs */
    mc_call *start_call, *wait_call, *stdio[2], *stdin_call;
    bool eof[2], exited;
    sk_result result;
    sk_error *error;
    uv_timer_t *finish_timer;
    /* stdin */
    sk_buf stdin_pending;
    uint64_t stdin_offset;   /* bytes the router has acknowledged */
    size_t stdin_inflight;
    bool stdin_eof_wanted, stdin_eof_sent, stdin_eof_inflight;
} modal_exec;

/* ---- commands -------------------------------------------------------------------- */

static void proc_acquire(modal_exec *mp);
static void proc_stdin_pump(modal_exec *mp);

static void proc_cancel_calls(modal_exec *mp)
{
    modal_sandbox *ms = mp->ms;
    if (mp->waiting) {
        sk_waiters_remove(&ms->prov.waiters, mp);
        sk_waiters_remove(&ms->ready.waiters, mp);
        mp->waiting = false;
    }
    sk_mc_call_cancel(mp->start_call);
    sk_mc_call_cancel(mp->wait_call);
    sk_mc_call_cancel(mp->stdio[0]);
    sk_mc_call_cancel(mp->stdio[1]);
    sk_mc_call_cancel(mp->stdin_call);
    mp->start_call = mp->wait_call = mp->stdio[0] = mp->stdio[1] = mp->stdin_call = NULL;
}

static void proc_on_finish_timer(uv_timer_t *t)
{
    modal_exec *mp = t->data;
    sk_error *err = mp->error;
    mp->error = NULL;
    sk_result r = mp->result;
    /* May release (free) mp. */
    sk_process_finish(mp->p, err ? NULL : &r, err);
}

/* Ends the process from the loop, never from inside spawn or kill. */
static void proc_finish(modal_exec *mp, const sk_result *r, sk_error *err)
{
    if (mp->finishing) {
        sk_error_free(err);
        return;
    }
    mp->finishing = true;
    proc_cancel_calls(mp);
    if (r)
        mp->result = *r;
    mp->error = err;
    if (sk_timer_start(mp->ms->sb->loop, &mp->finish_timer, mp, 0, proc_on_finish_timer) != 0)
        abort(); /* a few bytes; the process could never end without them */
}

static void proc_maybe_done(modal_exec *mp)
{
    if (mp->eof[0] && mp->eof[1] && mp->exited)
        proc_finish(mp, &mp->result, NULL);
}

static void proc_on_data(void *ud, const uint8_t *data, size_t len, int stream)
{
    modal_exec *mp = ud;
    sk_process_output(mp->p, stream, (const char *)data, len);
}

static void proc_on_stdout(void *ud, const uint8_t *data, size_t len) { proc_on_data(ud, data, len, 1); }
static void proc_on_stderr(void *ud, const uint8_t *data, size_t len) { proc_on_data(ud, data, len, 2); }

static void proc_on_stdio_end(modal_exec *mp, int i, const mc_reply *r)
{
    mp->stdio[i] = NULL;
    if (r->code != 0) {
        proc_finish(mp, NULL, sk_mc_error(mp->ms->client, r, NULL));
        return;
    }
    mp->eof[i] = true;
    /* The output streams held the connection's nghttp2 paused; with them
     * ended, an exit answer that lost its grpc-status to that will not
     * lose it again (docs/reliability.md §"Lost trailers"). */
    if (mp->eof[0] && mp->eof[1])
        sk_mc_call_wake(mp->wait_call);
    proc_maybe_done(mp);
}

static void proc_on_stdout_end(void *ud, const mc_reply *r) { proc_on_stdio_end(ud, 0, r); }
static void proc_on_stderr_end(void *ud, const mc_reply *r) { proc_on_stdio_end(ud, 1, r); }

static void proc_on_wait(void *ud, const mc_reply *r)
{
    modal_exec *mp = ud;
    mp->wait_call = NULL;
    if (r->code != 0) {
        proc_finish(mp, NULL, sk_mc_error(mp->ms->client, r, NULL));
        return;
    }
    sk_modal_task_exec_wait_response resp;
    if (sk_modal_decode_task_exec_wait(r->data, r->len, &resp) != 0 || (!resp.has_code && !resp.has_signal)) {
        proc_finish(mp, NULL, sk_error_new(SK_ERR_MODAL, json_pack("{s:s,s:s}", "rpc", r->rpc, "sdk_error",
                                                                  "InvalidError"),
                                           "Unexpected exit status"));
        return;
    }
    memset(&mp->result, 0, sizeof mp->result);
    if (resp.has_signal) {
        /* the signal is any int32 the router sends: 128 + INT32_MAX
         * would overflow */
        mp->result.exit_code = resp.signal > INT_MAX - 128 ? INT_MAX : 128 + resp.signal;
        mp->result.killed = true;
    } else {
        mp->result.exit_code = resp.code;
    }
    mp->exited = true;
    proc_maybe_done(mp);
}

static void proc_on_stdin(void *ud, const mc_reply *r)
{
    modal_exec *mp = ud;
    mp->stdin_call = NULL;
    if (r->code != 0) {
        /* The process may simply have ended; nobody waits on stdin. */
        sk_log(SK_LOG_DEBUG, "modal", "stdin write for %s failed (%s)", mp->p->pid,
               sk_grpc_code_name(r->code) ? sk_grpc_code_name(r->code) : "UNKNOWN");
        sk_buf_reset(&mp->stdin_pending);
        mp->stdin_eof_sent = true;
        return;
    }
    mp->stdin_offset += mp->stdin_inflight;
    size_t left = mp->stdin_pending.len - mp->stdin_inflight;
    if (left)
        memmove(mp->stdin_pending.data, mp->stdin_pending.data + mp->stdin_inflight, left);
    mp->stdin_pending.len = left;
    if (mp->stdin_pending.data)
        mp->stdin_pending.data[left] = '\0';
    mp->stdin_inflight = 0;
    if (mp->stdin_eof_inflight)
        mp->stdin_eof_sent = true;
    proc_stdin_pump(mp);
}

/* One TaskExecStdinWrite at a time, so offsets arrive in order. */
static void proc_stdin_pump(modal_exec *mp)
{
    if (!mp->started || mp->stdin_call || mp->finishing || mp->stdin_eof_sent)
        return;
    bool eof = mp->stdin_eof_wanted;
    if (mp->stdin_pending.len == 0 && !eof)
        return;
    sk_buf msg = { 0 };
    sk_modal_task_exec_stdin_write_request m = { .task_id = sk_mc_router_task_id(mp->router),
                                                 .exec_id = mp->exec_id,
                                                 .offset = mp->stdin_offset,
                                                 .data = mp->stdin_pending.data,
                                                 .data_len = mp->stdin_pending.len,
                                                 .eof = eof };
    if (sk_modal_encode_task_exec_stdin_write(&msg, &m) == 0)
        mp->stdin_call = sk_mc_router_unary(mp->router, SK_MODAL_RPC_TASK_EXEC_STDIN_WRITE, &msg, &sk_mc_retry_router,
                                         proc_on_stdin, mp);
    sk_buf_free(&msg);
    if (mp->stdin_call) {
        mp->stdin_inflight = mp->stdin_pending.len;
        mp->stdin_eof_inflight = eof;
    }
}

static void proc_on_started(void *ud, const mc_reply *r);

/* After any wait: try again from wherever the sandbox now is; a dead
 * sandbox is re-provisioned once per command. */
static void proc_on_waited(sk_sandbox *sb, const sk_error *err, void *ud)
{
    (void)sb;
    modal_exec *mp = ud;
    mp->waiting = false;
    if (err) {
        if (sk_modal_error_dead(err) && !mp->retried) {
            mp->retried = true;
            mp->waiting = true;
            sk_modal_revive(mp->ms, proc_on_waited, mp);
            return;
        }
        proc_finish(mp, NULL, sk_error_copy(err));
        return;
    }
    proc_acquire(mp);
}

static void proc_exec_start(modal_exec *mp)
{
    modal_sandbox *ms = mp->ms;
    if (mp->router)
        sk_mc_router_unref(mp->router);
    mp->router = ms->router;
    sk_mc_router_ref(mp->router);
    mp->gen = ms->gen;
    sk_mc_uuid4(mp->exec_id);
    const char *argv[] = { "sh", "-c", mp->command };
    size_t n;
    sk_modal_kv *kv = sk_modal_env_kvs(mp->env, &n);
    sk_buf msg = { 0 };
    int rc = -1;
    if (kv) {
        sk_modal_task_exec_start_request m = {
            .task_id = sk_mc_router_task_id(mp->router),
            .exec_id = mp->exec_id,
            .command_args = { argv, 3 },
            .stdout_config = SK_MODAL_TASK_EXEC_STDOUT_CONFIG_PIPE,
            .stderr_config = SK_MODAL_TASK_EXEC_STDERR_CONFIG_PIPE,
            .workdir = mp->cwd,
            .env = { kv, n },
        };
        if (mp->timeout_ms > 0) {
            /* A backstop for the remote process: the local timer (sandbox.c)
             * fires first and reports the timeout. */
            m.has_timeout_secs = true;
            /* a uint32 on the wire: a longer timeout must not wrap to a
             * short backstop (2^32 s became 1 s). Capped at 2^31 - 1 ms,
             * the longest a JavaScript timer waits (a longer one fires at
             * once) and longer than a Modal sandbox lives (24 h). */
            int64_t secs = (mp->timeout_ms + 999) / 1000 + 1;
            m.timeout_secs = secs > MODAL_MAX_BACKSTOP_S ? MODAL_MAX_BACKSTOP_S : (uint32_t)secs;
        }
        rc = sk_modal_encode_task_exec_start(&msg, &m);
        free(kv);
    }
    if (rc == 0)
        mp->start_call = sk_mc_router_unary(mp->router, SK_MODAL_RPC_TASK_EXEC_START, &msg, &sk_mc_retry_router,
                                         proc_on_started, mp);
    sk_buf_free(&msg);
    if (!mp->start_call)
        proc_finish(mp, NULL, sk_error_oom());
}

static void proc_on_started(void *ud, const mc_reply *r)
{
    modal_exec *mp = ud;
    modal_sandbox *ms = mp->ms;
    mp->start_call = NULL;
    if (r->code != 0) {
        if (sk_modal_dead(r->code, r->message) && !mp->retried) {
            mp->retried = true;
            mp->waiting = true;
            if (ms->gen != mp->gen)
                proc_on_waited(ms->sb, NULL, mp); /* already replaced by another command's retry */
            else
                sk_modal_revive(ms, proc_on_waited, mp);
            return;
        }
        proc_finish(mp, NULL, sk_mc_error(ms->client, r, NULL));
        return;
    }
    mp->started = true;
    mp->stdio[0] = sk_mc_stdio_read(mp->router, mp->exec_id, SK_MODAL_TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDOUT,
                                    proc_on_stdout, proc_on_stdout_end, mp);
    mp->stdio[1] = sk_mc_stdio_read(mp->router, mp->exec_id, SK_MODAL_TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDERR,
                                    proc_on_stderr, proc_on_stderr_end, mp);
    sk_buf msg = { 0 };
    sk_modal_task_exec_wait_request m = { .task_id = sk_mc_router_task_id(mp->router), .exec_id = mp->exec_id };
    mc_retry policy = { .base_ms = 1000, .factor = 1, .max_retries = -1,
                        .attempt_timeout_ms = MODAL_EXEC_WAIT_ATTEMPT_MS };
    if (sk_modal_encode_task_exec_wait(&msg, &m) == 0)
        mp->wait_call = sk_mc_router_unary(mp->router, SK_MODAL_RPC_TASK_EXEC_WAIT, &msg, &policy, proc_on_wait, mp);
    sk_buf_free(&msg);
    if (!mp->stdio[0] || !mp->stdio[1] || !mp->wait_call) {
        proc_finish(mp, NULL, sk_error_oom());
        return;
    }
    proc_stdin_pump(mp);
}

static void proc_acquire(modal_exec *mp)
{
    modal_sandbox *ms = mp->ms;
    mp->waiting = true;
    if (ms->router && !ms->prov.active) {
        mp->waiting = false;
        proc_exec_start(mp);
    } else if (ms->sandbox_id && !ms->prov.active) {
        sk_modal_ready(ms, proc_on_waited, mp);
    } else {
        sk_modal_provision(ms, proc_on_waited, mp);
    }
}

int sk_modal_exec_spawn(sk_sandbox *sb, sk_process *p, const sk_spawn_opts *o, sk_error **err)
{
    modal_sandbox *ms = sb->impl;
    modal_exec *mp = calloc(1, sizeof *mp);
    if (!mp)
        goto oom;
    mp->ms = ms;
    mp->p = p;
    mp->command = strdup(o->command);
    mp->cwd = o->cwd ? strdup(o->cwd) : NULL;
    mp->env = sk_sandbox_merged_env(sb, o->env);
    mp->timeout_ms = o->timeout_ms;
    if (!mp->command || (o->cwd && !mp->cwd) || !mp->env)
        goto oom_free;
    if (o->has_stdin && o->stdin_len && sk_buf_append(&mp->stdin_pending, o->stdin_data, o->stdin_len) != 0)
        goto oom_free;
    if (!o->keep_stdin_open)
        mp->stdin_eof_wanted = true; /* exec: stdin is closed once written */
    p->impl = mp;
    /* upstream's handle id: modal-proc-<base36 ms>-<counter> */
    struct timeval tv;
    gettimeofday(&tv, NULL);
    char stamp[SK_BASE36_MAX];
    sk_base36((unsigned long long)tv.tv_sec * 1000ULL + (unsigned long long)tv.tv_usec / 1000ULL, stamp);
    snprintf(p->pid, sizeof p->pid, "modal-proc-%s-%u", stamp, ++ms->proc_counter);
    proc_acquire(mp);
    return 0;
oom_free:
    free(mp->command);
    free(mp->cwd);
    json_decref(mp->env);
    sk_buf_free(&mp->stdin_pending);
    free(mp);
oom:
    *err = sk_error_oom();
    return -1;
}

int sk_modal_exec_kill(sk_process *p, int sig)
{
    (void)sig;
    modal_exec *mp = p->impl;
    if (!mp || mp->finishing)
        return -1;
    /* No kill RPC in the SDK: the local streams end (upstream reports 137);
     * the remote process runs on until its timeout_secs or the sandbox's. */
    sk_result r = { .exit_code = 137, .killed = true };
    proc_finish(mp, &r, NULL);
    return 0;
}

int sk_modal_exec_write_stdin(sk_process *p, const char *data, size_t len, sk_error **err)
{
    modal_exec *mp = p->impl;
    if (!mp || mp->finishing || mp->stdin_eof_wanted) {
        *err = sk_error_new(SK_ERR_PROCESS_EXITED, NULL, "Cannot write to stdin of process %s: stdin is closed",
                            p->pid);
        return -1;
    }
    if (sk_buf_append(&mp->stdin_pending, data, len) != 0) {
        *err = sk_error_oom();
        return -1;
    }
    proc_stdin_pump(mp);
    return 0;
}

int sk_modal_exec_close_stdin(sk_process *p)
{
    modal_exec *mp = p->impl;
    if (!mp || mp->finishing)
        return -1;
    mp->stdin_eof_wanted = true;
    proc_stdin_pump(mp);
    return 0;
}

void sk_modal_exec_release(sk_process *p)
{
    modal_exec *mp = p->impl;
    if (!mp)
        return;
    proc_cancel_calls(mp);
    sk_timer_close(&mp->finish_timer);
    if (mp->router)
        sk_mc_router_unref(mp->router);
    sk_error_free(mp->error);
    free(mp->command);
    free(mp->cwd);
    json_decref(mp->env);
    sk_buf_free(&mp->stdin_pending);
    free(mp);
    p->impl = NULL;
}

