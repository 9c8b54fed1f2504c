/* Replays a fuzzer's committed corpus (seeds and every input that once
 * crashed it) without libFuzzer: linked with a harness spec/fuzz/fuzz_<name>.c,
 * it runs LLVMFuzzerTestOneInput on each file of FUZZ_CORPUS and prints a
 * TAP line per file. mk/fuzz.mk builds one per harness as a C test
 * (build/test/fuzz_<name>_replay_test), so `make test` and `make test-asan`
 * run every regression input; a crash fails the runner. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
    DIR *d = opendir(FUZZ_CORPUS);
    if (!d) {
        printf("not ok 1 - cannot open %s\n", FUZZ_CORPUS);
        return 1;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        names = realloc(names, (n + 1) * sizeof *names);
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, replay_cmp);
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", FUZZ_CORPUS, names[i]);
        FILE *f = fopen(path, "rb");
        uint8_t *buf = NULL;
        size_t len = 0;
        if (f) {
            fseek(f, 0, SEEK_END);
            long sz = ftell(f);
            fseek(f, 0, SEEK_SET);
            buf = malloc(sz > 0 ? (size_t)sz : 1);
            len = sz > 0 ? fread(buf, 1, (size_t)sz, f) : 0;
            fclose(f);
        }
        if (!f) {
            printf("not ok %zu - %s (unreadable)\n", i + 1, path);
            failed = 1;
        } else {
            fflush(stdout); /* a crash below still shows the lines before it */
            LLVMFuzzerTestOneInput(buf, len);
            printf("ok %zu - replay %s\n", i + 1, path);
        }
        free(buf);
        free(names[i]);
    }
    free(names);
    printf("1..%zu\n", n);
    return failed;
}
