/* The provider-neutral sandbox; see sandbox.h (the embedder's API) and
 * provider.h (the provider's). Lifecycle requests coalesce through waiter
 * lists: whoever arrives while an operation runs waits for its outcome
 * instead of starting another. The registry of providers is not here but
 * in providers/registry.c: this file knows no provider by name. */
#include "provider.h"
#include "compat.h"
#include "secrets.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

/* Grace between SIGTERM and SIGKILL for a timed-out process group. */
enum { SANDBOX_KILL_GRACE_MS = 1000 };

struct sk_waiter {
    sk_lifecycle_cb cb;
    void *ud;
    struct sk_waiter *next;
};

const char *sk_status_name(sk_status s)
{
    static const char *const names[] = { "pending", "starting", "running", "stopping",
                                         "stopped", "destroying", "destroyed", "error" };
    return names[s];
}


/* What sk_sandbox_new built around the provider's part, and sb itself. */
static void sandbox_free_own(sk_sandbox *sb)
{
    if (sb->env_held)
        sk_secret_release_env(sb, sb->env);
    json_decref(sb->options);
    json_decref(sb->env);
    free(sb->id);
    free(sb->name);
    free(sb);
}

sk_sandbox *sk_sandbox_new(sk_loop *loop, const sk_provider *provider, const json_t *options,
                           sk_error **err)
{
    sk_sandbox *sb = calloc(1, sizeof *sb);
    if (!sb) {
        *err = sk_error_oom();
        return NULL;
    }
    sb->provider = provider;
    sb->loop = loop;
    sb->status = SK_PENDING;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    sb->created_at_ms = (double)tv.tv_sec * 1000.0 + (double)(tv.tv_usec / 1000);
    sb->options = options ? json_deep_copy(options) : json_object();
    const char *id = json_string_value(json_object_get(sb->options, "id"));
    const char *name = json_string_value(json_object_get(sb->options, "name"));
    json_t *env = json_object_get(sb->options, "env");
    sb->env = json_is_object(env) ? json_deep_copy(env) : json_object();
    if (id)
        sb->id = strdup(id);
    if (name)
        sb->name = strdup(name);
    if (!sb->options || !sb->env || (id && !sb->id) || (name && !sb->name)) {
        *err = sk_error_oom();
        goto fail;
    }
    if (sk_secret_hold_env(sb, sb->env) != 0) {
        *err = sk_error_oom();
        goto fail;
    }
    sb->env_held = true;
    if (provider->init(sb, sb->options, err) != 0)
        goto fail;
    if (!sb->id)
        sb->id = sk_sandbox_default_id(provider->id);
    if (!sb->name)
        sb->name = strdup(provider->name);
    if (!sb->id || !sb->name) {
        *err = sk_error_oom();
        goto fail;
    }
    return sb;
fail:
    if (sb->impl && provider->free)
        provider->free(sb);
    sandbox_free_own(sb);
    return NULL;
}

char *sk_base36(unsigned long long v, char out[SK_BASE36_MAX])
{
    static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    char tmp[SK_BASE36_MAX];
    int n = 0;
    do {
        tmp[n++] = digits[v % 36];
        v /= 36;
    } while (v);
    for (int i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    out[n] = '\0';
    return out;
}

char *sk_sandbox_default_id(const char *prefix)
{
    /* upstream: <prefix>-sandbox-<base36 ms>-<6 random base36 chars> */
    struct timeval tv;
    gettimeofday(&tv, NULL);
    char stamp[SK_BASE36_MAX], digit[SK_BASE36_MAX];
    sk_base36((unsigned long long)tv.tv_sec * 1000ULL + (unsigned long long)tv.tv_usec / 1000ULL, stamp);
    unsigned char bytes[6];
    if (sk_random_bytes(bytes, sizeof bytes) != 0) {
        /* no entropy yet (early boot): unique enough with the time */
        for (size_t i = 0; i < sizeof bytes; i++)
            bytes[i] = (unsigned char)((unsigned long)tv.tv_usec >> (3 * i));
    }
    char rnd[7];
    for (size_t i = 0; i < sizeof bytes; i++)
        rnd[i] = sk_base36(bytes[i] % 36, digit)[0];
    rnd[6] = '\0';
    char *id = NULL;
    if (asprintf(&id, "%s-sandbox-%s-%s", prefix, stamp, rnd) < 0)
        return NULL;
    return id;
}

/* ---- lifecycle ---------------------------------------------------------- */

int sk_waiters_add(sk_waiter **list, sk_lifecycle_cb cb, void *ud)
{
    sk_waiter *w = malloc(sizeof *w);
    if (!w)
        return -1;
    w->cb = cb;
    w->ud = ud;
    w->next = NULL;
    while (*list)
        list = &(*list)->next;
    *list = w;
    return 0;
}

void sk_waiters_remove(sk_waiter **list, void *ud)
{
    for (sk_waiter **pp = list; *pp; pp = &(*pp)->next) {
        if ((*pp)->ud == ud) {
            sk_waiter *w = *pp;
            *pp = w->next;
            free(w);
            return;
        }
    }
}

void sk_waiters_notify(sk_sandbox *sb, sk_waiter **list, const sk_error *err)
{
    sk_waiter *w = *list;
    *list = NULL;
    while (w) {
        sk_waiter *next = w->next;
        sk_lifecycle_cb cb = w->cb;
        void *ud = w->ud;
        free(w);
        if (cb)
            cb(sb, err, ud);
        w = next;
    }
}

void sk_waiters_free(sk_waiter **list)
{
    while (*list) {
        sk_waiter *w = *list;
        *list = w->next;
        free(w);
    }
}

static void sandbox_fail_now(sk_sandbox *sb, sk_lifecycle_cb cb, void *ud, sk_error *err)
{
    if (cb)
        cb(sb, err, ud);
    sk_error_free(err);
}

static void sandbox_kill_all(sk_sandbox *sb)
{
    for (sk_process *p = sb->procs; p; p = p->next)
        if (p->started && !p->exited)
            sb->provider->kill(p, SIGKILL);
}

static void sandbox_begin_start(sk_sandbox *sb);
static void sandbox_begin_stop(sk_sandbox *sb);
static void sandbox_begin_destroy(sk_sandbox *sb);

/* After an operation settles, run whatever was queued behind it. */
static void sandbox_run_queued(sk_sandbox *sb)
{
    if (sb->destroy_waiters && sb->status != SK_DESTROYING && sb->status != SK_DESTROYED)
        sandbox_begin_destroy(sb);
    else if (sb->start_waiters && sb->status != SK_STARTING && sb->status != SK_RUNNING &&
             sb->status != SK_DESTROYED)
        sandbox_begin_start(sb);
}

static void sandbox_on_started(sk_sandbox *sb, sk_error *err)
{
    sb->status = err ? SK_ERROR : SK_RUNNING;
    sk_waiters_notify(sb, &sb->start_waiters, err);
    sk_error_free(err);
    if (sb->stop_waiters && sb->status == SK_RUNNING)
        sandbox_begin_stop(sb);
    else if (sb->stop_waiters) {
        /* a start that failed leaves nothing to stop */
        sb->status = SK_STOPPED;
        sk_waiters_notify(sb, &sb->stop_waiters, NULL);
    }
    sandbox_run_queued(sb);
}

static void sandbox_begin_start(sk_sandbox *sb)
{
    sb->status = SK_STARTING;
    sb->provider->start(sb, sandbox_on_started);
}

void sk_sandbox_start(sk_sandbox *sb, sk_lifecycle_cb cb, void *ud)
{
    switch (sb->status) {
    case SK_DESTROYING:
    case SK_DESTROYED:
        sandbox_fail_now(sb, cb, ud, sk_error_new(SK_ERR_SANDBOX_NOT_READY, NULL,
                                                  "Cannot start a destroyed sandbox"));
        return;
    case SK_RUNNING:
        if (cb)
            cb(sb, NULL, ud);
        return;
    default:
        break;
    }
    if (sk_waiters_add(&sb->start_waiters, cb, ud) != 0) {
        sandbox_fail_now(sb, cb, ud, sk_error_oom());
        return;
    }
    if (sb->status == SK_STARTING || sb->status == SK_STOPPING)
        return; /* joins the start in flight, or starts after the stop */
    sandbox_begin_start(sb);
}

static void sandbox_on_stopped(sk_sandbox *sb, sk_error *err)
{
    sb->status = err ? SK_ERROR : SK_STOPPED; /* upstream: a failed stop is an error */
    sk_waiters_notify(sb, &sb->stop_waiters, err);
    sk_error_free(err);
    sandbox_run_queued(sb);
}

static void sandbox_begin_stop(sk_sandbox *sb)
{
    sb->status = SK_STOPPING;
    sandbox_kill_all(sb);
    sb->provider->stop(sb, sandbox_on_stopped);
}

void sk_sandbox_stop(sk_sandbox *sb, sk_lifecycle_cb cb, void *ud)
{
    bool idle = sb->status == SK_PENDING || sb->status == SK_STOPPED || sb->status == SK_ERROR;
    /* as upstream's _stop(): a stopped sandbox returns at once, whatever the provider */
    bool idle_acts = sb->provider->stop_when_idle && sb->status != SK_STOPPED;
    if (sb->status == SK_DESTROYED || (idle && !idle_acts)) {
        if (sb->status == SK_ERROR)
            sb->status = SK_STOPPED;
        if (cb)
            cb(sb, NULL, ud);
        return;
    }
    if (sk_waiters_add(&sb->stop_waiters, cb, ud) != 0) {
        sandbox_fail_now(sb, cb, ud, sk_error_oom());
        return;
    }
    if (sb->status == SK_RUNNING || idle)
        sandbox_begin_stop(sb);
    /* STARTING: stops once the start settles; STOPPING: joins it;
     * DESTROYING: settles with the destroy. */
}

static void process_unlink(sk_process *p);

/* A destroyed sandbox lists no processes, not even those killed whose exit
 * is still on its way (they unlink themselves when it arrives). Handles
 * the caller holds keep working. */
static void sandbox_forget_processes(sk_sandbox *sb)
{
    sk_process *next;
    for (sk_process *p = sb->procs; p; p = next) {
        next = p->next;
        if (!p->tracked)
            continue;
        p->tracked = false;
        if (p->exited) {
            process_unlink(p);
            sk_process_unref(p); /* the list's */
        }
    }
}

static void sandbox_on_destroyed(sk_sandbox *sb, sk_error *err)
{
    if (err) {
        /* upstream: a failed destroy leaves the sandbox in error; it may be
         * destroyed again, and queued starts or stops proceed */
        sb->status = SK_ERROR;
        sk_waiters_notify(sb, &sb->destroy_waiters, err);
        sk_error_free(err);
        if (sb->stop_waiters) {
            sb->status = SK_STOPPED;
            sk_waiters_notify(sb, &sb->stop_waiters, NULL);
        }
        sandbox_run_queued(sb);
        return;
    }
    sb->status = SK_DESTROYED;
    sandbox_forget_processes(sb);
    sk_waiters_notify(sb, &sb->destroy_waiters, err);
    /* anyone still waiting for a stop or start learns the outcome */
    sk_waiters_notify(sb, &sb->stop_waiters, NULL);
    sk_error *gone = sk_error_new(SK_ERR_SANDBOX_NOT_READY, NULL, "Cannot start a destroyed sandbox");
    sk_waiters_notify(sb, &sb->start_waiters, gone);
    sk_error_free(gone);
    sk_error_free(err);
}

static void sandbox_begin_destroy(sk_sandbox *sb)
{
    if (sb->status == SK_PENDING && !sb->provider->destroy_when_idle) {
        /* never provisioned: nothing to tear down (upstream) */
        sandbox_on_destroyed(sb, NULL);
        return;
    }
    sb->status = SK_DESTROYING;
    sandbox_kill_all(sb);
    sb->provider->destroy(sb, sandbox_on_destroyed);
}

void sk_sandbox_destroy(sk_sandbox *sb, sk_lifecycle_cb cb, void *ud)
{
    if (sb->status == SK_DESTROYED) {
        if (cb)
            cb(sb, NULL, ud);
        return;
    }
    if (sk_waiters_add(&sb->destroy_waiters, cb, ud) != 0) {
        sandbox_fail_now(sb, cb, ud, sk_error_oom());
        return;
    }
    if (sb->status == SK_STARTING || sb->status == SK_STOPPING || sb->status == SK_DESTROYING)
        return; /* after the operation in flight */
    sandbox_begin_destroy(sb);
}

static void sandbox_on_refreshed(sk_sandbox *sb, sk_error *err)
{
    sk_waiters_notify(sb, &sb->refresh_waiters, err);
    sk_error_free(err);
}

void sk_sandbox_refresh(sk_sandbox *sb, sk_lifecycle_cb cb, void *ud)
{
    if (!sb->provider->refresh || sb->status != SK_RUNNING) {
        if (cb)
            cb(sb, NULL, ud);
        return;
    }
    bool first = !sb->refresh_waiters;
    if (sk_waiters_add(&sb->refresh_waiters, cb, ud) != 0) {
        sandbox_fail_now(sb, cb, ud, sk_error_oom());
        return;
    }
    if (first)
        sb->provider->refresh(sb, sandbox_on_refreshed);
}

/* ---- processes ---------------------------------------------------------- */

static void process_on_timer(uv_timer_t *t)
{
    sk_process *p = t->data;
    if (p->exited || !p->sb)
        return;
    if (!p->deadline_passed) {
        /* Timers run before the loop takes I/O: after the host blocked
         * past the deadline, the command's end may be waiting unread. One
         * pass of I/O first, so a command that ended is not called late. */
        p->deadline_passed = true;
        sk_timer_arm(t, process_on_timer, 1, 0);
        return;
    }
    if (!p->timing_out) {
        p->timing_out = true;
        p->sb->provider->kill(p, SIGTERM);
        sk_timer_arm(t, process_on_timer, SANDBOX_KILL_GRACE_MS, 0);
    } else {
        p->sb->provider->kill(p, SIGKILL);
    }
}

/* O(1): a sandbox with 1,000 commands in flight unlinks each as it ends. */
static void process_unlink(sk_process *p)
{
    if (!p->pprev)
        return;
    *p->pprev = p->next;
    if (p->next)
        p->next->pprev = p->pprev;
    p->next = NULL;
    p->pprev = NULL;
}

static void process_free(sk_process *p)
{
    sk_timer_close(&p->timer);
    if (p->impl && p->sb && p->sb->provider->release)
        p->sb->provider->release(p);
    free(p->command);
    sk_buf_free(&p->out);
    sk_buf_free(&p->err);
    sk_error_free(p->error);
    if (p->held_env) {
        sk_secret_release_env(p->held_owner, p->held_env);
        json_decref(p->held_env);
    }
    free(p);
}

void sk_process_ref(sk_process *p) { p->refs++; }

void sk_process_unref(sk_process *p)
{
    if (--p->refs > 0)
        return;
    process_unlink(p);
    process_free(p);
}

sk_process *sk_sandbox_spawn(sk_sandbox *sb, const sk_spawn_opts *o, bool tracked,
                             const sk_process_events *ev, void *ev_ud, sk_error **err)
{
    if (sb->status != SK_RUNNING) {
        *err = sk_error_new(SK_ERR_SANDBOX_NOT_READY, NULL, "Sandbox is not running (status: %s)",
                            sk_status_name(sb->status));
        return NULL;
    }
    sk_process *p = calloc(1, sizeof *p);
    if (!p || !(p->command = strdup(o->command))) {
        free(p);
        *err = sk_error_oom();
        return NULL;
    }
    p->sb = sb;
    p->capture = o->capture;
    p->max_output = o->max_output ? o->max_output : SK_MAX_OUTPUT_DEFAULT;
    p->tracked = tracked;
    p->ev = ev;
    p->ev_ud = ev_ud;
    p->timeout_ms = o->timeout_ms;
    p->refs = 1; /* the caller's */
    p->start_ms = sk_now_ms();
    /* Per-command env values are secrets for as long as the process lives. */
    if (json_object_size(o->env) > 0) {
        json_t *held = json_deep_copy(o->env);
        if (!held || sk_secret_hold_env(sb, held) != 0) {
            json_decref(held);
            process_free(p);
            *err = sk_error_oom();
            return NULL;
        }
        p->held_env = held;
        p->held_owner = sb;
    }
    /* The timeout timer exists before the command does: a command must not
     * run without its timeout because a few bytes were missing after. */
    bool timed = o->timeout_ms > 0 && !sb->provider->handles_timeout;
    if (timed && !(p->timer = sk_timer_new(sb->loop, p))) {
        process_free(p);
        *err = sk_error_oom();
        return NULL;
    }
    if (sb->provider->spawn(sb, p, o, err) != 0) {
        process_free(p);
        return NULL;
    }
    p->started = true;
    if (!p->pid[0])
        snprintf(p->pid, sizeof p->pid, "%u", ++sb->next_local_pid);
    p->refs++; /* the sandbox's list */
    p->next = sb->procs;
    if (p->next)
        p->next->pprev = &p->next;
    p->pprev = &sb->procs;
    sb->procs = p;
    if (timed && !p->exited)
        sk_timer_arm(p->timer, process_on_timer, (uint64_t)o->timeout_ms, 0);
    return p;
}

/* Room for extra more bytes, growing by doubling but never past what
 * max_output can use (a 64 MiB cap must not cost a 128 MiB buffer); past
 * it (the timeout note) exactly. Bulk output goes to a huge-page mapping
 * (buf.h). */
static int process_reserve(sk_process *p, sk_buf *b, size_t extra)
{
    return sk_buf_reserve_bulk(b, extra, p->max_output + 1);
}

/* Out of memory while capturing: what was kept goes (the result becomes
 * an error), the output is still drained so the command is not blocked. */
static void process_capture_failed(sk_process *p)
{
    p->capture_failed = true;
    sk_buf_free(&p->out);
    sk_buf_free(&p->err);
}

/* The first read of a stream gets a small slot: most commands print little,
 * and a full-size one (128 KiB) per stream was a mapping made and dropped
 * per command, or heap churn at a thousand commands in flight. Output that
 * fills it gets full-size slots from the next read on. */
enum { PROCESS_FIRST_SLOT = 4096 - 1 };

char *sk_process_capture_slot(sk_process *p, int stream, size_t *len)
{
    sk_buf *b = stream == 1 ? &p->out : &p->err;
    if (!p->capture || p->exited || p->capture_failed || b->len >= p->max_output)
        return NULL;
    if (!b->cap && *len > PROCESS_FIRST_SLOT)
        *len = PROCESS_FIRST_SLOT;
    size_t room = p->max_output - b->len;
    if (*len > room)
        *len = room;
    if (process_reserve(p, b, *len) != 0)
        return NULL; /* sk_process_output meets the failure again */
    *len = b->cap - b->len - 1; /* keep room for the terminating NUL */
    if (*len > room)
        *len = room;
    return b->data + b->len;
}

void sk_process_reset_capture(sk_process *p)
{
    sk_buf_reset(&p->out);
    sk_buf_reset(&p->err);
    p->out_truncated = p->err_truncated = p->capture_failed = false;
}

void sk_process_output(sk_process *p, int stream, const char *data, size_t len)
{
    if (p->exited)
        return;
    if (p->capture && !p->capture_failed) {
        sk_buf *b = stream == 1 ? &p->out : &p->err;
        if (b->data && data == b->data + b->len) {
            b->len += len; /* read in place (sk_process_capture_slot), within the cap */
            b->data[b->len] = '\0';
        } else {
            size_t room = b->len < p->max_output ? p->max_output - b->len : 0;
            size_t keep = len < room ? len : room;
            if (keep < len)
                *(stream == 1 ? &p->out_truncated : &p->err_truncated) = true;
            if (keep && process_reserve(p, b, keep) != 0)
                process_capture_failed(p);
            else if (keep)
                sk_buf_append(b, data, keep);
        }
    }
    if (p->ev && p->ev->output)
        p->ev->output(p, stream, data, len, p->ev_ud);
}

void sk_process_finish(sk_process *p, const sk_result *r, sk_error *err)
{
    if (p->exited) {
        sk_error_free(err);
        return;
    }
    p->exited = true;
    sk_timer_close(&p->timer);
    if (r)
        p->result = *r;
    else
        p->result.exit_code = -1;
    if (!err && p->capture_failed)
        err = sk_error_new(SK_ERR_OUT_OF_MEMORY, json_pack("{s:I}", "max_output_bytes", (json_int_t)p->max_output),
                           "out of memory while capturing the command's output (lower max_output_bytes, "
                           "or stream it with capture = false)");
    p->error = err;
    p->result.truncated = p->out_truncated || p->err_truncated;
    p->result.execution_time_ms = sk_now_ms() - p->start_ms;
    if (p->timing_out && !err) {
        p->result.exit_code = 124;
        p->result.timed_out = true;
        p->result.killed = true;
        /* upstream's note, in the result only: the output callbacks carry
         * what the command printed and nothing else */
        char note[96];
        int n = snprintf(note, sizeof note, "\nProcess timed out after %lldms", (long long)p->timeout_ms);
        if (p->capture && !p->capture_failed && process_reserve(p, &p->err, (size_t)n) == 0)
            sk_buf_append(&p->err, note, (size_t)n);
    }
    if (p->cancelling) {
        p->result.cancelled = true;
        p->result.killed = true;
    }
    sk_process_ref(p); /* the callback may drop the caller's reference */
    if (p->ev && p->ev->exit)
        p->ev->exit(p, &p->result, p->error, p->ev_ud);
    if (p->impl && p->sb && p->sb->provider->release)
        p->sb->provider->release(p);
    if (!p->tracked && p->sb) {
        process_unlink(p);
        p->refs--; /* the list's */
    }
    sk_process_unref(p);
}

sk_process *sk_process_get(sk_sandbox *sb, const char *pid)
{
    for (sk_process *p = sb->procs; p; p = p->next) {
        if (!p->tracked || strcmp(p->pid, pid) != 0)
            continue;
        if (p->exited)
            sk_process_untrack(p); /* returned once more, then pruned */
        return p;
    }
    return NULL;
}

void sk_process_untrack(sk_process *p)
{
    if (!p->tracked)
        return;
    p->tracked = false;
    if (p->pprev) {
        process_unlink(p);
        /* the caller of get() still holds its own reference */
        p->refs--;
    }
}

int sk_process_kill(sk_process *p, int sig)
{
    if (p->exited || !p->sb)
        return -1;
    return p->sb->provider->kill(p, sig);
}

void sk_process_cancel(sk_process *p)
{
    if (p->exited || !p->sb)
        return;
    p->cancelling = true;
    p->sb->provider->kill(p, SIGKILL);
}

int sk_process_write_stdin(sk_process *p, const char *data, size_t len, sk_error **err)
{
    if (p->exited || !p->sb) {
        *err = sk_error_new(SK_ERR_PROCESS_EXITED, NULL, "Process %s has already exited", p->pid);
        return -1;
    }
    if (!p->sb->provider->write_stdin) {
        *err = sk_error_new(SK_ERR_UNSUPPORTED, NULL, "%s does not support writing to stdin",
                            p->sb->provider->name);
        return -1;
    }
    return p->sb->provider->write_stdin(p, data, len, err);
}

int sk_process_close_stdin(sk_process *p)
{
    if (p->exited || !p->sb || !p->sb->provider->close_stdin)
        return -1;
    return p->sb->provider->close_stdin(p);
}

void sk_sandbox_mark_error(sk_sandbox *sb)
{
    if (sb->status == SK_RUNNING)
        sb->status = SK_ERROR;
}

void sk_process_detach(sk_process *p)
{
    p->ev = NULL;
    p->ev_ud = NULL;
}

sk_buf *sk_process_capture(sk_process *p, int stream) { return stream == 1 ? &p->out : &p->err; }

/* ---- accessors (sandbox.h) ---------------------------------------------- */

const char *sk_provider_id(const sk_provider *p) { return p->id; }
const char *sk_provider_name(const sk_provider *p) { return p->name; }
bool sk_provider_stops_when_idle(const sk_provider *p) { return p->stop_when_idle; }
const sk_ops *sk_provider_fs(const sk_provider *p) { return p->fs; }
const sk_ops *sk_provider_calls(const sk_provider *p) { return p->calls; }

long sk_sandbox_fs_generation(const sk_sandbox *sb)
{
    return sb->provider->fs_generation && sb->impl ? sb->provider->fs_generation(sb) : -1;
}

int sk_sandbox_fs_get(const sk_sandbox *sb, sk_sandbox_fs *fs)
{
    return sb->provider->fs_get && sb->impl ? sb->provider->fs_get(sb, fs) : -EINVAL;
}

const char *sk_sandbox_id(const sk_sandbox *sb) { return sb->id; }
const char *sk_sandbox_name(const sk_sandbox *sb) { return sb->name; }
const sk_provider *sk_sandbox_provider(const sk_sandbox *sb) { return sb->provider; }
sk_status sk_sandbox_status(const sk_sandbox *sb) { return sb->status; }
double sk_sandbox_created_at_ms(const sk_sandbox *sb) { return sb->created_at_ms; }

json_t *sk_sandbox_metadata(sk_sandbox *sb)
{
    return sb->provider->metadata ? sb->provider->metadata(sb) : NULL;
}

char *sk_sandbox_instructions(sk_sandbox *sb)
{
    return sb->provider->instructions ? sb->provider->instructions(sb) : NULL;
}

sk_process *sk_sandbox_processes(const sk_sandbox *sb) { return sb->procs; }
sk_process *sk_process_next(const sk_process *p) { return p->next; }
bool sk_process_tracked(const sk_process *p) { return p->tracked; }
const char *sk_process_pid(const sk_process *p) { return p->pid; }
const char *sk_process_command(const sk_process *p) { return p->command; }
bool sk_process_exited(const sk_process *p) { return p->exited; }
const sk_result *sk_process_result(const sk_process *p) { return p->exited ? &p->result : NULL; }
const sk_error *sk_process_error(const sk_process *p) { return p->exited ? p->error : NULL; }

json_t *sk_sandbox_merged_env(const sk_sandbox *sb, const json_t *per_command)
{
    json_t *env = json_deep_copy(sb->env);
    if (env && json_is_object(per_command))
        json_object_update(env, (json_t *)per_command);
    return env;
}

void sk_sandbox_free(sk_sandbox *sb)
{
    if (!sb)
        return;
    sk_process *p = sb->procs;
    sb->procs = NULL;
    while (p) {
        sk_process *next = p->next;
        p->next = NULL;
        p->pprev = NULL;
        if (p->started && !p->exited)
            sb->provider->kill(p, SIGKILL);
        if (p->impl && sb->provider->release)
            sb->provider->release(p);
        sk_timer_close(&p->timer);
        p->sb = NULL;
        p->ev = NULL;
        p->exited = true;
        p->tracked = false;
        sk_process_unref(p); /* the list's */
        p = next;
    }
    /* Waiters own their callback data: settle them rather than drop them. */
    sk_error *closed = sk_error_new(SK_ERR_SANDBOX_NOT_READY, NULL, "The sandbox was closed");
    sk_waiters_notify(sb, &sb->start_waiters, closed);
    sk_waiters_notify(sb, &sb->stop_waiters, closed);
    sk_waiters_notify(sb, &sb->destroy_waiters, closed);
    sk_waiters_notify(sb, &sb->refresh_waiters, closed);
    sk_error_free(closed);
    if (sb->provider->free)
        sb->provider->free(sb);
    sandbox_free_own(sb);
}
