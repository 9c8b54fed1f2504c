/* What the baselines share: a monotonic clock, sorting samples, and one
 * exec done the way a careful C program would run a command for sandkit's
 * exec: posix_spawnp (glibc: clone with CLONE_VFORK, no page-table copy)
 * into a new session, stdin from /dev/null, stdout and stderr on pipes read
 * to EOF, then waitpid. Each baseline stays one C file plus this header. */
#ifndef BENCH_FLOOR_H
#define BENCH_FLOOR_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* One exec: spawn, drain both pipes, reap. 0 on success; *exit_status (if
 * not NULL) gets the exit code, or 128 + N for a signal. */
static inline int spawn_run_once(char *const argv[], char *const envp[], int *exit_status)
{
    int out[2] = { -1, -1 }, err[2] = { -1, -1 };
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    pid_t pid;
    int rc = -1, status;

    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)
        goto done;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID);
    errno = posix_spawnp(&pid, argv[0], &fa, &at, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (errno != 0)
        goto done;
    close(out[1]);
    close(err[1]);
    out[1] = err[1] = -1;

    struct pollfd pf[2] = { { out[0], POLLIN, 0 }, { err[0], POLLIN, 0 } };
    int open_fds = 2;
    char buf[65536];
    while (open_fds > 0) {
        if (poll(pf, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            goto done;
        }
        for (int i = 0; i < 2; i++) {
            if (pf[i].fd < 0 || pf[i].revents == 0)
                continue;
            ssize_t n = read(pf[i].fd, buf, sizeof buf);
            if (n <= 0 && !(n < 0 && errno == EINTR)) {
                close(pf[i].fd);
                if (i == 0)
                    out[0] = -1;
                else
                    err[0] = -1;
                pf[i].fd = -1;
                open_fds--;
            }
        }
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (exit_status)
        *exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    rc = 0;
done:
    for (int i = 0; i < 2; i++) {
        if (out[i] >= 0)
            close(out[i]);
        if (err[i] >= 0)
            close(err[i]);
    }
    return rc;
}

#endif
