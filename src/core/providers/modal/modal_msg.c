/* Modal request encoders and response decoders; see modal_msg.h. Requests
 * are written field by field in field-number order, as ts-proto writes
 * them, so the bytes match the JS SDK's for the same values. Responses are
 * read by one decoder driven by a field table per message. */
#include "modal_msg.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "pb.h"

#define TRY(x)              \
    do {                    \
        if ((x) != 0)       \
            goto fail;      \
    } while (0)

/* ---- requests ---- */

/* Elements of a repeated string have no presence: "" is written too. */
static int msg_put_strs(sk_buf *b, uint32_t field, sk_modal_strs s)
{
    for (size_t i = 0; i < s.n; i++)
        if (sk_pb_put_string(b, field, s.v[i] ? s.v[i] : "", SK_PB_EXPLICIT) != 0)
            return -1;
    return 0;
}

/* map<string,string> and SandboxTag entries: key = 1, value = 2. Empty
 * strings are left out of an entry, as ts-proto's entry encoders do. */
static int msg_put_kvs(sk_buf *b, uint32_t field, sk_modal_kvs kv)
{
    for (size_t i = 0; i < kv.n; i++) {
        size_t mark;
        if (sk_pb_begin(b, field, &mark) != 0 ||
            sk_pb_put_string(b, 1, kv.v[i].key, SK_PB_IMPLICIT) != 0 ||
            sk_pb_put_string(b, 2, kv.v[i].value, SK_PB_IMPLICIT) != 0 ||
            sk_pb_end(b, mark) != 0)
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

int sk_modal_encode_app_get_or_create(sk_buf *out, const sk_modal_app_get_or_create_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->app_name, SK_PB_IMPLICIT));
    TRY(sk_pb_put_string(out, 2, m->environment_name, SK_PB_IMPLICIT));
    TRY(sk_pb_put_int32(out, 3, m->object_creation_type, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_encode_image_get_or_create(sk_buf *out, const sk_modal_image_get_or_create_req *m)
{
    size_t start = out->len, image, base;
    TRY(sk_pb_begin(out, 2, &image));
    for (size_t i = 0; i < m->n_base_images; i++) {
        TRY(sk_pb_begin(out, 5, &base));
        TRY(sk_pb_put_string(out, 1, m->base_images[i].image_id, SK_PB_IMPLICIT));
        TRY(sk_pb_put_string(out, 2, m->base_images[i].docker_tag, SK_PB_IMPLICIT));
        TRY(sk_pb_end(out, base));
    }
    TRY(msg_put_strs(out, 6, m->dockerfile_commands));
    TRY(msg_put_strs(out, 12, m->secret_ids));
    TRY(sk_pb_end(out, image));
    TRY(sk_pb_put_string(out, 4, m->app_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_bool(out, 7, m->force_build, SK_PB_IMPLICIT));
    TRY(sk_pb_put_string(out, 9, m->builder_version, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_encode_image_join_streaming(sk_buf *out, const sk_modal_image_join_streaming_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->image_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_float(out, 2, m->timeout, SK_PB_IMPLICIT));
    TRY(sk_pb_put_string(out, 3, m->last_entry_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_bool(out, 4, m->include_logs_for_finished, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_encode_secret_get_or_create(sk_buf *out, const sk_modal_secret_get_or_create_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->deployment_name, SK_PB_IMPLICIT));
    TRY(sk_pb_put_string(out, 3, m->environment_name, SK_PB_IMPLICIT));
    TRY(sk_pb_put_int32(out, 4, m->object_creation_type, SK_PB_IMPLICIT));
    TRY(msg_put_kvs(out, 5, m->env_dict));
    TRY(sk_pb_put_string(out, 6, m->app_id, SK_PB_IMPLICIT));
    TRY(msg_put_strs(out, 7, m->required_keys));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

static int msg_put_sandbox_definition(sk_buf *out, const sk_modal_sandbox_create_req *m)
{
    size_t def, res, gpu, ports, net;
    const sk_modal_sandbox_resources *r = &m->resources;
    if (sk_pb_begin(out, 2, &def) != 0 ||
        msg_put_strs(out, 1, m->entrypoint_args) != 0 ||
        sk_pb_put_string(out, 3, m->image_id, SK_PB_IMPLICIT) != 0 ||
        msg_put_strs(out, 4, m->secret_ids) != 0)
        return -1;
    if (sk_pb_begin(out, 5, &res) != 0 ||
        sk_pb_put_uint64(out, 2, r->memory_mb, SK_PB_IMPLICIT) != 0 ||
        sk_pb_put_uint64(out, 3, r->milli_cpu, SK_PB_IMPLICIT) != 0 ||
        sk_pb_begin(out, 4, &gpu) != 0 || sk_pb_end(out, gpu) != 0 ||
        sk_pb_put_uint64(out, 5, r->memory_mb_max, SK_PB_IMPLICIT) != 0 ||
        sk_pb_put_uint64(out, 6, r->ephemeral_disk_mb, SK_PB_IMPLICIT) != 0 ||
        sk_pb_put_uint64(out, 7, r->milli_cpu_max, SK_PB_IMPLICIT) != 0 ||
        sk_pb_end(out, res) != 0)
        return -1;
    if (sk_pb_put_uint64(out, 7, m->timeout_secs, SK_PB_IMPLICIT) != 0 ||
        sk_pb_put_string(out, 8, m->workdir, SK_PB_EXPLICIT) != 0 ||
        sk_pb_begin(out, 20, &ports) != 0 || sk_pb_end(out, ports) != 0 ||
        sk_pb_begin(out, 22, &net) != 0 ||
        sk_pb_put_int32(out, 1, m->network_access_type, SK_PB_IMPLICIT) != 0 ||
        sk_pb_end(out, net) != 0 ||
        sk_pb_put_string(out, 30, m->name, SK_PB_EXPLICIT) != 0)
        return -1;
    if (m->has_idle_timeout_secs &&
        sk_pb_put_uint64(out, 33, m->idle_timeout_secs, SK_PB_EXPLICIT) != 0)
        return -1;
    return sk_pb_end(out, def);
}

int sk_modal_encode_sandbox_create(sk_buf *out, const sk_modal_sandbox_create_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->app_id, SK_PB_IMPLICIT));
    TRY(msg_put_sandbox_definition(out, m));
    TRY(sk_pb_put_string(out, 3, m->environment_name, SK_PB_IMPLICIT));
    TRY(msg_put_kvs(out, 4, m->tags));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_encode_sandbox_get_from_name(sk_buf *out, const sk_modal_sandbox_get_from_name_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->sandbox_name, SK_PB_IMPLICIT));
    TRY(sk_pb_put_string(out, 2, m->environment_name, SK_PB_IMPLICIT));
    TRY(sk_pb_put_string(out, 3, m->app_name, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_encode_sandbox_wait(sk_buf *out, const sk_modal_sandbox_wait_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->sandbox_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_float(out, 2, m->timeout, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_encode_sandbox_terminate(sk_buf *out, const sk_modal_sandbox_terminate_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->sandbox_id, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_encode_sandbox_get_task_id(sk_buf *out, const sk_modal_sandbox_get_task_id_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->sandbox_id, SK_PB_IMPLICIT));
    if (m->has_timeout)
        TRY(sk_pb_put_float(out, 2, m->timeout, SK_PB_EXPLICIT));
    TRY(sk_pb_put_bool(out, 3, m->wait_until_ready, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_encode_task_get_command_router_access(sk_buf *out,
                                                   const sk_modal_task_get_command_router_access_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->task_id, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_encode_sandbox_snapshot_fs(sk_buf *out, const sk_modal_sandbox_snapshot_fs_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->sandbox_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_float(out, 2, m->timeout, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_encode_task_snapshot_filesystem(sk_buf *out, const sk_modal_task_snapshot_filesystem_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->task_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_string(out, 2, m->snapshot_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_int64(out, 3, m->ttl_seconds, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_encode_task_exec_start(sk_buf *out, const sk_modal_task_exec_start_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->task_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_string(out, 2, m->exec_id, SK_PB_IMPLICIT));
    TRY(msg_put_strs(out, 3, m->command_args));
    TRY(sk_pb_put_int32(out, 4, m->stdout_config, SK_PB_IMPLICIT));
    TRY(sk_pb_put_int32(out, 5, m->stderr_config, SK_PB_IMPLICIT));
    if (m->has_timeout_secs)
        TRY(sk_pb_put_uint64(out, 6, m->timeout_secs, SK_PB_EXPLICIT));
    TRY(sk_pb_put_string(out, 7, m->workdir, SK_PB_EXPLICIT));
    TRY(msg_put_strs(out, 8, m->secret_ids));
    TRY(msg_put_kvs(out, 12, m->env));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_encode_task_exec_stdio_read(sk_buf *out, const sk_modal_task_exec_stdio_read_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->task_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_string(out, 2, m->exec_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_uint64(out, 3, m->offset, SK_PB_IMPLICIT));
    TRY(sk_pb_put_int32(out, 4, m->file_descriptor, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_encode_task_exec_ref(sk_buf *out, const sk_modal_task_exec_ref *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->task_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_string(out, 2, m->exec_id, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_encode_task_exec_stdin_write(sk_buf *out, const sk_modal_task_exec_stdin_write_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->task_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_string(out, 2, m->exec_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_uint64(out, 3, m->offset, SK_PB_IMPLICIT));
    TRY(sk_pb_put_bytes(out, 4, m->data, m->len, SK_PB_IMPLICIT));
    TRY(sk_pb_put_bool(out, 5, m->eof, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_encode_container_filesystem_exec(sk_buf *out, const sk_modal_container_filesystem_exec_req *m)
{
    size_t start = out->len, mark;
    TRY(sk_pb_begin(out, (uint32_t)m->kind, &mark));
    switch (m->kind) {
    case SK_MODAL_FS_OPEN:
        if (m->fd)
            TRY(sk_pb_put_string(out, 1, m->fd, SK_PB_EXPLICIT));
        TRY(sk_pb_put_string(out, 2, m->path, SK_PB_IMPLICIT));
        TRY(sk_pb_put_string(out, 3, m->mode, SK_PB_IMPLICIT));
        break;
    case SK_MODAL_FS_WRITE:
        TRY(sk_pb_put_string(out, 1, m->fd, SK_PB_IMPLICIT));
        TRY(sk_pb_put_bytes(out, 2, m->data, m->len, SK_PB_IMPLICIT));
        break;
    case SK_MODAL_FS_READ:
        TRY(sk_pb_put_string(out, 1, m->fd, SK_PB_IMPLICIT));
        if (m->has_n)
            TRY(sk_pb_put_uint64(out, 2, m->n, SK_PB_EXPLICIT));
        break;
    case SK_MODAL_FS_FLUSH:
    case SK_MODAL_FS_CLOSE:
        TRY(sk_pb_put_string(out, 1, m->fd, SK_PB_IMPLICIT));
        break;
    default:
        errno = EINVAL;
        goto fail;
    }
    TRY(sk_pb_end(out, mark));
    TRY(sk_pb_put_string(out, 10, m->task_id, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_encode_container_filesystem_exec_get_output(sk_buf *out, const char *exec_id, float timeout_secs)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, exec_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_float(out, 2, timeout_secs, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

/* ---- responses: one decoder driven by a table per message ----
 *
 * A table lists the fields the client reads: number, kind, and where the
 * value goes in the caller's struct. msg_read walks the wire once; a field
 * that is not in the table, or whose wire type does not fit its kind, is
 * skipped. A sub-message decodes into the same struct on every occurrence,
 * so repeated occurrences merge, as protobuf specifies. */

typedef enum msg_kind {
    MSG_STR,     /* string, implicit presence: "" after decoding when absent */
    MSG_OPT_STR, /* optional string: stays NULL when absent */
    MSG_BYTES,   /* owned copy (NUL-terminated, never NULL after decoding); length at aux */
    MSG_VIEW,    /* bytes read in place (points into the input); length at aux */
    MSG_INT32,   /* varint, low 32 bits */
    MSG_UINT64,  /* varint */
    MSG_BOOL,    /* varint */
    MSG_FLOAT,   /* fixed32 */
    MSG_EXIT,    /* a member of oneof exit_status: int32 at off, tag stored at aux */
    MSG_SUB,     /* sub-message of type sub; bool "present" flag at aux */
    MSG_CUSTOM,  /* length-delimited field handed to custom */
} msg_kind;

typedef struct msg_type msg_type;
typedef struct msg_field {
    uint32_t num;
    msg_kind kind;
    size_t off, aux;
    int tag;
    const msg_type *sub;
    int (*custom)(const sk_pb_field *f, void *out); /* -1 with errno set */
} msg_field;

struct msg_type {
    const msg_field *fields;
    size_t n;
    size_t size; /* of the decoded struct */
};

#define MSG_TYPE(name, T, ...)                                   \
    static const msg_field name##_FIELDS[] = {__VA_ARGS__};      \
    static const msg_type name = {name##_FIELDS, sizeof name##_FIELDS / sizeof name##_FIELDS[0], sizeof(T)}

#define F_STR(T, n, m) {.num = n, .kind = MSG_STR, .off = offsetof(T, m)}
#define F_OPT_STR(T, n, m) {.num = n, .kind = MSG_OPT_STR, .off = offsetof(T, m)}
#define F_BYTES(T, n, m, len) {.num = n, .kind = MSG_BYTES, .off = offsetof(T, m), .aux = offsetof(T, len)}
#define F_VIEW(T, n, m, len) {.num = n, .kind = MSG_VIEW, .off = offsetof(T, m), .aux = offsetof(T, len)}
#define F_INT32(T, n, m) {.num = n, .kind = MSG_INT32, .off = offsetof(T, m)}
#define F_UINT64(T, n, m) {.num = n, .kind = MSG_UINT64, .off = offsetof(T, m)}
#define F_BOOL(T, n, m) {.num = n, .kind = MSG_BOOL, .off = offsetof(T, m)}
#define F_FLOAT(T, n, m) {.num = n, .kind = MSG_FLOAT, .off = offsetof(T, m)}
#define F_EXIT(T, n, m, which, t) {.num = n, .kind = MSG_EXIT, .off = offsetof(T, m), .aux = offsetof(T, which), .tag = t}
#define F_SUB(T, n, m, has, type) {.num = n, .kind = MSG_SUB, .off = offsetof(T, m), .aux = offsetof(T, has), .sub = &type}
#define F_CUSTOM(n, fn) {.num = n, .kind = MSG_CUSTOM, .custom = fn}

#define MSG_AT(p, off, T) ((T *)(void *)((char *)(p) + (off)))

static int msg_bad(void)
{
    errno = EBADMSG;
    return -1;
}

static bool msg_wire_fits(msg_kind k, sk_pb_wire w)
{
    switch (k) {
    case MSG_INT32:
    case MSG_UINT64:
    case MSG_BOOL:
    case MSG_EXIT:
        return w == SK_PB_VARINT;
    case MSG_FLOAT:
        return w == SK_PB_I32;
    default:
        return w == SK_PB_LEN;
    }
}

static int msg_read(const msg_type *t, const void *data, size_t len, void *out);

static int msg_set(const msg_field *d, const sk_pb_field *f, void *out)
{
    switch (d->kind) {
    case MSG_STR:
    case MSG_OPT_STR:
        return sk_pb_dup_string(f, MSG_AT(out, d->off, char *));
    case MSG_BYTES:
        return sk_pb_dup_bytes(f, MSG_AT(out, d->off, uint8_t *), MSG_AT(out, d->aux, size_t));
    case MSG_VIEW:
        *MSG_AT(out, d->off, const char *) = (const char *)f->data;
        *MSG_AT(out, d->aux, size_t) = f->len;
        return 0;
    case MSG_INT32:
        *MSG_AT(out, d->off, int32_t) = sk_pb_as_int32(f);
        return 0;
    case MSG_UINT64:
        *MSG_AT(out, d->off, uint64_t) = f->v;
        return 0;
    case MSG_BOOL:
        *MSG_AT(out, d->off, bool) = sk_pb_as_bool(f);
        return 0;
    case MSG_FLOAT:
        *MSG_AT(out, d->off, float) = sk_pb_as_float(f);
        return 0;
    case MSG_EXIT: /* the last member on the wire wins */
        *MSG_AT(out, d->off, int32_t) = sk_pb_as_int32(f);
        *MSG_AT(out, d->aux, sk_modal_exit_kind) = (sk_modal_exit_kind)d->tag;
        return 0;
    case MSG_SUB:
        *MSG_AT(out, d->aux, bool) = true;
        return msg_read(d->sub, f->data, f->len, MSG_AT(out, d->off, char));
    case MSG_CUSTOM:
        return d->custom(f, out);
    }
    return msg_bad();
}

/* Fills *out from the wire without clearing it first. -1 with errno
 * EBADMSG (malformed) or ENOMEM; owned members set so far stay in *out. */
static int msg_read(const msg_type *t, const void *data, size_t len, void *out)
{
    sk_pb_reader rd;
    sk_pb_field f;
    int rc;
    sk_pb_reader_init(&rd, data, len);
    while ((rc = sk_pb_next(&rd, &f)) > 0) {
        for (size_t i = 0; i < t->n; i++) {
            const msg_field *d = &t->fields[i];
            if (d->num != f.num)
                continue;
            if (msg_wire_fits(d->kind, f.wire) && msg_set(d, &f, out) != 0)
                return -1;
            break;
        }
    }
    return rc < 0 ? msg_bad() : 0;
}

/* After reading: absent implicit strings become "", absent bytes an empty
 * buffer, present sub-messages likewise. */
static int msg_defaults(const msg_type *t, void *out)
{
    for (size_t i = 0; i < t->n; i++) {
        const msg_field *d = &t->fields[i];
        bool oom = false;
        if (d->kind == MSG_STR) {
            char **s = MSG_AT(out, d->off, char *);
            oom = !*s && !(*s = calloc(1, 1));
        } else if (d->kind == MSG_BYTES) {
            uint8_t **b = MSG_AT(out, d->off, uint8_t *);
            oom = !*b && !(*b = calloc(1, 1));
        }
        if (oom) {
            errno = ENOMEM;
            return -1;
        }
        if (d->kind == MSG_SUB && *MSG_AT(out, d->aux, bool) && msg_defaults(d->sub, MSG_AT(out, d->off, char)) != 0)
            return -1;
    }
    return 0;
}

static void msg_release(const msg_type *t, void *m)
{
    for (size_t i = 0; i < t->n; i++) {
        const msg_field *d = &t->fields[i];
        if (d->kind == MSG_STR || d->kind == MSG_OPT_STR)
            free(*MSG_AT(m, d->off, char *));
        else if (d->kind == MSG_BYTES)
            free(*MSG_AT(m, d->off, uint8_t *));
        else if (d->kind == MSG_SUB)
            msg_release(d->sub, MSG_AT(m, d->off, char));
    }
    memset(m, 0, t->size);
}

/* A whole response: on failure *out is left zeroed and errno kept. */
static int msg_decode(const msg_type *t, const void *data, size_t len, void *out)
{
    memset(out, 0, t->size);
    if (msg_read(t, data, len, out) == 0 && msg_defaults(t, out) == 0)
        return 0;
    int e = errno;
    msg_release(t, out);
    errno = e;
    return -1;
}

/* The public pair for response type T: sk_modal_decode_<name> and T_free. */
#define MSG_DECODER(name, T, type)                                          \
    int sk_modal_decode_##name(const void *data, size_t len, T *out)       \
    {                                                                       \
        return msg_decode(&type, data, len, out);                           \
    }                                                                       \
    void T##_free(T *m)                                                     \
    {                                                                       \
        msg_release(&type, m);                                              \
    }

MSG_TYPE(GENERIC_RESULT, sk_modal_generic_result,
         F_INT32(sk_modal_generic_result, 1, status),
         F_STR(sk_modal_generic_result, 2, exception),
         F_INT32(sk_modal_generic_result, 3, exitcode),
         F_STR(sk_modal_generic_result, 4, traceback));

void sk_modal_generic_result_free(sk_modal_generic_result *r)
{
    msg_release(&GENERIC_RESULT, r);
}

MSG_TYPE(AUTH_TOKEN_GET, sk_modal_auth_token_get_resp,
         F_STR(sk_modal_auth_token_get_resp, 1, token));
MSG_DECODER(auth_token_get, sk_modal_auth_token_get_resp, AUTH_TOKEN_GET)

MSG_TYPE(APP_GET_OR_CREATE, sk_modal_app_get_or_create_resp,
         F_STR(sk_modal_app_get_or_create_resp, 1, app_id));
MSG_DECODER(app_get_or_create, sk_modal_app_get_or_create_resp, APP_GET_OR_CREATE)

MSG_TYPE(IMAGE_GET_OR_CREATE, sk_modal_image_get_or_create_resp,
         F_STR(sk_modal_image_get_or_create_resp, 1, image_id),
         F_SUB(sk_modal_image_get_or_create_resp, 2, result, has_result, GENERIC_RESULT));
MSG_DECODER(image_get_or_create, sk_modal_image_get_or_create_resp, IMAGE_GET_OR_CREATE)

/* 2 task_logs and 5 metadata are not read, as in the JS SDK. */
MSG_TYPE(IMAGE_JOIN_STREAMING, sk_modal_image_join_streaming_resp,
         F_SUB(sk_modal_image_join_streaming_resp, 1, result, has_result, GENERIC_RESULT),
         F_STR(sk_modal_image_join_streaming_resp, 3, entry_id),
         F_BOOL(sk_modal_image_join_streaming_resp, 4, eof));
MSG_DECODER(image_join_streaming, sk_modal_image_join_streaming_resp, IMAGE_JOIN_STREAMING)

MSG_TYPE(SECRET_GET_OR_CREATE, sk_modal_secret_get_or_create_resp,
         F_STR(sk_modal_secret_get_or_create_resp, 1, secret_id));
MSG_DECODER(secret_get_or_create, sk_modal_secret_get_or_create_resp, SECRET_GET_OR_CREATE)

MSG_TYPE(SANDBOX_CREATE, sk_modal_sandbox_create_resp,
         F_STR(sk_modal_sandbox_create_resp, 1, sandbox_id));
MSG_DECODER(sandbox_create, sk_modal_sandbox_create_resp, SANDBOX_CREATE)

MSG_TYPE(SANDBOX_GET_FROM_NAME, sk_modal_sandbox_get_from_name_resp,
         F_STR(sk_modal_sandbox_get_from_name_resp, 1, sandbox_id));
MSG_DECODER(sandbox_get_from_name, sk_modal_sandbox_get_from_name_resp, SANDBOX_GET_FROM_NAME)

MSG_TYPE(SANDBOX_WAIT, sk_modal_sandbox_wait_resp,
         F_SUB(sk_modal_sandbox_wait_resp, 1, result, has_result, GENERIC_RESULT));
MSG_DECODER(sandbox_wait, sk_modal_sandbox_wait_resp, SANDBOX_WAIT)

MSG_TYPE(SANDBOX_TERMINATE, sk_modal_sandbox_terminate_resp,
         F_SUB(sk_modal_sandbox_terminate_resp, 1, existing_result, has_existing_result, GENERIC_RESULT));
MSG_DECODER(sandbox_terminate, sk_modal_sandbox_terminate_resp, SANDBOX_TERMINATE)

MSG_TYPE(SANDBOX_GET_TASK_ID, sk_modal_sandbox_get_task_id_resp,
         F_OPT_STR(sk_modal_sandbox_get_task_id_resp, 1, task_id),
         F_SUB(sk_modal_sandbox_get_task_id_resp, 2, task_result, has_task_result, GENERIC_RESULT));
MSG_DECODER(sandbox_get_task_id, sk_modal_sandbox_get_task_id_resp, SANDBOX_GET_TASK_ID)

MSG_TYPE(TASK_GET_COMMAND_ROUTER_ACCESS, sk_modal_task_get_command_router_access_resp,
         F_STR(sk_modal_task_get_command_router_access_resp, 1, jwt),
         F_STR(sk_modal_task_get_command_router_access_resp, 2, url));
MSG_DECODER(task_get_command_router_access, sk_modal_task_get_command_router_access_resp,
            TASK_GET_COMMAND_ROUTER_ACCESS)

MSG_TYPE(SANDBOX_SNAPSHOT_FS, sk_modal_sandbox_snapshot_fs_resp,
         F_STR(sk_modal_sandbox_snapshot_fs_resp, 1, image_id),
         F_SUB(sk_modal_sandbox_snapshot_fs_resp, 2, result, has_result, GENERIC_RESULT));
MSG_DECODER(sandbox_snapshot_fs, sk_modal_sandbox_snapshot_fs_resp, SANDBOX_SNAPSHOT_FS)

MSG_TYPE(TASK_SNAPSHOT_FILESYSTEM, sk_modal_task_snapshot_filesystem_resp,
         F_STR(sk_modal_task_snapshot_filesystem_resp, 1, image_id));
MSG_DECODER(task_snapshot_filesystem, sk_modal_task_snapshot_filesystem_resp, TASK_SNAPSHOT_FILESYSTEM)

MSG_TYPE(TASK_EXEC_STDIO_READ, sk_modal_task_exec_stdio_read_resp,
         F_BYTES(sk_modal_task_exec_stdio_read_resp, 1, data, len));
MSG_DECODER(task_exec_stdio_read, sk_modal_task_exec_stdio_read_resp, TASK_EXEC_STDIO_READ)

typedef struct msg_chunk {
    const char *data;
    size_t len;
} msg_chunk;

MSG_TYPE(TASK_EXEC_STDIO_CHUNK, msg_chunk,
         F_VIEW(msg_chunk, 1, data, len));

int sk_modal_decode_task_exec_stdio_chunk(const void *data, size_t len, const uint8_t **chunk, size_t *chunk_len)
{
    msg_chunk c = {0};
    int rc = msg_read(&TASK_EXEC_STDIO_CHUNK, data, len, &c);
    *chunk = rc == 0 ? (const uint8_t *)c.data : NULL;
    *chunk_len = rc == 0 ? c.len : 0;
    return rc;
}

MSG_TYPE(CONTAINER_FILESYSTEM_EXEC, sk_modal_container_filesystem_exec_resp,
         F_STR(sk_modal_container_filesystem_exec_resp, 1, exec_id),
         F_OPT_STR(sk_modal_container_filesystem_exec_resp, 2, file_descriptor));
MSG_DECODER(container_filesystem_exec, sk_modal_container_filesystem_exec_resp, CONTAINER_FILESYSTEM_EXEC)

/* TaskExecWait and TaskExecPoll: oneof exit_status { code = 1; signal = 2 }.
 * Owns nothing, so there is no _free. */
MSG_TYPE(TASK_EXEC_WAIT, sk_modal_task_exec_wait_resp,
         F_EXIT(sk_modal_task_exec_wait_resp, 1, value, kind, SK_MODAL_EXIT_CODE),
         F_EXIT(sk_modal_task_exec_wait_resp, 2, value, kind, SK_MODAL_EXIT_SIGNAL));

int sk_modal_decode_task_exec_wait(const void *data, size_t len, sk_modal_task_exec_wait_resp *out)
{
    return msg_decode(&TASK_EXEC_WAIT, data, len, out);
}

/* An empty message: every field is unknown. */
static const msg_type EMPTY = {NULL, 0, 0};

int sk_modal_decode_empty(const void *data, size_t len)
{
    return msg_read(&EMPTY, data, len, NULL);
}

/* ---- google.rpc.Status (grpc-status-details-bin) ----
 * Status { code = 1; message = 2; repeated Any details = 3 }, Any
 * { type_url = 1; value = 2 }, RPCRetryPolicy { retry_after_secs = 1 }. */

typedef struct msg_any {
    const char *type_url;
    size_t type_url_len;
    const char *value;
    size_t value_len;
} msg_any;

MSG_TYPE(ANY, msg_any,
         F_VIEW(msg_any, 1, type_url, type_url_len),
         F_VIEW(msg_any, 2, value, value_len));

typedef struct msg_retry_policy {
    float retry_after_secs;
} msg_retry_policy;

MSG_TYPE(RETRY_POLICY, msg_retry_policy,
         F_FLOAT(msg_retry_policy, 1, retry_after_secs));

#define MSG_RETRY_POLICY_SUFFIX "/modal.client.RPCRetryPolicy"

static int msg_status_detail(const sk_pb_field *f, void *out)
{
    sk_modal_status_details *st = out;
    msg_any any = {0};
    msg_retry_policy policy = {0};
    size_t sl = sizeof MSG_RETRY_POLICY_SUFFIX - 1;
    if (msg_read(&ANY, f->data, f->len, &any) != 0)
        return -1;
    if (!any.type_url || any.type_url_len < sl ||
        memcmp(any.type_url + any.type_url_len - sl, MSG_RETRY_POLICY_SUFFIX, sl) != 0)
        return 0;
    if (msg_read(&RETRY_POLICY, any.value, any.value_len, &policy) != 0)
        return -1;
    st->has_retry_after = true;
    st->retry_after_secs = policy.retry_after_secs;
    return 0;
}

MSG_TYPE(STATUS_DETAILS, sk_modal_status_details,
         F_INT32(sk_modal_status_details, 1, code),
         F_STR(sk_modal_status_details, 2, message),
         F_CUSTOM(3, msg_status_detail));
MSG_DECODER(status_details, sk_modal_status_details, STATUS_DETAILS)

/* ---- FilesystemRuntimeOutputBatch, read in place ----
 * { repeated bytes output = 1; SystemErrorMessage error = 2;
 *   batch_index = 3; eof = 4 }, SystemErrorMessage { error_code = 1;
 * error_message = 2 }. Output entries go to the callback as they are met. */

typedef struct msg_fs_batch_read {
    sk_modal_fs_batch batch; /* first: the table's offsets are into it */
    void (*output)(void *ud, const uint8_t *d, size_t n);
    void *ud;
} msg_fs_batch_read;

static int msg_fs_output(const sk_pb_field *f, void *out)
{
    msg_fs_batch_read *r = out;
    if (f->len && r->output)
        r->output(r->ud, f->data, f->len);
    return 0;
}

MSG_TYPE(SYSTEM_ERROR, sk_modal_fs_batch,
         F_INT32(sk_modal_fs_batch, 1, error_code),
         F_VIEW(sk_modal_fs_batch, 2, error_message, error_message_len));

static int msg_fs_error(const sk_pb_field *f, void *out)
{
    sk_modal_fs_batch *b = out;
    b->has_error = true;
    return msg_read(&SYSTEM_ERROR, f->data, f->len, b);
}

MSG_TYPE(FS_BATCH, msg_fs_batch_read,
         F_CUSTOM(1, msg_fs_output),
         F_CUSTOM(2, msg_fs_error),
         F_UINT64(sk_modal_fs_batch, 3, batch_index),
         F_BOOL(sk_modal_fs_batch, 4, eof));

int sk_modal_decode_fs_batch(const void *data, size_t len, sk_modal_fs_batch *out,
                             void (*output)(void *ud, const uint8_t *d, size_t n), void *ud)
{
    msg_fs_batch_read r = {.output = output, .ud = ud};
    int rc = msg_read(&FS_BATCH, data, len, &r);
    *out = r.batch;
    return rc;
}
