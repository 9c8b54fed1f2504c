/* PlatformSandbox through the C API against spec/servers/platform: the log
 * lines at debug level (never the token or an env value; the start line of
 * docs/protocols/platform.md §4.2), the typed errors, and every teardown path of the provider (free
 * during a command, a mint, a create retry, a kill, closing sockets), so
 * that valgrind and ASan see them. Prints TAP. Run from the project root. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "http.h"
#include "log.h"
#include "loop.h"
#include "provider.h"

/* A strong reference: the registry's is weak, so a static link would
 * leave the provider out. */
extern const sk_provider sk_provider_platform;

#define TOKEN "test-token"
#define SECRET_ENV "s3cr3t-env-value"

#include "tap.h"

/* ---- logs --------------------------------------------------------------------- */

static sk_buf logs;
static int log_lines;

static void log_capture(sk_log_level level, const char *component, const char *msg, void *ud)
{
    (void)ud;
    sk_buf_appendf(&logs, "%s [%s] %s\n", sk_log_level_name(level), component, msg);
    log_lines++;
}

/* ---- the server ------------------------------------------------------------------ */

static pid_t srv_pid;
static int srv_in = -1;
static int srv_port;
static char srv_url[64];

static int server_start(void)
{
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
        return -1;
    srv_pid = fork();
    if (srv_pid < 0)
        return -1;
    if (srv_pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        execlp("node", "node", "spec/servers/platform/server.mjs", "--quiet", "--exit-close-grace-ms", "3000",
               (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    srv_in = in[1];
    char buf[128];
    tap_read_lines(out[0], buf, sizeof buf, 1);
    close(out[0]);
    if (sscanf(buf, "LISTENING %d", &srv_port) != 1)
        return -1;
    snprintf(srv_url, sizeof srv_url, "http://127.0.0.1:%d", srv_port);
    return 0;
}

static void server_stop(void)
{
    if (srv_pid <= 0)
        return;
    kill(srv_pid, SIGTERM);
    close(srv_in);
    waitpid(srv_pid, NULL, 0);
}

/* ---- loop helpers ------------------------------------------------------------------ */

static sk_loop *loop;

static bool run_until(const int *counter, int target, int max_ms)
{
    double end = sk_now_ms() + max_ms;
    while (*counter < target && sk_now_ms() < end)
        sk_loop_turn(loop, 20);
    return *counter >= target;
}

static void run_for(int ms)
{
    double end = sk_now_ms() + ms;
    while (sk_now_ms() < end)
        sk_loop_turn(loop, 10);
}

typedef struct admin_call {
    int done;
    int status;
} admin_call;

static void admin_done(sk_http *req, const sk_http_result *res, void *ud)
{
    (void)req;
    admin_call *c = ud;
    c->status = res->status;
    c->done = 1;
}

static int admin(const char *path, const char *json)
{
    char url[256];
    snprintf(url, sizeof url, "%s%s", srv_url, path);
    sk_http_header ct = { "content-type", "application/json" };
    sk_http_request q = { .url = url, .timeout_ms = 5000, .body = json, .body_len = json ? strlen(json) : 0,
                          .headers = &ct, .n_headers = 1 };
    admin_call c = { 0 };
    sk_http_callbacks cb = { .done = admin_done };
    sk_http *h = sk_http_start(loop, &q, &cb, &c, NULL);
    if (!h)
        return -1;
    if (!run_until(&c.done, 1, 10000)) {
        sk_http_cancel(h);
        return -1;
    }
    return c.status;
}

/* ---- sandboxes ------------------------------------------------------------------------- */

static sk_sandbox *new_sandbox(const char *extra_json)
{
    json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:[i,i],s:{s:s}}", "access_token", TOKEN, "project_id", "proj_c",
                          "environment_id", "env_c", "base_url", srv_url, "retry_delays_ms", 10, 20, "env", "SECRET",
                          SECRET_ENV);
    if (extra_json) {
        json_t *extra = json_loads(extra_json, 0, NULL);
        json_object_update(o, extra);
        json_decref(extra);
    }
    sk_error *err = NULL;
    sk_sandbox *sb = sk_sandbox_new(loop, &sk_provider_platform, o, &err);
    json_decref(o);
    if (!sb) {
        printf("# sandbox: %s: %s\n", err ? sk_error_kind_name(err->kind) : "?", err ? err->message : "?");
        sk_error_free(err);
    }
    return sb;
}

typedef struct life {
    int done;
    char kind[64];
} life;

static void life_done(sk_sandbox *sb, const sk_error *err, void *ud)
{
    (void)sb;
    life *l = ud;
    snprintf(l->kind, sizeof l->kind, "%s", err ? sk_error_kind_name(err->kind) : "");
    l->done++;
}

static bool start_sync(sk_sandbox *sb)
{
    life l = { 0 };
    sk_sandbox_start(sb, life_done, &l);
    return run_until(&l.done, 1, 10000) && l.kind[0] == '\0';
}

typedef struct run {
    int exited;
    int outputs;
    int exit_code;
    bool timed_out, killed;
    sk_error *err;
} run;

static void run_output(sk_process *p, int stream, const char *data, size_t len, void *ud)
{
    (void)p;
    (void)stream;
    (void)data;
    (void)len;
    ((run *)ud)->outputs++;
}

static void run_exit(sk_process *p, const sk_result *r, const sk_error *err, void *ud)
{
    (void)p;
    run *x = ud;
    x->exited++;
    x->exit_code = r ? r->exit_code : -1;
    x->timed_out = r && r->timed_out;
    x->killed = r && r->killed;
    x->err = err ? sk_error_copy(err) : NULL;
}

static const sk_process_events run_events = { run_output, run_exit };

static sk_process *spawn(sk_sandbox *sb, const char *command, run *x, int64_t timeout_ms)
{
    json_t *env = json_pack("{s:s}", "MORE", SECRET_ENV);
    sk_spawn_opts o = { .command = command, .capture = true, .timeout_ms = timeout_ms, .env = env };
    sk_error *err = NULL;
    sk_process *p = sk_sandbox_spawn(sb, &o, false, &run_events, x, &err);
    json_decref(env);
    if (!p) {
        printf("# spawn: %s\n", err ? err->message : "?");
        sk_error_free(err);
    }
    return p;
}

/* exec: spawn and wait; returns the process (one reference) */
static sk_process *exec_sync(sk_sandbox *sb, const char *command, run *x)
{
    memset(x, 0, sizeof *x);
    sk_process *p = spawn(sb, command, x, 0);
    if (p)
        run_until(&x->exited, 1, 15000);
    return p;
}

static bool no_secret(const char *s)
{
    return s && !strstr(s, TOKEN) && !strstr(s, SECRET_ENV);
}

static bool error_clean(const sk_error *e)
{
    if (!e)
        return true;
    char *fields = e->fields ? json_dumps(e->fields, 0) : NULL;
    bool clean = no_secret(e->message) && (!fields || no_secret(fields));
    free(fields);
    return clean;
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    sk_log_set_sink(log_capture, NULL);
    sk_log_set_level(SK_LOG_DEBUG);
    if (server_start() != 0) {
        printf("not ok 1 - platform reference server did not start\n1..1\n");
        return 1;
    }
    loop = sk_loop_new();
    run x;

    /* a command, the start log line, a reattach */
    sk_sandbox *sb = new_sandbox(NULL);
    tap(sb && start_sync(sb), "start provisions a sandbox");
    sk_process *p = exec_sync(sb, "echo hi; echo err >&2", &x);
    tap(p && x.exited == 1 && !x.err && x.exit_code == 0 && p->out.len == 3 && strcmp(p->out.data, "hi\n") == 0 &&
           strcmp(p->err.data, "err\n") == 0,
       "exec: stdout and stderr, exit 0");
    sk_process_unref(p);
    json_t *meta = sb->provider->metadata(sb);
    const char *pid = json_string_value(json_object_get(meta, "sandbox_id"));
    char *dumped = json_dumps(meta, 0);
    tap(pid && strncmp(pid, "sbx_", 4) == 0 && no_secret(dumped), "metadata names the platform sandbox");
    free(dumped);
    char extra[128];
    snprintf(extra, sizeof extra, "{\"sandbox_id\":\"%s\"}", pid ? pid : "none");
    json_decref(meta);
    sk_sandbox *again = new_sandbox(extra);
    tap(again && start_sync(again), "reattach by sandbox_id");
    tap(logs.data && strstr(logs.data, "platform-workspace start complete") && strstr(logs.data, "mode=provision") &&
           strstr(logs.data, "mode=reattach") && strstr(logs.data, "totalMs="),
       "one start line per start, with mode provision / reattach");
    /* typed errors (again has no lease cached yet) */
    admin("/__admin/faults", "{\"http\":[{\"route\":\"lease\",\"status\":500,\"body\":\"text\",\"text\":\"echo " TOKEN
                             "\",\"times\":1}]}");
    p = exec_sync(again, "true", &x);
    if (x.err)
        printf("# %s: %s\n", sk_error_kind_name(x.err->kind), x.err->message);
    tap(x.err && x.err->kind == SK_ERR_PLATFORM_API && error_clean(x.err),
       "PlatformApiError, token redacted from body and message");
    sk_error_free(x.err);
    sk_process_unref(p);
    sk_sandbox_free(again);

    /* typed errors */
    admin("/__admin/faults", "{\"ws\":[{\"action\":\"close_before_exit\",\"times\":2}]}");
    p = exec_sync(sb, "true", &x);
    tap(x.err && x.err->kind == SK_ERR_SANDBOX_EXEC_TRANSPORT && error_clean(x.err),
       "SandboxExecTransportError after two closes");
    sk_error_free(x.err);
    sk_process_unref(p);
    admin("/__admin/faults", "{\"http\":[{\"route\":\"lease\",\"status\":410,\"times\":1}]}");
    p = exec_sync(sb, "true", &x);
    tap(x.err && x.err->kind == SK_ERR_SANDBOX_DESTROYED && sb->status == SK_STOPPED,
       "SandboxDestroyedError; status stopped");
    sk_error_free(x.err);
    sk_process_unref(p);
    admin("/__admin/faults", "{}");
    tap(start_sync(sb), "start after a 410 provisions again");

    /* a timeout and a kill */
    memset(&x, 0, sizeof x);
    p = spawn(sb, "sleep 20", &x, 200);
    tap(p && run_until(&x.exited, 1, 5000) && x.exit_code == 124 && x.timed_out, "timeout: 124");
    sk_process_unref(p);
    memset(&x, 0, sizeof x);
    p = spawn(sb, "sleep 20", &x, 0);
    run_for(100);
    tap(p && sk_process_kill(p, SIGKILL) == 0 && x.exited == 0, "kill does not finish synchronously");
    tap(run_until(&x.exited, 1, 2000) && x.exit_code == 137 && x.killed, "kill: 137, killed");
    sk_process_unref(p);

    /* teardown paths: free with a command running (socket open), with a
     * kill pending, with a mint in flight, during a create retry wait, with
     * a create in flight, with sockets still closing */
    memset(&x, 0, sizeof x);
    sk_process *running = spawn(sb, "echo up; sleep 20", &x, 0);
    run_until(&x.outputs, 1, 5000);
    run killed_x = { 0 };
    sk_process *killed = spawn(sb, "sleep 20", &killed_x, 0);
    run_for(50);
    sk_process_kill(killed, SIGKILL);
    sk_sandbox_free(sb); /* processes outlive it: their references are ours */
    tap(x.exited == 0 && killed_x.exited == 0, "free with a running and a killed command: no callback after free");
    sk_process_unref(running);
    sk_process_unref(killed);

    sb = new_sandbox(NULL);
    start_sync(sb);
    admin("/__admin/faults", "{\"http\":[{\"route\":\"lease\",\"delay_ms\":3000}]}");
    memset(&x, 0, sizeof x);
    p = spawn(sb, "true", &x, 0);
    run_for(100);
    sk_sandbox_free(sb);
    tap(x.exited == 0, "free with a mint in flight");
    sk_process_unref(p);

    admin("/__admin/faults", "{\"http\":[{\"route\":\"create\",\"status\":500}]}");
    sb = new_sandbox("{\"retry_delays_ms\":[5000]}");
    life l = { 0 };
    sk_sandbox_start(sb, life_done, &l);
    run_for(150);
    sk_sandbox_free(sb);
    tap(l.done == 1 && strcmp(l.kind, "SandboxNotReadyError") == 0, "free while waiting to retry a create: the waiter is settled");

    admin("/__admin/faults", "{\"http\":[{\"route\":\"create\",\"delay_ms\":3000}]}");
    sb = new_sandbox(NULL);
    memset(&l, 0, sizeof l);
    sk_sandbox_start(sb, life_done, &l);
    run_for(100);
    sk_sandbox_free(sb);
    tap(l.done == 1, "free with a create in flight");

    admin("/__admin/faults", "{}");
    sb = new_sandbox(NULL);
    start_sync(sb);
    for (int i = 0; i < 5; i++) {
        p = exec_sync(sb, "true", &x);
        sk_process_unref(p);
    }
    sk_sandbox_free(sb); /* their sockets may still be closing */
    tap(true, "free with sockets still closing");

    sb = new_sandbox(NULL);
    start_sync(sb);
    memset(&x, 0, sizeof x);
    p = spawn(sb, "echo up; sleep 20", &x, 0);
    run_until(&x.outputs, 1, 5000);
    sk_process_unref(p);
    sk_sandbox_free(sb);
    sk_loop_free(loop); /* the loop goes with a closing socket */
    loop = NULL;
    tap(true, "loop freed after the sandbox, with a socket closing");

    tap(log_lines > 0 && no_secret(logs.data), "%d log lines at debug level: no token, no env value", log_lines);
    server_stop();
    sk_buf_free(&logs);
    sk_log_set_sink(NULL, NULL);
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}
