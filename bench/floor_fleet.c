/* Baseline for the "fleet" row: what a fleet of N local sandboxes must at
 * least do to run one command each. Per round: create DIRS working
 * directories under BASEDIR (default N; the runner passes as many as the
 * sandkit fleet really used), start N `/bin/sh -c true` at once, member i in
 * directory i % DIRS (posix_spawn with a chdir action, new session, stdin
 * /dev/null, stdout/stderr pipes read through one epoll set to EOF), reap
 * every child, remove the directories.
 *
 * usage: floor_fleet N ROUNDS BASEDIR [WARMUP [DIRS]]
 * prints one JSON line: {"bench":"floor_fleet","n":N,"rounds":R,
 *   "median_ms":..,"min_ms":..,"samples_ms":[..]} */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "floor.h"

typedef char fleet_dir[4096];

static int fleet_round(fan_child *kids, fleet_dir *dir, int n, int dirs, const char *base, int round,
                       char *const envp[])
{
    char *argv[] = { "/bin/sh", "-c", "true", NULL };
    int rc = -1, made = 0;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        return -1;
    fan_reset(kids, n);
    for (; made < dirs; made++) {
        snprintf(dir[made], sizeof dir[made], "%s/floor-%d-%d", base, round, made);
        if (mkdir(dir[made], 0755) != 0)
            goto cleanup;
    }
    /* member i in directory i % DIRS */
    for (int i = 0; i < n; i++)
        if (fan_spawn(kids, i, ep, dir[i % dirs], argv, envp) != 0)
            goto cleanup;
    if (fan_drain(kids, ep, 2 * n) >= 0)
        rc = 0;
cleanup:
    fan_reap(kids, n);
    for (int i = 0; i < made; i++)
        if (rmdir(dir[i]) != 0)
            rc = -1;
    close(ep);
    return rc;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 0, rounds = argc > 2 ? atoi(argv[2]) : 0;
    int warmup = argc > 4 ? atoi(argv[4]) : 1;
    int dirs = argc > 5 ? atoi(argv[5]) : n;
    if (argc < 4 || n < 1 || rounds < 1 || dirs < 1 || dirs > n) {
        fprintf(stderr, "usage: floor_fleet N ROUNDS BASEDIR [WARMUP [DIRS]]\n");
        return 2;
    }
    const char *base = argv[3];
    floor_env env;
    char **envp = floor_env_init(&env);
    fan_child *kids = calloc((size_t)n, sizeof *kids);
    fleet_dir *dir = calloc((size_t)dirs, sizeof *dir);
    double *s = malloc(sizeof *s * (size_t)rounds);
    if (!kids || !dir || !s)
        goto fail;
    for (int i = 0; i < warmup; i++)
        if (fleet_round(kids, dir, n, dirs, base, -1 - i, envp) != 0)
            goto fail;
    for (int i = 0; i < rounds; i++) {
        double t0 = clock_ms();
        if (fleet_round(kids, dir, n, dirs, base, i, envp) != 0)
            goto fail;
        s[i] = clock_ms() - t0;
    }
    printf("{\"bench\":\"floor_fleet\",\"n\":%d,\"dirs\":%d,\"rounds\":%d,", n, dirs, rounds);
    floor_print_samples_ms(s, rounds);
    free(kids);
    free(dir);
    free(s);
    return 0;
fail:
    perror("floor_fleet");
    free(kids);
    free(dir);
    free(s);
    return 1;
}
