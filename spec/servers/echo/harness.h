/* C-side helpers for tests that drive this server (spec/c/http_test.c,
 * spec/c/ws_test.c, spec/c/h2c_fault_test.c): start/stop server.mjs, TAP
 * output, loop helpers, an sk_http call's record, and admin requests
 * through sk_http. Header-only; include once per test. */
#ifndef SK_ECHO_HARNESS_H
#define SK_ECHO_HARNESS_H

#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "http.h"
#include "loop.h"

/* ---- TAP ---------------------------------------------------------------- */

#include "../../c/tap.h"

__attribute__((format(printf, 1, 2))) static void tap_note(const char *fmt, ...)
{
    va_list ap;
    printf("# ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

static int tap_done(void)
{
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}

/* ---- the server ---------------------------------------------------------- */

typedef struct echo_server {
    pid_t pid;
    int in_fd;          /* its stdin: closing it also stops the server */
    int port, tls_port;
    char ca_file[512];
    char base[64];      /* http://127.0.0.1:<port> */
    char tls_base[64];  /* https://127.0.0.1:<tls_port> */
    char unix_path[512];  /* the plain port's service on a unix socket */
    int mtls_port;        /* HTTPS requiring a client certificate */
    char client_cert[512], client_key[512];
} echo_server;

/* Starts node spec/servers/echo/server.mjs (run from the project root) and
 * reads its "LISTENING <port>", "TLS <port> <ca>", "UNIX <path>" and
 * "MTLS <port> <client cert> <client key>" lines. */
static int echo_start(echo_server *s)
{
    int in[2], out[2];
    memset(s, 0, sizeof *s);
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
        return -1;
    s->pid = fork();
    if (s->pid < 0)
        return -1;
    if (s->pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        execlp("node", "node", "spec/servers/echo/server.mjs", "--port", "0", (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    s->in_fd = in[1];
    char buf[2048];
    int lines = tap_read_lines(out[0], buf, sizeof buf, 4);
    close(out[0]);
    if (lines < 4 || sscanf(buf, "LISTENING %d\nTLS %d %511s\nUNIX %511s\nMTLS %d %511s %511s", &s->port, &s->tls_port,
                            s->ca_file, s->unix_path, &s->mtls_port, s->client_cert, s->client_key) != 7) {
        fprintf(stderr, "echo server did not start (output: %s)\n", buf);
        kill(s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
        close(s->in_fd);
        return -1;
    }
    snprintf(s->base, sizeof s->base, "http://127.0.0.1:%d", s->port);
    snprintf(s->tls_base, sizeof s->tls_base, "https://127.0.0.1:%d", s->tls_port);
    return 0;
}

/* echo_start, reported as a failed test when the server does not start. */
static int echo_start_tap(echo_server *s)
{
    if (echo_start(s) == 0)
        return 0;
    tap(false, "start the echo server (node spec/servers/echo/server.mjs; npm ci there)");
    return -1;
}

/* The start of a test program with one server and one loop: SIGPIPE
 * ignored (the tests write to peers that close), the server started, the
 * loop made; NULL, a failed test reported, when the server does not start. */
__attribute__((unused)) static sk_loop *echo_begin(echo_server *s)
{
    signal(SIGPIPE, SIG_IGN);
    return echo_start_tap(s) == 0 ? sk_loop_new() : NULL;
}

static void echo_stop(echo_server *s)
{
    if (s->pid <= 0)
        return;
    kill(s->pid, SIGTERM);
    close(s->in_fd);
    for (int i = 0; i < 500; i++) { /* anti-hang bound: 5 s */
        if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
            s->pid = 0;
            return;
        }
        usleep(10000);
    }
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    s->pid = 0;
}

/* ---- loop helpers ---------------------------------------------------------- */

/* Turns the loop until *counter >= target or max_ms passed (anti-hang). */
static bool run_until(sk_loop *loop, const int *counter, int target, int max_ms)
{
    double end = sk_now_ms() + max_ms;
    while (*counter < target && sk_now_ms() < end)
        sk_loop_turn(loop, 20);
    return *counter >= target;
}

/* A loopback TCP port nothing listens on (bound, then closed): connecting
 * to it is refused. */
static int closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    bind(fd, (struct sockaddr *)&a, sizeof a);
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    return ntohs(a.sin_port);
}

/* ---- an sk_http call, as http_test.c and h2c_fault_test.c record it ---------- */

typedef struct call {
    sk_http *req;
    int done, heads, datas, trailer_calls;
    int head_status;
    bool data_before_head;
    int cancel_after_datas; /* > 0: cancel itself in the Nth data callback */
    sk_http_err err;
    int status, http_version, curl_code;
    long connects;
    char error[1024];
    sk_buf body;
    char grpc_status_trailer[16], grpc_status_header[16], grpc_message[64], ctype[64];
    size_t n_trailers;
    double t_start, t_end;
} call;

/* The call's end, from its done callback: the result's fields (its error
 * text copied: the result lives only in the callback), when, done counted. */
__attribute__((unused)) static void call_end(call *c, const sk_http_result *r)
{
    c->done++;
    c->req = NULL;
    c->t_end = sk_now_ms();
    c->err = r->err;
    c->status = r->status;
    c->http_version = r->http_version;
    c->curl_code = r->curl_code;
    c->connects = r->connects;
    c->n_trailers = r->n_trailers;
    snprintf(c->error, sizeof c->error, "%s", r->error ? r->error : "");
}

/* ---- blocking admin requests over sk_http ----------------------------------- */

typedef struct admin_call {
    int done;
    int status;
    char *body;
} admin_call;

static void admin_done(sk_http *req, const sk_http_result *res, void *ud)
{
    (void)req;
    admin_call *c = ud;
    c->status = res->status;
    c->body = res->err == SK_HTTP_OK ? strdup(res->body) : NULL;
    c->done = 1;
}

/* GET (body NULL) or POST (JSON body) to the server; returns the body
 * (malloc'd) or NULL. */
static char *echo_admin(sk_loop *loop, const echo_server *s, const char *path, const char *json)
{
    char url[256];
    snprintf(url, sizeof url, "%s%s", s->base, path);
    sk_http_header ct = { "Content-Type", "application/json" };
    sk_http_request q = { .url = url, .timeout_ms = 5000 };
    if (json) {
        q.body = json;
        q.body_len = strlen(json);
        q.headers = &ct;
        q.n_headers = 1;
    }
    admin_call c = { 0 };
    sk_http_callbacks cb = { .done = admin_done };
    sk_http *h = sk_http_start(loop, &q, &cb, &c, NULL);
    if (!h)
        return NULL;
    if (!run_until(loop, &c.done, 1, 10000))
        sk_http_cancel(h); /* c is about to go out of scope */
    return c.body;
}

#endif
