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

#include "floor.h"

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 500;
    int warmup = argc > 2 ? atoi(argv[2]) : 5;
    if (n < 1) {
        fprintf(stderr, "usage: floor_spawn N [WARMUP]\n");
        return 2;
    }
    floor_env env;
    char **envp = floor_env_init(&env);
    char *cmd[] = { "/bin/sh", "-c", "true", NULL };

    double *s = malloc(sizeof *s * (size_t)n);
    if (!s)
        return 1;
    for (int i = 0; i < warmup; i++)
        if (spawn_run_once(cmd, envp, NULL) != 0)
            goto fail;
    for (int i = 0; i < n; i++) {
        double t0 = clock_us();
        if (spawn_run_once(cmd, envp, NULL) != 0)
            goto fail;
        s[i] = clock_us() - t0;
    }
    printf("{\"bench\":\"floor_spawn\",\"n\":%d,", n);
    floor_print_samples_us(s, n);
    free(s);
    return 0;
fail:
    perror("floor_spawn: spawn");
    free(s);
    return 1;
}
