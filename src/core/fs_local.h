/* Confined file access: every path resolves beneath a root directory
 * descriptor, so neither ".." nor a symlink can reach outside the root.
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) where the kernel has it;
 * otherwise a component-by-component walk that refuses symlinks and "..".
 * Linux-only calls go through compat.h (docs/portability.md).
 * Functions return 0 (or a descriptor) on success and -errno on failure;
 * -EXDEV means "the path leads outside the root". Blocking system calls. */
#ifndef SK_FS_LOCAL_H
#define SK_FS_LOCAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Opens `path` as a root (a directory descriptor: SK_O_DIR_REF). Creates it first (mkdir -p)
 * when `create` is set. Returns the descriptor or -errno. */
int sk_fs_root_open(const char *path, bool create);
/* mkdir -p with plain paths (no symlink checks); 0 or -errno. */
int sk_fs_mkdir_p(const char *path, mode_t mode);

/* Opens `rel` (relative; "" or "." is the root) beneath `rootfd`. */
int sk_fs_open(int rootfd, const char *rel, int flags, mode_t mode);

/* Opens the directory holding `rel`'s last component and points `*leaf`
 * into `rel` at that component. The leaf itself is never followed.
 * -EINVAL when the leaf is empty, "." or "..". */
int sk_fs_open_parent(int rootfd, const char *rel, const char **leaf);

/* stat of `rel`: follows a final symlink (beneath the root) unless `nofollow`. */
int sk_fs_stat(int rootfd, const char *rel, bool nofollow, struct stat *st);

int sk_fs_mkdir(int rootfd, const char *rel, mode_t mode);
int sk_fs_unlink(int rootfd, const char *rel);
int sk_fs_rmdir(int rootfd, const char *rel);
/* Renames; with `noreplace` an existing destination gives -EEXIST; across
 * mounts -ENOTSUP (the caller copies instead). */
int sk_fs_rename(int rootfd, const char *from, const char *to, bool noreplace);
/* readlink of `rel` into buf (NUL-terminated); returns the length. */
ssize_t sk_fs_readlink(int rootfd, const char *rel, char *buf, size_t size);

/* Copies a regular file; with `excl` an existing destination gives -EEXIST. */
int sk_fs_copy(int rootfd, const char *from, const char *to, bool excl);

/* Writes all of buf to fd (retrying short writes and EINTR). */
int sk_fs_write_all(int fd, const void *buf, size_t len);

/* Test hook: use the fallback walk even where openat2 exists. */
void sk_fs_force_fallback(bool on);

/* ---- views -----------------------------------------------------------------
 * A sandbox's files as its commands see them: mounts (bwrap's binds), each
 * a pinned descriptor at the absolute path the sandbox sees it at. A path
 * (absolute, in the sandbox's terms) resolves one component at a time, as
 * the kernel resolves it inside the sandbox: a mount's path leads to its
 * descriptor, whatever the directory below holds there; a symlink is read
 * and followed in the view (an absolute one from the view's root); ".."
 * climbs the path resolved so far; a directory on the way to a mount that
 * is not there (bwrap makes it) is passed through. Anything else outside
 * every mount is -EXDEV. Where a path resolves decides read-only: a change
 * inside a read-only mount (creating, writing, removing, renaming) is
 * -EROFS however the path was spelled. Nothing is cached: each call
 * resolves afresh, a component at a time without following anything, so a
 * symlink swapped in meanwhile is either seen as the commands would see it
 * or is an error (-ELOOP), never followed blindly. Why and what it costs:
 * docs/security.md §"sb.fs: the pinned view". */
typedef struct sk_fs_mount {
    char *path; /* absolute, folded ("/" or no trailing slash) */
    int fd;     /* owned: a directory (SK_O_DIR_REF or open), or a bound file
                 * (stat'ed, listed, never opened: -ENOTSUP) */
    char *host; /* owned; with fd -1: the directory to open (following
                 * symlinks, as a chdir does) each time a path enters it */
    bool ro;
} sk_fs_mount;

typedef struct sk_fs_view {
    sk_fs_mount *mounts; /* in mount order; none at or under a later one's path */
    size_t n;
} sk_fs_view;

/* Mounts fd (taken: closed on failure too) at path, over whatever was
 * mounted at or under path before. 0 or -errno. */
int sk_fs_view_mount(sk_fs_view *v, const char *path, int fd, bool ro);
/* The same for the host directory `host`, opened by path each time a
 * path enters the mount (nothing pinned: for isolation "none"). */
int sk_fs_view_mount_path(sk_fs_view *v, const char *path, const char *host, bool ro);
/* Closes every descriptor and empties v. */
void sk_fs_view_clear(sk_fs_view *v);

/* The operations above, on paths of the view (absolute). */
int sk_fs_view_open(const sk_fs_view *v, const char *path, int flags, mode_t mode);
int sk_fs_view_stat(const sk_fs_view *v, const char *path, bool nofollow, struct stat *st);
int sk_fs_view_mkdir(const sk_fs_view *v, const char *path, mode_t mode);
int sk_fs_view_unlink(const sk_fs_view *v, const char *path);
int sk_fs_view_rmdir(const sk_fs_view *v, const char *path);
int sk_fs_view_rename(const sk_fs_view *v, const char *from, const char *to, bool noreplace);
ssize_t sk_fs_view_readlink(const sk_fs_view *v, const char *path, char *buf, size_t size);
int sk_fs_view_copy(const sk_fs_view *v, const char *from, const char *to, bool excl);

#endif
