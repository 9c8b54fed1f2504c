/* One libuv loop per Lua state, and the embedding surface a host loop needs.
 * Services that live on the loop (HTTP, WebSocket) register a shutdown hook so
 * sk_loop_free can tear them down in the order of docs/protocols/event-core.md §7. */
#ifndef SK_LOOP_H
#define SK_LOOP_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

typedef struct sk_loop sk_loop;

/* A service on the loop (http.c, ws.c). From sk_loop_free: every hook's
 * shutdown runs (newest first; it may start uv_close()s), the loop drains,
 * then every finish runs (lws needs a second destroy call once its handles
 * are closed; finish may free the hook), and the loop drains again. A hook
 * without finish must stay valid until then. */
typedef struct sk_loop_hook {
    void (*shutdown)(struct sk_loop_hook *hook, sk_loop *loop);
    void (*finish)(struct sk_loop_hook *hook, sk_loop *loop);
    struct sk_loop_hook *next;
} sk_loop_hook;

sk_loop *sk_loop_new(void);
/* Kills nothing by itself: owners close their handles first (sandboxes are
 * freed before the loop). Runs hooks, drains, closes the uv loop, frees. */
void sk_loop_free(sk_loop *loop);

uv_loop_t *sk_loop_uv(sk_loop *loop);
void sk_loop_add_hook(sk_loop *loop, sk_loop_hook *hook);

/* Named per-loop service slots so http.c / ws.c can lazily create one
 * instance per loop without globals. */
enum { SK_SERVICE_HTTP, SK_SERVICE_WS, SK_SERVICE_COUNT };
void *sk_loop_service(sk_loop *loop, int slot);
void sk_loop_set_service(sk_loop *loop, int slot, void *service);

/* Embedding: the descriptor to poll and how long to wait (ms, -1 = until
 * the descriptor is readable), counted from now. */
int sk_loop_fd(sk_loop *loop);
int sk_loop_timeout(sk_loop *loop);
/* Whether anything on the loop (a handle, request or close) can still
 * produce an event. */
bool sk_loop_alive(sk_loop *loop);

/* One turn: wait at most timeout_ms (0 = do not wait, -1 = until something
 * happens) for the backend fd, then run ready callbacks once. Timers due
 * are judged by the clock at the start of the turn, not by libuv's cached
 * time from the last one (the host may have run for seconds since).
 * Returns non-zero while the loop has active handles or requests. */
int sk_loop_turn(sk_loop *loop, int timeout_ms);

/* Work on libuv's thread pool that may take seconds (removing a large
 * tree), so the loop keeps turning meanwhile. work runs on a pool thread
 * and must not touch the loop; after runs on the loop thread once work has
 * returned (w may be freed there). sk_loop_free waits for every queued
 * work to finish, however long it takes: the work owns its data, and a
 * freed loop could not take its completion. */
typedef struct sk_work sk_work;
struct sk_work {
    uv_work_t req;
    sk_loop *loop;
    void (*work)(sk_work *w);
    void (*after)(sk_work *w);
};
int sk_work_queue(sk_loop *loop, sk_work *w, void (*work)(sk_work *), void (*after)(sk_work *));

/* A per-loop scratch buffer for reads consumed synchronously (at least
 * SK_LOOP_SCRATCH bytes); shared by every reader on the loop. NULL on OOM. */
enum { SK_LOOP_SCRATCH = 1024 * 1024 };
char *sk_loop_scratch(sk_loop *loop);

/* One clock: every timer counts from the moment it is armed. libuv's
 * timers count from its cached loop time, which stands still while the
 * host runs between turns (an LLM call, a frame's work); armed from it, a
 * 1,500 ms timeout after a 2 s block fired at once. sk_timer_arm counts
 * from the monotonic clock instead; every timer in sandkit is armed
 * through it (or sk_timer_start), and each turn and timeout() refresh the
 * cached time first. docs/reliability.md §"One clock". */
void sk_timer_arm(uv_timer_t *t, uv_timer_cb cb, uint64_t ms, uint64_t repeat);

/* Timers owned through a pointer that is NULL while there is none.
 * sk_timer_new allocates and initialises one (not started; NULL on OOM).
 * sk_timer_start allocates *t on first use, sets its data and (re)starts it
 * to fire once after ms; -1 when it cannot be allocated (nothing started).
 * sk_timer_close closes *t (freed once libuv is done with it) and sets it
 * to NULL; no callback runs after it. */
uv_timer_t *sk_timer_new(sk_loop *loop, void *data);
int sk_timer_start(sk_loop *loop, uv_timer_t **t, void *data, uint64_t ms, uv_timer_cb cb);
void sk_timer_close(uv_timer_t **t);

/* Monotonic milliseconds (uv_hrtime based). */
double sk_now_ms(void);

#endif
