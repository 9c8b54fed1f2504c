/* PlatformSandbox state shared by platform.c (options, lifecycle) and
 * platform_exec.c (lease cache, one WebSocket per command). */
#ifndef SK_PLATFORM_STATE_H
#define SK_PLATFORM_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "../../provider.h"
#include "platform_api.h"

#define PLATFORM_ID "platform"
#define PLATFORM_NAME "PlatformSandbox"

/* An exec lease (ExecLeaseResponse, docs/protocols/platform.md §2.4).
 * Reference-counted: the cache and every attempt using it hold one; identity
 * (the pointer) is what the "drop only if still cached" rule of
 * docs/protocols/platform.md §2.5 compares. */
typedef struct platform_lease {
    int refs;
    char *jwt;                 /* a bearer credential: held as a secret */
    bool jwt_held;
    char *ws_endpoint;
    char *subprotocol;
    bool has_expiry;
    double expires_ms; /* wall clock, ms since the epoch */
} platform_lease;

struct platform_exec;
struct platform_conn;

typedef struct platform_sandbox {
    sk_sandbox *sb;
    platform_api *api;
    /* options */
    char *environment_id;      /* NULL: reattach only */
    char *network_isolation;   /* NULL: server default */
    char *working_directory;   /* default cwd of commands, passed as is */
    char *ca_file;
    bool insecure;
    bool stdin_frames;         /* server extension: stdin of background processes */
    bool has_idle_timeout;
    double idle_timeout_minutes;
    int64_t *retry_delays;     /* create retry delays (ms); attempts = n + 1 */
    size_t n_retry_delays;
    int64_t handshake_timeout_ms;
    /* the platform sandbox (NULL before start / after teardown or a 410) */
    char *platform_id;
    char *provider_resource_id;
    char *platform_status;
    unsigned gen;              /* bumped whenever platform_id changes */
    /* the lifecycle operation in flight (the sandbox layer runs one at a time) */
    platform_call *op_call;
    uv_timer_t *op_timer;
    sk_provider_done op_done;
    int op_attempt;
    double op_t0, op_req_t0, op_req_ms;
    /* info() of a running sandbox: the GET in flight */
    platform_call *refresh_call;
    sk_provider_done refresh_done;
    unsigned refresh_gen;
    /* exec plane */
    platform_lease *lease;     /* the cached lease, if any */
    platform_call *mint_call;  /* the one in-flight POST /exec-lease */
    unsigned mint_gen;
    struct platform_exec *mint_waiters;
    struct platform_conn *orphans; /* sockets finishing their close after their command settled */
    unsigned proc_counter;
} platform_sandbox;

/* platform.c: forget the platform sandbox (id, record, cached lease). */
void sk_platform_forget(platform_sandbox *ps);

/* platform_fs.c: the bucket routes of PlatformFilesystem (provider_ops.h) */
extern const sk_ops sk_platform_fs_ops;

/* platform_exec.c */
int sk_platform_exec_spawn(sk_sandbox *sb, sk_process *p, const sk_spawn_opts *o, sk_error **err);
int sk_platform_exec_kill(sk_process *p, int sig);
int sk_platform_exec_write_stdin(sk_process *p, const char *data, size_t len, sk_error **err);
int sk_platform_exec_close_stdin(sk_process *p);
void sk_platform_exec_release(sk_process *p);
/* Drops the cached lease and cancels an in-flight mint (teardown). */
void sk_platform_exec_reset(platform_sandbox *ps);
/* Synchronous: also drops every socket still closing. */
void sk_platform_exec_free_all(platform_sandbox *ps);
void sk_platform_lease_unref(platform_lease *l);

#endif
