/* ModalSandbox state shared by modal.c (options, provisioning, lifecycle),
 * modal_exec.c (commands) and modal_fs.c (filesystem operations). */
#ifndef SK_MODAL_STATE_H
#define SK_MODAL_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "../../sandbox.h"
#include "modal_client.h"
#include "modal_msg.h"

extern const sk_provider sk_provider_modal;

typedef void (*modal_wait_fn)(void *ud, const sk_error *err);

/* Someone waiting for a shared operation (provisioning, task readiness). */
typedef struct modal_waiter {
    modal_wait_fn fn;
    void *ud;
    struct modal_waiter *next;
} modal_waiter;

typedef struct modal_sandbox {
    sk_sandbox *sb;
    mc_client *client;
    char *app_name, *base_image, *workdir;
    int64_t timeout_ms;
    unsigned proc_counter;
    sk_provider_done start_done;
    /* the handle: set once provisioned or reconnected */
    char *sandbox_id;
    char *task_id;
    mc_router *router;
    unsigned gen;            /* bumped whenever the handle changes */
    char *snapshot_image;    /* from the last stop of this object */
    /* provisioning (start, and re-provisioning a dead sandbox) */
    struct {
        bool active;
        int step;
        mc_call *call;
        char *app_id, *image_id, *secret_id, *last_entry_id;
        modal_waiter *waiters;
    } prov;
    /* task id + router access for commands */
    struct {
        bool active;
        int step, tries;
        mc_call *call;
        uv_timer_t *timer;
        modal_waiter *waiters;
    } ready;
    /* stop / destroy */
    struct {
        bool destroying;
        int step;
        mc_call *call;
        sk_provider_done done;
        sk_error *err;
    } down;
} modal_sandbox;

/* modal.c: helpers the command and filesystem paths share */
sk_error *modal_oom(void);
void modal_waiter_remove(modal_waiter **list, void *ud);
void modal_timer_close(uv_timer_t **t);
int modal_timer_start(modal_sandbox *ms, uv_timer_t **t, void *data, uint64_t ms_delay, uv_timer_cb cb);
/* upstream isSandboxDeadError, on a gRPC code and message, or on an error */
bool modal_dead(int code, const char *message);
bool modal_error_dead(const sk_error *e);
/* Provisions (or reconnects) the sandbox; fn runs once with the outcome. */
void modal_provision(modal_sandbox *ms, modal_wait_fn fn, void *ud);
/* Drops a dead handle, then provisions again. */
void modal_revive(modal_sandbox *ms, modal_wait_fn fn, void *ud);
/* Waits until the task id and router are known. */
void modal_ready(modal_sandbox *ms, modal_wait_fn fn, void *ud);
sk_modal_kv *modal_env_kvs(const json_t *env, size_t *n);

/* modal_exec.c: the command half of the provider table */
int modal_exec_spawn(sk_sandbox *sb, sk_process *p, const sk_spawn_opts *o, sk_error **err);
int modal_exec_kill(sk_process *p, int sig);
int modal_exec_write_stdin(sk_process *p, const char *data, size_t len, sk_error **err);
int modal_exec_close_stdin(sk_process *p);
void modal_exec_release(sk_process *p);

#endif
