/* Portability: the few interfaces the core uses that only some systems have
 * (Linux: pidfd_open, getrandom, pipe2, F_SETPIPE_SZ, openat2, O_PATH,
 * renameat2, copy_file_range, per-thread file-system ids; glibc/Apple spawn
 * extensions). Each is chosen at compile time through an SK_HAVE_* macro;
 * the fallbacks are plain POSIX and are what a macOS build uses where Apple
 * has no equivalent. -DSK_PORTABLE forces every fallback (make
 * test-portable runs the whole suite that way on Linux), and any single
 * macro can be forced off with -DSK_HAVE_X=0. docs/portability.md lists
 * each interface, its fallback and what the fallback costs. */
#ifndef SK_COMPAT_H
#define SK_COMPAT_H

#include <fcntl.h>
#include <limits.h> /* glibc: defines __GLIBC__ */
#include <spawn.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* What the platform offers natively (all 0 under SK_PORTABLE). */
#define SK_NATIVE_LINUX 0
#define SK_NATIVE_APPLE 0
#define SK_NATIVE_GLIBC_MINOR 0 /* glibc 2.x, else 0 */
#if !defined(SK_PORTABLE)
#if defined(__linux__)
#undef SK_NATIVE_LINUX
#define SK_NATIVE_LINUX 1
#endif
#if defined(__APPLE__)
#undef SK_NATIVE_APPLE
#define SK_NATIVE_APPLE 1
#endif
#if defined(__GLIBC__) && __GLIBC__ == 2
#undef SK_NATIVE_GLIBC_MINOR
#define SK_NATIVE_GLIBC_MINOR __GLIBC_MINOR__
#endif
#endif

#ifndef SK_HAVE_PIDFD /* pidfd_open(2): exit watched on the loop without SIGCHLD */
#if SK_NATIVE_LINUX
#define SK_HAVE_PIDFD 1
#else
#define SK_HAVE_PIDFD 0
#endif
#endif

/* Session keyrings exist only on Linux, as does bubblewrap, whose commands
 * get a fresh one: this is isolation, not an interface with a fallback, so
 * SK_PORTABLE leaves it on where the kernel has it. */
#ifndef SK_HAVE_KEYRINGS
#if defined(__linux__)
#define SK_HAVE_KEYRINGS 1
#else
#define SK_HAVE_KEYRINGS 0
#endif
#endif

#ifndef SK_HAVE_GETRANDOM
#if SK_NATIVE_LINUX
#define SK_HAVE_GETRANDOM 1
#else
#define SK_HAVE_GETRANDOM 0
#endif
#endif

#ifndef SK_HAVE_ARC4RANDOM /* Apple, BSDs */
#if SK_NATIVE_APPLE
#define SK_HAVE_ARC4RANDOM 1
#else
#define SK_HAVE_ARC4RANDOM 0
#endif
#endif

#ifndef SK_HAVE_PIPE2
#if SK_NATIVE_LINUX
#define SK_HAVE_PIPE2 1
#else
#define SK_HAVE_PIPE2 0
#endif
#endif

#ifndef SK_HAVE_SETPIPE_SZ
#if SK_NATIVE_LINUX
#define SK_HAVE_SETPIPE_SZ 1
#else
#define SK_HAVE_SETPIPE_SZ 0
#endif
#endif

/* mremap(2) and MADV_HUGEPAGE: large capture buffers live in their own
 * huge-page mapping, grown without copying (buf.c) */
#ifndef SK_HAVE_MREMAP
#if SK_NATIVE_LINUX
#define SK_HAVE_MREMAP 1
#else
#define SK_HAVE_MREMAP 0
#endif
#endif

/* posix_spawn_file_actions_addclosefrom_np: glibc 2.34 */
#ifndef SK_HAVE_SPAWN_CLOSEFROM
#if SK_NATIVE_GLIBC_MINOR >= 34
#define SK_HAVE_SPAWN_CLOSEFROM 1
#else
#define SK_HAVE_SPAWN_CLOSEFROM 0
#endif
#endif

/* POSIX_SPAWN_CLOEXEC_DEFAULT: Apple */
#ifndef SK_HAVE_SPAWN_CLOEXEC_DEFAULT
#if SK_NATIVE_APPLE
#define SK_HAVE_SPAWN_CLOEXEC_DEFAULT 1
#else
#define SK_HAVE_SPAWN_CLOEXEC_DEFAULT 0
#endif
#endif

/* posix_spawn_file_actions_addchdir_np: glibc 2.29, macOS 10.15 */
#ifndef SK_HAVE_SPAWN_CHDIR
#if SK_NATIVE_GLIBC_MINOR >= 29 || SK_NATIVE_APPLE
#define SK_HAVE_SPAWN_CHDIR 1
#else
#define SK_HAVE_SPAWN_CHDIR 0
#endif
#endif

/* POSIX_SPAWN_SETSID: glibc 2.26, macOS 10.15 */
#ifndef SK_HAVE_SPAWN_SETSID
#if SK_NATIVE_GLIBC_MINOR >= 26 || SK_NATIVE_APPLE
#define SK_HAVE_SPAWN_SETSID 1
#else
#define SK_HAVE_SPAWN_SETSID 0
#endif
#endif

/* Spawning through clone(CLONE_VM | CLONE_VFORK | CLONE_FILES) with a
 * child that takes a private descriptor table of a few entries
 * (close_range CLOSE_RANGE_UNSHARE, Linux 5.9) instead of copying and
 * closing every descriptor of ours (child.c): glibc on Linux. */
#ifndef SK_HAVE_CLONE_SPAWN
#if SK_NATIVE_LINUX && SK_NATIVE_GLIBC_MINOR > 0
#define SK_HAVE_CLONE_SPAWN 1
#else
#define SK_HAVE_CLONE_SPAWN 0
#endif
#endif

/* Control groups (cgroup.c reads /proc/self and the cgroup file systems):
 * Linux only; without them a command's escaped descendants are not killed. */
#ifndef SK_HAVE_CGROUP
#if SK_NATIVE_LINUX
#define SK_HAVE_CGROUP 1
#else
#define SK_HAVE_CGROUP 0
#endif
#endif

/* openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS): the kernel confines a
 * lookup beneath a directory (fs_local.c walks component by component
 * without it). */
#ifndef SK_HAVE_OPENAT2
#if SK_NATIVE_LINUX
#define SK_HAVE_OPENAT2 1
#else
#define SK_HAVE_OPENAT2 0
#endif
#endif

/* O_PATH: a descriptor that names a file without opening it (no read
 * permission needed, no side effect on a FIFO or a device). */
#ifndef SK_HAVE_O_PATH
#if SK_NATIVE_LINUX
#define SK_HAVE_O_PATH 1
#else
#define SK_HAVE_O_PATH 0
#endif
#endif

/* O_SEARCH (POSIX 2008; Apple): a directory opened for lookups only. */
#ifndef SK_HAVE_O_SEARCH
#if SK_NATIVE_APPLE && defined(O_SEARCH)
#define SK_HAVE_O_SEARCH 1
#else
#define SK_HAVE_O_SEARCH 0
#endif
#endif

/* SK_O_REF: a descriptor that only names a file (to fstat it, bind it or
 * compare it): O_PATH, which also opens a symlink itself under O_NOFOLLOW;
 * else a non-blocking read-only open, which needs read permission, cannot
 * name a socket or a symlink (ELOOP), and opens a device (callers that
 * must not stat through their parent instead).
 * SK_O_DIR_REF: a directory used only as the base of *at() calls: O_PATH,
 * else O_SEARCH, else read-only (read permission needed, not just search). */
#if SK_HAVE_O_PATH
#define SK_O_REF O_PATH
#define SK_O_DIR_REF (O_PATH | O_DIRECTORY)
#else
#define SK_O_REF (O_RDONLY | O_NONBLOCK | O_NOCTTY)
#if SK_HAVE_O_SEARCH
#define SK_O_DIR_REF (O_SEARCH | O_DIRECTORY)
#else
#define SK_O_DIR_REF (O_RDONLY | O_DIRECTORY)
#endif
#endif

/* One path component opened beneath dirfd without following it, as
 * SK_O_REF | O_NOFOLLOW, and fstat'ed into *st: the descriptor, or -1 with
 * errno (*st zeroed). A symlink is opened itself where there is O_PATH;
 * without, it cannot be: -1 with ELOOP and *st from fstatat (S_ISLNK), so
 * the caller can look at it through dirfd by name. */
int sk_openat_ref_nofollow(int dirfd, const char *name, struct stat *st);

/* renameat2(RENAME_NOREPLACE): glibc 2.28 */
#ifndef SK_HAVE_RENAMEAT2
#if SK_NATIVE_GLIBC_MINOR >= 28 && SK_NATIVE_LINUX
#define SK_HAVE_RENAMEAT2 1
#else
#define SK_HAVE_RENAMEAT2 0
#endif
#endif

/* renameatx_np(RENAME_EXCL): Apple (macOS 10.12) */
#ifndef SK_HAVE_RENAMEATX_NP
#if SK_NATIVE_APPLE
#define SK_HAVE_RENAMEATX_NP 1
#else
#define SK_HAVE_RENAMEATX_NP 0
#endif
#endif

/* copy_file_range: glibc 2.27 */
#ifndef SK_HAVE_COPY_FILE_RANGE
#if SK_NATIVE_GLIBC_MINOR >= 27 && SK_NATIVE_LINUX
#define SK_HAVE_COPY_FILE_RANGE 1
#else
#define SK_HAVE_COPY_FILE_RANGE 0
#endif
#endif

/* struct stat's times as a struct timespec: POSIX 2008 names them
 * st_mtim/st_ctim, Apple st_mtimespec/st_ctimespec. */
#if defined(__APPLE__)
#define SK_ST_MTIM(st) ((st).st_mtimespec)
#define SK_ST_CTIM(st) ((st).st_ctimespec)
#else
#define SK_ST_MTIM(st) ((st).st_mtim)
#define SK_ST_CTIM(st) ((st).st_ctim)
#endif

/* Per-thread file-system ids (setfsuid, setfsgid, setgroups as raw system
 * calls). sb.fs of a root caller's bwrap sandbox acts as the sandbox user
 * with them. Like SK_HAVE_KEYRINGS this is isolation, not an interface
 * with a fallback: it exists wherever bubblewrap does (Linux), so
 * SK_PORTABLE leaves it on there; elsewhere no sandbox drops ids and
 * sk_thread_fs_ids_enter refuses (ENOTSUP) rather than act as the caller. */
#ifndef SK_HAVE_FSUID
#if defined(__linux__)
#define SK_HAVE_FSUID 1
#else
#define SK_HAVE_FSUID 0
#endif
#endif

/* The process environment (a shared library on macOS has no `environ`). */
char **sk_environ(void);

/* n random bytes; 0, or -1 when no source answered. */
int sk_random_bytes(void *buf, size_t n);

/* pipe(2) with both ends close-on-exec; 0 or -1 (errno). */
int sk_pipe_cloexec(int fds[2]);

/* Best effort: a bigger pipe buffer (fewer wake-ups for bulk output). */
void sk_pipe_grow(int fd, int bytes);

/* A descriptor that becomes readable when pid exits, or -1 (errno ENOSYS
 * without pidfds): the caller then relies on SIGCHLD. */
int sk_pidfd_open(pid_t pid);

/* For child.c's spawn (SK_HAVE_CLONE_SPAWN; elsewhere both fail with
 * ENOSYS). The child of sk_clone_vfork_files runs fn(arg) on stack_top,
 * sharing our memory and descriptor table; we wait until it has called
 * execve or exited. sk_close_range closes from `from` up; with `unshare`
 * the caller first takes a table of its own holding only the descriptors
 * below `from` (nothing else is copied); it is safe to call in that
 * child. */
pid_t sk_clone_vfork_files(int (*fn)(void *), void *stack_top, void *arg);
int sk_close_range(unsigned from, bool unshare);

/* The calling thread joins a new, empty session keyring (Linux keyrings);
 * 0, or an errno. Where there are no keyrings there is none to leak: 0. */
int sk_join_new_session_keyring(void);

/* Whether `path` carries a POSIX access ACL (Linux's system.posix_acl_access
 * attribute; false where there is none, or no such attribute). */
bool sk_has_posix_acl(const char *path);

/* Spawn setup, for posix_spawn's attributes and file actions: */
/* no descriptor of ours from `from` (3 and up) upwards reaches the child; 0 or an errno */
int sk_spawn_close_inherited(posix_spawn_file_actions_t *fa, short *flags, int from);
/* the child starts a new session (or at least a new process group) */
int sk_spawn_new_group(posix_spawnattr_t *attr, short *flags);
/* What posix_spawnp would run for name: a regular executable file found
 * through our PATH (a default where unset), or name itself when it holds
 * a slash; malloc'd, or NULL (not found, or out of memory). */
char *sk_find_executable(const char *name);
/* posix_spawnp in directory cwd (NULL: ours); 0 or an errno. Without
 * addchdir the child goes through /bin/sh, which changes directory and
 * execs argv (resolved through the child's PATH). */
int sk_spawnp_in(pid_t *pid, const char *file, posix_spawn_file_actions_t *fa,
                 const posix_spawnattr_t *attr, char *const argv[], char *const envp[], const char *cwd);


/* openat(dirfd, path) confined beneath dirfd: ".." above it, absolute paths
 * and symlinks leading out fail with EXDEV, magic links (/proc) with ELOOP.
 * The descriptor, or -1 with errno; ENOSYS where neither the build nor the
 * kernel has openat2 (the caller then walks the path itself), EAGAIN when
 * concurrent renames kept the kernel from finishing (retried a few times
 * first; the caller may walk instead). O_CLOEXEC is always added. */
int sk_openat_beneath(int dirfd, const char *path, int flags, mode_t mode);

/* renameat that fails with EEXIST when `to` exists, atomically where the
 * system can (renameat2, renameatx_np). The POSIX fallback links then
 * unlinks a file (link(2) never replaces: still atomic) and, for a
 * directory or where links are refused, checks then renames: a `to`
 * created in between is replaced if it is an empty directory (renameat
 * refuses anything else). 0, or -1 with errno. */
int sk_renameat_noreplace(int fromfd, const char *from, int tofd, const char *to);

/* Copies up to len bytes from in to out in the kernel (file offsets
 * advance): the count copied, 0 at the end of in, or -1 with errno; ENOSYS
 * (and EXDEV, EINVAL, EOPNOTSUPP from the kernel) means "copy through a
 * buffer instead". */
ssize_t sk_copy_range(int in, int out, size_t len);

/* The calling thread's file-system identity, saved by ..._enter. */
typedef struct {
    uid_t fsuid;
    gid_t fsgid;
    int ngroups;
    gid_t *groups; /* owned; freed by ..._leave */
} sk_thread_fs_ids;

/* Only the calling thread (not the process) does its file system calls as
 * uid/gid with no supplementary groups until sk_thread_fs_ids_leave: files
 * it creates are theirs and the kernel checks their permissions. Needs
 * CAP_SETUID and CAP_SETGID. 0, or an errno with nothing changed. Start no
 * thread in between: a new thread copies its creator's ids for good. */
int sk_thread_fs_ids_enter(uid_t uid, gid_t gid, sk_thread_fs_ids *saved);
/* Restores what _enter saved. Cannot fail while the thread keeps its
 * capabilities; if it did, the process aborts rather than go on doing the
 * caller's file operations under another identity. */
void sk_thread_fs_ids_leave(sk_thread_fs_ids *saved);

#endif
