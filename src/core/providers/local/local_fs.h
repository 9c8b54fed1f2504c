/* sb.fs of a LocalSandbox (src/core/providers/local/fs.lua, src/lua/fs_ud.c):
 * the sk_provider hooks behind sk_sandbox_fs_generation and
 * sk_sandbox_fs_get (sandbox.h), over the descriptors pinned at start
 * (local_pin.c); see docs/security.md §"sb.fs: the pinned view". */
#ifndef SK_LOCAL_FS_H
#define SK_LOCAL_FS_H

#include "../../sandbox.h"

/* sb is a LocalSandbox with its state (sandbox.c checks). */
long sk_local_fs_generation(const sk_sandbox *sb);
/* Its mounts in bwrap's order (its private /tmp, then the binds; with
 * isolation "none", the working directory alone, by path: its commands
 * run there). */
int sk_local_fs_get(const sk_sandbox *sb, sk_sandbox_fs *fs);

#endif
