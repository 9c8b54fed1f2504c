/* libFuzzer target: the gRPC deframer and status/metadata parsers.
 * Properties checked beyond "no crash, no leak, no over-read":
 *  - feeding the input in pseudo-random chunks delivers exactly what
 *    feeding it whole delivers, with the same final result;
 *  - percent-encoding then decoding gives the input back (inputs without
 *    NUL, which decoding deliberately keeps as %00);
 *  - base64-decoding never reports success with more than 3/4 of the input.
 * Build: clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc/core \
 *   spec/fuzz/fuzz_grpc_frame.c src/core/grpc_frame.c src/core/buf.c */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "fuzz_pieces.h"
#include "grpc_frame.h"

typedef struct fuzz_log {
    sk_buf b;
} fuzz_log;

static int fuzz_on_message(void *ud, const uint8_t *msg, size_t len)
{
    fuzz_log *l = ud;
    uint8_t hdr[5];
    sk_grpc_frame_header(hdr, len);
    sk_buf_append(&l->b, hdr, sizeof hdr);
    if (len)
        sk_buf_append(&l->b, msg, len);
    return 0;
}

/* Small max so the TOO_LARGE path is reachable with small inputs. */
#define FUZZ_MAX_MSG 4096

static void fuzz_deframe(const uint8_t *data, size_t size)
{
    sk_grpc_deframer whole, parts;
    fuzz_log lw = {{0}}, lp = {{0}};
    sk_grpc_deframer_init(&whole, FUZZ_MAX_MSG);
    sk_grpc_deframer_init(&parts, FUZZ_MAX_MSG);
    int rw = sk_grpc_deframer_feed(&whole, data, size, fuzz_on_message, &lw);
    if (rw == SK_GRPC_DEFRAME_OK)
        rw = sk_grpc_deframer_finish(&whole);

    fuzz_pieces ps = fuzz_pieces_of(data, size, 11);
    int rp = SK_GRPC_DEFRAME_OK;
    while (rp == SK_GRPC_DEFRAME_OK && fuzz_pieces_next(&ps))
        rp = sk_grpc_deframer_feed(&parts, ps.piece, ps.n, fuzz_on_message, &lp);
    fuzz_pieces_end(&ps);
    if (rp == SK_GRPC_DEFRAME_OK)
        rp = sk_grpc_deframer_finish(&parts);
    if (rw != rp || lw.b.len != lp.b.len || (lw.b.len && memcmp(lw.b.data, lp.b.data, lw.b.len) != 0))
        abort();
    if (whole.messages != parts.messages)
        abort();
    (void)sk_grpc_deframe_strerror(rw);
    (void)sk_grpc_deframe_code(rw);
    sk_grpc_deframer_free(&whole);
    sk_grpc_deframer_free(&parts);
    sk_buf_free(&lw.b);
    sk_buf_free(&lp.b);
}

static void fuzz_headers(const uint8_t *data, size_t size)
{
    sk_grpc_status st;
    sk_grpc_status_init(&st);
    const char *p = (const char *)data, *end = p + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
        char *line = malloc(n);
        memcpy(line, p, n);
        sk_grpc_status_header_line(&st, line, n);
        free(line);
        p += n;
    }
    int code = sk_grpc_status_code(&st);
    if (code < 0 || code > 16 || !sk_grpc_code_name(code))
        abort();
    (void)sk_grpc_code_from_http(st.http_status);
    sk_grpc_status_free(&st);
}

static void fuzz_codecs(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    char *dec = sk_grpc_percent_decode(s, size);
    free(dec);
    if (!memchr(data, 0, size)) {
        sk_buf enc = {0};
        if (sk_grpc_percent_encode(&enc, s, size) == 0) {
            char *back = sk_grpc_percent_decode(enc.data ? enc.data : "", enc.len);
            if (!back || strlen(back) != size || memcmp(back, s, size) != 0)
                abort();
            free(back);
        }
        sk_buf_free(&enc);
    }
    sk_buf out = {0};
    if (sk_grpc_base64_decode(s, size, &out) == 0 && out.len > size * 3 / 4)
        abort();
    sk_buf_free(&out);

    uint64_t ms = 0;
    memcpy(&ms, data, size < 8 ? size : 8);
    char t[SK_GRPC_TIMEOUT_LEN];
    size_t n = sk_grpc_timeout_format(t, ms);
    if (n < 2 || n > 9 || strlen(t) != n)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_deframe(data, size);
    fuzz_headers(data, size);
    fuzz_codecs(data, size);
    return 0;
}
