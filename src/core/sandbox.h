/* The provider-neutral sandbox: lifecycle state machine with coalesced
 * start/stop/destroy, and process bookkeeping (background processes, exec =
 * spawn + wait, per-process timeout). A provider is a vtable (sk_provider)
 * plus its own state in sb->impl; adding a provider adds one file under
 * providers/ and one line in sk_providers[] (sandbox.c).
 *
 * Callbacks to the embedder (sk_lifecycle_cb, sk_process_events) may run
 * synchronously from the call that caused them or later from the loop; the
 * Lua binding queues them and delivers them from step. */
#ifndef SK_SANDBOX_H
#define SK_SANDBOX_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include "buf.h"
#include "error.h"
#include "loop.h"

typedef enum {
    SK_PENDING, SK_STARTING, SK_RUNNING, SK_STOPPING,
    SK_STOPPED, SK_DESTROYING, SK_DESTROYED, SK_ERROR
} sk_status;

const char *sk_status_name(sk_status s);

typedef struct sk_sandbox sk_sandbox;
typedef struct sk_process sk_process;

typedef struct sk_result {
    int exit_code;
    bool timed_out;  /* exit_code is 124 */
    bool killed;     /* ended by a signal (exit_code 128 + N) or by kill() */
    bool cancelled;  /* ended by sk_process_cancel */
    bool truncated;  /* a captured stream passed max_output; its first bytes were kept */
    bool oom_killed; /* the OOM killer killed a process of the command (a sandbox memory limit) */
    double execution_time_ms;
} sk_result;

typedef struct sk_spawn_opts {
    const char *command;      /* full shell string */
    const char *cwd;          /* NULL: the sandbox's working directory */
    json_t *env;              /* per-command env (object of strings) or NULL; borrowed */
    int64_t timeout_ms;       /* <= 0: none */
    const char *stdin_data;   /* written then stdin closed (exec) */
    size_t stdin_len;
    bool has_stdin;
    bool keep_stdin_open;     /* background spawn: stdin stays writable */
    bool capture;             /* accumulate stdout/stderr on the process */
    size_t max_output;        /* bytes kept per captured stream; 0: SK_MAX_OUTPUT_DEFAULT */
} sk_spawn_opts;

/* Captured output kept per stream unless the caller says otherwise: enough
 * for any log or listing a caller reads whole, small enough that a runaway
 * command costs at most 2 streams x (buffer + Lua copy) = 256 MiB. */
#define SK_MAX_OUTPUT_DEFAULT ((size_t)64 * 1024 * 1024)

typedef struct sk_process_events {
    void (*output)(sk_process *p, int stream /* 1 or 2 */, const char *data, size_t len, void *ud);
    /* Exactly once. err is NULL for a result; otherwise a transport failure
     * (owned by the process; copy it if kept). */
    void (*exit)(sk_process *p, const sk_result *r, const sk_error *err, void *ud);
} sk_process_events;

struct sk_process {
    sk_sandbox *sb;           /* NULL once the sandbox is freed */
    char pid[32];             /* string pid as the provider reports it */
    char *command;
    sk_buf out, err;
    bool capture;
    size_t max_output;        /* per stream; past it output is drained, not kept */
    bool out_truncated, err_truncated;
    bool capture_failed;      /* out of memory while capturing: the result is an error */
    bool started;             /* provider spawn succeeded */
    bool exited;
    bool tracked;             /* listed by sk_process_list / get */
    bool returned_after_exit; /* get() has returned it once after exit */
    sk_result result;
    sk_error *error;          /* transport failure, if any */
    json_t *held_env;         /* per-command env, held as secrets (secrets.h) until freed */
    const void *held_owner;   /* their scope: the sandbox (a key only; may be gone) */
    double start_ms;
    int64_t timeout_ms;
    bool deadline_passed;     /* the timeout fired; the kill follows one I/O pass later */
    bool timing_out, cancelling;
    uv_timer_t *timer;        /* timeout / kill grace; owned */
    const sk_process_events *ev;
    void *ev_ud;
    void *impl;               /* provider's per-process state */
    sk_process *next;         /* in sb->procs */
    sk_process **pprev;       /* what points at it in sb->procs; NULL: not listed */
    int refs;
};

typedef void (*sk_provider_done)(sk_sandbox *sb, sk_error *err /* stolen, NULL = ok */);

typedef struct sk_provider {
    const char *id;           /* "local", "platform", "modal", "apple-container" */
    const char *name;         /* "LocalSandbox", ... */
    bool handles_timeout;     /* provider enforces spawn timeouts itself */
    /* stop() reaches the provider from pending and error too: it
     * addresses a resource that may exist without this object having
     * started it (a named container made by another process, or one a
     * start refused to adopt). Otherwise stop() does nothing there. From
     * stopped it never does (upstream's _stop() returns at once). */
    bool stop_when_idle;
    /* Parse and keep the options (validated by the binding for key names and
     * types; the provider checks values). Sync, no I/O. */
    int (*init)(sk_sandbox *sb, const json_t *options, sk_error **err);
    /* Async; each calls done exactly once, possibly synchronously. */
    void (*start)(sk_sandbox *sb, sk_provider_done done);
    void (*stop)(sk_sandbox *sb, sk_provider_done done);
    void (*destroy)(sk_sandbox *sb, sk_provider_done done);
    /* Start p running o->command. On success the provider later calls
     * sk_process_output and exactly one sk_process_finish, never from
     * inside spawn itself (a failure to start is returned as *err). */
    int (*spawn)(sk_sandbox *sb, sk_process *p, const sk_spawn_opts *o, sk_error **err);
    /* Signal the process (group). 0 if delivered/queued, -1 if not running. */
    int (*kill)(sk_process *p, int sig);
    int (*write_stdin)(sk_process *p, const char *data, size_t len, sk_error **err);
    int (*close_stdin)(sk_process *p);
    /* Free per-process state (after finish, or when the sandbox is freed). */
    void (*release)(sk_process *p);
    /* Optional, async: refresh what metadata reports from the provider's
     * side (info() of a running sandbox); done exactly once, possibly
     * synchronously, never after free. */
    void (*refresh)(sk_sandbox *sb, sk_provider_done done);
    /* info().metadata; NULL for none. New reference. */
    json_t *(*metadata)(sk_sandbox *sb);
    /* Default instructions text (malloc'd), or NULL. */
    char *(*instructions)(sk_sandbox *sb);
    /* Free sb->impl synchronously: kill local children, close handles,
     * cancel transfers. Remote resources are left as they are. */
    void (*free)(sk_sandbox *sb);
} sk_provider;

/* Entries may be NULL (a provider not built in); sk_provider_count long. */
extern const sk_provider *const sk_providers[];
extern const int sk_provider_count;
const sk_provider *sk_provider_find(const char *id);

struct sk_sandbox {
    const sk_provider *provider;
    sk_loop *loop;
    char *id;
    char *name;
    sk_status status;
    double created_at_ms;     /* wall clock, ms since the epoch */
    json_t *options;          /* the options as given (owned); never printed */
    json_t *env;              /* sandbox-level env object (owned) */
    bool env_held;            /* env values are held as secrets (secrets.h) */
    void *impl;
    sk_process *procs;
    unsigned next_local_pid;
    /* lifecycle waiters */
    struct sk_waiter *start_waiters, *stop_waiters, *destroy_waiters, *refresh_waiters;
};

typedef void (*sk_lifecycle_cb)(sk_sandbox *sb, const sk_error *err, void *ud);

/* Callbacks waiting for one operation in flight (a lifecycle step, a
 * provider's shared request). sk_waiters_notify calls each once, in the
 * order added, with (sb, err, ud); it takes the list first, so a waiter may
 * join a new round of the same operation. */
typedef struct sk_waiter sk_waiter;
int sk_waiters_add(sk_waiter **list, sk_lifecycle_cb cb, void *ud); /* -1 on OOM */
void sk_waiters_remove(sk_waiter **list, void *ud);                  /* the first with ud */
void sk_waiters_notify(sk_sandbox *sb, sk_waiter **list, const sk_error *err);
void sk_waiters_free(sk_waiter **list);                              /* nobody is called */

/* Creates the sandbox object (no I/O). options: JSON object; "id", "name"
 * and "env" are read here, the rest by the provider. */
sk_sandbox *sk_sandbox_new(sk_loop *loop, const sk_provider *provider, const json_t *options, sk_error **err);
void sk_sandbox_free(sk_sandbox *sb);
/* "<prefix>-sandbox-<base36 ms>-<6 random chars>" (upstream's default ids). */
char *sk_sandbox_default_id(const char *prefix);
/* v in base 36 as upstream's ids write it (0-9 then a-z, most significant
 * first, "0" for 0) into out; returns out. */
enum { SK_BASE36_MAX = 14 }; /* 2^64 - 1 has 13 digits */
char *sk_base36(unsigned long long v, char out[SK_BASE36_MAX]);

void sk_sandbox_start(sk_sandbox *sb, sk_lifecycle_cb cb, void *ud);
void sk_sandbox_stop(sk_sandbox *sb, sk_lifecycle_cb cb, void *ud);
void sk_sandbox_destroy(sk_sandbox *sb, sk_lifecycle_cb cb, void *ud);
/* Refreshes provider-side metadata of a running sandbox (concurrent calls
 * share one refresh); settles at once when there is nothing to ask. */
void sk_sandbox_refresh(sk_sandbox *sb, sk_lifecycle_cb cb, void *ud);

/* Spawns on a running sandbox (callers ensure running first). Returns a
 * process holding one reference for the caller, or NULL with *err. tracked:
 * whether it is a background process listed by the process manager. */
sk_process *sk_sandbox_spawn(sk_sandbox *sb, const sk_spawn_opts *o, bool tracked,
                             const sk_process_events *ev, void *ev_ud, sk_error **err);

/* Process manager (background processes). */
sk_process *sk_process_get(sk_sandbox *sb, const char *pid); /* prune-on-read; borrowed */
int sk_process_kill(sk_process *p, int sig); /* 0 sent, -1 already exited */
void sk_process_cancel(sk_process *p);       /* kill, and mark the result cancelled */
int sk_process_write_stdin(sk_process *p, const char *data, size_t len, sk_error **err);
int sk_process_close_stdin(sk_process *p);
void sk_process_untrack(sk_process *p);
void sk_process_ref(sk_process *p);
void sk_process_unref(sk_process *p);

/* For the embedder. */
/* A start hook failed: a running sandbox is in error until the next start. */
void sk_sandbox_mark_error(sk_sandbox *sb);
/* No more callbacks (the embedder's handle is gone); the process runs on. */
void sk_process_detach(sk_process *p);
/* The capture buffer of stream 1 (stdout) or 2; once the process has
 * exited the embedder may take its bytes (sk_buf_move: it may be a
 * mapping, buf.h). */
sk_buf *sk_process_capture(sk_process *p, int stream);

/* For providers. */
void sk_process_output(sk_process *p, int stream, const char *data, size_t len);
/* Where a provider may read output in place: room for *len bytes at the
 * end of the capture buffer (NULL when not capturing). Data delivered there
 * to sk_process_output is kept without a copy. */
char *sk_process_capture_slot(sk_process *p, int stream, size_t *len);
/* Forgets what was captured (a provider retrying the command afresh). */
void sk_process_reset_capture(sk_process *p);
/* result NULL with err for a transport failure (err stolen). */
void sk_process_finish(sk_process *p, const sk_result *r, sk_error *err);

/* Sandbox-level env merged with a per-command env (new object). */
json_t *sk_sandbox_merged_env(const sk_sandbox *sb, const json_t *per_command);

#endif
