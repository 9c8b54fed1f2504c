/* sb.fs of a LocalSandbox (lua/sandkit/fs/sandbox.lua, src/lua/fs_ud.c):
 * the files its commands see, as a view (fs_local.h) over the descriptors
 * pinned at start, never over a path looked up again; see
 * docs/security.md §"sb.fs: the pinned view". */
#ifndef SK_LOCAL_FS_H
#define SK_LOCAL_FS_H

#include <stdbool.h>
#include <sys/types.h>

#include "../../fs_local.h"
#include "../../sandbox.h"

typedef struct sk_local_fs {
    sk_fs_view view;     /* duplicates of the pinned descriptors: the caller's to clear */
    const char *workdir; /* where relative paths start (borrowed from the sandbox) */
    unsigned generation; /* as sk_local_fs_generation */
    bool as_user;        /* a root caller's bwrap: act as uid/gid (fs_ud.c) */
    uid_t uid;
    gid_t gid;
} sk_local_fs;

/* Changes whenever what is pinned changes (a start after destroy); 0 before
 * the first start, -1 when sb is not a LocalSandbox. */
long sk_local_fs_generation(const sk_sandbox *sb);

/* Fills *fs (view empty on entry) with the mounts of a started
 * LocalSandbox, in bwrap's order (its private /tmp, then the binds; with
 * isolation "none", the working directory alone, by path: its commands run
 * there). 0, -EINVAL when sb is not a LocalSandbox, -ENOTCONN when nothing
 * is pinned (bwrap, not started), or -errno (nothing left in fs->view). */
int sk_local_fs_get(const sk_sandbox *sb, sk_local_fs *fs);

#endif
