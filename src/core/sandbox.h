/* The sandbox as an embedder drives it (the Lua binding is one): find a
 * provider in the registry, make a sandbox of it, start, stop or destroy
 * it, spawn commands and read what they did. The provider-neutral part
 * behind it (sandbox.c) is a lifecycle state machine with coalesced
 * start/stop/destroy and process bookkeeping (background processes, exec
 * = spawn + wait, per-process timeout).
 *
 * Everything here is reached through functions: sk_sandbox, sk_process and
 * sk_provider are opaque, so an embedder has no field to poke. What a
 * provider implements and calls (the vtable, the structs, output and
 * exit delivery) is provider.h; docs/architecture.md says how a provider
 * is added.
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
#include <sys/types.h>
#include "fs_local.h"
#include "provider_ops.h"
#include "loop.h"

typedef enum {
    SK_PENDING, SK_STARTING, SK_RUNNING, SK_STOPPING,
    SK_STOPPED, SK_DESTROYING, SK_DESTROYED, SK_ERROR
} sk_status;

const char *sk_status_name(sk_status s);

typedef struct sk_sandbox sk_sandbox;
typedef struct sk_process sk_process;
typedef struct sk_provider sk_provider;

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

typedef void (*sk_lifecycle_cb)(sk_sandbox *sb, const sk_error *err, void *ud);

/* ---- the registry (src/core/providers/registry.c, providers.def) -------- */

/* The provider of that id ("local", "platform", ...), or NULL. */
const sk_provider *sk_provider_find(const char *id);
/* The registered providers in registry order: the first after prev (NULL:
 * the first); NULL after the last. A provider left out of a build is
 * skipped. */
const sk_provider *sk_provider_next(const sk_provider *prev);
const char *sk_provider_id(const sk_provider *p);   /* "local", "apple-container", ... */
const char *sk_provider_name(const sk_provider *p); /* "LocalSandbox", ... */
/* Whether stop() reaches the provider from pending and error too (never
 * from stopped; see sk_provider.stop_when_idle). */
bool sk_provider_stops_when_idle(const sk_provider *p);
/* The provider's own operations (provider_ops.h), or NULL: on its files,
 * and behind its own sandbox methods. */
const sk_ops *sk_provider_fs(const sk_provider *p);
const sk_ops *sk_provider_calls(const sk_provider *p);

/* ---- sandboxes ------------------------------------------------------------ */

/* sb.fs of a sandbox whose provider pins its files at start (LocalSandbox):
 * the files its commands see, as a view (fs_local.h) over the pinned
 * descriptors, never over a path looked up again; see
 * docs/security.md §"sb.fs: the pinned view". */
typedef struct sk_sandbox_fs {
    sk_fs_view view;     /* duplicates of the pinned descriptors: the caller's to clear */
    const char *workdir; /* where relative paths start (borrowed from the sandbox) */
    unsigned generation; /* as sk_sandbox_fs_generation */
    bool as_user;        /* a root caller's bwrap: act as uid/gid (src/lua/fs_ud.c) */
    uid_t uid;
    gid_t gid;
} sk_sandbox_fs;

/* Changes whenever what is pinned changes (a start after destroy); 0 before
 * the first start, -1 when the provider pins nothing. */
long sk_sandbox_fs_generation(const sk_sandbox *sb);
/* Fills *fs (view empty on entry) with the mounts of a started sandbox, in
 * its commands' order. 0, -EINVAL when the provider pins nothing,
 * -ENOTCONN when nothing is pinned yet, or -errno (nothing left in
 * fs->view). */
int sk_sandbox_fs_get(const sk_sandbox *sb, sk_sandbox_fs *fs);

/* Creates the sandbox object (no I/O). options: JSON object; "id", "name"
 * and "env" are read here, the rest by the provider. */
sk_sandbox *sk_sandbox_new(sk_loop *loop, const sk_provider *provider, const json_t *options, sk_error **err);
void sk_sandbox_free(sk_sandbox *sb);

void sk_sandbox_start(sk_sandbox *sb, sk_lifecycle_cb cb, void *ud);
void sk_sandbox_stop(sk_sandbox *sb, sk_lifecycle_cb cb, void *ud);
void sk_sandbox_destroy(sk_sandbox *sb, sk_lifecycle_cb cb, void *ud);
/* Refreshes provider-side metadata of a running sandbox (concurrent calls
 * share one refresh); settles at once when there is nothing to ask. */
void sk_sandbox_refresh(sk_sandbox *sb, sk_lifecycle_cb cb, void *ud);
/* A start hook failed: a running sandbox is in error until the next start. */
void sk_sandbox_mark_error(sk_sandbox *sb);

const char *sk_sandbox_id(const sk_sandbox *sb);
const char *sk_sandbox_name(const sk_sandbox *sb);
const sk_provider *sk_sandbox_provider(const sk_sandbox *sb);
sk_status sk_sandbox_status(const sk_sandbox *sb);
double sk_sandbox_created_at_ms(const sk_sandbox *sb); /* wall clock, ms since the epoch */
/* info().metadata: a new reference, or NULL for none. */
json_t *sk_sandbox_metadata(sk_sandbox *sb);
/* The provider's default instructions text (malloc'd), or NULL. */
char *sk_sandbox_instructions(sk_sandbox *sb);

/* Spawns on a running sandbox (callers ensure running first). Returns a
 * process holding one reference for the caller, or NULL with *err. tracked:
 * whether it is a background process listed by the process manager. */
sk_process *sk_sandbox_spawn(sk_sandbox *sb, const sk_spawn_opts *o, bool tracked,
                             const sk_process_events *ev, void *ev_ud, sk_error **err);

/* ---- processes ------------------------------------------------------------ */

/* The sandbox's processes, newest first: the first, then each next (NULL
 * after the last). Borrowed; exited ones may still be listed. */
sk_process *sk_sandbox_processes(const sk_sandbox *sb);
sk_process *sk_process_next(const sk_process *p);
/* A background process the process manager lists (get/list). */
bool sk_process_tracked(const sk_process *p);

/* Process manager (background processes). */
sk_process *sk_process_get(sk_sandbox *sb, const char *pid); /* prune-on-read; borrowed */
int sk_process_kill(sk_process *p, int sig); /* 0 sent, -1 already exited */
void sk_process_cancel(sk_process *p);       /* kill, and mark the result cancelled */
int sk_process_write_stdin(sk_process *p, const char *data, size_t len, sk_error **err);
int sk_process_close_stdin(sk_process *p);
void sk_process_untrack(sk_process *p);
void sk_process_ref(sk_process *p);
void sk_process_unref(sk_process *p);
/* No more callbacks (the embedder's handle is gone); the process runs on. */
void sk_process_detach(sk_process *p);

const char *sk_process_pid(const sk_process *p);     /* as the provider reports it */
const char *sk_process_command(const sk_process *p); /* the full shell string */
bool sk_process_exited(const sk_process *p);
/* Once exited: the result (exit_code -1 after a transport failure), else
 * NULL. */
const sk_result *sk_process_result(const sk_process *p);
/* Once exited: the transport failure, or NULL for a result. Borrowed. */
const sk_error *sk_process_error(const sk_process *p);
/* The capture buffer of stream 1 (stdout) or 2; once the process has
 * exited the embedder may take its bytes (sk_buf_move: it may be a
 * mapping, buf.h). */
sk_buf *sk_process_capture(sk_process *p, int stream);

#endif
