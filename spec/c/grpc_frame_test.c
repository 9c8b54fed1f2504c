/* grpc_frame: the 5-byte prefix, the incremental deframer under every
 * chunking, framing errors, status from headers/trailers and the HTTP
 * mapping, grpc-message percent-coding, "-bin" base64, grpc-timeout. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "grpc_frame.h"

#include "tap.h"

/* Collects delivered messages as "len:bytes|" so sequences compare as
 * strings; counts zero-copy deliveries. */
typedef struct sink {
    sk_buf log;
    const uint8_t *chunk;
    size_t chunk_len;
    int zero_copy;
    int stop_after; /* stop once this many were delivered (0 = never) */
    int count;
} sink;

static int sink_cb(void *ud, const uint8_t *msg, size_t len)
{
    sink *s = ud;
    sk_buf_appendf(&s->log, "%zu:", len);
    if (len)
        sk_buf_append(&s->log, msg, len);
    sk_buf_append(&s->log, "|", 1);
    if (s->chunk && len && msg >= s->chunk && msg + len <= s->chunk + s->chunk_len)
        s->zero_copy++;
    s->count++;
    return s->stop_after && s->count >= s->stop_after;
}

/* Feeds data in pieces of the given sizes (cycled), each piece in an
 * exact-size allocation. Returns the last feed result, then finish's. */
static int feed_chunked(sk_grpc_deframer *d, sink *s, const uint8_t *data, size_t len, const size_t *sizes,
                        size_t n_sizes)
{
    size_t off = 0, k = 0;
    int rc = SK_GRPC_DEFRAME_OK;
    while (off < len && rc == SK_GRPC_DEFRAME_OK) {
        size_t n = sizes[k++ % n_sizes];
        if (n > len - off)
            n = len - off;
        uint8_t *piece = malloc(n ? n : 1);
        memcpy(piece, data + off, n);
        s->chunk = piece;
        s->chunk_len = n;
        rc = sk_grpc_deframer_feed(d, piece, n, sink_cb, s);
        free(piece);
        s->chunk = NULL;
        off += n;
    }
    return rc != SK_GRPC_DEFRAME_OK ? rc : sk_grpc_deframer_finish(d);
}

static void test_frame_header(void)
{
    uint8_t h[5];
    tap(sk_grpc_frame_header(h, 0) == 0 && memcmp(h, "\0\0\0\0\0", 5) == 0,
        "empty message prefix is 00 00 00 00 00 (AuthTokenGet)");
    tap(sk_grpc_frame_header(h, 0x01020304) == 0 && memcmp(h, "\x00\x01\x02\x03\x04", 5) == 0,
        "length is big-endian");
#if SIZE_MAX > UINT32_MAX
    tap(sk_grpc_frame_header(h, (size_t)UINT32_MAX + 1) == -1, "length above 2^32-1 refused");
#else
    tap(1, "length above 2^32-1 refused # SKIP 32-bit size_t");
#endif
    sk_buf b = {0};
    sk_buf_append(&b, "x", 1);
    tap(sk_grpc_frame_append(&b, "abc", 3) == 0 && b.len == 9 && memcmp(b.data, "x\0\0\0\0\3abc", 9) == 0,
        "frame_append appends prefix and message");
    sk_buf_free(&b);
}

static void test_deframer(void)
{
    /* Three messages: 3 bytes, empty, 300 bytes. */
    sk_buf stream = {0}, expect = {0};
    uint8_t big[300];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)i;
    sk_grpc_frame_append(&stream, "abc", 3);
    sk_grpc_frame_append(&stream, NULL, 0);
    sk_grpc_frame_append(&stream, big, sizeof big);
    sk_buf_appendf(&expect, "3:abc|0:|300:");
    sk_buf_append(&expect, big, sizeof big);
    sk_buf_append(&expect, "|", 1);

    static const size_t whole[] = {100000}, ones[] = {1}, mixed[] = {2, 7, 1, 4, 64, 3}, at5[] = {5};
    const struct {
        const char *name;
        const size_t *sizes;
        size_t n;
    } plans[] = {{"one chunk", whole, 1}, {"byte by byte", ones, 1}, {"uneven chunks", mixed, 6}, {"5-byte chunks", at5, 1}};
    for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++) {
        sk_grpc_deframer d;
        sink s = {0};
        sk_grpc_deframer_init(&d, 0);
        int rc = feed_chunked(&d, &s, (const uint8_t *)stream.data, stream.len, plans[i].sizes, plans[i].n);
        tap(rc == SK_GRPC_DEFRAME_OK && s.log.len == expect.len && memcmp(s.log.data, expect.data, expect.len) == 0 &&
                d.messages == 3,
            "deframer, %s: 3 messages (one empty) in order", plans[i].name);
        if (i == 0)
            tap(s.zero_copy == 2, "whole messages inside a chunk are delivered without copying");
        sk_grpc_deframer_free(&d);
        sk_buf_free(&s.log);
    }

    /* Every split point of the stream into two chunks. */
    int bad = 0;
    for (size_t cut = 0; cut <= stream.len; cut++) {
        sk_grpc_deframer d;
        sink s = {0};
        sk_grpc_deframer_init(&d, 0);
        size_t sizes[2] = {cut, stream.len - cut};
        int rc = feed_chunked(&d, &s, (const uint8_t *)stream.data, stream.len, sizes, 2);
        if (rc != SK_GRPC_DEFRAME_OK || s.log.len != expect.len || memcmp(s.log.data, expect.data, expect.len) != 0)
            bad++;
        sk_grpc_deframer_free(&d);
        sk_buf_free(&s.log);
    }
    tap(bad == 0, "deframer: all %zu two-chunk splits give the same messages", stream.len + 1);

    /* Truncated at every point: finish reports TRUNCATED unless the cut
     * falls between messages. */
    bad = 0;
    for (size_t cut = 0; cut < stream.len; cut++) {
        sk_grpc_deframer d;
        sink s = {0};
        sk_grpc_deframer_init(&d, 0);
        sk_grpc_deframer_feed(&d, stream.data, cut, sink_cb, &s);
        int rc = sk_grpc_deframer_finish(&d);
        int boundary = cut == 0 || cut == 8 || cut == 13;
        if (boundary ? rc != SK_GRPC_DEFRAME_OK : rc != SK_GRPC_DEFRAME_TRUNCATED)
            bad++;
        sk_grpc_deframer_free(&d);
        sk_buf_free(&s.log);
    }
    tap(bad == 0, "deframer: a body cut inside a prefix or message is TRUNCATED at finish");
    sk_buf_free(&stream);
    sk_buf_free(&expect);
}

static void test_deframer_errors(void)
{
    sk_grpc_deframer d;
    sink s = {0};

    sk_grpc_deframer_init(&d, 0);
    tap(d.max_len == SK_GRPC_MAX_MESSAGE && SK_GRPC_MAX_MESSAGE == 100u * 1024 * 1024, "default max is 100 MiB");
    int rc = sk_grpc_deframer_feed(&d, "\x01\0\0\0\1x", 6, sink_cb, &s);
    tap(rc == SK_GRPC_DEFRAME_COMPRESSED && s.count == 0 && sk_grpc_deframe_code(rc) == 13,
        "compressed flag without negotiation: error, INTERNAL");
    tap(sk_grpc_deframer_feed(&d, "\0\0\0\0\0", 5, sink_cb, &s) == SK_GRPC_DEFRAME_COMPRESSED && s.count == 0 &&
            sk_grpc_deframer_finish(&d) == SK_GRPC_DEFRAME_COMPRESSED,
        "errors are sticky: nothing more is delivered");
    sk_grpc_deframer_free(&d);

    sk_grpc_deframer_init(&d, 0);
    tap(sk_grpc_deframer_feed(&d, "\x80\0\0\0\0", 5, sink_cb, &s) == SK_GRPC_DEFRAME_BAD_FLAG, "flag 0x80 rejected");
    sk_grpc_deframer_free(&d);

    sk_grpc_deframer_init(&d, 16);
    rc = sk_grpc_deframer_feed(&d, "\0\0\0\0\x11", 5, sink_cb, &s);
    tap(rc == SK_GRPC_DEFRAME_TOO_LARGE && sk_grpc_deframe_code(rc) == 8,
        "message above max_len rejected from its prefix alone, RESOURCE_EXHAUSTED");
    sk_grpc_deframer_free(&d);

    sk_grpc_deframer_init(&d, 0);
    tap(sk_grpc_deframer_feed(&d, "\0\x06\x40\0\x01", 5, sink_cb, &s) == SK_GRPC_DEFRAME_TOO_LARGE,
        "100 MiB + 1 rejected by default");
    sk_grpc_deframer_free(&d);

    sk_grpc_deframer_init(&d, 16);
    rc = sk_grpc_deframer_feed(&d, "\0\0\0\0\x10" "0123456789abcdef", 21, sink_cb, &s);
    tap(rc == SK_GRPC_DEFRAME_OK && s.count == 1, "message of exactly max_len accepted");
    sk_grpc_deframer_free(&d);

    sink stop = {.stop_after = 1};
    sk_grpc_deframer_init(&d, 0);
    rc = sk_grpc_deframer_feed(&d, "\0\0\0\0\1a\0\0\0\0\1b", 12, sink_cb, &stop);
    tap(rc == SK_GRPC_DEFRAME_STOPPED && stop.count == 1 && sk_grpc_deframe_code(rc) == 1,
        "callback can stop delivery (CANCELLED)");
    sk_grpc_deframer_free(&d);
    sk_buf_free(&stop.log);
    sk_buf_free(&s.log);

    int named = 1;
    for (int e = 0; e >= -6; e--)
        named &= strlen(sk_grpc_deframe_strerror(e)) > 0;
    tap(named, "every deframer error has a message");
}

static void test_codes(void)
{
    static const char *names[] = {"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
                                  "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
                                  "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
                                  "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
    int ok = 1;
    for (int i = 0; i <= 16; i++)
        ok &= strcmp(sk_grpc_code_name(i), names[i]) == 0;
    tap(ok && !sk_grpc_code_name(17) && !sk_grpc_code_name(-1), "status code names 0..16, NULL outside");

    static const int map[][2] = {{400, 13}, {401, 16}, {403, 7}, {404, 12}, {429, 14}, {502, 14},
                                 {503, 14}, {504, 14}, {500, 2}, {200, 2}, {302, 2}, {0, 2}};
    ok = 1;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        ok &= sk_grpc_code_from_http(map[i][0]) == map[i][1];
    tap(ok, "HTTP status to gRPC code mapping of docs/protocols/modal.md §1.3");
}

static int status_feed(sk_grpc_status *s, const char *const *lines)
{
    for (; *lines; lines++)
        if (sk_grpc_status_header_line(s, *lines, strlen(*lines)) != 0)
            return -1;
    return 0;
}

static void test_status(void)
{
    sk_grpc_status s;

    const char *ok_lines[] = {"HTTP/2 200 \r\n", "content-type: application/grpc\r\n", "\r\n",
                              "grpc-status: 0\r\n", "grpc-message: \r\n", NULL};
    sk_grpc_status_init(&s);
    status_feed(&s, ok_lines);
    tap(s.http_status == 200 && sk_grpc_status_code(&s) == 0 && s.grpc_message && s.grpc_message[0] == '\0',
        "status in trailers: OK");
    sk_grpc_status_free(&s);

    const char *trailers_only[] = {"HTTP/2 200\r\n", "Content-Type: application/grpc\r\n",
                                   "Grpc-Status: 5\r\n", "Grpc-Message: Sandbox%20with%20name%20%27x%27%20not%20found\r\n",
                                   "\r\n", NULL};
    sk_grpc_status_init(&s);
    status_feed(&s, trailers_only);
    tap(sk_grpc_status_code(&s) == 5 && strcmp(s.grpc_message, "Sandbox with name 'x' not found") == 0,
        "trailers-only response: status and decoded message from the headers, any case");
    sk_grpc_status_free(&s);

    const char *none[] = {"HTTP/2 200\r\n", "content-type: application/grpc\r\n", NULL};
    sk_grpc_status_init(&s);
    status_feed(&s, none);
    tap(sk_grpc_status_code(&s) == SK_GRPC_UNKNOWN, "stream ended without grpc-status: UNKNOWN");
    sk_grpc_status_free(&s);

    const char *http503[] = {"HTTP/2 503\r\n", "content-type: text/plain\r\n", NULL};
    sk_grpc_status_init(&s);
    status_feed(&s, http503);
    tap(s.http_status == 503 && sk_grpc_status_code(&s) == SK_GRPC_UNAVAILABLE, "HTTP 503 without grpc-status: UNAVAILABLE");
    sk_grpc_status_free(&s);

    const char *http1[] = {"HTTP/1.1 401 Unauthorized\r\n", NULL};
    sk_grpc_status_init(&s);
    status_feed(&s, http1);
    tap(sk_grpc_status_code(&s) == SK_GRPC_UNAUTHENTICATED, "HTTP/1.1 status line parsed (401)");
    sk_grpc_status_free(&s);

    const char *both[] = {"HTTP/2 404\r\n", "grpc-status: 9\r\n", NULL};
    sk_grpc_status_init(&s);
    status_feed(&s, both);
    tap(sk_grpc_status_code(&s) == 9, "grpc-status wins over the HTTP mapping");
    sk_grpc_status_free(&s);

    sk_grpc_status_init(&s);
    sk_grpc_status_header(&s, ":status", 7, "200", 3);
    sk_grpc_status_header(&s, "grpc-status", 11, "abc", 3);
    int bad_text = sk_grpc_status_code(&s) == SK_GRPC_UNKNOWN;
    sk_grpc_status_header(&s, "grpc-status", 11, "17", 2);
    int too_big = sk_grpc_status_code(&s) == SK_GRPC_UNKNOWN;
    sk_grpc_status_header(&s, "grpc-status", 11, "16", 2);
    int last_wins = sk_grpc_status_code(&s) == 16;
    sk_grpc_status_header(&s, "grpc-status", 11, "", 0);
    int empty = sk_grpc_status_code(&s) == SK_GRPC_UNKNOWN;
    tap(s.http_status == 200 && bad_text && too_big && last_wins && empty,
        "invalid grpc-status (text, 17, empty) is UNKNOWN; the last one wins");
    sk_grpc_status_free(&s);

    sk_grpc_status_init(&s);
    const char *bin[] = {"grpc-status-details-bin: CAgSCXNsb3cgZG93bg\r\n", "x-other: y\r\n", "junk line\r\n",
                         ": novalue\r\n", NULL};
    status_feed(&s, bin);
    tap(s.details_bin && strcmp(s.details_bin, "CAgSCXNsb3cgZG93bg") == 0 && s.grpc_status == -1,
        "grpc-status-details-bin kept raw; unrelated and malformed lines ignored");
    sk_grpc_status_free(&s);
}

static void test_percent(void)
{
    char *m = sk_grpc_percent_decode("caf%C3%A9 %E2%82%ac 100%25", 26);
    tap(m && strcmp(m, "caf\xc3\xa9 \xe2\x82\xac 100%") == 0, "percent-decoding of UTF-8 and %%25");
    free(m);
    m = sk_grpc_percent_decode("bad %zz %4 %", 12);
    tap(m && strcmp(m, "bad %zz %4 %") == 0, "malformed escapes are kept as they are");
    free(m);
    m = sk_grpc_percent_decode("a%00b", 5);
    tap(m && strcmp(m, "a%00b") == 0, "%%00 is kept encoded (the result stays a C string)");
    free(m);

    sk_buf b = {0};
    const char *raw = "50% off\n\xe2\x82\xac~";
    sk_grpc_percent_encode(&b, raw, strlen(raw));
    tap(strcmp(b.data, "50%25 off%0A%E2%82%AC~") == 0, "percent-encoding of %%, controls and non-ASCII");
    m = sk_grpc_percent_decode(b.data, b.len);
    tap(m && strcmp(m, raw) == 0, "percent-coding round-trips");
    free(m);
    sk_buf_free(&b);
}

static int b64(const char *in, const char *want, size_t want_len)
{
    sk_buf b = {0};
    int rc = sk_grpc_base64_decode(in, strlen(in), &b);
    int ok = want ? rc == 0 && b.len == want_len && (want_len == 0 || memcmp(b.data, want, want_len) == 0)
                  : rc == -1 && errno == EINVAL && b.len == 0;
    sk_buf_free(&b);
    return ok;
}

static void test_base64(void)
{
    tap(b64("aGVsbG8=", "hello", 5) && b64("aGVsbG8", "hello", 5) && b64("", "", 0) && b64("YQ==", "a", 1) &&
            b64("YWI=", "ab", 2) && b64("YWJj", "abc", 3),
        "base64 with and without padding");
    tap(b64("-_8=", "\xfb\xff", 2) && b64("+/8=", "\xfb\xff", 2), "standard and URL-safe alphabets");
    tap(b64("a", NULL, 0) && b64("aGVsbG8===", NULL, 0) && b64("YQ=", NULL, 0) && b64("Y=Q=", NULL, 0) &&
            b64("aGV sbG8", NULL, 0) && b64("QR==", NULL, 0) && b64("====", NULL, 0),
        "bad length, bad padding, bad characters, non-zero trailing bits rejected (EINVAL)");
    tap(b64("CAgSCXNsb3cgZG93bg", "\x08\x08\x12\x09slow down", 13), "an unpadded grpc-status-details-bin value");
}

static void test_timeout(void)
{
    static const struct {
        uint64_t ms;
        const char *want;
    } cases[] = {
        {0, "0m"},
        {1, "1m"},
        {55000, "55000m"},
        {99999999, "99999999m"},
        {100000000, "100000S"},
        {100000001, "100001S"},
        {99999999000ull, "99999999S"},
        {99999999001ull, "1666667M"},
        {UINT64_MAX, "99999999H"},
    };
    int ok = 1;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[SK_GRPC_TIMEOUT_LEN];
        size_t n = sk_grpc_timeout_format(out, cases[i].ms);
        if (n != strlen(cases[i].want) || strcmp(out, cases[i].want) != 0) {
            printf("#   %llu ms: got %s want %s\n", (unsigned long long)cases[i].ms, out, cases[i].want);
            ok = 0;
        }
    }
    tap(ok, "grpc-timeout: at most 8 digits, finest unit, rounded up, capped");
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* a crash keeps the lines so far */
    test_frame_header();
    test_deframer();
    test_deframer_errors();
    test_codes();
    test_status();
    test_percent();
    test_base64();
    test_timeout();
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}
