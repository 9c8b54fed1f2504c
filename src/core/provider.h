/* The provider's side of the sandbox: what a provider implements (the
 * vtable, sk_provider) and what it may call (output and exit delivery,
 * waiter lists, the merged env), with the structs both sides share. Only
 * sandbox.c and the providers (src/core/providers/<dir>/) include this;
 * an embedder uses sandbox.h, whose accessors read these fields.
 *
 * A provider is one folder, src/core/providers/<dir>/: its C files (one of
 * them defines `const sk_provider sk_provider_<dir>`), its descriptor
 * provider.lua and any Lua it needs, plus one line SK_PROVIDER(<dir>) in
 * src/core/providers/providers.def; see
 * docs/architecture.md §"Adding a provider". Its state lives in sb->impl
 * and p->impl. */
#ifndef SK_PROVIDER_H
#define SK_PROVIDER_H

#include "sandbox.h"

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

struct sk_provider {
    const char *id;           /* "local", "platform", "modal", "apple-container": the id its
                               * descriptor (provider.lua beside it) declares */
    const char *name;         /* "LocalSandbox", ... */
    bool handles_timeout;     /* provider enforces spawn timeouts itself */
    /* stop() reaches the provider from pending and error too: it
     * addresses a resource that may exist without this object having
     * started it (a named container made by another process, or one a
     * start refused to adopt). Otherwise stop() does nothing there. From
     * stopped it never does (upstream's _stop() returns at once). */
    bool stop_when_idle;
    /* destroy() reaches the provider from pending too, for the same reason
     * (a resource found by name or label that this object never started).
     * Otherwise a pending sandbox has nothing to tear down. */
    bool destroy_when_idle;
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
    /* Optional: the provider's own operations (provider_ops.h), which its
     * Lua reaches through core.ops_open(target, "fs" or "calls") and
     * core.ops_call: fs, its files (its Lua filesystem module); calls, the
     * calls behind the sandbox methods its descriptor lists in `methods`. */
    const sk_ops *fs;
    const sk_ops *calls;
    /* Optional: sb.fs over the files the provider pinned at start
     * (sandbox.h, sk_sandbox_fs_generation and sk_sandbox_fs_get; sb's
     * provider is this one). */
    long (*fs_generation)(const sk_sandbox *sb);
    int (*fs_get)(const sk_sandbox *sb, sk_sandbox_fs *fs);
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
};

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

/* Callbacks waiting for one operation in flight (a lifecycle step, a
 * provider's shared request). sk_waiters_notify calls each once, in the
 * order added, with (sb, err, ud); it takes the list first, so a waiter may
 * join a new round of the same operation. */
typedef struct sk_waiter sk_waiter;
int sk_waiters_add(sk_waiter **list, sk_lifecycle_cb cb, void *ud); /* -1 on OOM */
void sk_waiters_remove(sk_waiter **list, void *ud);                  /* the first with ud */
void sk_waiters_notify(sk_sandbox *sb, sk_waiter **list, const sk_error *err);
void sk_waiters_free(sk_waiter **list);                              /* nobody is called */

/* "<prefix>-sandbox-<base36 ms>-<6 random chars>" (upstream's default ids). */
char *sk_sandbox_default_id(const char *prefix);
/* v in base 36 as upstream's ids write it (0-9 then a-z, most significant
 * first, "0" for 0) into out; returns out. */
enum { SK_BASE36_MAX = 14 }; /* 2^64 - 1 has 13 digits */
char *sk_base36(unsigned long long v, char out[SK_BASE36_MAX]);

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
