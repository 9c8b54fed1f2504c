/* What docker.c (lifecycle) and docker_exec.c (commands) share. */
#ifndef SK_DOCKER_STATE_H
#define SK_DOCKER_STATE_H

#include "../../provider.h"
#include "docker_api.h"
#include "docker_config.h"

typedef struct dk_op dk_op;
typedef struct dk_kill dk_kill;

typedef struct dk_sandbox {
    sk_sandbox *sb;
    dk_config cfg;
    dk_api api;
    char *container_id;   /* found or created; NULL: not known yet */
    json_t *inspected;    /* { state, container_name, created } of the last inspect */
    dk_op *op;            /* the lifecycle operation in flight */
    dk_call *refresh;     /* info()'s inspect in flight */
    sk_provider_done refresh_done;
    dk_kill *kills;       /* kill commands in flight (they outlive their exec) */
} dk_sandbox;

/* docker_exec.c */
int sk_dk_spawn(sk_sandbox *sb, sk_process *p, const sk_spawn_opts *o, sk_error **err);
int sk_dk_kill(sk_process *p, int sig);
int sk_dk_write_stdin(sk_process *p, const char *data, size_t len, sk_error **err);
int sk_dk_close_stdin(sk_process *p);
void sk_dk_release(sk_process *p);
void sk_dk_kills_free(dk_sandbox *ds);
extern const sk_ops sk_dk_calls;  /* docker_methods.c: its Lua methods' calls */
extern const sk_ops sk_dk_fs_ops; /* docker_fs.c: its files */

#endif
