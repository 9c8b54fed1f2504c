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

static int sink_append(void *ud, const char *p, size_t n)
{
    reader_sink *k = ud;
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
    char *argv[] = { "/bin/sh", "-c", (char *)script, NULL };
    int rd[2];
    pid_t pid;
    if (floor_spawn_piped(&pid, argv, envp, NULL, rd) != 0)
        return -1;
    int rc = floor_drain(rd, sink_append, k);
    floor_reap(pid, NULL);
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
    floor_env env;
    char **envp = floor_env_init(&env);
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
    printf("{\"bench\":\"floor_reader\",\"rounds\":%d,\"keep\":%s,\"bytes\":%zu,\"maxrss_kb\":%ld,",
           rounds, keep ? "true" : "false", bytes, ru.ru_maxrss);
    floor_print_samples_ms(s, rounds);
    free(s);
    return 0;
}
