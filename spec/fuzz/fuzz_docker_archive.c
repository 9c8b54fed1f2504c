/* libFuzzer target: what DockerSandbox's sb.fs reads from the daemon
 * (src/core/providers/docker/docker_archive.c): the tar of a GET, read
 * with libarchive, and the X-Docker-Container-Path-Stat header. Properties
 * checked beyond "no crash, no leak, no over-read":
 *  - the bytes delivered never exceed max_bytes nor the input;
 *  - a tar written by sk_dk_tar_write_file of the bytes delivered reads
 *    back to the same bytes (writer and reader agree);
 *  - the stat header parser accepts or refuses without reading past it.
 * Build: make fuzz FUZZERS=docker_archive (mk/fuzz.mk). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "providers/docker/docker_archive.h"

static int fuzz_sink(void *ud, const char *data, size_t len)
{
    return sk_buf_append(ud, data, len) != 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* the first byte picks max_bytes */
    size_t max = size ? (size_t)data[0] * 64 : 0;
    sk_buf got = { 0 };
    char why[128];
    int r = sk_dk_tar_read_file(data, size, max, fuzz_sink, &got, why, sizeof why);
    if (got.len > max || got.len > size)
        abort();
    if (r == DK_TAR_OK) {
        sk_buf tar = { 0 }, back = { 0 };
        const char *werr;
        if (sk_dk_tar_write_file(&tar, "f", got.data ? got.data : "", got.len, 0644, 0, &werr) == 0) {
            if (sk_dk_tar_read_file(tar.data, tar.len, got.len, fuzz_sink, &back, why, sizeof why) != DK_TAR_OK ||
                back.len != got.len || (got.len && memcmp(back.data, got.data, got.len) != 0))
                abort();
        }
        sk_buf_free(&tar);
        sk_buf_free(&back);
    }
    sk_buf_free(&got);
    /* the same bytes as a stat header (not NUL-terminated: a copy is) */
    char *h = malloc(size + 1);
    if (h) {
        memcpy(h, data, size);
        h[size] = 0;
        dk_path_stat st;
        if (sk_dk_path_stat_parse(h, size, &st) == 0 && st.size < 0)
            abort();
        free(h);
    }
    return 0;
}
