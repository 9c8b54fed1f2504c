/* ModalSandbox state shared by modal.c (options, provisioning, lifecycle),
 * modal_exec.c (commands) and modal_fs.c (filesystem operations). */
#ifndef SK_MODAL_STATE_H
#define SK_MODAL_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

#include "../../provider.h"
#include "modal_client.h"
#include "modal_msg.h"

extern const sk_provider sk_provider_modal;

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
        sk_waiter *waiters; /* waiting for this shared operation */
    } prov;
    /* task id + router access for commands */
    struct {
        bool active;
        int step, tries;
        mc_call *call;
        uv_timer_t *timer;
        sk_waiter *waiters; /* waiting for this shared operation */
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
/* upstream isSandboxDeadError, on a gRPC code and message, or on an error */
bool sk_modal_dead(int code, const char *message);
bool sk_modal_error_dead(const sk_error *e);
/* Provisions (or reconnects) the sandbox; fn runs once with the outcome. */
void sk_modal_provision(modal_sandbox *ms, sk_lifecycle_cb fn, void *ud);
/* Drops a dead handle, then provisions again. */
void sk_modal_revive(modal_sandbox *ms, sk_lifecycle_cb fn, void *ud);
/* Waits until the task id and router are known. */
void sk_modal_ready(modal_sandbox *ms, sk_lifecycle_cb fn, void *ud);
sk_modal_kv *sk_modal_env_kvs(const json_t *env, size_t *n);

/* modal_fs.c: Sandbox.open() and its file handle (provider_ops.h) */
extern const sk_ops sk_modal_fs_ops;

/* modal_exec.c: the command half of the provider table */
int sk_modal_exec_spawn(sk_sandbox *sb, sk_process *p, const sk_spawn_opts *o, sk_error **err);
int sk_modal_exec_kill(sk_process *p, int sig);
int sk_modal_exec_write_stdin(sk_process *p, const char *data, size_t len, sk_error **err);
int sk_modal_exec_close_stdin(sk_process *p);
void sk_modal_exec_release(sk_process *p);

#endif
