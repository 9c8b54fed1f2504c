/* LocalSandbox's host-side chores that must hold against the sandboxed
 * code: removing a tree the sandbox wrote without following its symlinks,
 * and knowing when every process of a sandbox is gone (see
 * docs/security.md §"LocalSandbox"). Linux only, like bubblewrap. */
#ifndef SK_LOCAL_HOST_H
#define SK_LOCAL_HOST_H

#include <stdbool.h>
#include <stddef.h>

/* Removes the directory `path` and everything below it. Never follows a
 * symlink (entries are unlinked, directories opened O_NOFOLLOW beneath
 * their parent's descriptor), keeps going past an entry it cannot remove,
 * and retries briefly when entries keep appearing. 0, or the errno of the
 * first failure (the tree is then partly left). ENOENT for path is 0. */
int sk_local_rm_tree(const char *path);

/* Descriptors (pidfds) of processes, kept to learn when they are gone. */
typedef struct local_pidfds {
    int *v;   /* a pidfd of pid[i], or -1 where the kernel has none */
    int *pid;
    unsigned long long *start; /* pid[i]'s start time, from /proc */
    size_t n, cap;
} local_pidfds;

/* Adds a pidfd for every live process in process group pgid not listed
 * yet (prune first, so a listed pid is the same process). Each is checked
 * to still be in the group after its pidfd is opened, so a reused pid is
 * never waited for. Best effort: a process that cannot be opened is
 * skipped. */
void sk_local_pidfds_add_group(local_pidfds *s, int pgid);
/* Drops (and closes) the descriptors of processes that are gone; true when
 * none is left. */
bool sk_local_pidfds_prune(local_pidfds *s);
/* Blocks until every process is gone or timeout_ms passes; true if gone. */
bool sk_local_pidfds_wait(local_pidfds *s, int timeout_ms);
void sk_local_pidfds_free(local_pidfds *s);

#endif
