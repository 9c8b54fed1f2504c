/* The Modal messages the C client sends and receives
 * (docs/protocols/modal.md §2.3, §2.4), on top of the wire primitives in
 * pb.h. Their types, enums, field numbers and field tables are generated
 * at build time from modal.proto, the file the reference server loads
 * (tools/modal_gen.lua writes build/gen/modal_pb.h), so the schema is
 * stated once; modal_msg.c holds the one encoder and the one decoder that
 * walk the tables. The request goldens in spec/c/modal_goldens.txt, which
 * the encoders must match, are protoc's bytes (spec/modal_schema_spec.lua
 * re-encodes them): they pin the wire format independently of modal.proto.
 *
 * Why not protoc-c's generated code (and why libprotobuf-c is not
 * linked): measured with protobuf-c 1.4.1 (Debian 12) on code generated
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
 * refuses proto3 `optional` outright. Keeping the behaviour above would
 * need a wire pre-pass as large as pb.c's reader in front of the generated
 * code (9.1k lines; 86 kB of object code at -O2, against 16 kB for pb.o
 * and modal_msg.o). The codec is checked against protoc's bytes, by the
 * fuzz harness spec/fuzz/fuzz_pb.c, and end to end against the reference
 * server that the official SDK is tested on (spec/servers/modal).
 *
 * Sent messages (the closure of the RPCs' requests): caller-filled structs
 * of BORROWED pointers, encoded into an sk_buf (appended; the caller adds
 * the gRPC frame), fields in field-number order as ts-proto writes them.
 * Implicit-presence fields are left out when they hold the default (NULL
 * and "" strings alike); an `optional` string is sent when non-NULL ("" too);
 * an `optional` scalar, a sub-message and a oneof member when its has_ flag
 * is set; every element of a repeated field. Encoders return 0, or -1 on
 * ENOMEM (out as it was).
 *
 * Received messages: decoded into caller-provided structs that OWN their
 * strings. After a successful decode every implicit-presence string is
 * non-NULL ("" when absent), an `optional` string NULL when absent, bytes
 * a NUL-terminated copy (never NULL; *_len excludes the terminator), and a
 * sub-message's or oneof member's has_ flag says whether it came (the last
 * oneof member on the wire wins). Decoders return 0, or -1 with errno
 * EBADMSG (malformed input: the struct is left zeroed) or ENOMEM. Unknown
 * fields, and known fields with an unexpected wire type, are skipped. Each
 * *_free releases the members (not the struct) and is safe on a zeroed
 * struct. */
#ifndef SK_MODAL_MSG_H
#define SK_MODAL_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../../buf.h"
#include "pb.h"

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

/* ---- shared shapes of sent messages (borrowed) ---- */
typedef struct sk_modal_strs {
    const char *const *v;
    size_t n;
} sk_modal_strs;

typedef struct sk_modal_kv {
    const char *key, *value;
} sk_modal_kv;

/* A map<string,string>, written in the given order; empty keys and values
 * are left out of an entry, as ts-proto's entry encoders do. */
typedef struct sk_modal_kvs {
    const sk_modal_kv *v;
    size_t n;
} sk_modal_kvs;

/* ---- field tables (generated rows, walked by modal_msg.c) ---- */
typedef enum sk_modal_kind {
    SK_MODAL_F_STRING, /* char * */
    SK_MODAL_F_BYTES,  /* pointer, length (size_t) at aux */
    SK_MODAL_F_INT32,  /* int32_t, enums too */
    SK_MODAL_F_INT64,
    SK_MODAL_F_UINT32, /* written as a uint64 varint */
    SK_MODAL_F_UINT64,
    SK_MODAL_F_BOOL,
    SK_MODAL_F_FLOAT,
    SK_MODAL_F_SUB,  /* sub-message of type sub, embedded; has_ flag at has */
    SK_MODAL_F_STRS, /* repeated string: sk_modal_strs */
    SK_MODAL_F_KVS,  /* map<string,string>: sk_modal_kvs */
    SK_MODAL_F_SUBS, /* repeated sub-message: pointer, count (size_t) at aux, elements of size */
} sk_modal_kind;

typedef struct sk_modal_message sk_modal_message;
typedef struct sk_modal_field {
    uint32_t num;
    sk_modal_kind kind;
    sk_pb_presence presence; /* EXPLICIT: `optional` or a oneof member */
    unsigned oneof;          /* the oneof group in its message, 1-based; 0: none */
    size_t off, aux;
    size_t has;  /* offset + 1 of the bool has_ flag; 0: none */
    size_t size; /* SUBS: the element size */
    const sk_modal_message *sub;
} sk_modal_field;

struct sk_modal_message {
    const char *name; /* as in modal.proto */
    const sk_modal_field *fields;
    size_t n;
    size_t size; /* of the struct */
};

/* The one encoder and the one decoder (see the top of this file). */
int sk_modal_encode(const sk_modal_message *t, sk_buf *out, const void *m);
int sk_modal_decode(const sk_modal_message *t, const void *data, size_t len, void *out);
void sk_modal_release(const sk_modal_message *t, void *m);

#include "modal_pb.h"

/* TaskExecWait and TaskExecPoll share one wire shape: either request
 * encodes with sk_modal_encode_task_exec_wait. */

/* Checks that an empty-response message (TaskExecStart, TaskExecStdinWrite)
 * is well formed; any fields in it are unknown and ignored. */
int sk_modal_decode_empty(const void *data, size_t len);

/* TaskExecStdioReadResponse read in place, for the output path: *chunk
 * points into data (NULL with *chunk_len 0 when there is none). 0, or -1
 * with errno EBADMSG. */
int sk_modal_decode_task_exec_stdio_chunk(const void *data, size_t len, const uint8_t **chunk, size_t *chunk_len);

/* google.rpc.Status from grpc-status-details-bin (already base64-decoded):
 * the code, the message, and the server-directed retry delay if a detail's
 * type_url ends in "/modal.client.RPCRetryPolicy" (docs/protocols/modal.md §1.6).
 * gRPC's own message, not Modal's: read here field by field. */
typedef struct sk_modal_status_details {
    int32_t code;
    char *message;
    bool has_retry_after;
    float retry_after_secs;
} sk_modal_status_details;
int sk_modal_decode_status_details(const void *data, size_t len, sk_modal_status_details *out);
void sk_modal_status_details_free(sk_modal_status_details *m);

/* ContainerFilesystemExec (control plane): one operation of Sandbox.open()
 * or of its file handle (docs/modal-filesystem.md), as the file code keeps
 * it; encoded as the request's oneof member `kind` (its field number). */
typedef enum sk_modal_fs_kind {
    /* path, mode -> a file descriptor */
    SK_MODAL_FS_OPEN = SK_MODAL_CONTAINER_FILESYSTEM_EXEC_REQUEST_FILE_OPEN_REQUEST,
    /* fd, data */
    SK_MODAL_FS_WRITE = SK_MODAL_CONTAINER_FILESYSTEM_EXEC_REQUEST_FILE_WRITE_REQUEST,
    /* fd, n (has_n) or to the end */
    SK_MODAL_FS_READ = SK_MODAL_CONTAINER_FILESYSTEM_EXEC_REQUEST_FILE_READ_REQUEST,
    SK_MODAL_FS_FLUSH = SK_MODAL_CONTAINER_FILESYSTEM_EXEC_REQUEST_FILE_FLUSH_REQUEST, /* fd */
    SK_MODAL_FS_CLOSE = SK_MODAL_CONTAINER_FILESYSTEM_EXEC_REQUEST_FILE_CLOSE_REQUEST, /* fd */
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
int sk_modal_encode_fs_op(sk_buf *out, const sk_modal_container_filesystem_exec_req *m);

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
