/* LocalSandbox state shared by local.c (options, lifecycle, commands) and
 * local_pin.c (the paths bwrap binds, pinned by descriptor). */
#ifndef SK_LOCAL_STATE_H
#define SK_LOCAL_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "../../cgroup.h"
#include "../../provider.h"
#include "local_host.h"

typedef struct local_destroy_wait local_destroy_wait;
typedef struct local_rm_job local_rm_job;
typedef struct local_cg_job local_cg_job;

typedef struct local_sandbox {
    sk_sandbox *sb;
    char *workdir;            /* absolute */
    char *tmpdir;             /* bwrap: the sandbox's /tmp on the host */
    bool bwrap;
    bool allow_network;
    bool drop_ids;            /* bwrap by a root caller: run as uid/gid */
    bool bwrap_setuid;        /* a setuid bwrap may not make user namespaces */
    char *bwrap_exe, *setpriv_exe; /* resolved in PATH once, at create */
    /* binds the sandbox user cannot reach (a directory above them it may not
     * enter, such as /root) are relayed: each command's launcher binds them,
     * as root in a mount namespace of its own, onto an empty directory of
     * relay_dir (root's, mode 0711, under /tmp), and bwrap binds that */
    char *relay_dir;
    char *unshare_exe, *mount_exe; /* resolved once, when a bind is relayed */
    uid_t uid;
    gid_t gid;
    char **ro_paths, **rw_paths; /* NULL-terminated, absolute */
    /* bwrap: descriptors pinned at the first start, bound by bwrap */
    int wd_fd, tmp_fd;
    int *ro_fds, *rw_fds;
    /* directories between a writable bind and a read-only path nested in
     * it, each bound onto itself so no command can rename or replace it */
    char **chain_paths;
    int *chain_fds;
    size_t n_chain;
    /* every pinned bind in bwrap's mount order, planned once at pin */
    struct local_bind *binds;
    size_t n_binds;
    bool pinned;
    unsigned fs_gen;             /* sb.fs's view: bumped when the pins change */
    /* processes of killed commands, awaited before /tmp goes */
    local_pidfds dying;
    local_destroy_wait *destroying;
    local_rm_job *removing;      /* its /tmp being removed off the loop (local.c) */
    struct local_sandbox *next_live; /* in local_live (has a tmpdir) */
    char **inherit;              /* host variable names passed through */
    sk_cgroup *cgroup;           /* every command's cgroup lives below; NULL: none */
    local_cg_job *cg_removing;   /* its cgroup's directories being removed off the loop */
    sk_cgroup_limits limits;     /* options memory, pids_limit (or its default), cpu_* */
    unsigned limits_given;       /* bit 1 << ctl: given as an option, so start fails without it */
    sk_cgroup_limits enforced;   /* what the sandbox's cgroup holds (info().metadata.limits) */
} local_sandbox;

/* The user's binds (working directory, read_write_paths, read_only_paths)
 * in mount order: a path before the paths nested in it, so that a
 * read-only path inside the working directory is mounted over it and stays
 * read-only (the same path given both ways ends up read-only). A writable
 * path nested in another writable one is not bound again: it is writable
 * already, and its destination is a path the sandbox controls. Each source
 * is the descriptor pinned at start (fd). */
typedef struct local_bind {
    const char *path;
    int fd;
    bool ro;
    size_t order;
    char *relay; /* its directory in relay_dir, or NULL: bound by descriptor */
} local_bind;

/* local_pin.c */
/* path strictly inside dir (both absolute and folded). */
bool sk_local_path_inside(const char *path, const char *dir);
/* Opens (making it if missing) and pins the working directory and the
 * paths, and plans bwrap's binds; on failure nothing stays pinned. */
sk_error *sk_local_pin(local_sandbox *ls);
/* Closes every pinned descriptor and drops the plan (and the relay
 * directories). */
void sk_local_unpin(local_sandbox *ls);
/* Removes the relay directories, keeping the plan (at exit). */
void sk_local_remove_relays(local_sandbox *ls);
/* isolation "none": a missing path fails start as under bwrap. */
sk_error *sk_local_check_paths(local_sandbox *ls);

#endif
