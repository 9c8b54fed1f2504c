/* The Apple `container` CLI as a child process on the loop
 * (docs/protocols/apple-container.md §3): argv after the binary, extra
 * environment variables for the child only (how env values reach `--env KEY`
 * without appearing on a command line), a host timeout, kill as SIGTERM then
 * SIGKILL after 1 s, streamed output, and optional retention of the newest
 * bytes of each stream. */
#ifndef SK_APPLE_CONTAINER_CLI_H
#define SK_APPLE_CONTAINER_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "../../loop.h"

typedef struct ac_cli ac_cli;

typedef struct ac_cli_result {
    int exit_code;        /* close code; 137 when killed without one; 1 otherwise */
    int term_signal;      /* the CLI died by this signal (0: exited) */
    bool success;         /* exit_code == 0 */
    bool killed, timed_out;
    const char *stdout_data, *stderr_data; /* retained output (NUL-terminated) */
    size_t stdout_len, stderr_len;
    bool stdout_truncated, stderr_truncated;
    size_t stdout_dropped, stderr_dropped;
    double execution_time_ms;
} ac_cli_result;

typedef struct ac_cli_callbacks {
    void (*output)(ac_cli *c, int stream, const char *data, size_t len, void *ud);
    /* Exactly once (never from inside sk_ac_cli_run). r is valid during the call. */
    void (*exit)(ac_cli *c, const ac_cli_result *r, void *ud);
} ac_cli_callbacks;

typedef struct ac_cli_opts {
    const char *binary;
    char *const *argv;      /* after the binary; NULL-terminated */
    const json_t *env;      /* object of strings added to the child's environment, or NULL */
    double timeout_ms;      /* host timeout; <= 0: none */
    bool stdin_pipe;        /* else the child's stdin is /dev/null */
    bool retain;            /* keep output for the result */
    long long max_retained; /* newest bytes kept per stream; < 0 invalid; 0: 1 MiB */
} ac_cli_opts;

/* Starts the CLI. NULL with *uv_err (UV_ENOENT: binary not found; UV_EINVAL:
 * bad max_retained) when it cannot start. */
ac_cli *sk_ac_cli_run(sk_loop *loop, const ac_cli_opts *o, const ac_cli_callbacks *cb, void *ud, int *uv_err);
int sk_ac_cli_pid(const ac_cli *c);
/* SIGTERM/SIGINT/SIGKILL start the kill sequence (SIGTERM now, SIGKILL after
 * 1 s); other signals are sent as they are (the CLI forwards them). 0, or -1
 * when the CLI has already finished. */
int sk_ac_cli_kill(ac_cli *c, int sig);
int sk_ac_cli_write(ac_cli *c, const char *data, size_t len);
int sk_ac_cli_close_stdin(ac_cli *c);
/* No callback runs after this; a running CLI is killed. */
void sk_ac_cli_free(ac_cli *c);

#endif
