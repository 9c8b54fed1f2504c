/* One libuv loop per Lua state; see loop.h. */
#include "loop.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>

struct sk_loop {
    uv_loop_t uv;
    sk_loop_hook *hooks;
    void *services[SK_SERVICE_COUNT];
    char *scratch;
    unsigned work_in_flight; /* sk_work queued and not yet completed */
};

sk_loop *sk_loop_new(void)
{
    sk_loop *loop = calloc(1, sizeof *loop);
    if (!loop)
        return NULL;
    if (uv_loop_init(&loop->uv) != 0) {
        free(loop);
        return NULL;
    }
    loop->uv.data = loop;
    /* A child that closes its stdin early must not kill us with SIGPIPE
     * when we write to it (lws sets the same when it starts). */
    struct sigaction sa;
    if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL)
        signal(SIGPIPE, SIG_IGN);
    return loop;
}

uv_loop_t *sk_loop_uv(sk_loop *loop) { return &loop->uv; }

void sk_loop_add_hook(sk_loop *loop, sk_loop_hook *hook)
{
    hook->next = loop->hooks;
    loop->hooks = hook;
}

void *sk_loop_service(sk_loop *loop, int slot) { return loop->services[slot]; }

void sk_loop_set_service(sk_loop *loop, int slot, void *service) { loop->services[slot] = service; }

char *sk_loop_scratch(sk_loop *loop)
{
    if (!loop->scratch)
        loop->scratch = malloc(SK_LOOP_SCRATCH);
    return loop->scratch;
}

int sk_loop_fd(sk_loop *loop) { return uv_backend_fd(&loop->uv); }

int sk_loop_timeout(sk_loop *loop)
{
    /* libuv says 0 for a loop with nothing active; nothing will happen
     * without I/O then, so a host should not spin on it. */
    if (!uv_loop_alive(&loop->uv))
        return -1;
    uv_update_time(&loop->uv); /* the host asks after its own work: from now */
    return uv_backend_timeout(&loop->uv);
}

bool sk_loop_alive(sk_loop *loop) { return uv_loop_alive(&loop->uv) != 0; }

int sk_loop_turn(sk_loop *loop, int timeout_ms)
{
    uv_update_time(&loop->uv);
    if (timeout_ms != 0) {
        int t = uv_backend_timeout(&loop->uv);
        if (timeout_ms > 0 && (t < 0 || t > timeout_ms))
            t = timeout_ms;
        if (t != 0 && uv_loop_alive(&loop->uv)) {
            struct pollfd pfd = { .fd = uv_backend_fd(&loop->uv), .events = POLLIN };
            /* EINTR just ends the wait early; the caller turns again. */
            (void)poll(&pfd, 1, t);
        } else if (t != 0 && timeout_ms > 0) {
            (void)poll(NULL, 0, timeout_ms);
        }
    }
    return uv_run(&loop->uv, UV_RUN_NOWAIT);
}

static void loop_work_run(uv_work_t *req)
{
    sk_work *w = (sk_work *)req;
    w->work(w);
}

static void loop_work_done(uv_work_t *req, int status)
{
    (void)status; /* never cancelled: uv_cancel is not used */
    sk_work *w = (sk_work *)req;
    w->loop->work_in_flight--;
    w->after(w);
}

int sk_work_queue(sk_loop *loop, sk_work *w, void (*work)(sk_work *), void (*after)(sk_work *))
{
    w->loop = loop;
    w->work = work;
    w->after = after;
    if (uv_queue_work(&loop->uv, &w->req, loop_work_run, loop_work_done) != 0)
        return -1;
    loop->work_in_flight++;
    return 0;
}

static void loop_close_stray(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

static void loop_drain(sk_loop *loop)
{
    /* Bounded (about 2 s): a handle that never closes must not hang exit.
     * Killed children need a moment for SIGCHLD, so wait in small steps. */
    for (int i = 0; i < 400 && uv_loop_alive(&loop->uv); i++)
        sk_loop_turn(loop, 5);
}

void sk_loop_free(sk_loop *loop)
{
    if (!loop)
        return;
    /* Every service shuts down first (newest first: curl before lws when
     * ws was created after http), so no drain runs one service's callbacks
     * while another is half torn down; then one drain, then the second
     * stage (lws's second context destroy), then a drain again. */
    sk_loop_hook *hooks = loop->hooks;
    loop->hooks = NULL;
    for (sk_loop_hook *h = hooks; h; h = h->next)
        h->shutdown(h, loop);
    loop_drain(loop);
    for (sk_loop_hook *h = hooks, *next; h; h = next) {
        next = h->next; /* finish may free the hook */
        if (h->finish)
            h->finish(h, loop);
    }
    loop_drain(loop);
    while (loop->work_in_flight > 0) /* pool threads still use what it owns */
        sk_loop_turn(loop, 50);
    uv_walk(&loop->uv, loop_close_stray, NULL);
    loop_drain(loop);
    (void)uv_loop_close(&loop->uv);
    free(loop->scratch);
    free(loop);
}

double sk_now_ms(void) { return (double)uv_hrtime() / 1e6; }

/* ---- one-shot timers on the heap ---------------------------------------- */

static void loop_timer_closed(uv_handle_t *h) { free(h); }

uv_timer_t *sk_timer_new(sk_loop *loop, void *data)
{
    uv_timer_t *t = malloc(sizeof *t);
    if (!t)
        return NULL;
    uv_timer_init(sk_loop_uv(loop), t);
    t->data = data;
    return t;
}

void sk_timer_arm(uv_timer_t *t, uv_timer_cb cb, uint64_t ms, uint64_t repeat)
{
    /* Counted past the cached time's lag rather than by refreshing it:
     * inside libuv's timer pass a refreshed time would make timers armed
     * meanwhile due in that same pass, which then might never end. */
    uint64_t now = uv_hrtime() / 1000000;
    uint64_t cached = uv_now(t->loop);
    uv_timer_start(t, cb, ms + (now > cached ? now - cached : 0), repeat);
}

int sk_timer_start(sk_loop *loop, uv_timer_t **t, void *data, uint64_t ms, uv_timer_cb cb)
{
    if (!*t && !(*t = sk_timer_new(loop, data)))
        return -1;
    (*t)->data = data;
    sk_timer_arm(*t, cb, ms, 0);
    return 0;
}

void sk_timer_close(uv_timer_t **t)
{
    if (*t) {
        uv_close((uv_handle_t *)*t, loop_timer_closed);
        *t = NULL;
    }
}
