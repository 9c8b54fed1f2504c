/* The Mastra Platform workspace-proxy REST client (docs/protocols/platform.md §2): project-
 * scoped URLs, bearer authentication, the PlatformApiError model, and small
 * helpers (encodeURIComponent, ISO-8601 dates, token redaction).
 *
 * Callbacks run from the loop, never from inside sk_platform_api_call. The
 * access token is only ever placed in the authorization header; every
 * message, field and log line built here has it redacted. */
#ifndef SK_PLATFORM_API_H
#define SK_PLATFORM_API_H

#include <stdbool.h>
#include <jansson.h>

#include "../../error.h"
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

platform_api *sk_platform_api_new(sk_loop *loop, const platform_api_config *cfg);
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

/* JavaScript encodeURIComponent (malloc'd). */
char *sk_platform_enc(const char *s);
/* ISO-8601 date-time to ms since the epoch; false when unparseable. */
bool sk_platform_parse_iso(const char *s, double *out_ms);
/* Wall clock, ms since the epoch. */
double sk_platform_wall_ms(void);

#endif
