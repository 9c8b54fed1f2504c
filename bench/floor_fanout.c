/* Baseline for the "local fan-out" row: WIDTH execs of `/bin/sh -c 'echo i'`
 * started at once, every stdout/stderr pipe read through one epoll set until
 * all reach EOF, then every child reaped. Each child is spawned the way
 * floor_spawn does it (posix_spawn, new session, stdin /dev/null, PATH-only
 * environment); read ends are non-blocking and close-on-exec so no child holds
 * another's pipe open.
 *
 * usage: floor_fanout WIDTH ROUNDS [WARMUP [-- ARGV...]]
 * With ARGV, every child runs that command instead (the scale table's floor
 * for 1,000 bwrap sandboxes at once, given the argv sandkit ran).
 * prints one JSON line: {"bench":"floor_fanout","width":W,"rounds":R,
 *   "failures":F,"median_ms":..,"min_ms":..,"bytes":B,"samples_ms":[..]}
 * (failures: children of the measured rounds that did not exit 0) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "floor.h"

static char **fan_argv; /* -- ARGV: run this instead of `echo i` */
static int fan_failures; /* children that did not exit 0 */

/* One round: spawn all, drain all, reap all. Returns bytes read, -1 on error. */
static long fan_round(fan_child *kids, int width, char *const envp[])
{
    long bytes = -1;
    int started = 0;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        return -1;
    fan_reset(kids, width);
    for (; started < width; started++) {
        char script[32];
        snprintf(script, sizeof script, "echo %d", started);
        char *echo_argv[] = { "/bin/sh", "-c", script, NULL };
        if (fan_spawn(kids, started, ep, NULL, fan_argv ? fan_argv : echo_argv, envp) != 0)
            break;
    }
    if (started == width)
        bytes = fan_drain(kids, ep, 2 * width);
    fan_failures += fan_reap(kids, width);
    close(ep);
    return bytes;
}

int main(int argc, char **argv)
{
    int width = argc > 1 ? atoi(argv[1]) : 200;
    int rounds = argc > 2 ? atoi(argv[2]) : 10;
    int warmup = argc > 3 ? atoi(argv[3]) : 1;
    if (argc > 5 && strcmp(argv[4], "--") == 0)
        fan_argv = argv + 5;
    if (width < 1 || rounds < 1 || (argc > 4 && !fan_argv)) {
        fprintf(stderr, "usage: floor_fanout WIDTH ROUNDS [WARMUP [-- ARGV...]]\n");
        return 2;
    }
    floor_env env;
    char **envp = floor_env_init(&env);
    fan_child *kids = calloc((size_t)width, sizeof *kids);
    double *s = malloc(sizeof *s * (size_t)rounds);
    long bytes = 0;
    if (!kids || !s)
        goto fail;
    for (int i = 0; i < warmup; i++)
        if (fan_round(kids, width, envp) < 0)
            goto fail;
    fan_failures = 0; /* the warm-up's are not reported */
    for (int i = 0; i < rounds; i++) {
        double t0 = clock_ms();
        bytes = fan_round(kids, width, envp);
        if (bytes < 0)
            goto fail;
        s[i] = clock_ms() - t0;
    }
    printf("{\"bench\":\"floor_fanout\",\"width\":%d,\"rounds\":%d,\"failures\":%d,\"bytes\":%ld,", width,
           rounds, fan_failures, bytes);
    floor_print_samples_ms(s, rounds);
    free(kids);
    free(s);
    return 0;
fail:
    perror("floor_fanout");
    free(kids);
    free(s);
    return 1;
}
