/* Baseline for the "bwrap exec latency" row: the least a C program must do
 * to run the exact bubblewrap argv LocalSandbox builds for `exec("true")`
 * (the runner passes it on our command line, so both sides run the same
 * argv). posix_spawnp (resolves bwrap through PATH, like uv_spawn) into a new
 * session, stdin from /dev/null, stdout and stderr on pipes read to EOF,
 * then waitpid. Environment: PATH only, as sandkit passes it.
 *
 * usage: floor_bwrap N WARMUP -- ARGV...
 * prints one JSON line: {"bench":"floor_bwrap","n":N,"median_us":..,
 *   "p90_us":..,"min_us":..,"failures":F,"samples_us":[..]} */
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
    if (argc < 5 || strcmp(argv[3], "--") != 0 || atoi(argv[1]) < 1) {
        fprintf(stderr, "usage: floor_bwrap N WARMUP -- ARGV...\n");
        return 2;
    }
    int n = atoi(argv[1]), warmup = atoi(argv[2]), failures = 0, st = 0;
    char **cmd = argv + 4; /* argv is NULL-terminated, so cmd is too */
    floor_env env;
    char **envp = floor_env_init(&env);

    double *s = malloc(sizeof *s * (size_t)n);
    if (!s)
        return 1;
    for (int i = 0; i < warmup; i++)
        if (spawn_run_once(cmd, envp, &st) != 0)
            goto fail;
    for (int i = 0; i < n; i++) {
        double t0 = clock_us();
        if (spawn_run_once(cmd, envp, &st) != 0)
            goto fail;
        s[i] = clock_us() - t0;
        failures += st != 0;
    }
    printf("{\"bench\":\"floor_bwrap\",\"n\":%d,\"failures\":%d,", n, failures);
    floor_print_samples_us(s, n);
    free(s);
    return 0;
fail:
    perror("floor_bwrap: spawn");
    free(s);
    return 1;
}
