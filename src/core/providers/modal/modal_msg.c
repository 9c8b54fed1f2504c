/* Modal request encoders and response decoders; see modal_msg.h. One
 * encoder and one decoder walk the field tables generated from modal.proto
 * (build/gen/modal_pb.h): requests field by field in field-number order, as
 * ts-proto writes them, so the bytes match the JS SDK's for the same
 * values; responses in one pass over the wire. The in-place readers at the
 * end (output chunks, filesystem batches) and gRPC's Status are read field
 * by field, by the generated field numbers. */
#define SK_MODAL_PB_TABLES /* modal_pb.h's tables are defined here, once */
#include "modal_msg.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The member at off, read through a const T *: a `const char *` member is
 * named `char *` here (the macro adds the const). */
#define AT(p, off, T) ((const T *)(const void *)((const char *)(p) + (off)))
#define AT_MUT(p, off, T) ((T *)(void *)((char *)(p) + (off)))

/* ---- requests ---- */

static int msg_write(const sk_modal_message *t, sk_buf *b, const void *m);

static int msg_put_sub(sk_buf *b, uint32_t field, const sk_modal_message *t, const void *m)
{
    size_t mark;
    if (sk_pb_begin(b, field, &mark) != 0 || msg_write(t, b, m) != 0)
        return -1;
    return sk_pb_end(b, mark);
}

/* Elements of a repeated string have no presence: "" is written too. */
static int msg_put_strs(sk_buf *b, uint32_t field, sk_modal_strs s)
{
    for (size_t i = 0; i < s.n; i++)
        if (sk_pb_put_string(b, field, s.v[i] ? s.v[i] : "", SK_PB_EXPLICIT) != 0)
            return -1;
    return 0;
}

/* map<string,string> entries: key = 1, value = 2, empty ones left out. */
static int msg_put_kvs(sk_buf *b, uint32_t field, sk_modal_kvs kvs)
{
    for (size_t i = 0; i < kvs.n; i++) {
        size_t mark;
        if (sk_pb_begin(b, field, &mark) != 0 || sk_pb_put_string(b, 1, kvs.v[i].key, SK_PB_IMPLICIT) != 0 ||
            sk_pb_put_string(b, 2, kvs.v[i].value, SK_PB_IMPLICIT) != 0 || sk_pb_end(b, mark) != 0)
            return -1;
    }
    return 0;
}

static int msg_put(const sk_modal_field *w, sk_buf *b, const void *m)
{
    sk_pb_presence pr = w->presence;
    const void *p;
    switch (w->kind) {
    case SK_MODAL_F_STRING:
        return sk_pb_put_string(b, w->num, *AT(m, w->off, char *), pr);
    case SK_MODAL_F_BYTES:
        return sk_pb_put_bytes(b, w->num, *AT(m, w->off, void *), *AT(m, w->aux, size_t), pr);
    case SK_MODAL_F_INT32:
        return sk_pb_put_int32(b, w->num, *AT(m, w->off, int32_t), pr);
    case SK_MODAL_F_INT64:
        return sk_pb_put_int64(b, w->num, *AT(m, w->off, int64_t), pr);
    case SK_MODAL_F_UINT32:
        return sk_pb_put_uint64(b, w->num, *AT(m, w->off, uint32_t), pr);
    case SK_MODAL_F_UINT64:
        return sk_pb_put_uint64(b, w->num, *AT(m, w->off, uint64_t), pr);
    case SK_MODAL_F_BOOL:
        return sk_pb_put_bool(b, w->num, *AT(m, w->off, bool), pr);
    case SK_MODAL_F_FLOAT:
        return sk_pb_put_float(b, w->num, *AT(m, w->off, float), pr);
    case SK_MODAL_F_SUB:
        return msg_put_sub(b, w->num, w->sub, AT(m, w->off, char));
    case SK_MODAL_F_STRS:
        return msg_put_strs(b, w->num, *AT(m, w->off, sk_modal_strs));
    case SK_MODAL_F_KVS:
        return msg_put_kvs(b, w->num, *AT(m, w->off, sk_modal_kvs));
    case SK_MODAL_F_SUBS:
        /* The member is a pointer to the element type; copied, not read
         * through a pointer of another type. */
        memcpy(&p, AT(m, w->off, char), sizeof p);
        for (size_t i = 0; i < *AT(m, w->aux, size_t); i++)
            if (msg_put_sub(b, w->num, w->sub, (const char *)p + i * w->size) != 0)
                return -1;
        return 0;
    }
    return -1;
}

static int msg_write(const sk_modal_message *t, sk_buf *b, const void *m)
{
    for (size_t i = 0; i < t->n; i++) {
        const sk_modal_field *w = &t->fields[i];
        if (w->has && !*AT(m, w->has - 1, bool))
            continue;
        if (msg_put(w, b, m) != 0)
            return -1;
    }
    return 0;
}

/* An encoder that fails leaves out as it found it. */
static int msg_encode_fail(sk_buf *out, size_t start)
{
    out->len = start;
    if (out->data)
        out->data[start] = '\0';
    errno = ENOMEM;
    return -1;
}

int sk_modal_encode(const sk_modal_message *t, sk_buf *out, const void *m)
{
    size_t start = out->len;
    return msg_write(t, out, m) == 0 ? 0 : msg_encode_fail(out, start);
}

int sk_modal_encode_fs_op(sk_buf *out, const sk_modal_container_filesystem_exec_req *m)
{
    sk_modal_container_filesystem_exec_request r = {.task_id = m->task_id};
    switch (m->kind) {
    case SK_MODAL_FS_OPEN:
        r.has_file_open_request = true;
        r.file_open_request =
            (sk_modal_container_file_open_request){.file_descriptor = m->fd, .path = m->path, .mode = m->mode};
        break;
    case SK_MODAL_FS_WRITE:
        r.has_file_write_request = true;
        r.file_write_request =
            (sk_modal_container_file_write_request){.file_descriptor = m->fd, .data = m->data, .data_len = m->len};
        break;
    case SK_MODAL_FS_READ:
        r.has_file_read_request = true;
        r.file_read_request =
            (sk_modal_container_file_read_request){.file_descriptor = m->fd, .has_n = m->has_n, .n = m->n};
        break;
    case SK_MODAL_FS_FLUSH:
        r.has_file_flush_request = true;
        r.file_flush_request.file_descriptor = m->fd;
        break;
    case SK_MODAL_FS_CLOSE:
        r.has_file_close_request = true;
        r.file_close_request.file_descriptor = m->fd;
        break;
    default:
        errno = EINVAL;
        return -1;
    }
    return sk_modal_encode_container_filesystem_exec(out, &r);
}

/* ---- responses ----
 * msg_read walks the wire once; a field that is not in the table, or
 * whose wire type does not fit its kind, is skipped. A sub-message decodes
 * into the same struct on every occurrence, so repeated occurrences merge,
 * as protobuf specifies. */

static int msg_bad(void)
{
    errno = EBADMSG;
    return -1;
}

static bool msg_wire_fits(sk_modal_kind k, sk_pb_wire w)
{
    switch (k) {
    case SK_MODAL_F_INT32:
    case SK_MODAL_F_INT64:
    case SK_MODAL_F_UINT32:
    case SK_MODAL_F_UINT64:
    case SK_MODAL_F_BOOL:
        return w == SK_PB_VARINT;
    case SK_MODAL_F_FLOAT:
        return w == SK_PB_I32;
    default:
        return w == SK_PB_LEN;
    }
}

static int msg_read(const sk_modal_message *t, const void *data, size_t len, void *out);

static int msg_set(const sk_modal_field *d, const sk_pb_field *f, void *out)
{
    switch (d->kind) {
    case SK_MODAL_F_STRING:
        return sk_pb_dup_string(f, AT_MUT(out, d->off, char *));
    case SK_MODAL_F_BYTES:
        return sk_pb_dup_bytes(f, AT_MUT(out, d->off, uint8_t *), AT_MUT(out, d->aux, size_t));
    case SK_MODAL_F_INT32:
        *AT_MUT(out, d->off, int32_t) = sk_pb_as_int32(f);
        return 0;
    case SK_MODAL_F_INT64:
        *AT_MUT(out, d->off, int64_t) = sk_pb_as_int64(f);
        return 0;
    case SK_MODAL_F_UINT32:
        *AT_MUT(out, d->off, uint32_t) = sk_pb_as_uint32(f);
        return 0;
    case SK_MODAL_F_UINT64:
        *AT_MUT(out, d->off, uint64_t) = f->v;
        return 0;
    case SK_MODAL_F_BOOL:
        *AT_MUT(out, d->off, bool) = sk_pb_as_bool(f);
        return 0;
    case SK_MODAL_F_FLOAT:
        *AT_MUT(out, d->off, float) = sk_pb_as_float(f);
        return 0;
    case SK_MODAL_F_SUB:
        return msg_read(d->sub, f->data, f->len, AT_MUT(out, d->off, char));
    default: /* repeated fields are only sent */
        return 0;
    }
}

/* A oneof member arrived: it is the one set (the last on the wire wins). */
static void msg_oneof_pick(const sk_modal_message *t, const sk_modal_field *d, void *out)
{
    for (size_t i = 0; i < t->n; i++) {
        const sk_modal_field *o = &t->fields[i];
        if (o != d && o->oneof == d->oneof && o->has)
            *AT_MUT(out, o->has - 1, bool) = false;
    }
}

/* Fills *out from the wire without clearing it first. -1 with errno
 * EBADMSG (malformed) or ENOMEM; owned members set so far stay in *out. */
static int msg_read(const sk_modal_message *t, const void *data, size_t len, void *out)
{
    sk_pb_reader rd;
    sk_pb_field f;
    int rc;
    sk_pb_reader_init(&rd, data, len);
    while ((rc = sk_pb_next(&rd, &f)) > 0) {
        for (size_t i = 0; i < t->n; i++) {
            const sk_modal_field *d = &t->fields[i];
            if (d->num != f.num)
                continue;
            if (!msg_wire_fits(d->kind, f.wire))
                break;
            if (d->oneof)
                msg_oneof_pick(t, d, out);
            if (d->has)
                *AT_MUT(out, d->has - 1, bool) = true;
            if (msg_set(d, &f, out) != 0)
                return -1;
            break;
        }
    }
    return rc < 0 ? msg_bad() : 0;
}

/* After reading: absent implicit strings become "", absent bytes an empty
 * buffer, present sub-messages likewise. */
static int msg_defaults(const sk_modal_message *t, void *out)
{
    for (size_t i = 0; i < t->n; i++) {
        const sk_modal_field *d = &t->fields[i];
        bool oom = false;
        if (d->kind == SK_MODAL_F_STRING && d->presence == SK_PB_IMPLICIT) {
            char **s = AT_MUT(out, d->off, char *);
            oom = !*s && !(*s = calloc(1, 1));
        } else if (d->kind == SK_MODAL_F_BYTES) {
            uint8_t **b = AT_MUT(out, d->off, uint8_t *);
            oom = !*b && !(*b = calloc(1, 1));
        }
        if (oom) {
            errno = ENOMEM;
            return -1;
        }
        if (d->kind == SK_MODAL_F_SUB && *AT(out, d->has - 1, bool) &&
            msg_defaults(d->sub, AT_MUT(out, d->off, char)) != 0)
            return -1;
    }
    return 0;
}

void sk_modal_release(const sk_modal_message *t, void *m)
{
    for (size_t i = 0; i < t->n; i++) {
        const sk_modal_field *d = &t->fields[i];
        if (d->kind == SK_MODAL_F_STRING)
            free(*AT_MUT(m, d->off, char *));
        else if (d->kind == SK_MODAL_F_BYTES)
            free(*AT_MUT(m, d->off, uint8_t *));
        else if (d->kind == SK_MODAL_F_SUB)
            sk_modal_release(d->sub, AT_MUT(m, d->off, char));
    }
    memset(m, 0, t->size);
}

/* A whole response: on failure *out is left zeroed and errno kept. */
int sk_modal_decode(const sk_modal_message *t, const void *data, size_t len, void *out)
{
    memset(out, 0, t->size);
    if (msg_read(t, data, len, out) == 0 && msg_defaults(t, out) == 0)
        return 0;
    int e = errno;
    sk_modal_release(t, out);
    errno = e;
    return -1;
}

int sk_modal_decode_empty(const void *data, size_t len)
{
    static const sk_modal_message empty = {"", NULL, 0, 0};
    return msg_read(&empty, data, len, NULL);
}

/* ---- read in place, field by field ---- */

/* The last field `num` of wire type LEN, pointing into the input. */
static int msg_last_len(const void *data, size_t len, uint32_t num, const uint8_t **at, size_t *at_len)
{
    sk_pb_reader rd;
    sk_pb_field f;
    int rc;
    *at = NULL;
    *at_len = 0;
    sk_pb_reader_init(&rd, data, len);
    while ((rc = sk_pb_next(&rd, &f)) > 0)
        if (f.num == num && f.wire == SK_PB_LEN) {
            *at = f.data;
            *at_len = f.len;
        }
    if (rc < 0) {
        *at = NULL;
        *at_len = 0;
        return msg_bad();
    }
    return 0;
}

int sk_modal_decode_task_exec_stdio_chunk(const void *data, size_t len, const uint8_t **chunk, size_t *chunk_len)
{
    return msg_last_len(data, len, SK_MODAL_TASK_EXEC_STDIO_READ_RESPONSE_DATA, chunk, chunk_len);
}

static int msg_fs_error(const sk_pb_field *e, sk_modal_fs_batch *b)
{
    sk_pb_reader rd;
    sk_pb_field f;
    int rc;
    b->has_error = true;
    sk_pb_reader_init(&rd, e->data, e->len);
    while ((rc = sk_pb_next(&rd, &f)) > 0) {
        if (f.num == SK_MODAL_SYSTEM_ERROR_MESSAGE_ERROR_CODE && f.wire == SK_PB_VARINT)
            b->error_code = sk_pb_as_int32(&f);
        else if (f.num == SK_MODAL_SYSTEM_ERROR_MESSAGE_ERROR_MESSAGE && f.wire == SK_PB_LEN) {
            b->error_message = (const char *)f.data;
            b->error_message_len = f.len;
        }
    }
    return rc < 0 ? msg_bad() : 0;
}

int sk_modal_decode_fs_batch(const void *data, size_t len, sk_modal_fs_batch *out,
                             void (*output)(void *ud, const uint8_t *d, size_t n), void *ud)
{
    sk_pb_reader rd;
    sk_pb_field f;
    int rc;
    memset(out, 0, sizeof *out);
    sk_pb_reader_init(&rd, data, len);
    while ((rc = sk_pb_next(&rd, &f)) > 0) {
        if (f.num == SK_MODAL_FILESYSTEM_RUNTIME_OUTPUT_BATCH_OUTPUT && f.wire == SK_PB_LEN) {
            if (f.len && output)
                output(ud, f.data, f.len);
        } else if (f.num == SK_MODAL_FILESYSTEM_RUNTIME_OUTPUT_BATCH_ERROR && f.wire == SK_PB_LEN) {
            if (msg_fs_error(&f, out) != 0)
                return -1;
        } else if (f.num == SK_MODAL_FILESYSTEM_RUNTIME_OUTPUT_BATCH_BATCH_INDEX && f.wire == SK_PB_VARINT) {
            out->batch_index = f.v;
        } else if (f.num == SK_MODAL_FILESYSTEM_RUNTIME_OUTPUT_BATCH_EOF && f.wire == SK_PB_VARINT) {
            out->eof = sk_pb_as_bool(&f);
        }
    }
    return rc < 0 ? msg_bad() : 0;
}

/* ---- google.rpc.Status (grpc-status-details-bin) ----
 * Status { code = 1; message = 2; repeated Any details = 3 }, Any
 * { type_url = 1; value = 2 }, modal.client.RPCRetryPolicy
 * { float retry_after_secs = 1 }. */

#define MSG_RETRY_POLICY_SUFFIX "/modal.client.RPCRetryPolicy"

/* A detail (an Any): a retry policy sets the delay (0 when it has none). */
static int msg_status_detail(const sk_pb_field *any, sk_modal_status_details *st)
{
    const uint8_t *type_url, *value;
    size_t type_url_len, value_len;
    size_t sl = sizeof MSG_RETRY_POLICY_SUFFIX - 1;
    if (msg_last_len(any->data, any->len, 1, &type_url, &type_url_len) != 0 ||
        msg_last_len(any->data, any->len, 2, &value, &value_len) != 0)
        return -1;
    if (!type_url || type_url_len < sl || memcmp(type_url + type_url_len - sl, MSG_RETRY_POLICY_SUFFIX, sl) != 0)
        return 0;
    sk_pb_reader rd;
    sk_pb_field f;
    int rc;
    float secs = 0;
    sk_pb_reader_init(&rd, value, value_len);
    while ((rc = sk_pb_next(&rd, &f)) > 0)
        if (f.num == 1 && f.wire == SK_PB_I32)
            secs = sk_pb_as_float(&f);
    if (rc < 0)
        return msg_bad();
    st->has_retry_after = true;
    st->retry_after_secs = secs;
    return 0;
}

static int msg_status_read(const void *data, size_t len, sk_modal_status_details *out)
{
    sk_pb_reader rd;
    sk_pb_field f;
    int rc;
    sk_pb_reader_init(&rd, data, len);
    while ((rc = sk_pb_next(&rd, &f)) > 0) {
        if (f.num == 1 && f.wire == SK_PB_VARINT)
            out->code = sk_pb_as_int32(&f);
        else if (f.num == 2 && f.wire == SK_PB_LEN && sk_pb_dup_string(&f, &out->message) != 0)
            return -1;
        else if (f.num == 3 && f.wire == SK_PB_LEN && msg_status_detail(&f, out) != 0)
            return -1;
    }
    if (rc < 0)
        return msg_bad();
    if (!out->message && !(out->message = calloc(1, 1))) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

int sk_modal_decode_status_details(const void *data, size_t len, sk_modal_status_details *out)
{
    memset(out, 0, sizeof *out);
    if (msg_status_read(data, len, out) == 0)
        return 0;
    int e = errno;
    sk_modal_status_details_free(out);
    errno = e;
    return -1;
}

void sk_modal_status_details_free(sk_modal_status_details *m)
{
    free(m->message);
    memset(m, 0, sizeof *m);
}
