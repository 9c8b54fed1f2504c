/* What the baselines share: a monotonic clock, the PATH-only environment,
 * printing samples, and one exec done the way a careful C program would
 * run a command for sandkit's exec: posix_spawnp (glibc: clone with
 * CLONE_VFORK, no page-table copy) into a new session, stdin from
 * /dev/null, stdout and stderr on pipes read to EOF, then waitpid; for the
 * fan-out baselines, many such children read through one epoll set. Each
 * baseline stays one C file plus this header (which needs _GNU_SOURCE). */
#ifndef BENCH_FLOOR_H
#define BENCH_FLOOR_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static inline double clock_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static inline double clock_ms(void) { return clock_us() / 1e3; }

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The children's environment: PATH only, as sandkit passes it. */
typedef struct floor_env {
    char path[4096];
    char *envp[2];
} floor_env;

static inline char **floor_env_init(floor_env *e)
{
    snprintf(e->path, sizeof e->path, "PATH=%s", getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    e->envp[0] = e->path;
    e->envp[1] = NULL;
    return e->envp;
}

/* The end of the JSON line: "samples_ms":[..],"median_ms":..,"min_ms":..}
 * (sorts s). */
static inline void floor_print_samples_ms(double *s, int n)
{
    printf("\"samples_ms\":[");
    for (int i = 0; i < n; i++)
        printf("%s%.3f", i ? "," : "", s[i]);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    printf("],\"median_ms\":%.3f,\"min_ms\":%.3f}\n", s[n / 2], s[0]);
}

/* The same in microseconds, with the 90th percentile. */
static inline void floor_print_samples_us(double *s, int n)
{
    printf("\"samples_us\":[");
    for (int i = 0; i < n; i++)
        printf("%s%.1f", i ? "," : "", s[i]);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    printf("],\"median_us\":%.1f,\"p90_us\":%.1f,\"min_us\":%.1f}\n",
           s[n / 2], s[(n * 9) / 10 < n ? (n * 9) / 10 : n - 1], s[0]);
}

/* Starts argv (in dir unless NULL) into a new session, stdin from
 * /dev/null, stdout and stderr on fresh close-on-exec pipes whose read
 * ends go to rd. 0, or -1 with errno set and nothing left open. */
static inline int floor_spawn_piped(pid_t *pid, char *const argv[], char *const envp[], const char *dir,
                                    int rd[2])
{
    int p[2][2] = { { -1, -1 }, { -1, -1 } };
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;

    for (int s = 0; s < 2; s++)
        if (pipe2(p[s], O_CLOEXEC) < 0)
            goto fail;
    posix_spawn_file_actions_init(&fa);
    if (dir)
        posix_spawn_file_actions_addchdir_np(&fa, dir);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, p[0][1], 1);
    posix_spawn_file_actions_adddup2(&fa, p[1][1], 2);
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID);
    int rc = posix_spawnp(pid, argv[0], &fa, &at, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc != 0) {
        errno = rc;
        goto fail;
    }
    for (int s = 0; s < 2; s++) {
        close(p[s][1]);
        rd[s] = p[s][0];
    }
    return 0;
fail:
    rc = errno;
    for (int s = 0; s < 2; s++)
        for (int e = 0; e < 2; e++)
            if (p[s][e] >= 0)
                close(p[s][e]);
    errno = rc;
    return -1;
}

/* Where stdout goes when it is kept: room gives the place for the next
 * read (*cap bytes; NULL: failed), took the length read into it. */
typedef struct floor_sink {
    char *(*room)(void *ud, size_t *cap);
    void (*took)(void *ud, size_t n);
    void *ud;
} floor_sink;

/* Reads both pipes of floor_spawn_piped to EOF through poll: stdout in
 * place into out when there is one, else, like stderr, into scratch and
 * dropped. Closes both. 0, or -1 (poll or out failed). */
static inline int floor_drain(int rd[2], char *scratch, size_t scratch_len, const floor_sink *out)
{
    struct pollfd pf[2] = { { rd[0], POLLIN, 0 }, { rd[1], POLLIN, 0 } };
    int open_fds = 2, rc = -1;
    while (open_fds > 0) {
        if (poll(pf, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            goto out;
        }
        for (int i = 0; i < 2; i++) {
            if (pf[i].fd < 0 || pf[i].revents == 0)
                continue;
            char *at = scratch;
            size_t cap = scratch_len;
            if (i == 0 && out && !(at = out->room(out->ud, &cap)))
                goto out;
            ssize_t n = read(pf[i].fd, at, cap);
            if (n > 0) {
                if (i == 0 && out)
                    out->took(out->ud, (size_t)n);
                continue;
            }
            if (n < 0 && errno == EINTR)
                continue;
            close(pf[i].fd);
            pf[i].fd = -1;
            open_fds--;
        }
    }
    rc = 0;
out:
    for (int i = 0; i < 2; i++)
        if (pf[i].fd >= 0)
            close(pf[i].fd);
    rd[0] = rd[1] = -1;
    return rc;
}

static inline void floor_reap(pid_t pid, int *status)
{
    while (waitpid(pid, status, 0) < 0 && errno == EINTR)
        ;
}

/* One exec: spawn, drain both pipes, reap. 0 on success; *exit_status (if
 * not NULL) gets the exit code, or 128 + N for a signal. */
static inline int spawn_run_once(char *const argv[], char *const envp[], int *exit_status)
{
    int rd[2], status;
    pid_t pid;
    if (floor_spawn_piped(&pid, argv, envp, NULL, rd) != 0)
        return -1;
    char buf[65536]; /* libuv's read size */
    int rc = floor_drain(rd, buf, sizeof buf, NULL);
    floor_reap(pid, &status);
    if (rc == 0 && exit_status)
        *exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return rc;
}

/* ---- fan-out: many children, one epoll set ---- */

typedef struct fan_child {
    pid_t pid;
    int fd[2]; /* read ends: stdout, stderr; -1 once closed */
} fan_child;

static inline void fan_reset(fan_child *kids, int n)
{
    for (int i = 0; i < n; i++) {
        kids[i].pid = -1;
        kids[i].fd[0] = kids[i].fd[1] = -1;
    }
}

/* Starts kids[index] as floor_spawn_piped does; its read ends are made
 * non-blocking and go into ep as index * 2 + stream. 0, or -1 (pid -1 when
 * nothing was started; fds already taken stay in c for fan_reap). */
static inline int fan_spawn(fan_child *kids, int index, int ep, const char *dir, char *const argv[],
                            char *const envp[])
{
    fan_child *c = &kids[index];
    int rd[2];
    if (floor_spawn_piped(&c->pid, argv, envp, dir, rd) != 0) {
        c->pid = -1;
        return -1;
    }
    for (int s = 0; s < 2; s++) {
        c->fd[s] = rd[s];
        fcntl(c->fd[s], F_SETFL, fcntl(c->fd[s], F_GETFL) | O_NONBLOCK);
        struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t)index * 2 + (uint64_t)s };
        if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd[s], &ev) < 0)
            return -1;
    }
    return 0;
}

/* Reads every registered pipe to EOF (open_fds of them). Bytes read, or
 * -1 when epoll_wait fails. */
static inline long fan_drain(fan_child *kids, int ep, int open_fds)
{
    struct epoll_event evs[64];
    char buf[65536];
    long bytes = 0;
    while (open_fds > 0) {
        int k = epoll_wait(ep, evs, 64, -1);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        for (int e = 0; e < k; e++) {
            fan_child *c = &kids[evs[e].data.u64 / 2];
            int s = (int)(evs[e].data.u64 % 2);
            if (c->fd[s] < 0)
                continue;
            for (;;) {
                ssize_t r = read(c->fd[s], buf, sizeof buf);
                if (r > 0) {
                    bytes += r;
                    continue;
                }
                if (r < 0 && errno == EINTR)
                    continue;
                if (r < 0 && errno == EAGAIN)
                    break;
                /* Deregister before closing: close alone leaves the entry in
                 * the set while the kernel still holds the file, and a stale
                 * event would then name a slot already closed. */
                epoll_ctl(ep, EPOLL_CTL_DEL, c->fd[s], NULL);
                close(c->fd[s]);
                c->fd[s] = -1;
                open_fds--;
                break;
            }
        }
    }
    return bytes;
}

/* Closes what is still open and reaps every child started. */
/* Closes and reaps all; returns how many children did not exit 0. */
static inline int fan_reap(fan_child *kids, int n)
{
    int failed = 0;
    for (int i = 0; i < n; i++) {
        for (int s = 0; s < 2; s++)
            if (kids[i].fd[s] >= 0)
                close(kids[i].fd[s]);
        if (kids[i].pid > 0) {
            int status = 0;
            floor_reap(kids[i].pid, &status);
            failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
    }
    return failed;
}

#endif
