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

typedef struct fleet_member {
    char dir[4096];
    pid_t pid;
    int fd[2]; /* read ends: stdout, stderr; -1 once closed */
} fleet_member;

/* Starts `sh -c true` in m->dir; its read ends go into ep. */
static int fleet_spawn(fleet_member *m, int index, int ep, char *const envp[])
{
    int p[2][2] = { { -1, -1 }, { -1, -1 } };
    char *argv[] = { "/bin/sh", "-c", "true", NULL };
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;

    for (int s = 0; s < 2; s++)
        if (pipe2(p[s], O_CLOEXEC) < 0)
            goto fail;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addchdir_np(&fa, m->dir);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, p[0][1], 1);
    posix_spawn_file_actions_adddup2(&fa, p[1][1], 2);
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID);
    int rc = posix_spawn(&m->pid, argv[0], &fa, &at, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc != 0)
        goto fail;
    for (int s = 0; s < 2; s++) {
        close(p[s][1]);
        m->fd[s] = p[s][0];
        fcntl(m->fd[s], F_SETFL, fcntl(m->fd[s], F_GETFL) | O_NONBLOCK);
        struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t)index * 2 + (uint64_t)s };
        if (epoll_ctl(ep, EPOLL_CTL_ADD, m->fd[s], &ev) < 0)
            return -1; /* fds now owned by m; the caller closes them */
    }
    return 0;
fail:
    m->pid = -1;
    for (int s = 0; s < 2; s++)
        for (int e = 0; e < 2; e++)
            if (p[s][e] >= 0)
                close(p[s][e]);
    return -1;
}

static int fleet_round(fleet_member *ms, int n, int dirs, const char *base, int round, char *const envp[])
{
    int rc = 0, open_fds = 0, made = 0;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        ms[i].pid = -1;
        ms[i].fd[0] = ms[i].fd[1] = -1;
    }
    for (; made < dirs; made++) {
        snprintf(ms[made].dir, sizeof ms[made].dir, "%s/floor-%d-%d", base, round, made);
        if (mkdir(ms[made].dir, 0755) != 0) {
            rc = -1;
            goto cleanup;
        }
    }
    for (int i = dirs; i < n; i++)
        memcpy(ms[i].dir, ms[i % dirs].dir, sizeof ms[i].dir);
    for (int i = 0; i < n; i++) {
        if (fleet_spawn(&ms[i], i, ep, envp) != 0) {
            rc = -1;
            goto cleanup;
        }
        open_fds += 2;
    }
    struct epoll_event evs[64];
    char buf[65536];
    while (open_fds > 0) {
        int k = epoll_wait(ep, evs, 64, -1);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            rc = -1;
            goto cleanup;
        }
        for (int e = 0; e < k; e++) {
            fleet_member *m = &ms[evs[e].data.u64 / 2];
            int s = (int)(evs[e].data.u64 % 2);
            if (m->fd[s] < 0)
                continue;
            for (;;) {
                ssize_t r = read(m->fd[s], buf, sizeof buf);
                if (r > 0 || (r < 0 && errno == EINTR))
                    continue;
                if (r < 0 && errno == EAGAIN)
                    break;
                /* Deregister first: see floor_fanout.c. */
                epoll_ctl(ep, EPOLL_CTL_DEL, m->fd[s], NULL);
                close(m->fd[s]);
                m->fd[s] = -1;
                open_fds--;
                break;
            }
        }
    }
cleanup:
    for (int i = 0; i < n; i++) {
        for (int s = 0; s < 2; s++)
            if (ms[i].fd[s] >= 0)
                close(ms[i].fd[s]);
        if (ms[i].pid > 0)
            while (waitpid(ms[i].pid, NULL, 0) < 0 && errno == EINTR)
                ;
    }
    for (int i = 0; i < made; i++)
        if (rmdir(ms[i].dir) != 0)
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
    char path_env[4096];
    snprintf(path_env, sizeof path_env, "PATH=%s",
             getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    char *envp[] = { path_env, NULL };
    fleet_member *ms = calloc((size_t)n, sizeof *ms);
    double *s = malloc(sizeof *s * (size_t)rounds);
    if (!ms || !s)
        goto fail;
    for (int i = 0; i < warmup; i++)
        if (fleet_round(ms, n, dirs, base, -1 - i, envp) != 0)
            goto fail;
    for (int i = 0; i < rounds; i++) {
        double t0 = clock_ms();
        if (fleet_round(ms, n, dirs, base, i, envp) != 0)
            goto fail;
        s[i] = clock_ms() - t0;
    }
    printf("{\"bench\":\"floor_fleet\",\"n\":%d,\"dirs\":%d,\"rounds\":%d,\"samples_ms\":[", n, dirs, rounds);
    for (int i = 0; i < rounds; i++)
        printf("%s%.3f", i ? "," : "", s[i]);
    qsort(s, (size_t)rounds, sizeof *s, cmp_double);
    printf("],\"median_ms\":%.3f,\"min_ms\":%.3f}\n", s[rounds / 2], s[0]);
    free(ms);
    free(s);
    return 0;
fail:
    perror("floor_fleet");
    free(ms);
    free(s);
    return 1;
}
