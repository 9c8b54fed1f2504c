/* Child processes on the loop: pipes for stdin/stdout/stderr, optionally a
 * new session (own process group) so the whole tree can be signalled, and
 * a cgroup that SIGKILL reaches as well (descendants that left the group).
 * The exit callback runs once, after the child has exited AND both output
 * pipes reached EOF (or were closed), so no output is lost. After a
 * SIGKILL, EOF is awaited at most PROC_KILL_DRAIN_MS: a descendant outside
 * the group (setsid, double fork) that still holds the pipes cannot keep
 * the exit from being reported; what is buffered is read, then our ends
 * are closed. Without a kill, EOF is awaited as long as it takes (as Node
 * does: a daemon that keeps stdout open keeps the command running). */
#ifndef SK_PROC_H
#define SK_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "loop.h"
#include "proc_opts.h"

typedef struct sk_proc sk_proc;

typedef struct sk_proc_callbacks {
    void (*output)(sk_proc *p, int stream /* 1, 2 */, const char *data, size_t len, void *ud);
    /* term_signal != 0 when killed by a signal. */
    void (*exit)(sk_proc *p, int64_t exit_status, int term_signal, void *ud);
    /* Optional: the child itself has exited and is reaped (watched through
     * a pidfd, or SIGCHLD without one), with the status exit will carry.
     * Runs once, before exit, which may come much later when something
     * else holds the pipes; may run from inside sk_proc_spawn. */
    void (*reaped)(sk_proc *p, int64_t exit_status, int term_signal, void *ud);
    /* Optional: where to read the next output of a stream (at most *len
     * bytes; set *len). NULL uses a buffer shared by the loop. Lets a
     * capturing owner receive output in place, without a copy. */
    char *(*buffer)(sk_proc *p, int stream, size_t *len, void *ud);
} sk_proc_callbacks;

/* An environment for sk_proc_opts.envp: each "K=V" of base (NULL-terminated)
 * whose K env does not set, then env's entries as "K=V" (a value that is not
 * a string is empty). Everything is copied. NULL on OOM; sk_envp_free. */
char **sk_envp_new(const char *const *base, const json_t *env);
void sk_envp_free(char **envp);

/* Returns NULL and sets *uv_err (a libuv error code, e.g. UV_ENOENT) when the
 * child cannot be started. */
sk_proc *sk_proc_spawn(sk_loop *loop, const sk_proc_opts *o, const sk_proc_callbacks *cb,
                       void *ud, int *uv_err);
int sk_proc_pid(const sk_proc *p);
/* The cgroup it was spawned into (NULL: none); valid until sk_proc_free. */
const sk_cgroup *sk_proc_cgroup(const sk_proc *p);
bool sk_proc_running(const sk_proc *p);
/* Signals the group (new_group) or the child; SIGKILL also kills the
 * cgroup and bounds the wait for EOF (see above). 0, or a uv error code
 * (UV_ESRCH once the exit has been reported). */
int sk_proc_kill(sk_proc *p, int sig);
/* Copies data into the write queue. 0, or a uv error code (stdin closed). */
int sk_proc_write(sk_proc *p, const char *data, size_t len);
/* Closes stdin after queued writes are flushed. */
int sk_proc_close_stdin(sk_proc *p);
/* Stop reading output (capture = false with no consumer still drains). */
/* Frees: a running child's group gets SIGKILL and is reaped by the loop
 * later; no callback runs after this call. */
void sk_proc_free(sk_proc *p);

#endif
