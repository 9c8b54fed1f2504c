/* Baseline for the "local exec latency" row: the least a C program must do
 * to run `/bin/sh -c true` the way an exec does. posix_spawn (glibc: clone
 * with CLONE_VFORK, no page-table copy) into a new session (like sandkit's
 * process groups), stdin from /dev/null, stdout and stderr on pipes read to
 * EOF, then waitpid. Environment: PATH only, as sandkit passes it.
 *
 * usage: floor_spawn N [WARMUP]
 * prints one JSON line: {"bench":"floor_spawn","n":N,"median_us":..,
 *   "p90_us":..,"min_us":..,"samples_us":[..]} */
#define _GNU_SOURCE
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

static double clock_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One exec: spawn, drain both pipes, reap. 0 on success. */
static int spawn_run_once(char *const argv[], char *const envp[])
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
    errno = posix_spawn(&pid, argv[0], &fa, &at, argv, envp);
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

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 500;
    int warmup = argc > 2 ? atoi(argv[2]) : 5;
    if (n < 1) {
        fprintf(stderr, "usage: floor_spawn N [WARMUP]\n");
        return 2;
    }
    char path_env[4096];
    snprintf(path_env, sizeof path_env, "PATH=%s",
             getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    char *envp[] = { path_env, NULL };
    char *cmd[] = { "/bin/sh", "-c", "true", NULL };

    double *s = malloc(sizeof *s * (size_t)n);
    if (!s)
        return 1;
    for (int i = 0; i < warmup; i++)
        if (spawn_run_once(cmd, envp) != 0)
            goto fail;
    for (int i = 0; i < n; i++) {
        double t0 = clock_us();
        if (spawn_run_once(cmd, envp) != 0)
            goto fail;
        s[i] = clock_us() - t0;
    }
    printf("{\"bench\":\"floor_spawn\",\"n\":%d,", n);
    printf("\"samples_us\":[");
    for (int i = 0; i < n; i++)
        printf("%s%.1f", i ? "," : "", s[i]);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    printf("],\"median_us\":%.1f,\"p90_us\":%.1f,\"min_us\":%.1f}\n",
           s[n / 2], s[(n * 9) / 10 < n ? (n * 9) / 10 : n - 1], s[0]);
    free(s);
    return 0;
fail:
    perror("floor_spawn: spawn");
    free(s);
    return 1;
}
