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
 *   "median_ms":..,"min_ms":..,"bytes":B,"samples_ms":[..]} */
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

typedef struct fan_child {
    pid_t pid;
    int fd[2]; /* read ends: stdout, stderr; -1 once closed */
} fan_child;

/* Starts one child; its read ends go into ep. 0 on success. */
static char **fan_argv; /* -- ARGV: run this instead of `echo i` */

static int fan_spawn(fan_child *c, int index, int ep, char *const envp[])
{
    int p[2][2] = { { -1, -1 }, { -1, -1 } };
    char script[32];
    snprintf(script, sizeof script, "echo %d", index);
    char *echo_argv[] = { "/bin/sh", "-c", script, NULL };
    char **argv = fan_argv ? fan_argv : echo_argv;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;

    for (int s = 0; s < 2; s++)
        if (pipe2(p[s], O_CLOEXEC) < 0)
            goto fail;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, p[0][1], 1);
    posix_spawn_file_actions_adddup2(&fa, p[1][1], 2);
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID);
    int rc = posix_spawnp(&c->pid, argv[0], &fa, &at, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc != 0)
        goto fail;
    for (int s = 0; s < 2; s++) {
        close(p[s][1]);
        c->fd[s] = p[s][0];
        fcntl(c->fd[s], F_SETFL, fcntl(c->fd[s], F_GETFL) | O_NONBLOCK);
        struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t)index * 2 + (uint64_t)s };
        if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd[s], &ev) < 0)
            return -1; /* fds now owned by c; the caller closes them */
    }
    return 0;
fail:
    for (int s = 0; s < 2; s++)
        for (int e = 0; e < 2; e++)
            if (p[s][e] >= 0)
                close(p[s][e]);
    return -1;
}

/* One round: spawn all, drain all, reap all. Returns bytes read, -1 on error. */
static long fan_round(fan_child *kids, int width, char *const envp[])
{
    long bytes = 0;
    int open_fds = 0, rc = 0;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        return -1;
    for (int i = 0; i < width; i++) {
        kids[i].pid = -1;
        kids[i].fd[0] = kids[i].fd[1] = -1;
    }
    for (int i = 0; i < width; i++) {
        if (fan_spawn(&kids[i], i, ep, envp) != 0) {
            rc = -1;
            break;
        }
        open_fds += 2;
    }
    struct epoll_event evs[64];
    char buf[65536];
    while (rc == 0 && open_fds > 0) {
        int n = epoll_wait(ep, evs, 64, -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            rc = -1;
            break;
        }
        for (int e = 0; e < n; e++) {
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
    for (int i = 0; i < width; i++) {
        for (int s = 0; s < 2; s++)
            if (kids[i].fd[s] >= 0)
                close(kids[i].fd[s]);
        if (kids[i].pid > 0)
            while (waitpid(kids[i].pid, NULL, 0) < 0 && errno == EINTR)
                ;
    }
    close(ep);
    return rc == 0 ? bytes : -1;
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
    char path_env[4096];
    snprintf(path_env, sizeof path_env, "PATH=%s",
             getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    char *envp[] = { path_env, NULL };
    fan_child *kids = calloc((size_t)width, sizeof *kids);
    double *s = malloc(sizeof *s * (size_t)rounds);
    long bytes = 0;
    if (!kids || !s)
        goto fail;
    for (int i = 0; i < warmup; i++)
        if (fan_round(kids, width, envp) < 0)
            goto fail;
    for (int i = 0; i < rounds; i++) {
        double t0 = clock_ms();
        bytes = fan_round(kids, width, envp);
        if (bytes < 0)
            goto fail;
        s[i] = clock_ms() - t0;
    }
    printf("{\"bench\":\"floor_fanout\",\"width\":%d,\"rounds\":%d,\"bytes\":%ld,\"samples_ms\":[",
           width, rounds, bytes);
    for (int i = 0; i < rounds; i++)
        printf("%s%.3f", i ? "," : "", s[i]);
    qsort(s, (size_t)rounds, sizeof *s, cmp_double);
    printf("],\"median_ms\":%.3f,\"min_ms\":%.3f}\n", s[rounds / 2], s[0]);
    free(kids);
    free(s);
    return 0;
fail:
    perror("floor_fanout");
    free(kids);
    free(s);
    return 1;
}
