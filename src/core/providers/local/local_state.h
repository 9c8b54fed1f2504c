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

typedef struct local_sandbox {
    sk_sandbox *sb;
    char *workdir;            /* absolute */
    char *tmpdir;             /* bwrap: the sandbox's /tmp on the host */
    bool bwrap;
    bool allow_network;
    bool drop_ids;            /* bwrap by a root caller: run as uid/gid */
    bool bwrap_setuid;        /* a setuid bwrap may not make user namespaces */
    char *bwrap_exe, *setpriv_exe; /* resolved in PATH once, at create */
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
    /* processes of killed commands, awaited before /tmp goes */
    local_pidfds dying;
    local_destroy_wait *destroying;
    struct local_sandbox *next_live; /* in local_live (has a tmpdir) */
    char **inherit;              /* host variable names passed through */
    sk_cgroup *cgroup;           /* every command's cgroup lives below; NULL: none */
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
} local_bind;

/* local_pin.c */
/* path strictly inside dir (both absolute and folded). */
bool sk_local_path_inside(const char *path, const char *dir);
/* Opens (making it if missing) and pins the working directory and the
 * paths, and plans bwrap's binds; on failure nothing stays pinned. */
sk_error *sk_local_pin(local_sandbox *ls);
/* Closes every pinned descriptor and drops the plan. */
void sk_local_unpin(local_sandbox *ls);
/* isolation "none": a missing path fails start as under bwrap. */
sk_error *sk_local_check_paths(local_sandbox *ls);

#endif
