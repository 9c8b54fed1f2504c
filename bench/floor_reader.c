/* Baseline for the "output capture" and "output streaming" rows: run
 * `/bin/sh -c CMD` (default `head -c 100M /dev/zero`) the way floor_spawn
 * does, read stdout and stderr to EOF through poll with a 64 KiB buffer
 * (libuv's read size), and reap. Without --keep the bytes are counted and
 * dropped (the streaming floor); with --keep they are appended to one
 * buffer that doubles as it grows (the capture floor: the output has to be
 * held somewhere). Peak RSS is this process's own (getrusage ru_maxrss).
 *
 * usage: floor_reader ROUNDS [--keep] [CMD]
 * prints one JSON line: {"bench":"floor_reader","rounds":R,"keep":K,
 *   "bytes":B,"median_ms":..,"min_ms":..,"maxrss_kb":..,"samples_ms":[..]} */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "floor.h"

typedef struct reader_sink {
    bool keep;
    char *data; /* owned; kept bytes when keep */
    size_t len, cap;
} reader_sink;

static int sink_append(reader_sink *k, const char *p, size_t n)
{
    if (k->keep && k->len + n > k->cap) {
        size_t cap = k->cap ? k->cap : 65536;
        while (cap < k->len + n)
            cap *= 2;
        char *d = realloc(k->data, cap);
        if (!d)
            return -1;
        k->data = d;
        k->cap = cap;
    }
    if (k->keep)
        memcpy(k->data + k->len, p, n);
    k->len += n;
    return 0;
}

/* One run: spawn, drain (stdout into the sink, stderr dropped), reap. */
static int reader_run(const char *script, char *const envp[], reader_sink *k)
{
    int out[2] = { -1, -1 }, err[2] = { -1, -1 };
    char *argv[] = { "/bin/sh", "-c", (char *)script, NULL };
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    pid_t pid;
    int rc = -1;

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
    int *owner[2] = { &out[0], &err[0] };
    int open_fds = 2;
    static char buf[65536];
    while (open_fds > 0) {
        if (poll(pf, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            goto reap;
        }
        for (int i = 0; i < 2; i++) {
            if (pf[i].fd < 0 || pf[i].revents == 0)
                continue;
            ssize_t n = read(pf[i].fd, buf, sizeof buf);
            if (n > 0) {
                if (i == 0 && sink_append(k, buf, (size_t)n) != 0)
                    goto reap;
                continue;
            }
            if (n < 0 && errno == EINTR)
                continue;
            close(pf[i].fd);
            *owner[i] = -1;
            pf[i].fd = -1;
            open_fds--;
        }
    }
    rc = 0;
reap:
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
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
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    int a = 2;
    bool keep = false;
    if (a < argc && strcmp(argv[a], "--keep") == 0) {
        keep = true;
        a++;
    }
    const char *script = a < argc ? argv[a] : "head -c 100M /dev/zero";
    if (rounds < 1) {
        fprintf(stderr, "usage: floor_reader ROUNDS [--keep] [CMD]\n");
        return 2;
    }
    char path_env[4096];
    snprintf(path_env, sizeof path_env, "PATH=%s",
             getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    char *envp[] = { path_env, NULL };
    double *s = malloc(sizeof *s * (size_t)rounds);
    size_t bytes = 0;
    if (!s)
        return 1;
    for (int i = 0; i < rounds; i++) {
        reader_sink k = { .keep = keep };
        double t0 = clock_ms();
        int rc = reader_run(script, envp, &k);
        s[i] = clock_ms() - t0;
        bytes = k.len;
        free(k.data); /* the buffer is released between rounds, as a result would be */
        if (rc != 0) {
            perror("floor_reader");
            free(s);
            return 1;
        }
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("{\"bench\":\"floor_reader\",\"rounds\":%d,\"keep\":%s,\"bytes\":%zu,\"maxrss_kb\":%ld,\"samples_ms\":[",
           rounds, keep ? "true" : "false", bytes, ru.ru_maxrss);
    for (int i = 0; i < rounds; i++)
        printf("%s%.3f", i ? "," : "", s[i]);
    qsort(s, (size_t)rounds, sizeof *s, cmp_double);
    printf("],\"median_ms\":%.3f,\"min_ms\":%.3f}\n", s[rounds / 2], s[0]);
    free(s);
    return 0;
}
