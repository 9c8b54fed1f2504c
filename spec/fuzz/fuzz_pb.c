/* libFuzzer target: the protobuf reader and every Modal response decoder.
 * Properties checked beyond "no crash, no leak, no over-read":
 *  - whatever the reader accepts re-encodes with the writers into bytes the
 *    reader decodes to the same field sequence;
 *  - a decoder that fails leaves its struct zeroed.
 * Build: make fuzz FUZZERS=pb (the decoders' tables are generated from
 * modal.proto into build/gen). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "providers/modal/modal_msg.h"
#include "providers/modal/pb.h"

#define FIELDS_MAX 4096

typedef struct field_copy {
    uint32_t num;
    sk_pb_wire wire;
    uint64_t v;
    const uint8_t *data;
    size_t len;
} field_copy;

static void fuzz_check_round_trip(const uint8_t *data, size_t size)
{
    static field_copy fs[FIELDS_MAX];
    size_t n = 0;
    sk_pb_reader r;
    sk_pb_field f;
    sk_pb_reader_init(&r, data, size);
    int rc;
    while (n < FIELDS_MAX && (rc = sk_pb_next(&r, &f)) == 1) {
        if (f.wire == SK_PB_SGROUP)
            continue; /* the writer has no groups: skipped both ways */
        fs[n++] = (field_copy){f.num, f.wire, f.v, f.data, f.len};
    }
    if (n == FIELDS_MAX)
        return;
    sk_buf b = {0};
    for (size_t i = 0; i < n; i++) {
        switch (fs[i].wire) {
        case SK_PB_VARINT:
            sk_pb_put_uint64(&b, fs[i].num, fs[i].v, SK_PB_EXPLICIT);
            break;
        case SK_PB_I32:
            sk_pb_put_fixed32(&b, fs[i].num, (uint32_t)fs[i].v, SK_PB_EXPLICIT);
            break;
        case SK_PB_I64:
            sk_pb_put_fixed64(&b, fs[i].num, fs[i].v, SK_PB_EXPLICIT);
            break;
        default:
            sk_pb_put_bytes(&b, fs[i].num, fs[i].data, fs[i].len, SK_PB_EXPLICIT);
        }
    }
    sk_pb_reader_init(&r, b.data, b.len);
    for (size_t i = 0; i < n; i++) {
        if (sk_pb_next(&r, &f) != 1 || f.num != fs[i].num || f.wire != fs[i].wire)
            abort();
        if (f.wire == SK_PB_LEN ? (f.len != fs[i].len || (f.len && memcmp(f.data, fs[i].data, f.len) != 0))
                                : f.v != fs[i].v)
            abort();
    }
    if (sk_pb_next(&r, &f) != 0)
        abort();
    sk_buf_free(&b);
}

static int fuzz_all_zero(const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_check_round_trip(data, size);

    /* every message the client receives (generated from modal.proto) */
    for (const sk_modal_message *const *t = sk_modal_received; *t; t++) {
        _Alignas(max_align_t) unsigned char m[1024];
        if ((*t)->size > sizeof m)
            abort();
        if (sk_modal_decode(*t, data, size, m) == 0)
            sk_modal_release(*t, m);
        else if (!fuzz_all_zero(m, (*t)->size))
            abort();
    }
    {
        sk_modal_status_details st;
        if (sk_modal_decode_status_details(data, size, &st) == 0)
            sk_modal_status_details_free(&st);
        else if (!fuzz_all_zero(&st, sizeof st))
            abort();
    }
    {
        sk_modal_fs_batch fb;
        if (sk_modal_decode_fs_batch(data, size, &fb, NULL, NULL) == 0 && fb.error_message &&
            (fb.error_message < (const char *)data || fb.error_message + fb.error_message_len >
                                                          (const char *)data + size))
            abort(); /* the message must point into the input */
    }
    {
        const uint8_t *chunk;
        size_t clen;
        if (sk_modal_decode_task_exec_stdio_chunk(data, size, &chunk, &clen) == 0 && chunk &&
            (chunk < data || chunk + clen > data + size))
            abort(); /* the chunk must point into the input */
    }
    (void)sk_modal_decode_empty(data, size);
    return 0;
}
