/* libFuzzer target: the protobuf reader and every Modal response decoder.
 * Properties checked beyond "no crash, no leak, no over-read":
 *  - whatever the reader accepts re-encodes with the writers into bytes the
 *    reader decodes to the same field sequence;
 *  - a decoder that fails leaves its struct zeroed.
 * Build: clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc/core \
 *   spec/fuzz/fuzz_pb.c src/core/providers/modal/pb.c src/core/providers/modal/modal_msg.c src/core/buf.c */
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

#define DECODE(fn, type, freefn)                                \
    do {                                                        \
        type m;                                                 \
        if (sk_modal_decode_##fn(data, size, &m) == 0)          \
            freefn(&m);                                         \
        else if (!fuzz_all_zero(&m, sizeof m))                  \
            abort();                                            \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_check_round_trip(data, size);

    DECODE(auth_token_get, sk_modal_auth_token_get_resp, sk_modal_auth_token_get_resp_free);
    DECODE(app_get_or_create, sk_modal_app_get_or_create_resp, sk_modal_app_get_or_create_resp_free);
    DECODE(image_get_or_create, sk_modal_image_get_or_create_resp, sk_modal_image_get_or_create_resp_free);
    DECODE(image_join_streaming, sk_modal_image_join_streaming_resp, sk_modal_image_join_streaming_resp_free);
    DECODE(secret_get_or_create, sk_modal_secret_get_or_create_resp, sk_modal_secret_get_or_create_resp_free);
    DECODE(sandbox_create, sk_modal_sandbox_create_resp, sk_modal_sandbox_create_resp_free);
    DECODE(sandbox_get_from_name, sk_modal_sandbox_get_from_name_resp, sk_modal_sandbox_get_from_name_resp_free);
    DECODE(sandbox_wait, sk_modal_sandbox_wait_resp, sk_modal_sandbox_wait_resp_free);
    DECODE(sandbox_terminate, sk_modal_sandbox_terminate_resp, sk_modal_sandbox_terminate_resp_free);
    DECODE(sandbox_get_task_id, sk_modal_sandbox_get_task_id_resp, sk_modal_sandbox_get_task_id_resp_free);
    DECODE(task_get_command_router_access, sk_modal_task_get_command_router_access_resp,
           sk_modal_task_get_command_router_access_resp_free);
    DECODE(sandbox_snapshot_fs, sk_modal_sandbox_snapshot_fs_resp, sk_modal_sandbox_snapshot_fs_resp_free);
    DECODE(task_snapshot_filesystem, sk_modal_task_snapshot_filesystem_resp,
           sk_modal_task_snapshot_filesystem_resp_free);
    DECODE(task_exec_stdio_read, sk_modal_task_exec_stdio_read_resp, sk_modal_task_exec_stdio_read_resp_free);
    DECODE(status_details, sk_modal_status_details, sk_modal_status_details_free);
    {
        sk_modal_task_exec_wait_resp w;
        if (sk_modal_decode_task_exec_wait(data, size, &w) != 0 && !fuzz_all_zero(&w, sizeof w))
            abort();
    }
    DECODE(container_filesystem_exec, sk_modal_container_filesystem_exec_resp,
           sk_modal_container_filesystem_exec_resp_free);
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
