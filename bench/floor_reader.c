/* Baseline for the "output capture" and "output streaming" rows: run
 * `/bin/sh -c CMD` (default `head -c 100M /dev/zero`) the way floor_spawn
 * does, read stdout and stderr to EOF through poll, and reap. Without
 * --keep the bytes are counted and dropped (the streaming floor); with
 * --keep they are held in memory (the capture floor: the output has to be
 * held somewhere). Peak RSS is this process's own (getrusage ru_maxrss).
 *
 * The fastest reader we found (bench/README.md §"The capture floor"):
 * - the stdout pipe raised to 1 MiB (F_SETPIPE_SZ; failure is harmless):
 *   fewer wake-ups than the 64 KiB default;
 * - with --keep, reads land straight in the kept buffer (no bounce copy),
 *   as large as the room left;
 * - the kept buffer is an anonymous mapping aligned to 2 MiB with
 *   MADV_HUGEPAGE, grown by doubling with mremap (no copy): 100 MiB costs
 *   50 page faults instead of 25,600, which was most of the reader's CPU.
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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "floor.h"

enum { PIPE_SIZE = 1 << 20, HUGE = 2 << 20, FIRST_MAP = 4 << 20 };

typedef struct reader_sink {
    bool keep;
    char *data; /* owned mapping of cap bytes when keep */
    size_t len, cap;
} reader_sink;

/* Room for PIPE_SIZE more bytes: the mapping doubles, in place when the
 * addresses after it are free, else moved by mremap to a fresh 2 MiB
 * aligned range (page tables move, bytes are not copied). */
static int sink_reserve(reader_sink *k)
{
    if (k->cap - k->len >= PIPE_SIZE)
        return 0;
    size_t cap = k->cap ? k->cap * 2 : FIRST_MAP;
    if (k->data && mremap(k->data, k->cap, cap, 0) != MAP_FAILED) {
        k->cap = cap;
        return 0;
    }
    char *raw = mmap(NULL, cap + HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return -1;
    char *at = (char *)(((uintptr_t)raw + HUGE - 1) & ~(uintptr_t)(HUGE - 1));
    if (at > raw)
        munmap(raw, (size_t)(at - raw));
    munmap(at + cap, (size_t)(raw + HUGE - at));
    madvise(at, cap, MADV_HUGEPAGE);
    if (k->data && mremap(k->data, k->cap, k->cap, MREMAP_MAYMOVE | MREMAP_FIXED, at) == MAP_FAILED) {
        munmap(at, cap);
        return -1;
    }
    k->data = at;
    k->cap = cap;
    return 0;
}

/* Kept: straight into the mapping. Counted only: into a scratch buffer
 * of the pipe's size. */
static char *sink_room(void *ud, size_t *cap)
{
    static char scratch[PIPE_SIZE];
    reader_sink *k = ud;
    if (!k->keep) {
        *cap = sizeof scratch;
        return scratch;
    }
    if (sink_reserve(k) != 0)
        return NULL;
    *cap = k->cap - k->len;
    return k->data + k->len;
}

static void sink_took(void *ud, size_t n) { ((reader_sink *)ud)->len += n; }

/* One run: spawn, drain, reap. */
static int reader_run(const char *script, char *const envp[], reader_sink *k)
{
    char *argv[] = { "/bin/sh", "-c", (char *)script, NULL };
    int rd[2];
    pid_t pid;
    if (floor_spawn_piped(&pid, argv, envp, NULL, rd) != 0)
        return -1;
    (void)fcntl(rd[0], F_SETPIPE_SZ, PIPE_SIZE);
    char stderr_buf[65536];
    floor_sink out = { sink_room, sink_took, k };
    int rc = floor_drain(rd, stderr_buf, sizeof stderr_buf, &out);
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
        if (k.data)
            munmap(k.data, k.cap); /* released between rounds, as a result would be */
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
