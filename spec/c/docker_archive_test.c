/* What DockerSandbox's files read and write on the archive endpoints
 * (docker_archive.h, docs/protocols/docker.md §9): the
 * X-Docker-Container-Path-Stat header (base64 JSON, Go's FileMode type
 * bits, an RFC 3339 mtime with an offset), and the tar of one file written
 * and read back through libarchive, with max_bytes checked from the
 * entry's header and anything but a regular file refused. */
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "providers/docker/docker_archive.h"

#include "tap.h"

/* The header a daemon sends for json. */
static int stat_of(const char *json, dk_path_stat *st)
{
    unsigned char b64[512];
    int n = EVP_EncodeBlock(b64, (const unsigned char *)json, (int)strlen(json));
    return sk_dk_path_stat_parse((const char *)b64, (size_t)n, st);
}

static void stat_is(const char *json, char type, long long size, long long mtime_ms)
{
    dk_path_stat st = { 0 };
    int rc = stat_of(json, &st);
    tap(rc == 0 && st.type == type && st.size == size && st.mtime_ms == mtime_ms,
        "stat %s -> %c %lld %lld (got rc %d, %c %lld %lld)", json, type, size, mtime_ms, rc, st.type ? st.type : '?',
        (long long)st.size, (long long)st.mtime_ms);
}

static void stat_refused(const char *json)
{
    dk_path_stat st;
    tap(stat_of(json, &st) == -1, "stat %s is refused", json);
}

static int collect(void *ud, const char *data, size_t len)
{
    return sk_buf_append(ud, data, len) != 0;
}

static void tar_checks(void)
{
    char data[3000];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (char)(i * 7);
    /* a name ustar cannot hold (over 100 bytes, not ASCII): a pax record */
    char name[200];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = 0;
    memcpy(name, "caf\xc3\xa9", 5);
    sk_buf tar = { 0 }, got = { 0 };
    const char *why = NULL;
    tap(sk_dk_tar_write_file(&tar, name, data, sizeof data, 0640, 1700000000, &why) == 0, "a tar of one file written");
    tap(tar.len % 512 == 0 && tar.len >= 512 + sizeof data, "its length is whole blocks (%zu)", tar.len);
    char msg[128] = "";
    int r = sk_dk_tar_read_file(tar.data, tar.len, sizeof data, collect, &got, msg, sizeof msg);
    tap(r == DK_TAR_OK && got.len == sizeof data && memcmp(got.data, data, sizeof data) == 0,
        "read back byte for byte at max_bytes = its size (r %d, %zu bytes, %s)", r, got.len, msg);
    sk_buf_free(&got);
    r = sk_dk_tar_read_file(tar.data, tar.len, sizeof data - 1, collect, &got, msg, sizeof msg);
    tap(r == DK_TAR_TOO_LARGE && got.len == 0, "one byte over max_bytes: too large before a byte is read (r %d)", r);
    sk_buf_free(&got);
    r = sk_dk_tar_read_file(tar.data, tar.len - 1024 - 600, sizeof data, collect, &got, msg, sizeof msg);
    tap(r == DK_TAR_BAD && got.len < sizeof data, "a tar cut inside the entry: bad (r %d: %s)", r, msg);
    sk_buf_free(&got);
    r = sk_dk_tar_read_file("", 0, 10, collect, &got, msg, sizeof msg);
    tap(r == DK_TAR_BAD && msg[0], "an empty body: bad (%s)", msg);
    char junk[2048];
    memset(junk, 'A', sizeof junk);
    r = sk_dk_tar_read_file(junk, sizeof junk, 10, collect, &got, msg, sizeof msg);
    tap(r == DK_TAR_BAD, "a body that is no tar: bad (%s)", msg);
    /* a directory entry: the same tar with its type flag changed (and the
     * header's checksum made again) */
    sk_buf_free(&tar);
    tap(sk_dk_tar_write_file(&tar, "d", "", 0, 0755, 0, &why) == 0, "a tar of an empty file written");
    unsigned char *h = (unsigned char *)tar.data;
    h[156] = '5';
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++)
        sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    msg[0] = 0;
    r = sk_dk_tar_read_file(tar.data, tar.len, 10, collect, &got, msg, sizeof msg);
    tap(r == DK_TAR_NOT_REGULAR && got.len == 0, "a directory entry: not regular (r %d: %s)", r, msg);
    sk_buf_free(&tar);
    sk_buf_free(&got);
}

int main(void)
{
    stat_is("{\"name\":\"f\",\"size\":10,\"mode\":420,\"mtime\":\"2026-01-02T03:04:05Z\",\"linkTarget\":\"\"}", 'f',
            10, 1767323045000LL);
    stat_is("{\"name\":\"d\",\"size\":4096,\"mode\":2147484141,\"mtime\":\"2026-01-02T03:04:05.123456789+01:30\"}", 'd',
            4096, 1767323045123LL - 90 * 60000LL);
    stat_is("{\"size\":4,\"mode\":134218239,\"mtime\":\"1970-01-01T00:00:00Z\"}", 'l', 4, 0);
    stat_is("{\"size\":0,\"mode\":33554852}", 'o', 0, 0);                  /* a FIFO, no mtime */
    stat_is("{\"size\":0,\"mode\":69206400,\"mtime\":\"yesterday\"}", 'o', 0, 0); /* a device; mtime unreadable */
    stat_refused("{\"size\":-1,\"mode\":420}");
    stat_refused("{\"size\":1,\"mode\":4294967296}");
    stat_refused("{\"size\":\"1\",\"mode\":420}");
    stat_refused("[1,2]");
    dk_path_stat st;
    tap(sk_dk_path_stat_parse("!!not base64!!", 14, &st) == -1, "a header that is not base64 is refused");
    tar_checks();
    printf("1..%d\n", tap_n);
    return tap_failed != 0;
}
