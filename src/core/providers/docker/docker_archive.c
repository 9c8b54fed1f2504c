/* Tar and the path-stat header of the archive endpoints, for DockerSandbox's
 * files (docker_fs.c); see docker_archive.h and docs/protocols/docker.md §9. */
#include "docker_archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../grpc_frame.h"

/* ---- the stat header ---- */

/* "2024-05-01T10:20:30.123456789Z" or with an offset, as ms since 1970. */
static int64_t rfc3339_ms(const char *s)
{
    int y, mo, d, h, mi, sec, n = 0;
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6)
        return 0;
    const char *p = s + n;
    int64_t ms = 0;
    if (*p == '.') {
        int digits = 0;
        for (p++; *p >= '0' && *p <= '9'; p++)
            if (digits++ < 3)
                ms = ms * 10 + (*p - '0');
        for (; digits < 3; digits++)
            ms *= 10;
    }
    int off = 0;
    if (*p == '+' || *p == '-') {
        int oh = 0, om = 0;
        if (sscanf(p + 1, "%2d:%2d", &oh, &om) != 2)
            return 0;
        off = (*p == '-' ? -1 : 1) * (oh * 60 + om);
    } else if (*p != 'Z') {
        return 0;
    }
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 || y < 1)
        return 0;
    /* days from civil (Howard Hinnant's algorithm): no timegm, no TZ */
    int64_t yy = mo <= 2 ? y - 1 : y;
    int64_t era = (yy >= 0 ? yy : yy - 399) / 400;
    int64_t yoe = yy - era * 400;
    int64_t doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    int64_t days = era * 146097 + doe - 719468;
    int64_t secs = days * 86400 + h * 3600 + mi * 60 + sec - (int64_t)off * 60;
    return secs * 1000 + ms;
}

/* Go's os.FileMode type bits (io/fs). */
#define GO_MODE_DIR (1u << 31)
#define GO_MODE_SYMLINK (1u << 27)
#define GO_MODE_TYPE ((1u << 31) | (1u << 27) | (1u << 26) | (1u << 25) | (1u << 24) | (1u << 21) | (1u << 19))

int sk_dk_path_stat_parse(const char *b64, size_t len, dk_path_stat *out)
{
    sk_buf raw = { 0 };
    if (!b64 || sk_grpc_base64_decode(b64, len, &raw) != 0 || raw.len == 0) {
        sk_buf_free(&raw);
        return -1;
    }
    json_t *doc = json_loadb(raw.data, raw.len, 0, NULL);
    sk_buf_free(&raw);
    json_t *mode = json_object_get(doc, "mode"), *size = json_object_get(doc, "size");
    if (!json_is_integer(mode) || !json_is_integer(size) || json_integer_value(size) < 0 ||
        json_integer_value(mode) < 0 || json_integer_value(mode) > UINT32_MAX) {
        json_decref(doc);
        return -1;
    }
    uint32_t m = (uint32_t)json_integer_value(mode);
    out->type = (m & GO_MODE_TYPE) == 0 ? 'f' : (m & GO_MODE_SYMLINK) ? 'l' : (m & GO_MODE_DIR) ? 'd' : 'o';
    out->size = json_integer_value(size);
    out->mtime_ms = rfc3339_ms(json_string_value(json_object_get(doc, "mtime")));
    json_decref(doc);
    return 0;
}

/* ---- tar, through libarchive ---- */

int sk_dk_tar_read_file(const void *tar, size_t len, size_t max_bytes,
                        int (*sink)(void *ud, const char *data, size_t len), void *ud, char *why,
                        size_t why_size)
{
    struct archive *a = archive_read_new();
    if (!a) {
        snprintf(why, why_size, "out of memory");
        return DK_TAR_BAD;
    }
    archive_read_support_format_tar(a);
    struct archive_entry *e;
    int rc = DK_TAR_BAD;
    /* a warning (a name the locale cannot show) is no failure: the name is
     * not used */
    if (archive_read_open_memory(a, tar, len) != ARCHIVE_OK || archive_read_next_header(a, &e) < ARCHIVE_WARN) {
        snprintf(why, why_size, "%s", archive_error_string(a) ? archive_error_string(a) : "no entry");
        goto out;
    }
    if (archive_entry_filetype(e) != AE_IFREG || archive_entry_hardlink(e)) {
        rc = DK_TAR_NOT_REGULAR;
        goto out;
    }
    if (!archive_entry_size_is_set(e) || archive_entry_size(e) < 0 ||
        (uint64_t)archive_entry_size(e) > max_bytes) {
        rc = archive_entry_size_is_set(e) && archive_entry_size(e) >= 0 ? DK_TAR_TOO_LARGE : DK_TAR_BAD;
        if (rc == DK_TAR_BAD)
            snprintf(why, why_size, "entry without a size");
        goto out;
    }
    int64_t want = archive_entry_size(e), got = 0;
    for (;;) {
        const void *buf;
        size_t n;
        la_int64_t at;
        int r = archive_read_data_block(a, &buf, &n, &at);
        if (r == ARCHIVE_EOF)
            break;
        if (r != ARCHIVE_OK || at != got || n > (uint64_t)(want - got)) {
            snprintf(why, why_size, "%s", r != ARCHIVE_OK && archive_error_string(a) ? archive_error_string(a)
                                                                                    : "entry data out of order");
            goto out;
        }
        if (n && sink(ud, buf, n) != 0) {
            snprintf(why, why_size, "stopped");
            goto out;
        }
        got += (int64_t)n;
    }
    if (got != want) {
        snprintf(why, why_size, "entry of %lld bytes ended after %lld", (long long)want, (long long)got);
        goto out;
    }
    rc = DK_TAR_OK;
out:
    archive_read_free(a);
    return rc;
}

static la_ssize_t tar_out(struct archive *a, void *ud, const void *buf, size_t n)
{
    if (sk_buf_append(ud, buf, n) != 0) {
        archive_set_error(a, ENOMEM, "out of memory");
        return -1;
    }
    return (la_ssize_t)n;
}

int sk_dk_tar_write_file(sk_buf *out, const char *name, const char *data, size_t len, unsigned mode, time_t mtime,
                         const char **why)
{
    struct archive *a = archive_write_new();
    struct archive_entry *e = archive_entry_new();
    int rc = -1;
    *why = "out of memory";
    if (!a || !e)
        goto out;
    /* pax only where ustar cannot say it (a long or non-ASCII name); no
     * blocking: the body is the tar's own length */
    if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK || archive_write_set_bytes_per_block(a, 0) != ARCHIVE_OK ||
        archive_write_open2(a, out, NULL, tar_out, NULL, NULL) != ARCHIVE_OK)
        goto fail;
    archive_entry_copy_pathname(e, name);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, mode & 07777);
    archive_entry_set_size(e, (la_int64_t)len);
    archive_entry_set_mtime(e, mtime, 0);
    if (archive_write_header(a, e) < ARCHIVE_WARN)
        goto fail;
    for (size_t off = 0; off < len;) {
        la_ssize_t n = archive_write_data(a, data + off, len - off);
        if (n <= 0)
            goto fail;
        off += (size_t)n;
    }
    if (archive_write_close(a) != ARCHIVE_OK)
        goto fail;
    rc = 0;
    goto out;
fail:
    *why = "cannot write the tar";
out:
    if (e)
        archive_entry_free(e);
    if (a)
        archive_write_free(a);
    return rc;
}
