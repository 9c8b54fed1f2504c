/* Modal request encoders and response decoders; see modal_msg.h. Requests
 * are written by one encoder driven by a field table per message, field by
 * field in field-number order, as ts-proto writes them, so the bytes match
 * the JS SDK's for the same values. Responses are read by one decoder
 * driven by a field table per message. */
#include "modal_msg.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "pb.h"

/* ---- requests: one encoder driven by a table per message ----
 *
 * A table lists a request's fields in the order they are written (field
 * number order, docs/protocols/modal.md §2.1): number, kind, presence, and
 * where the value is in the caller's struct. A field guarded by a has_ flag
 * is written (with explicit presence) only when the flag is set. */

typedef enum req_kind {
    REQ_STR,    /* const char *; NULL is never written */
    REQ_INT32,  /* int32_t (enums too) */
    REQ_INT64,  /* int64_t */
    REQ_UINT32, /* uint32_t, written as uint64 */
    REQ_UINT64, /* uint64_t */
    REQ_BOOL,   /* bool */
    REQ_FLOAT,  /* float */
    REQ_BYTES,  /* const void *; length (size_t) at aux */
    REQ_STRS,   /* sk_modal_strs: a repeated string */
    REQ_SUB,    /* sub-message of type sub, read from the struct at off; always written */
    REQ_SUBS,   /* repeated sub-message: array pointer at off, count (size_t) at aux, elements of size */
} req_kind;

typedef struct req_type req_type;
/* Offsets and sizes are within request structs of a few hundred bytes
 * (a value that did not fit would be a constant-overflow error). */
typedef struct req_field {
    uint32_t num;
    uint8_t kind;     /* req_kind */
    uint8_t presence; /* sk_pb_presence */
    uint16_t off, aux, size;
    uint16_t has; /* offset + 1 of the bool that guards the field; 0: none */
    const req_type *sub;
} req_field;

struct req_type {
    const req_field *fields;
    size_t n;
};

#define REQ_TYPE(name, ...)                                \
    static const req_field name##_FIELDS[] = {__VA_ARGS__}; \
    static const req_type name = {name##_FIELDS, sizeof name##_FIELDS / sizeof name##_FIELDS[0]}

/* Implicit presence: left out when it holds the default. */
#define W_STR(T, n, m) {.num = n, .kind = REQ_STR, .off = offsetof(T, m)}
#define W_INT32(T, n, m) {.num = n, .kind = REQ_INT32, .off = offsetof(T, m)}
#define W_INT64(T, n, m) {.num = n, .kind = REQ_INT64, .off = offsetof(T, m)}
#define W_UINT32(T, n, m) {.num = n, .kind = REQ_UINT32, .off = offsetof(T, m)}
#define W_UINT64(T, n, m) {.num = n, .kind = REQ_UINT64, .off = offsetof(T, m)}
#define W_BOOL(T, n, m) {.num = n, .kind = REQ_BOOL, .off = offsetof(T, m)}
#define W_FLOAT(T, n, m) {.num = n, .kind = REQ_FLOAT, .off = offsetof(T, m)}
#define W_BYTES(T, n, m, len) {.num = n, .kind = REQ_BYTES, .off = offsetof(T, m), .aux = offsetof(T, len)}
/* `optional` string: NULL is unset, "" is written. */
#define W_OPT_STR(T, n, m) {.num = n, .kind = REQ_STR, .presence = SK_PB_EXPLICIT, .off = offsetof(T, m)}
/* `optional` scalar of kind K, written whenever the bool `flag` is set. */
#define W_HAS(T, n, K, m, flag) \
    {.num = n, .kind = REQ_##K, .presence = SK_PB_EXPLICIT, .off = offsetof(T, m), .has = offsetof(T, flag) + 1}
#define W_STRS(T, n, m) {.num = n, .kind = REQ_STRS, .off = offsetof(T, m)}
/* A sub-message whose fields are in the member m, or (W_NEST) in the same struct. */
#define W_SUB(T, n, m, type) {.num = n, .kind = REQ_SUB, .off = offsetof(T, m), .sub = &type}
#define W_NEST(n, type) {.num = n, .kind = REQ_SUB, .sub = &type}
#define W_SUBS(T, n, m, count, E, type) \
    {.num = n, .kind = REQ_SUBS, .off = offsetof(T, m), .aux = offsetof(T, count), .size = sizeof(E), .sub = &type}

/* The member at off, read through a const T *: a `const char *` member is
 * named `char *` here (the macro adds the const). */
#define REQ_AT(p, off, T) ((const T *)(const void *)((const char *)(p) + (off)))

/* A message with no fields the client sets; written empty. */
static const req_type EMPTY_REQ = {NULL, 0};

/* map<string,string> and SandboxTag entries: key = 1, value = 2. Empty
 * strings are left out of an entry, as ts-proto's entry encoders do. */
REQ_TYPE(KV_REQ, W_STR(sk_modal_kv, 1, key), W_STR(sk_modal_kv, 2, value));
#define W_KVS(T, num, m) W_SUBS(T, num, m.v, m.n, sk_modal_kv, KV_REQ)

/* Elements of a repeated string have no presence: "" is written too. */
static int msg_put_strs(sk_buf *b, uint32_t field, sk_modal_strs s)
{
    for (size_t i = 0; i < s.n; i++)
        if (sk_pb_put_string(b, field, s.v[i] ? s.v[i] : "", SK_PB_EXPLICIT) != 0)
            return -1;
    return 0;
}

static int req_write(const req_type *t, sk_buf *b, const void *m);

static int req_put_sub(sk_buf *b, uint32_t field, const req_type *t, const void *m)
{
    size_t mark;
    if (sk_pb_begin(b, field, &mark) != 0 || req_write(t, b, m) != 0)
        return -1;
    return sk_pb_end(b, mark);
}

static int req_put(const req_field *w, sk_buf *b, const void *m)
{
    sk_pb_presence pr = (sk_pb_presence)w->presence;
    const void *p;
    switch ((req_kind)w->kind) {
    case REQ_STR:
        return sk_pb_put_string(b, w->num, *REQ_AT(m, w->off, char *), pr);
    case REQ_INT32:
        return sk_pb_put_int32(b, w->num, *REQ_AT(m, w->off, int32_t), pr);
    case REQ_INT64:
        return sk_pb_put_int64(b, w->num, *REQ_AT(m, w->off, int64_t), pr);
    case REQ_UINT32:
        return sk_pb_put_uint64(b, w->num, *REQ_AT(m, w->off, uint32_t), pr);
    case REQ_UINT64:
        return sk_pb_put_uint64(b, w->num, *REQ_AT(m, w->off, uint64_t), pr);
    case REQ_BOOL:
        return sk_pb_put_bool(b, w->num, *REQ_AT(m, w->off, bool), pr);
    case REQ_FLOAT:
        return sk_pb_put_float(b, w->num, *REQ_AT(m, w->off, float), pr);
    case REQ_BYTES:
        return sk_pb_put_bytes(b, w->num, *REQ_AT(m, w->off, void *), *REQ_AT(m, w->aux, size_t), pr);
    case REQ_STRS:
        return msg_put_strs(b, w->num, *REQ_AT(m, w->off, sk_modal_strs));
    case REQ_SUB:
        return req_put_sub(b, w->num, w->sub, REQ_AT(m, w->off, char));
    case REQ_SUBS:
        /* The member is a pointer to the element type; copied, not read
         * through a pointer of another type. */
        memcpy(&p, REQ_AT(m, w->off, char), sizeof p);
        for (size_t i = 0; i < *REQ_AT(m, w->aux, size_t); i++)
            if (req_put_sub(b, w->num, w->sub, (const char *)p + i * w->size) != 0)
                return -1;
        return 0;
    }
    return -1;
}

static int req_write(const req_type *t, sk_buf *b, const void *m)
{
    for (size_t i = 0; i < t->n; i++) {
        const req_field *w = &t->fields[i];
        if (w->has && !*REQ_AT(m, w->has - 1, bool))
            continue;
        if (req_put(w, b, m) != 0)
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

static int req_encode(const req_type *t, sk_buf *out, const void *m)
{
    size_t start = out->len;
    return req_write(t, out, m) == 0 ? 0 : msg_encode_fail(out, start);
}

/* The public encoder for request type T: sk_modal_encode_<name>. */
#define REQ_ENCODER(name, T, type)                             \
    int sk_modal_encode_##name(sk_buf *out, const T *m)        \
    {                                                          \
        return req_encode(&type, out, m);                      \
    }

REQ_TYPE(APP_GET_OR_CREATE_REQ,
         W_STR(sk_modal_app_get_or_create_req, 1, app_name),
         W_STR(sk_modal_app_get_or_create_req, 2, environment_name),
         W_INT32(sk_modal_app_get_or_create_req, 3, object_creation_type));
REQ_ENCODER(app_get_or_create, sk_modal_app_get_or_create_req, APP_GET_OR_CREATE_REQ)

REQ_TYPE(BASE_IMAGE_REQ,
         W_STR(sk_modal_base_image, 1, image_id),
         W_STR(sk_modal_base_image, 2, docker_tag));
/* Image, always sent; its fields are in the request struct. */
REQ_TYPE(IMAGE_REQ,
         W_SUBS(sk_modal_image_get_or_create_req, 5, base_images, n_base_images, sk_modal_base_image,
                BASE_IMAGE_REQ),
         W_STRS(sk_modal_image_get_or_create_req, 6, dockerfile_commands),
         W_STRS(sk_modal_image_get_or_create_req, 12, secret_ids));
REQ_TYPE(IMAGE_GET_OR_CREATE_REQ,
         W_NEST(2, IMAGE_REQ),
         W_STR(sk_modal_image_get_or_create_req, 4, app_id),
         W_BOOL(sk_modal_image_get_or_create_req, 7, force_build),
         W_STR(sk_modal_image_get_or_create_req, 9, builder_version));
REQ_ENCODER(image_get_or_create, sk_modal_image_get_or_create_req, IMAGE_GET_OR_CREATE_REQ)

REQ_TYPE(IMAGE_JOIN_STREAMING_REQ,
         W_STR(sk_modal_image_join_streaming_req, 1, image_id),
         W_FLOAT(sk_modal_image_join_streaming_req, 2, timeout),
         W_STR(sk_modal_image_join_streaming_req, 3, last_entry_id),
         W_BOOL(sk_modal_image_join_streaming_req, 4, include_logs_for_finished));
REQ_ENCODER(image_join_streaming, sk_modal_image_join_streaming_req, IMAGE_JOIN_STREAMING_REQ)

REQ_TYPE(SECRET_GET_OR_CREATE_REQ,
         W_STR(sk_modal_secret_get_or_create_req, 1, deployment_name),
         W_STR(sk_modal_secret_get_or_create_req, 3, environment_name),
         W_INT32(sk_modal_secret_get_or_create_req, 4, object_creation_type),
         W_KVS(sk_modal_secret_get_or_create_req, 5, env_dict),
         W_STR(sk_modal_secret_get_or_create_req, 6, app_id),
         W_STRS(sk_modal_secret_get_or_create_req, 7, required_keys));
REQ_ENCODER(secret_get_or_create, sk_modal_secret_get_or_create_req, SECRET_GET_OR_CREATE_REQ)

/* Resources, with an empty gpu_config (4). */
REQ_TYPE(RESOURCES_REQ,
         W_UINT32(sk_modal_sandbox_resources, 2, memory_mb),
         W_UINT32(sk_modal_sandbox_resources, 3, milli_cpu),
         W_NEST(4, EMPTY_REQ),
         W_UINT32(sk_modal_sandbox_resources, 5, memory_mb_max),
         W_UINT32(sk_modal_sandbox_resources, 6, ephemeral_disk_mb),
         W_UINT32(sk_modal_sandbox_resources, 7, milli_cpu_max));
REQ_TYPE(NETWORK_ACCESS_REQ,
         W_INT32(sk_modal_sandbox_create_req, 1, network_access_type));
/* The Sandbox definition, with an empty open_ports (20). */
REQ_TYPE(SANDBOX_DEFINITION_REQ,
         W_STRS(sk_modal_sandbox_create_req, 1, entrypoint_args),
         W_STR(sk_modal_sandbox_create_req, 3, image_id),
         W_STRS(sk_modal_sandbox_create_req, 4, secret_ids),
         W_SUB(sk_modal_sandbox_create_req, 5, resources, RESOURCES_REQ),
         W_UINT32(sk_modal_sandbox_create_req, 7, timeout_secs),
         W_OPT_STR(sk_modal_sandbox_create_req, 8, workdir),
         W_NEST(20, EMPTY_REQ),
         W_NEST(22, NETWORK_ACCESS_REQ),
         W_OPT_STR(sk_modal_sandbox_create_req, 30, name),
         W_HAS(sk_modal_sandbox_create_req, 33, UINT32, idle_timeout_secs, has_idle_timeout_secs));
REQ_TYPE(SANDBOX_CREATE_REQ,
         W_STR(sk_modal_sandbox_create_req, 1, app_id),
         W_NEST(2, SANDBOX_DEFINITION_REQ),
         W_STR(sk_modal_sandbox_create_req, 3, environment_name),
         W_KVS(sk_modal_sandbox_create_req, 4, tags));
REQ_ENCODER(sandbox_create, sk_modal_sandbox_create_req, SANDBOX_CREATE_REQ)

REQ_TYPE(SANDBOX_GET_FROM_NAME_REQ,
         W_STR(sk_modal_sandbox_get_from_name_req, 1, sandbox_name),
         W_STR(sk_modal_sandbox_get_from_name_req, 2, environment_name),
         W_STR(sk_modal_sandbox_get_from_name_req, 3, app_name));
REQ_ENCODER(sandbox_get_from_name, sk_modal_sandbox_get_from_name_req, SANDBOX_GET_FROM_NAME_REQ)

REQ_TYPE(SANDBOX_WAIT_REQ,
         W_STR(sk_modal_sandbox_wait_req, 1, sandbox_id),
         W_FLOAT(sk_modal_sandbox_wait_req, 2, timeout));
REQ_ENCODER(sandbox_wait, sk_modal_sandbox_wait_req, SANDBOX_WAIT_REQ)

REQ_TYPE(SANDBOX_TERMINATE_REQ,
         W_STR(sk_modal_sandbox_terminate_req, 1, sandbox_id));
REQ_ENCODER(sandbox_terminate, sk_modal_sandbox_terminate_req, SANDBOX_TERMINATE_REQ)

REQ_TYPE(SANDBOX_GET_TASK_ID_REQ,
         W_STR(sk_modal_sandbox_get_task_id_req, 1, sandbox_id),
         W_HAS(sk_modal_sandbox_get_task_id_req, 2, FLOAT, timeout, has_timeout),
         W_BOOL(sk_modal_sandbox_get_task_id_req, 3, wait_until_ready));
REQ_ENCODER(sandbox_get_task_id, sk_modal_sandbox_get_task_id_req, SANDBOX_GET_TASK_ID_REQ)

REQ_TYPE(TASK_GET_COMMAND_ROUTER_ACCESS_REQ,
         W_STR(sk_modal_task_get_command_router_access_req, 1, task_id));
REQ_ENCODER(task_get_command_router_access, sk_modal_task_get_command_router_access_req,
            TASK_GET_COMMAND_ROUTER_ACCESS_REQ)

REQ_TYPE(SANDBOX_SNAPSHOT_FS_REQ,
         W_STR(sk_modal_sandbox_snapshot_fs_req, 1, sandbox_id),
         W_FLOAT(sk_modal_sandbox_snapshot_fs_req, 2, timeout));
REQ_ENCODER(sandbox_snapshot_fs, sk_modal_sandbox_snapshot_fs_req, SANDBOX_SNAPSHOT_FS_REQ)

REQ_TYPE(TASK_SNAPSHOT_FILESYSTEM_REQ,
         W_STR(sk_modal_task_snapshot_filesystem_req, 1, task_id),
         W_STR(sk_modal_task_snapshot_filesystem_req, 2, snapshot_id),
         W_INT64(sk_modal_task_snapshot_filesystem_req, 3, ttl_seconds));
REQ_ENCODER(task_snapshot_filesystem, sk_modal_task_snapshot_filesystem_req, TASK_SNAPSHOT_FILESYSTEM_REQ)

REQ_TYPE(TASK_EXEC_START_REQ,
         W_STR(sk_modal_task_exec_start_req, 1, task_id),
         W_STR(sk_modal_task_exec_start_req, 2, exec_id),
         W_STRS(sk_modal_task_exec_start_req, 3, command_args),
         W_INT32(sk_modal_task_exec_start_req, 4, stdout_config),
         W_INT32(sk_modal_task_exec_start_req, 5, stderr_config),
         W_HAS(sk_modal_task_exec_start_req, 6, UINT32, timeout_secs, has_timeout_secs),
         W_OPT_STR(sk_modal_task_exec_start_req, 7, workdir),
         W_STRS(sk_modal_task_exec_start_req, 8, secret_ids),
         W_KVS(sk_modal_task_exec_start_req, 12, env));
REQ_ENCODER(task_exec_start, sk_modal_task_exec_start_req, TASK_EXEC_START_REQ)

REQ_TYPE(TASK_EXEC_STDIO_READ_REQ,
         W_STR(sk_modal_task_exec_stdio_read_req, 1, task_id),
         W_STR(sk_modal_task_exec_stdio_read_req, 2, exec_id),
         W_UINT64(sk_modal_task_exec_stdio_read_req, 3, offset),
         W_INT32(sk_modal_task_exec_stdio_read_req, 4, file_descriptor));
REQ_ENCODER(task_exec_stdio_read, sk_modal_task_exec_stdio_read_req, TASK_EXEC_STDIO_READ_REQ)

REQ_TYPE(TASK_EXEC_REF_REQ,
         W_STR(sk_modal_task_exec_ref, 1, task_id),
         W_STR(sk_modal_task_exec_ref, 2, exec_id));
REQ_ENCODER(task_exec_ref, sk_modal_task_exec_ref, TASK_EXEC_REF_REQ)

REQ_TYPE(TASK_EXEC_STDIN_WRITE_REQ,
         W_STR(sk_modal_task_exec_stdin_write_req, 1, task_id),
         W_STR(sk_modal_task_exec_stdin_write_req, 2, exec_id),
         W_UINT64(sk_modal_task_exec_stdin_write_req, 3, offset),
         W_BYTES(sk_modal_task_exec_stdin_write_req, 4, data, len),
         W_BOOL(sk_modal_task_exec_stdin_write_req, 5, eof));
REQ_ENCODER(task_exec_stdin_write, sk_modal_task_exec_stdin_write_req, TASK_EXEC_STDIN_WRITE_REQ)

/* ContainerFilesystemExec: the operation is a oneof member whose field
 * number is the kind, its fields read from the request struct; then
 * task_id = 10. */
REQ_TYPE(FS_OPEN_REQ,
         W_OPT_STR(sk_modal_container_filesystem_exec_req, 1, fd),
         W_STR(sk_modal_container_filesystem_exec_req, 2, path),
         W_STR(sk_modal_container_filesystem_exec_req, 3, mode));
REQ_TYPE(FS_WRITE_REQ,
         W_STR(sk_modal_container_filesystem_exec_req, 1, fd),
         W_BYTES(sk_modal_container_filesystem_exec_req, 2, data, len));
REQ_TYPE(FS_READ_REQ,
         W_STR(sk_modal_container_filesystem_exec_req, 1, fd),
         W_HAS(sk_modal_container_filesystem_exec_req, 2, UINT32, n, has_n));
/* Flush and close. */
REQ_TYPE(FS_FD_REQ,
         W_STR(sk_modal_container_filesystem_exec_req, 1, fd));

static const req_type *fs_op_type(sk_modal_fs_kind kind)
{
    switch (kind) {
    case SK_MODAL_FS_OPEN:
        return &FS_OPEN_REQ;
    case SK_MODAL_FS_WRITE:
        return &FS_WRITE_REQ;
    case SK_MODAL_FS_READ:
        return &FS_READ_REQ;
    case SK_MODAL_FS_FLUSH:
    case SK_MODAL_FS_CLOSE:
        return &FS_FD_REQ;
    }
    return NULL;
}

int sk_modal_encode_container_filesystem_exec(sk_buf *out, const sk_modal_container_filesystem_exec_req *m)
{
    const req_type *op = fs_op_type(m->kind);
    size_t start = out->len;
    if (op && req_put_sub(out, (uint32_t)m->kind, op, m) == 0 &&
        sk_pb_put_string(out, 10, m->task_id, SK_PB_IMPLICIT) == 0)
        return 0;
    return msg_encode_fail(out, start);
}

typedef struct msg_fs_get_output_req {
    const char *exec_id;
    float timeout_secs;
} msg_fs_get_output_req;

REQ_TYPE(FS_GET_OUTPUT_REQ,
         W_STR(msg_fs_get_output_req, 1, exec_id),
         W_FLOAT(msg_fs_get_output_req, 2, timeout_secs));

int sk_modal_encode_container_filesystem_exec_get_output(sk_buf *out, const char *exec_id, float timeout_secs)
{
    msg_fs_get_output_req m = {exec_id, timeout_secs};
    return req_encode(&FS_GET_OUTPUT_REQ, out, &m);
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
