/* Typed errors crossing the core's API: a kind (SK_ERR_CONFIG, ...), a
 * message, and kind-specific fields as a JSON object (numbers, strings,
 * booleans). The binding turns one into a Lua error object. Messages must
 * never contain secrets: callers format them from non-secret values only;
 * what a server said may echo one, so the binding redacts every error
 * (secrets.h) before Lua sees it. */
#ifndef SK_ERROR_H
#define SK_ERROR_H

#include <jansson.h>

/* The kinds a provider alone reports, each stated in its folder
 * (src/core/providers/<dir>/error_kinds.def), in providers.def's order:
 * `make generated` copies them here (tools/generate.lua). */
/* BEGIN generated: provider error kinds (make generated, from the provider folders' error_kinds.def) */
#define SK_PROVIDER_ERROR_KINDS(X) \
    X(PLATFORM_API, PlatformApiError, "status, code, proxy_message, body, body_truncated", "Platform: the workspace proxy answered with an error (`body`: its first 64 KiB)") \
    X(MODAL, ModalError, "grpc_status, grpc_code, grpc_message, rpc, sdk_error", "Modal: a call failed (`sdk_error`: the JS SDK's class, e.g. NotFoundError)") \
    X(MODAL_FILESYSTEM, ModalFilesystemError, "error_code", "Modal: a file operation failed in the sandbox") \
    X(CONTAINER_CLI, ContainerCliError, "argv, exit_code, stderr", "Apple container: the `container` CLI failed") \
    X(DOCKER_API, DockerApiError, "status, docker_message, method, path, docker_host, image, reason, malformed, api_version, sandbox_id, container_id, exec_id", "Docker: the daemon answered with an error, or its exec stream was not the protocol (`malformed`)")
/* END generated: provider error kinds */

/* Every error kind sandkit reports, from C or from Lua, stated once (as
 * libuv's UV_ERRNO_MAP): X(id, name, fields, meaning); a provider's own
 * kinds where the list says SK_PROVIDER_ERROR_KINDS. The binding exports
 * it as sandkit.errors.<name> and sandkit.errors.kinds; docs/errors.md's Kinds
 * table and the LuaLS stub are checked against it (spec/generated_spec.lua).
 * One kind a line: the list is a table. */
#define SK_ERROR_KINDS(X) \
    X(CONFIG, ConfigError, "key, provider", "misuse (raised): an options table has an unknown key, or an option a wrong type or value; or a provider's configuration is missing or wrong") \
    X(ARGUMENT, ArgumentError, "argument", "misuse (raised): an argument of the wrong type or value (`bad argument #n to 'f' (...)`)") \
    X(ISOLATION_UNAVAILABLE, IsolationUnavailableError, "backend, key", "misuse (raised by the constructor): the isolation asked for cannot run on this machine; or (from `start()`) a LocalSandbox limit it cannot enforce (`key`)") \
    X(SANDBOX, SandboxError, "path, key, hook, sandbox_id", "the sandbox could not do it (a working directory it cannot reach, a hook that failed, ...)") \
    X(SANDBOX_NOT_READY, SandboxNotReadyError, "sandbox_id", "the sandbox is not running (destroyed, or being torn down)") \
    X(SANDBOX_DESTROYED, SandboxDestroyedError, "sandbox_id", "Platform: the sandbox was destroyed under the command") \
    X(SANDBOX_EXEC_TRANSPORT, SandboxExecTransportError, "opened, close_code, close_reason, ws_endpoint, sandbox_id, command, attempts", "Platform: the command's WebSocket failed") \
    SK_PROVIDER_ERROR_KINDS(X) \
    X(TIMEOUT, TimeoutError, "", "a request or wait ran past its deadline") \
    X(NETWORK, NetworkError, "method, path", "a connection failed or dropped") \
    X(HTTP_TRANSPORT, HttpTransportError, "reason", "an HTTP request failed below HTTP (files of PlatformFilesystem)") \
    X(RESPONSE_TOO_LARGE, ResponseTooLargeError, "limit, provider, method, path, rpc", "a server's answer was larger than the provider's max_response_bytes") \
    X(UNSUPPORTED, UnsupportedError, "", "the provider cannot do it (e.g. stdin with Platform `stdin_frames = false`)") \
    X(PROCESS_EXITED, ProcessExitedError, "", "the process has exited (send_stdin)") \
    X(OUT_OF_MEMORY, OutOfMemoryError, "stdout_bytes, stderr_bytes", "memory ran out (never raised)") \
    X(IO, IOError, "", "a write failed (`buf:write_to`)") \
    X(FILE_NOT_FOUND, FileNotFoundError, "path, code", "files: no such file") \
    X(DIRECTORY_NOT_FOUND, DirectoryNotFoundError, "path, code", "files: no such directory") \
    X(FILE_EXISTS, FileExistsError, "path, code", "files: the path exists") \
    X(IS_DIRECTORY, IsDirectoryError, "path, code", "files: the path is a directory") \
    X(NOT_DIRECTORY, NotDirectoryError, "path, code", "files: a path component is not a directory") \
    X(DIRECTORY_NOT_EMPTY, DirectoryNotEmptyError, "path, code", "files: the directory is not empty") \
    X(PERMISSION, PermissionError, "path, operation, code", "files: outside the filesystem, or refused") \
    X(WORKSPACE_READ_ONLY, WorkspaceReadOnlyError, "operation, code", "files: the filesystem is read_only") \
    X(FILESYSTEM, FilesystemError, "path, code", "files: any other failure (`code` names it)")

typedef enum sk_error_kind {
    SK_ERR_NONE = 0, /* no kind: where a kind is optional (not an error's) */
#define SK_ERROR_KIND_ENUM(id, name, fields, doc) SK_ERR_##id,
    SK_ERROR_KINDS(SK_ERROR_KIND_ENUM)
#undef SK_ERROR_KIND_ENUM
        SK_ERR_KIND_COUNT
} sk_error_kind;

/* The kind's name ("ConfigError"), its fields and its meaning as the list
 * states them; NULL for SK_ERR_NONE or a value out of range. */
const char *sk_error_kind_name(sk_error_kind kind);
const char *sk_error_kind_fields(sk_error_kind kind);
const char *sk_error_kind_doc(sk_error_kind kind);

typedef struct sk_error {
    sk_error_kind kind;
    char *message;
    json_t *fields; /* owned; may be NULL */
} sk_error;

/* fields is stolen (may be NULL). Returns NULL only on allocation failure. */
sk_error *sk_error_new(sk_error_kind kind, json_t *fields, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The one out-of-memory error of the core (kind OutOfMemoryError). */
sk_error *sk_error_oom(void);
sk_error *sk_error_copy(const sk_error *e);
void sk_error_free(sk_error *e);
/* Set a field (value stolen); no-op on NULL error. */
void sk_error_set(sk_error *e, const char *key, json_t *value);

#endif
