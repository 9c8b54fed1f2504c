/* Portability: the few interfaces the core uses that only some systems have
 * (Linux: pidfd_open, getrandom, pipe2, F_SETPIPE_SZ; glibc/Apple spawn
 * extensions). Each is chosen at compile time through an SK_HAVE_* macro;
 * the fallbacks are plain POSIX and are what a macOS build uses where Apple
 * has no equivalent. -DSK_PORTABLE forces every fallback (make
 * test-portable runs the whole suite that way on Linux), and any single
 * macro can be forced off with -DSK_HAVE_X=0. docs/portability.md lists
 * each interface, its fallback and what the fallback costs. */
#ifndef SK_COMPAT_H
#define SK_COMPAT_H

#include <limits.h> /* glibc: defines __GLIBC__ */
#include <spawn.h>
#include <stdbool.h>
#include <stddef.h>
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

/* Control groups (cgroup.c reads /proc/self and the cgroup file systems):
 * Linux only; without them a command's escaped descendants are not killed. */
#ifndef SK_HAVE_CGROUP
#if SK_NATIVE_LINUX
#define SK_HAVE_CGROUP 1
#else
#define SK_HAVE_CGROUP 0
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

/* The exit status behind a pidfd, without reaping the child: true and
 * *code / *signal (one of them 0) when it has exited and is not reaped. */
bool sk_pidfd_peek_status(int pidfd, int *code, int *signal);

/* The calling thread joins a new, empty session keyring (Linux keyrings);
 * 0, or an errno. Where there are no keyrings there is none to leak: 0. */
int sk_join_new_session_keyring(void);

/* Spawn setup, for posix_spawn's attributes and file actions: */
/* no descriptor of ours from `from` (3 and up) upwards reaches the child; 0 or an errno */
int sk_spawn_close_inherited(posix_spawn_file_actions_t *fa, short *flags, int from);
/* the child starts a new session (or at least a new process group) */
int sk_spawn_new_group(posix_spawnattr_t *attr, short *flags);
/* posix_spawnp in directory cwd (NULL: ours); 0 or an errno. Without
 * addchdir the child goes through /bin/sh, which changes directory and
 * execs argv (resolved through the child's PATH). */
int sk_spawnp_in(pid_t *pid, const char *file, posix_spawn_file_actions_t *fa,
                 const posix_spawnattr_t *attr, char *const argv[], char *const envp[], const char *cwd);

#endif
