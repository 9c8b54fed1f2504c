/* The small mechanisms the providers share, each written once: heap timers
 * (loop.h), the base36 id writer and the waiter list (sandbox.h), the child
 * environment builder, the reaped callback of the exit watch and output
 * through pipes the kernel would not grow (proc.h), the URL escape
 * (http.h). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "http.h"
#include "loop.h"
#include "proc.h"
#include "provider.h"

#include "tap.h"

/* Turns the loop until *flag is set or deadline_ms passes; whether it was. */
static bool run_until(sk_loop *loop, const bool *flag, double deadline_ms)
{
    double end = sk_now_ms() + deadline_ms;
    while (!*flag && sk_now_ms() < end)
        sk_loop_turn(loop, 50);
    return *flag;
}

/* ---- timers ------------------------------------------------------------------ */

typedef struct timer_probe {
    int fired;
    bool done;
} timer_probe;

static void on_probe_timer(uv_timer_t *t)
{
    timer_probe *p = t->data;
    p->fired++;
    p->done = true;
}

static void test_timers(void)
{
    sk_loop *loop = sk_loop_new();
    uv_timer_t *t = NULL;
    timer_probe a = { 0 }, b = { 0 };
    tap(sk_timer_start(loop, &t, &a, 0, on_probe_timer) == 0 && t, "timer: allocated on first start");
    uv_timer_t *first = t;
    tap(run_until(loop, &a.done, 10000) && a.fired == 1, "timer: fires once");
    /* a second start reuses the handle and takes the new data */
    tap(sk_timer_start(loop, &t, &b, 0, on_probe_timer) == 0 && t == first, "timer: restarted in place");
    tap(run_until(loop, &b.done, 10000) && b.fired == 1 && a.fired == 1, "timer: restart calls back with the new data");
    /* closed before it fires: never calls back, and the handle is freed
     * (the ASan run checks the free) */
    b.done = false;
    sk_timer_start(loop, &t, &b, 0, on_probe_timer);
    sk_timer_close(&t);
    tap(t == NULL, "timer: close clears the pointer");
    sk_timer_close(&t); /* closing nothing is harmless */
    for (int i = 0; i < 5; i++)
        sk_loop_turn(loop, 0);
    tap(b.fired == 1, "timer: a closed timer does not fire");
    uv_timer_t *idle = sk_timer_new(loop, &a);
    tap(idle && idle->data == &a && !uv_is_active((uv_handle_t *)idle), "timer: sk_timer_new is not started");
    sk_timer_close(&idle);
    sk_loop_free(loop);
}

/* ---- base36 ------------------------------------------------------------------ */

static void test_base36(void)
{
    char out[SK_BASE36_MAX];
    tap(strcmp(sk_base36(0, out), "0") == 0, "base36(0) = 0");
    tap(strcmp(sk_base36(35, out), "z") == 0, "base36(35) = z");
    tap(strcmp(sk_base36(36, out), "10") == 0, "base36(36) = 10");
    tap(strcmp(sk_base36(1700000000000ULL, out), "loyw3v28") == 0, "base36 of a millisecond stamp");
    tap(strcmp(sk_base36(ULLONG_MAX, out), "3w5e11264sgsf") == 0, "base36(2^64 - 1) fits SK_BASE36_MAX");
    char *id = sk_sandbox_default_id("local");
    size_t stamp = id ? strspn(id + strlen("local-sandbox-"), "0123456789abcdefghijklmnopqrstuvwxyz") : 0;
    tap(id && strncmp(id, "local-sandbox-", 14) == 0 && stamp >= 8 && id[14 + stamp] == '-' &&
            strlen(id + 15 + stamp) == 6 && strspn(id + 15 + stamp, "0123456789abcdefghijklmnopqrstuvwxyz") == 6,
        "default id: <prefix>-sandbox-<base36 ms>-<6 base36> (%s)", id ? id : "NULL");
    free(id);
}

/* ---- waiters ----------------------------------------------------------------- */

typedef struct waiter_log {
    char order[16];
    int n;
    const sk_error *err;
    sk_waiter **rejoin; /* a waiter that joins the next round from its callback */
    bool rejoined;
} waiter_log;

static waiter_log wlog;

static void on_wait(sk_sandbox *sb, const sk_error *err, void *ud)
{
    (void)sb;
    wlog.order[wlog.n++] = *(const char *)ud;
    wlog.err = err;
    if (wlog.rejoin && !wlog.rejoined) {
        wlog.rejoined = true;
        sk_waiters_add(wlog.rejoin, on_wait, ud);
    }
}

static void test_waiters(void)
{
    static const char a = 'a', b = 'b', c = 'c';
    sk_waiter *list = NULL;
    sk_waiters_add(&list, on_wait, (void *)&a);
    sk_waiters_add(&list, on_wait, (void *)&b);
    sk_waiters_add(&list, on_wait, (void *)&c);
    sk_waiters_remove(&list, (void *)&b);
    sk_error *e = sk_error_new(SK_ERR_SANDBOX, NULL, "boom");
    memset(&wlog, 0, sizeof wlog);
    wlog.rejoin = &list;
    sk_waiters_notify(NULL, &list, e);
    tap(wlog.n == 2 && memcmp(wlog.order, "ac", 2) == 0 && wlog.err == e, "waiters: called once each, in order, with the error");
    tap(list != NULL, "waiters: one joined the next round from its callback");
    memset(&wlog, 0, sizeof wlog);
    sk_waiters_notify(NULL, &list, NULL);
    tap(wlog.n == 1 && wlog.order[0] == 'a' && !wlog.err && !list, "waiters: the next round has only the one that joined");
    sk_waiters_add(&list, on_wait, (void *)&a);
    sk_waiters_free(&list);
    tap(!list && wlog.n == 1, "waiters: free calls nobody");
    sk_error_free(e);
}

/* ---- environment ------------------------------------------------------------- */

static bool has(char **envp, const char *entry)
{
    for (char **e = envp; e && *e; e++)
        if (strcmp(*e, entry) == 0)
            return true;
    return false;
}

static void test_envp(void)
{
    const char *base[] = { "A=1", "B=2", "PATH=/x", "BB=4", NULL };
    json_t *env = json_pack("{s:s,s:i}", "B", "3", "C", 7);
    char **envp = sk_envp_new(base, env);
    size_t n = 0;
    while (envp && envp[n])
        n++;
    tap(envp && n == 5, "envp: base entries env does not set, then env's (%zu)", n);
    tap(envp && strcmp(envp[0], "A=1") == 0 && strcmp(envp[1], "PATH=/x") == 0 && strcmp(envp[2], "BB=4") == 0,
        "envp: base order kept");
    tap(has(envp, "B=3") && !has(envp, "B=2"), "envp: env wins over base");
    tap(has(envp, "BB=4"), "envp: a longer name with the same start is not overridden");
    tap(has(envp, "C="), "envp: a value that is not a string is empty");
    sk_envp_free(envp);
    const char *none[] = { NULL };
    envp = sk_envp_new(none, NULL);
    tap(envp && !envp[0], "envp: empty base and no env give an empty list");
    sk_envp_free(envp);
    json_decref(env);
}

/* ---- the reaped callback ------------------------------------------------------ */

typedef struct reap_probe {
    bool reaped, exited;
    bool exited_before_reaped;
    int64_t reaped_status, exit_status;
} reap_probe;

static void on_reaped(sk_proc *p, int64_t status, int sig, void *ud)
{
    (void)p;
    (void)sig;
    reap_probe *r = ud;
    r->reaped = true;
    r->reaped_status = status;
    r->exited_before_reaped = r->exited;
}

static void on_exit_cb(sk_proc *p, int64_t status, int sig, void *ud)
{
    (void)p;
    (void)sig;
    reap_probe *r = ud;
    r->exited = true;
    r->exit_status = status;
}

static void test_reaped(void)
{
    sk_loop *loop = sk_loop_new();
    /* the shell exits at once; its background child keeps the pipes open
     * until the group is killed */
    char *argv[] = { "/bin/sh", "-c", "sleep 60 & exit 3", NULL };
    sk_proc_opts o = { .file = "/bin/sh", .argv = argv, .new_group = true };
    static const sk_proc_callbacks cb = { .exit = on_exit_cb, .reaped = on_reaped };
    reap_probe r = { 0 };
    int uv_err = 0;
    sk_proc *p = sk_proc_spawn(loop, &o, &cb, &r, &uv_err);
    tap(p != NULL, "reaped: spawned (%d)", uv_err);
    if (!p) {
        sk_loop_free(loop);
        return;
    }
    tap(run_until(loop, &r.reaped, 10000) && r.reaped_status == 3, "reaped: the child's exit is seen with its status");
    tap(!r.exited && !r.exited_before_reaped, "reaped: before exit, while the pipes are held");
    sk_proc_kill(p, SIGKILL);
    tap(run_until(loop, &r.exited, 10000) && r.exit_status == 3, "reaped: exit follows with the same status");
    sk_proc_free(p);
    for (int i = 0; i < 5; i++)
        sk_loop_turn(loop, 0);
    sk_loop_free(loop);
}

/* ---- pipes the kernel will not grow ------------------------------------------- */

/* An unprivileged user past /proc/sys/fs/pipe-user-pages-soft gets 2-page
 * pipes and EPERM from F_SETPIPE_SZ. proc.c grows a pipe once bulk output
 * fills it; refused, the output must still arrive whole. Run in a child
 * under a uid nobody else uses (pipe pages are counted per user), which
 * first holds 1 MiB pipes until the kernel refuses one more. */
enum { REFUSED_OK = 0, REFUSED_SKIP = 10 };
#define REFUSED_BYTES (10 * 1024 * 1024)

typedef struct count_probe {
    size_t bytes, largest;
    bool exited;
    int64_t status;
} count_probe;

static void on_count_output(sk_proc *p, int stream, const char *d, size_t n, void *ud)
{
    (void)p;
    (void)d;
    count_probe *c = ud;
    if (stream == 1) {
        c->bytes += n;
        if (n > c->largest)
            c->largest = n;
    }
}

static void on_count_exit(sk_proc *p, int64_t status, int sig, void *ud)
{
    (void)p;
    (void)sig;
    count_probe *c = ud;
    c->exited = true;
    c->status = status;
}

static int refused_child(uid_t uid)
{
    if (setgroups(0, NULL) != 0 || setresgid(uid, uid, uid) != 0 || setresuid(uid, uid, uid) != 0)
        return REFUSED_SKIP;
    /* hold 1 MiB pipes until the user is over the soft limit */
    int refused = 0;
    for (int i = 0; i < 400 && !refused; i++) {
        int fds[2];
        if (pipe(fds) != 0)
            return REFUSED_SKIP;
        if (fcntl(fds[0], F_SETPIPE_SZ, 1024 * 1024) < 0)
            refused = errno == EPERM;
    }
    int probe[2];
    if (!refused || pipe(probe) != 0 || fcntl(probe[0], F_GETPIPE_SZ) > 8192)
        return REFUSED_SKIP; /* not the state this test is about */
    sk_loop *loop = sk_loop_new();
    char *argv[] = { "/bin/sh", "-c", "head -c 10485760 /dev/zero", NULL };
    sk_proc_opts o = { .file = "/bin/sh", .argv = argv, .new_group = true };
    static const sk_proc_callbacks cb = { .output = on_count_output, .exit = on_count_exit };
    count_probe c = { 0 };
    int uv_err = 0;
    sk_proc *p = loop ? sk_proc_spawn(loop, &o, &cb, &c, &uv_err) : NULL;
    if (!p)
        return 1;
    run_until(loop, &c.exited, 60000);
    sk_proc_free(p);
    for (int i = 0; i < 5; i++)
        sk_loop_turn(loop, 0);
    sk_loop_free(loop);
    if (!c.exited)
        return 2;
    if (c.status != 0)
        return 3;
    if (c.bytes != REFUSED_BYTES)
        return 4;
    return c.largest <= 8192 ? REFUSED_OK : 5; /* 5: a read larger than the 2-page pipe */
}

static void test_pipe_growth_refused(void)
{
    if (geteuid() != 0) {
        tap(1, "# SKIP pipe growth refused: needs root to become an unused uid");
        return;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        _exit(refused_child(64999));
    int status = 0;
    while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    int code = pid > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == REFUSED_SKIP) {
        tap(1, "# SKIP pipe growth refused: could not get the kernel to refuse F_SETPIPE_SZ");
        return;
    }
    tap(code == REFUSED_OK, "pipe growth refused: 10 MiB arrive whole through a 2-page pipe (code %d)", code);
}

static void test_url_escape(void)
{
    struct {
        const char *in, *keep, *want;
    } rows[] = {
        { "AZaz09-_.~", NULL, "AZaz09-_.~" },
        { "a b/c:d@e", NULL, "a%20b%2Fc%3Ad%40e" },
        { "library/node:22-slim", "/:@", "library/node:22-slim" },
        { "it's (ok)!*", "!*'()", "it's%20(ok)!*" },
        { "\xc3\xa9%\x7f", NULL, "%C3%A9%25%7F" },
        { "", NULL, "" },
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char *got = sk_url_escape(rows[i].in, rows[i].keep);
        tap(got && strcmp(got, rows[i].want) == 0, "sk_url_escape(\"%s\", %s) = %s", rows[i].want,
            rows[i].keep ? rows[i].keep : "NULL", got ? got : "(null)");
        free(got);
    }
}

int main(void)
{
    test_timers();
    test_base36();
    test_waiters();
    test_envp();
    test_reaped();
    test_pipe_growth_refused();
    test_url_escape();
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}
