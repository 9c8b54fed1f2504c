/* The Mastra Platform workspace-proxy REST client (docs/protocols/platform.md §2): the
 * settings every Platform client resolves from its options and the
 * environment (token, project, base URL, acting user), project-scoped
 * URLs, bearer authentication, the PlatformApiError model, and small
 * helpers (encodeURIComponent, ISO-8601 dates, token redaction). Shared by
 * the sandbox (platform.c, platform_exec.c) and the bucket routes of
 * PlatformFilesystem (platform_fs.c).
 *
 * Callbacks run from the loop, never from inside sk_platform_api_call. The
 * access token is only ever placed in the authorization header; every
 * message, field and log line built here has it redacted. */
#ifndef SK_PLATFORM_API_H
#define SK_PLATFORM_API_H

#include <stdbool.h>
#include <jansson.h>

#include "../../error.h"
#include "../../http.h"
#include "../../loop.h"

typedef struct platform_api platform_api;
typedef struct platform_call platform_call;

typedef struct platform_api_config {
    const char *base_url;       /* resolved; trailing '/' already removed */
    const char *project_id;
    const char *token;
    const char *acting_user_id; /* trimmed; NULL or "" = no header */
    const char *ca_file;        /* tests only */
    bool insecure_skip_verify;  /* tests only */
    long timeout_ms;            /* per request; 0 = 60000 (upstream) */
    size_t max_response_bytes;  /* response body cap; 0 = SK_HTTP_DEFAULT_MAX_BODY */
    const void *secret_scope;   /* whose env values are redacted too (the sandbox; secrets.h) */
} platform_api_config;

/* What a client resolves from options o (docs/protocols/platform.md §2.1):
 * access_token else MASTRA_PLATFORM_ACCESS_TOKEN, project_id else
 * MASTRA_PROJECT_ID (both required; "" counts as missing), base_url else
 * MASTRA_WORKSPACE_PROXY_URL else MASTRA_PLATFORM_REGION (us, eu) else the
 * default, acting_user_id trimmed. token and project_id point into o or
 * the environment; base_url and acting_user_id are owned
 * (sk_platform_settings_free). `what` names the client in ConfigErrors
 * ("PlatformSandbox", "PlatformFilesystem"). */
typedef struct platform_settings {
    const char *token;
    const char *project_id;
    char *base_url;       /* no trailing '/' */
    char *acting_user_id; /* NULL: none */
} platform_settings;
int sk_platform_settings(const json_t *o, const char *what, platform_settings *out, sk_error **err);
void sk_platform_settings_free(platform_settings *s);
/* An option, else the environment variable env (NULL: none); "" counts as
 * missing. Borrowed. */
const char *sk_platform_setting(const json_t *o, const char *key, const char *env);
/* A ConfigError naming key (fields provider = "platform", key); fmt takes
 * one string, a. */
sk_error *sk_platform_config_error(const char *key, const char *fmt, const char *a);

platform_api *sk_platform_api_new(sk_loop *loop, const platform_api_config *cfg);
/* The client of options o: its settings (sk_platform_settings), then
 * ca_file, insecure_skip_verify, request_timeout_ms and max_response_bytes.
 * NULL with *err (ConfigError, or out of memory). */
platform_api *sk_platform_api_open(sk_loop *loop, const json_t *o, const char *what, const void *secret_scope,
                                   sk_error **err);
/* Calls still in flight must have been cancelled. */
void sk_platform_api_free(platform_api *api);

/* status: the HTTP status (0 when none arrived). json: the parsed body of a
 * 2xx answer (borrowed; NULL for an empty body). err (stolen, NULL on
 * success): PlatformApiError for a non-2xx answer or a malformed 2xx body,
 * ResponseTooLargeError for a body over max_response_bytes, TimeoutError /
 * NetworkError when no answer arrived. */
typedef void (*platform_call_cb)(int status, json_t *json, sk_error *err, void *ud);

/* path: relative to the project prefix, already encoded ("/sandbox/x").
 * body: JSON object sent with content-type application/json, or NULL (no
 * body, no content-type). Returns NULL with *err when the request cannot
 * start. */
platform_call *sk_platform_api_call(platform_api *api, const char *method, const char *path,
                                 const json_t *body, platform_call_cb cb, void *ud, sk_error **err);
/* No callback runs after this; a no-op from inside the call's own callback. */
void sk_platform_api_cancel(platform_call *call);

/* One request under the project prefix with the client's credentials,
 * whose answer the caller reads itself (status, headers and body through
 * cb, a data callback always set): path relative to the prefix, already
 * encoded, with its query; headers beside the authorization and acting
 * user ones; body borrowed (sk_http_request.body_borrowed). NULL with a
 * static message in *why when it cannot start. */
sk_http *sk_platform_api_request(platform_api *api, const char *method, const char *path,
                                 const sk_http_header *headers, size_t n_headers, const char *body, size_t len,
                                 size_t recv_buffer_bytes, const sk_http_callbacks *cb, void *ud, const char **why);

/* JavaScript encodeURIComponent (malloc'd). */
char *sk_platform_enc(const char *s);
/* ISO-8601 date-time to ms since the epoch; false when unparseable. */
bool sk_platform_parse_iso(const char *s, double *out_ms);
/* Wall clock, ms since the epoch. */
double sk_platform_wall_ms(void);

#endif
