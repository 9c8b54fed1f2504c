/* The Modal messages the C client sends and receives
 * (docs/protocols/modal.md §2.3, §2.4), on top of the wire primitives in
 * pb.h. Field numbers and presence
 * are those of modal.proto, the file the reference server loads: the
 * request goldens in spec/c/modal_msg_test.c, which the encoders must
 * match, are protoc's bytes for it (spec/modal_schema_spec.lua re-encodes
 * them).
 *
 * Why not generated with protoc-c from modal.proto (and why libprotobuf-c is
 * not linked): measured with protobuf-c 1.4.1 (Debian 12) on code generated
 * from this modal.proto, libprotobuf-c's unpack
 * - rejects the whole message when a known field has another wire type
 *   (SandboxCreateResponse 08 05: NULL), where ts-proto and this decoder
 *   skip the field;
 * - rejects a message holding an unknown group (field 107 as a group
 *   before the real field: NULL), where the protobuf spec says skip it;
 * - accepts a string holding NUL and cuts it there ("a\0b" reads as "a"),
 *   so a lying server could make the client see another token or URL than
 *   the bytes sent; this decoder rejects it (EBADMSG);
 * - copies every unknown field into the message (n_unknown_fields).
 * On encode, a oneof string member set to protobuf_c_empty_string is left
 * out (presence lost) and a -0.0 float is dropped. And protoc-c 1.4.1
 * refuses proto3 `optional` outright ("hasn't been updated to support
 * optional fields in proto3"). Keeping the behaviour above would need a
 * wire pre-pass as large as pb.c's reader in front of the generated code
 * (9.1k lines; 86 kB of object code at -O2, against 16 kB for pb.o and
 * modal_msg.o).
 * So the codec is pb.c plus a field table per message, request or response (modal_msg.c),
 * checked against protoc's bytes for modal.proto, by the fuzz harness
 * spec/fuzz/fuzz_pb.c, and end to end against the reference server that
 * the official SDK is tested on (spec/servers/modal).
 *
 * Requests: caller-filled structs of BORROWED pointers, encoded into an
 * sk_buf (appended; the caller adds the gRPC frame). For implicit-presence
 * strings NULL and "" both mean "not sent"; for `optional` strings NULL means
 * unset and "" is sent. Encoders return 0, or -1 on ENOMEM.
 *
 * Responses: decoded into caller-provided structs that OWN their strings.
 * After a successful decode every implicit-presence string is non-NULL (""
 * when absent); an `optional` string is NULL when absent. Decoders return 0,
 * or -1 with errno EBADMSG (malformed input: the struct is left zeroed) or
 * ENOMEM. Unknown fields, and known fields with an unexpected wire type, are
 * skipped. Each *_free releases the members (not the struct) and is safe on a
 * zeroed struct. */
#ifndef SK_MODAL_MSG_H
#define SK_MODAL_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../../buf.h"

/* ---- RPC paths ---- */
#define SK_MODAL_CP "/modal.client.ModalClient/"
#define SK_MODAL_ROUTER "/modal.task_command_router.TaskCommandRouter/"
#define SK_MODAL_RPC_AUTH_TOKEN_GET SK_MODAL_CP "AuthTokenGet"
#define SK_MODAL_RPC_APP_GET_OR_CREATE SK_MODAL_CP "AppGetOrCreate"
#define SK_MODAL_RPC_IMAGE_GET_OR_CREATE SK_MODAL_CP "ImageGetOrCreate"
#define SK_MODAL_RPC_IMAGE_JOIN_STREAMING SK_MODAL_CP "ImageJoinStreaming"
#define SK_MODAL_RPC_SECRET_GET_OR_CREATE SK_MODAL_CP "SecretGetOrCreate"
#define SK_MODAL_RPC_SANDBOX_CREATE SK_MODAL_CP "SandboxCreate"
#define SK_MODAL_RPC_SANDBOX_GET_FROM_NAME SK_MODAL_CP "SandboxGetFromName"
#define SK_MODAL_RPC_SANDBOX_WAIT SK_MODAL_CP "SandboxWait"
#define SK_MODAL_RPC_SANDBOX_TERMINATE SK_MODAL_CP "SandboxTerminate"
#define SK_MODAL_RPC_SANDBOX_GET_TASK_ID SK_MODAL_CP "SandboxGetTaskId"
#define SK_MODAL_RPC_TASK_GET_COMMAND_ROUTER_ACCESS SK_MODAL_CP "TaskGetCommandRouterAccess"
#define SK_MODAL_RPC_SANDBOX_SNAPSHOT_FS SK_MODAL_CP "SandboxSnapshotFs"
#define SK_MODAL_RPC_CONTAINER_FILESYSTEM_EXEC SK_MODAL_CP "ContainerFilesystemExec"
#define SK_MODAL_RPC_CONTAINER_FILESYSTEM_EXEC_GET_OUTPUT SK_MODAL_CP "ContainerFilesystemExecGetOutput"
#define SK_MODAL_RPC_TASK_EXEC_START SK_MODAL_ROUTER "TaskExecStart"
#define SK_MODAL_RPC_TASK_EXEC_STDIO_READ SK_MODAL_ROUTER "TaskExecStdioRead"
#define SK_MODAL_RPC_TASK_EXEC_WAIT SK_MODAL_ROUTER "TaskExecWait"
#define SK_MODAL_RPC_TASK_EXEC_POLL SK_MODAL_ROUTER "TaskExecPoll"
#define SK_MODAL_RPC_TASK_EXEC_STDIN_WRITE SK_MODAL_ROUTER "TaskExecStdinWrite"
#define SK_MODAL_RPC_TASK_SNAPSHOT_FILESYSTEM SK_MODAL_ROUTER "TaskSnapshotFilesystem"

/* ---- enums (docs/protocols/modal.md §2.2) ---- */
enum {
    SK_MODAL_OCT_UNSPECIFIED = 0, /* look up only */
    SK_MODAL_OCT_CREATE_IF_MISSING = 1,
    SK_MODAL_OCT_CREATE_FAIL_IF_EXISTS = 2,
    SK_MODAL_OCT_CREATE_OVERWRITE_IF_EXISTS = 3,
    SK_MODAL_OCT_ANONYMOUS_OWNED_BY_APP = 4,
    SK_MODAL_OCT_EPHEMERAL = 5
};
enum {
    SK_MODAL_RESULT_UNSPECIFIED = 0, /* not finished */
    SK_MODAL_RESULT_SUCCESS = 1,
    SK_MODAL_RESULT_FAILURE = 2,
    SK_MODAL_RESULT_TERMINATED = 3,
    SK_MODAL_RESULT_TIMEOUT = 4,
    SK_MODAL_RESULT_INIT_FAILURE = 5,
    SK_MODAL_RESULT_INTERNAL_FAILURE = 6,
    SK_MODAL_RESULT_IDLE_TIMEOUT = 7
};
enum {
    SK_MODAL_NETWORK_UNSPECIFIED = 0,
    SK_MODAL_NETWORK_OPEN = 1,
    SK_MODAL_NETWORK_BLOCKED = 2,
    SK_MODAL_NETWORK_ALLOWLIST = 3
};
/* Router enums: note the stdio fd numbering differs from the api enum. */
enum { SK_MODAL_STDOUT_DEVNULL = 0, SK_MODAL_STDOUT_PIPE = 1 };
enum { SK_MODAL_STDERR_DEVNULL = 0, SK_MODAL_STDERR_PIPE = 1, SK_MODAL_STDERR_STDOUT = 2 };
enum { SK_MODAL_FD_STDOUT = 0, SK_MODAL_FD_STDERR = 1 };
#define SK_MODAL_CLIENT_TYPE_LIBMODAL_JS 8

/* ---- shared request shapes (borrowed) ---- */
typedef struct sk_modal_strs {
    const char *const *v;
    size_t n;
} sk_modal_strs;

typedef struct sk_modal_kv {
    const char *key, *value;
} sk_modal_kv;

/* A map<string,string>, written in the given order. */
typedef struct sk_modal_kvs {
    const sk_modal_kv *v;
    size_t n;
} sk_modal_kvs;

/* ---- GenericResult (decoded) ----
 * Its strings are non-NULL when the enclosing has_* flag is true. */
typedef struct sk_modal_generic_result {
    int32_t status;   /* SK_MODAL_RESULT_*; 0 = not finished */
    char *exception;
    int32_t exitcode;
    char *traceback;
} sk_modal_generic_result;

/* AuthTokenGet: the request has no fields; its body is empty. */
typedef struct sk_modal_auth_token_get_resp {
    char *token;
} sk_modal_auth_token_get_resp;
int sk_modal_decode_auth_token_get(const void *data, size_t len, sk_modal_auth_token_get_resp *out);
void sk_modal_auth_token_get_resp_free(sk_modal_auth_token_get_resp *m);

/* AppGetOrCreate */
typedef struct sk_modal_app_get_or_create_req {
    const char *app_name;
    const char *environment_name;
    int32_t object_creation_type; /* SK_MODAL_OCT_* */
} sk_modal_app_get_or_create_req;
typedef struct sk_modal_app_get_or_create_resp {
    char *app_id;
} sk_modal_app_get_or_create_resp;
int sk_modal_encode_app_get_or_create(sk_buf *out, const sk_modal_app_get_or_create_req *m);
int sk_modal_decode_app_get_or_create(const void *data, size_t len, sk_modal_app_get_or_create_resp *out);
void sk_modal_app_get_or_create_resp_free(sk_modal_app_get_or_create_resp *m);

/* ImageGetOrCreate: one layer. `image` is always sent. */
typedef struct sk_modal_base_image {
    const char *image_id, *docker_tag;
} sk_modal_base_image;
typedef struct sk_modal_image_get_or_create_req {
    const char *app_id;
    sk_modal_strs dockerfile_commands;   /* e.g. {"FROM ubuntu:22.04"} */
    const sk_modal_base_image *base_images; /* layers > 0 only */
    size_t n_base_images;
    sk_modal_strs secret_ids;
    const char *builder_version;         /* "2024.10" unless configured */
    bool force_build;
} sk_modal_image_get_or_create_req;
typedef struct sk_modal_image_get_or_create_resp {
    char *image_id;
    bool has_result;
    sk_modal_generic_result result; /* status 0 = join the build (ImageJoinStreaming) */
} sk_modal_image_get_or_create_resp;
int sk_modal_encode_image_get_or_create(sk_buf *out, const sk_modal_image_get_or_create_req *m);
int sk_modal_decode_image_get_or_create(const void *data, size_t len, sk_modal_image_get_or_create_resp *out);
void sk_modal_image_get_or_create_resp_free(sk_modal_image_get_or_create_resp *m);

/* ImageJoinStreaming (server stream): stop at the first message whose
 * result.status != 0; a clean end without one means "call again" with the
 * last entry_id. */
typedef struct sk_modal_image_join_streaming_req {
    const char *image_id;
    float timeout; /* 55 */
    const char *last_entry_id;
    bool include_logs_for_finished;
} sk_modal_image_join_streaming_req;
typedef struct sk_modal_image_join_streaming_resp {
    bool has_result;
    sk_modal_generic_result result;
    char *entry_id;
    bool eof;
} sk_modal_image_join_streaming_resp;
int sk_modal_encode_image_join_streaming(sk_buf *out, const sk_modal_image_join_streaming_req *m);
int sk_modal_decode_image_join_streaming(const void *data, size_t len, sk_modal_image_join_streaming_resp *out);
void sk_modal_image_join_streaming_resp_free(sk_modal_image_join_streaming_resp *m);

/* SecretGetOrCreate: create-time env goes through an EPHEMERAL secret
 * (docs/protocols/modal.md §2.3, §3.1). */
typedef struct sk_modal_secret_get_or_create_req {
    const char *deployment_name;
    const char *environment_name;
    int32_t object_creation_type; /* SK_MODAL_OCT_EPHEMERAL for env maps */
    sk_modal_kvs env_dict;
    const char *app_id;
    sk_modal_strs required_keys;
} sk_modal_secret_get_or_create_req;
typedef struct sk_modal_secret_get_or_create_resp {
    char *secret_id;
} sk_modal_secret_get_or_create_resp;
int sk_modal_encode_secret_get_or_create(sk_buf *out, const sk_modal_secret_get_or_create_req *m);
int sk_modal_decode_secret_get_or_create(const void *data, size_t len, sk_modal_secret_get_or_create_resp *out);
void sk_modal_secret_get_or_create_resp_free(sk_modal_secret_get_or_create_resp *m);

/* SandboxCreate. As the JS SDK: `resources` (with an empty gpu_config),
 * an empty `open_ports` and `network_access` are always sent. */
typedef struct sk_modal_sandbox_resources {
    uint32_t memory_mb, milli_cpu, memory_mb_max, milli_cpu_max, ephemeral_disk_mb; /* 0 = unset */
} sk_modal_sandbox_resources;
typedef struct sk_modal_sandbox_create_req {
    const char *app_id;
    const char *environment_name;  /* the JS SDK leaves it out */
    /* definition (Sandbox) */
    sk_modal_strs entrypoint_args; /* empty: the container idles until timeout */
    const char *image_id;
    sk_modal_strs secret_ids;
    sk_modal_sandbox_resources resources;
    uint32_t timeout_secs;         /* 300 by default in the SDK */
    const char *workdir;           /* optional; absolute */
    const char *name;              /* optional */
    bool has_idle_timeout_secs;
    uint32_t idle_timeout_secs;
    int32_t network_access_type;   /* SK_MODAL_NETWORK_*; the SDK default is OPEN */
    sk_modal_kvs tags;             /* SandboxTag{tag_name, tag_value} */
} sk_modal_sandbox_create_req;
typedef struct sk_modal_sandbox_create_resp {
    char *sandbox_id;
} sk_modal_sandbox_create_resp;
int sk_modal_encode_sandbox_create(sk_buf *out, const sk_modal_sandbox_create_req *m);
int sk_modal_decode_sandbox_create(const void *data, size_t len, sk_modal_sandbox_create_resp *out);
void sk_modal_sandbox_create_resp_free(sk_modal_sandbox_create_resp *m);

/* SandboxGetFromName */
typedef struct sk_modal_sandbox_get_from_name_req {
    const char *sandbox_name, *environment_name, *app_name;
} sk_modal_sandbox_get_from_name_req;
typedef struct sk_modal_sandbox_get_from_name_resp {
    char *sandbox_id;
} sk_modal_sandbox_get_from_name_resp;
int sk_modal_encode_sandbox_get_from_name(sk_buf *out, const sk_modal_sandbox_get_from_name_req *m);
int sk_modal_decode_sandbox_get_from_name(const void *data, size_t len, sk_modal_sandbox_get_from_name_resp *out);
void sk_modal_sandbox_get_from_name_resp_free(sk_modal_sandbox_get_from_name_resp *m);

/* SandboxWait (long poll): no result, or status 0, means still running. */
typedef struct sk_modal_sandbox_wait_req {
    const char *sandbox_id;
    float timeout; /* seconds the server may block; 0 = answer now */
} sk_modal_sandbox_wait_req;
typedef struct sk_modal_sandbox_wait_resp {
    bool has_result;
    sk_modal_generic_result result;
} sk_modal_sandbox_wait_resp;
int sk_modal_encode_sandbox_wait(sk_buf *out, const sk_modal_sandbox_wait_req *m);
int sk_modal_decode_sandbox_wait(const void *data, size_t len, sk_modal_sandbox_wait_resp *out);
void sk_modal_sandbox_wait_resp_free(sk_modal_sandbox_wait_resp *m);

/* SandboxTerminate */
typedef struct sk_modal_sandbox_terminate_req {
    const char *sandbox_id;
} sk_modal_sandbox_terminate_req;
typedef struct sk_modal_sandbox_terminate_resp {
    bool has_existing_result;
    sk_modal_generic_result existing_result;
} sk_modal_sandbox_terminate_resp;
int sk_modal_encode_sandbox_terminate(sk_buf *out, const sk_modal_sandbox_terminate_req *m);
int sk_modal_decode_sandbox_terminate(const void *data, size_t len, sk_modal_sandbox_terminate_resp *out);
void sk_modal_sandbox_terminate_resp_free(sk_modal_sandbox_terminate_resp *m);

/* SandboxGetTaskId: task_id and task_result are both optional. */
typedef struct sk_modal_sandbox_get_task_id_req {
    const char *sandbox_id;
    bool has_timeout;
    float timeout;
    bool wait_until_ready;
} sk_modal_sandbox_get_task_id_req;
typedef struct sk_modal_sandbox_get_task_id_resp {
    char *task_id; /* NULL while still scheduling */
    bool has_task_result;
    sk_modal_generic_result task_result; /* set: the sandbox has finished */
} sk_modal_sandbox_get_task_id_resp;
int sk_modal_encode_sandbox_get_task_id(sk_buf *out, const sk_modal_sandbox_get_task_id_req *m);
int sk_modal_decode_sandbox_get_task_id(const void *data, size_t len, sk_modal_sandbox_get_task_id_resp *out);
void sk_modal_sandbox_get_task_id_resp_free(sk_modal_sandbox_get_task_id_resp *m);

/* TaskGetCommandRouterAccess */
typedef struct sk_modal_task_get_command_router_access_req {
    const char *task_id;
} sk_modal_task_get_command_router_access_req;
typedef struct sk_modal_task_get_command_router_access_resp {
    char *jwt;
    char *url; /* must be https://host[:port] (checked by the caller) */
} sk_modal_task_get_command_router_access_resp;
int sk_modal_encode_task_get_command_router_access(sk_buf *out,
                                                   const sk_modal_task_get_command_router_access_req *m);
int sk_modal_decode_task_get_command_router_access(const void *data, size_t len,
                                                   sk_modal_task_get_command_router_access_resp *out);
void sk_modal_task_get_command_router_access_resp_free(sk_modal_task_get_command_router_access_resp *m);

/* SandboxSnapshotFs (control plane; SDK <= 0.7.4) */
typedef struct sk_modal_sandbox_snapshot_fs_req {
    const char *sandbox_id;
    float timeout; /* 55 */
} sk_modal_sandbox_snapshot_fs_req;
typedef struct sk_modal_sandbox_snapshot_fs_resp {
    char *image_id;
    bool has_result;
    sk_modal_generic_result result; /* must be SUCCESS */
} sk_modal_sandbox_snapshot_fs_resp;
int sk_modal_encode_sandbox_snapshot_fs(sk_buf *out, const sk_modal_sandbox_snapshot_fs_req *m);
int sk_modal_decode_sandbox_snapshot_fs(const void *data, size_t len, sk_modal_sandbox_snapshot_fs_resp *out);
void sk_modal_sandbox_snapshot_fs_resp_free(sk_modal_sandbox_snapshot_fs_resp *m);

/* TaskSnapshotFilesystem (router; SDK >= 0.7.5) */
typedef struct sk_modal_task_snapshot_filesystem_req {
    const char *task_id;
    const char *snapshot_id; /* client UUIDv4: idempotency */
    int64_t ttl_seconds;     /* -1 = no expiry (10-byte varint) */
} sk_modal_task_snapshot_filesystem_req;
typedef struct sk_modal_task_snapshot_filesystem_resp {
    char *image_id;
} sk_modal_task_snapshot_filesystem_resp;
int sk_modal_encode_task_snapshot_filesystem(sk_buf *out, const sk_modal_task_snapshot_filesystem_req *m);
int sk_modal_decode_task_snapshot_filesystem(const void *data, size_t len,
                                             sk_modal_task_snapshot_filesystem_resp *out);
void sk_modal_task_snapshot_filesystem_resp_free(sk_modal_task_snapshot_filesystem_resp *m);

/* TaskExecStart (router). The response is empty: sk_modal_decode_empty. */
typedef struct sk_modal_task_exec_start_req {
    const char *task_id;
    const char *exec_id; /* client UUIDv4: idempotency */
    sk_modal_strs command_args;
    int32_t stdout_config; /* SK_MODAL_STDOUT_* */
    int32_t stderr_config; /* SK_MODAL_STDERR_* */
    bool has_timeout_secs;
    uint32_t timeout_secs;
    const char *workdir;   /* optional */
    sk_modal_strs secret_ids;
    sk_modal_kvs env;      /* field 12 (SDK >= 0.7.5) */
} sk_modal_task_exec_start_req;
int sk_modal_encode_task_exec_start(sk_buf *out, const sk_modal_task_exec_start_req *m);

/* TaskExecStdioRead (router, server stream): a clean end of stream is EOF;
 * resume after errors with offset = bytes received so far. */
typedef struct sk_modal_task_exec_stdio_read_req {
    const char *task_id, *exec_id;
    uint64_t offset;
    int32_t file_descriptor; /* SK_MODAL_FD_STDOUT (omitted) / SK_MODAL_FD_STDERR */
} sk_modal_task_exec_stdio_read_req;
typedef struct sk_modal_task_exec_stdio_read_resp {
    uint8_t *data; /* NUL-terminated for convenience; len excludes it */
    size_t len;
} sk_modal_task_exec_stdio_read_resp;
int sk_modal_encode_task_exec_stdio_read(sk_buf *out, const sk_modal_task_exec_stdio_read_req *m);
int sk_modal_decode_task_exec_stdio_read(const void *data, size_t len, sk_modal_task_exec_stdio_read_resp *out);
void sk_modal_task_exec_stdio_read_resp_free(sk_modal_task_exec_stdio_read_resp *m);
/* The same message read in place, for the output path: *chunk points into
 * data (NULL with *chunk_len 0 when there is none). 0, or -1 with errno
 * EBADMSG. */
int sk_modal_decode_task_exec_stdio_chunk(const void *data, size_t len, const uint8_t **chunk, size_t *chunk_len);

/* TaskExecWait and TaskExecPoll share request and response shapes. */
typedef struct sk_modal_task_exec_ref {
    const char *task_id, *exec_id;
} sk_modal_task_exec_ref;
typedef enum { SK_MODAL_EXIT_NONE = 0, SK_MODAL_EXIT_CODE = 1, SK_MODAL_EXIT_SIGNAL = 2 } sk_modal_exit_kind;
typedef struct sk_modal_task_exec_wait_resp {
    sk_modal_exit_kind kind; /* NONE: still running (Poll) or "Unexpected exit status" (Wait) */
    int32_t value;           /* the code, or the signal number (the SDK reports 128+signal) */
} sk_modal_task_exec_wait_resp;
int sk_modal_encode_task_exec_ref(sk_buf *out, const sk_modal_task_exec_ref *m);
int sk_modal_decode_task_exec_wait(const void *data, size_t len, sk_modal_task_exec_wait_resp *out);

/* TaskExecStdinWrite (router). The response is empty. */
typedef struct sk_modal_task_exec_stdin_write_req {
    const char *task_id, *exec_id;
    uint64_t offset; /* bytes already written */
    const void *data;
    size_t len;
    bool eof;
} sk_modal_task_exec_stdin_write_req;
int sk_modal_encode_task_exec_stdin_write(sk_buf *out, const sk_modal_task_exec_stdin_write_req *m);

/* Checks that an empty-response message (TaskExecStart, TaskExecStdinWrite)
 * is well formed; any fields in it are unknown and ignored. */
int sk_modal_decode_empty(const void *data, size_t len);

/* google.rpc.Status from grpc-status-details-bin (already base64-decoded):
 * the code, the message, and the server-directed retry delay if a detail's
 * type_url ends in "/modal.client.RPCRetryPolicy" (docs/protocols/modal.md §1.6). */
typedef struct sk_modal_status_details {
    int32_t code;
    char *message;
    bool has_retry_after;
    float retry_after_secs;
} sk_modal_status_details;
int sk_modal_decode_status_details(const void *data, size_t len, sk_modal_status_details *out);
void sk_modal_status_details_free(sk_modal_status_details *m);

/* ContainerFilesystemExec (control plane): one operation of Sandbox.open()
 * or of its file handle (docs/modal-filesystem.md). */
typedef enum sk_modal_fs_kind {
    SK_MODAL_FS_OPEN = 1,  /* path, mode -> a file descriptor */
    SK_MODAL_FS_WRITE = 2, /* fd, data */
    SK_MODAL_FS_READ = 3,  /* fd, n (has_n) or to the end */
    SK_MODAL_FS_FLUSH = 4, /* fd */
    SK_MODAL_FS_CLOSE = 9, /* fd */
} sk_modal_fs_kind;
typedef struct sk_modal_container_filesystem_exec_req {
    const char *task_id;
    sk_modal_fs_kind kind;
    const char *fd, *path, *mode;
    const void *data;
    size_t len;
    bool has_n;
    uint32_t n;
} sk_modal_container_filesystem_exec_req;
typedef struct sk_modal_container_filesystem_exec_resp {
    char *exec_id;         /* "" when absent */
    char *file_descriptor; /* NULL when absent */
} sk_modal_container_filesystem_exec_resp;
int sk_modal_encode_container_filesystem_exec(sk_buf *out, const sk_modal_container_filesystem_exec_req *m);
int sk_modal_decode_container_filesystem_exec(const void *data, size_t len,
                                              sk_modal_container_filesystem_exec_resp *out);
void sk_modal_container_filesystem_exec_resp_free(sk_modal_container_filesystem_exec_resp *m);

/* ContainerFilesystemExecGetOutput (control plane, server stream). */
int sk_modal_encode_container_filesystem_exec_get_output(sk_buf *out, const char *exec_id, float timeout_secs);

/* FilesystemRuntimeOutputBatch, read in place: output entries are handed to
 * `output` as they are met (pointing into data); the error and eof are
 * returned. error_message points into data (not NUL-terminated). */
typedef struct sk_modal_fs_batch {
    bool has_error;
    int32_t error_code;
    const char *error_message;
    size_t error_message_len;
    uint64_t batch_index;
    bool eof;
} sk_modal_fs_batch;
int sk_modal_decode_fs_batch(const void *data, size_t len, sk_modal_fs_batch *out,
                             void (*output)(void *ud, const uint8_t *d, size_t n), void *ud);

#endif
