/* Workspace-proxy REST client; see platform_api.h and docs/protocols/platform.md §2. */
#include "platform_api.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "../../buf.h"
#include "../../http.h"
#include "../../secrets.h"

/* Longest slice of a response body quoted in an error message (the whole
 * body is kept in the `body` field). */
#define PLATFORM_MSG_BODY_MAX 512
/* Longest prefix of a failed call's body kept in the error (`body`,
 * `body_truncated`): control-plane errors are small, and what an error
 * holds is scanned for secrets at every hand-over, so its size stays
 * bounded even when the body reached max_response_bytes. */
#define PLATFORM_BODY_FIELD_MAX ((size_t)64 << 10)

#define PLATFORM_DEFAULT_URL "https://workspaces.mastra.ai"

struct platform_api {
    sk_loop *loop;
    char *prefix;   /* {base}/v1/railway/projects/{enc(project)} */
    char *auth;     /* "Bearer <token>" */
    char *token;
    bool token_held; /* as a secret (secrets.h) */
    const void *secret_scope;
    char *acting_user;
    char *ca_file;
    bool insecure;
    long timeout_ms;
    size_t max_response_bytes;
};

struct platform_call {
    platform_api *api;
    sk_http *http;
    platform_call_cb cb;
    void *ud;
    char *method;
    char *path;
    char *url;    /* for errors: no user info, and our paths carry no query */
    bool in_cb;
};

static char *api_strdup(const char *s) { return s ? strdup(s) : NULL; }

/* ---- settings (docs/protocols/platform.md §2.1) ------------------------------ */

sk_error *sk_platform_config_error(const char *key, const char *fmt, const char *a)
{
    return sk_error_new(SK_ERR_CONFIG, json_pack("{s:s,s:s}", "provider", "platform", "key", key), fmt, a);
}

const char *sk_platform_setting(const json_t *o, const char *key, const char *env)
{
    const char *v = json_string_value(json_object_get(o, key));
    if (v && *v)
        return v;
    v = env ? getenv(env) : NULL;
    return v && *v ? v : NULL;
}

static char *api_trimmed(const char *s)
{
    if (!s)
        return NULL;
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        n--;
    return strndup(s, n);
}

/* base_url option (tests), MASTRA_WORKSPACE_PROXY_URL without one trailing
 * '/', MASTRA_PLATFORM_REGION us|eu, else the default. */
static char *api_base_url(const json_t *o)
{
    const char *v = json_string_value(json_object_get(o, "base_url"));
    if (!v || !*v) {
        v = getenv("MASTRA_WORKSPACE_PROXY_URL");
        if (v && !*v)
            v = NULL;
    }
    if (v) {
        size_t n = strlen(v);
        if (n > 0 && v[n - 1] == '/')
            n--;
        return strndup(v, n);
    }
    char *region = api_trimmed(getenv("MASTRA_PLATFORM_REGION"));
    char *url = NULL;
    if (region) {
        for (char *p = region; *p; p++)
            *p = (char)((*p >= 'A' && *p <= 'Z') ? *p + 32 : *p);
        if (strcmp(region, "us") == 0 || strcmp(region, "eu") == 0) {
            if (asprintf(&url, "https://workspaces.%s.mastra.ai", region) < 0)
                url = NULL;
            free(region);
            return url;
        }
        free(region);
    }
    return strdup(PLATFORM_DEFAULT_URL);
}

/* A value sent in a header: a line break would end it early. */
static sk_error *api_header_safe(const char *what, const char *key, const char *v)
{
    if (!v || !strpbrk(v, "\r\n"))
        return NULL;
    char *msg = NULL;
    if (asprintf(&msg, "%s option '%s' contains a line break", what, key) < 0)
        return sk_error_oom();
    sk_error *e = sk_platform_config_error(key, "%s", msg);
    free(msg);
    return e;
}

int sk_platform_settings(const json_t *o, const char *what, platform_settings *out, sk_error **err)
{
    *out = (platform_settings){ 0 };
    out->token = sk_platform_setting(o, "access_token", "MASTRA_PLATFORM_ACCESS_TOKEN");
    if (!out->token) {
        *err = sk_platform_config_error("access_token",
                                        "%s: access_token is required (option access_token or "
                                        "MASTRA_PLATFORM_ACCESS_TOKEN)",
                                        what);
        return -1;
    }
    out->project_id = sk_platform_setting(o, "project_id", "MASTRA_PROJECT_ID");
    if (!out->project_id) {
        *err = sk_platform_config_error("project_id",
                                        "%s: project_id is required (option project_id or MASTRA_PROJECT_ID)", what);
        return -1;
    }
    const char *base_opt = json_string_value(json_object_get(o, "base_url"));
    if (base_opt && strncmp(base_opt, "http://", 7) != 0 && strncmp(base_opt, "https://", 8) != 0) {
        *err = sk_platform_config_error("base_url", "%s option 'base_url' must start with http:// or https://",
                                        what);
        return -1;
    }
    if ((*err = api_header_safe(what, "access_token", out->token)))
        return -1;
    out->base_url = api_base_url(o);
    out->acting_user_id = api_trimmed(json_string_value(json_object_get(o, "acting_user_id")));
    if (!out->base_url || (json_is_string(json_object_get(o, "acting_user_id")) && !out->acting_user_id)) {
        sk_platform_settings_free(out);
        *err = sk_error_oom();
        return -1;
    }
    if ((*err = api_header_safe(what, "acting_user_id", out->acting_user_id))) {
        sk_platform_settings_free(out);
        return -1;
    }
    return 0;
}

void sk_platform_settings_free(platform_settings *s)
{
    free(s->base_url);
    free(s->acting_user_id);
    s->base_url = s->acting_user_id = NULL;
}

char *sk_platform_enc(const char *s) { return sk_url_escape(s, "!*'()"); }

double sk_platform_wall_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec * 1000.0 + (double)tv.tv_usec / 1000.0;
}

static bool iso_digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*p)[i]))
            return false;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return true;
}

/* YYYY-MM-DDTHH:MM:SS[.fff...](Z|+HH:MM|-HH:MM), as Date.parse accepts
 * from the proxy (JavaScript toISOString output and offsets). */
bool sk_platform_parse_iso(const char *s, double *out_ms)
{
    if (!s)
        return false;
    const char *p = s;
    int y, mo, d, h, mi, sec;
    if (!iso_digits(&p, 4, &y) || *p++ != '-' || !iso_digits(&p, 2, &mo) || *p++ != '-' ||
        !iso_digits(&p, 2, &d) || (*p != 'T' && *p != 't' && *p != ' '))
        return false;
    p++;
    if (!iso_digits(&p, 2, &h) || *p++ != ':' || !iso_digits(&p, 2, &mi) || *p++ != ':' ||
        !iso_digits(&p, 2, &sec))
        return false;
    double frac = 0, scale = 100;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return false;
        while (isdigit((unsigned char)*p)) {
            frac += (*p - '0') * scale;
            scale /= 10;
            p++;
        }
    }
    int offset_min = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1, oh, om;
        p++;
        if (!iso_digits(&p, 2, &oh))
            return false;
        if (*p == ':')
            p++;
        if (!iso_digits(&p, 2, &om))
            return false;
        offset_min = sign * (oh * 60 + om);
    } else {
        return false;
    }
    if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return false;
    struct tm tm = { 0 };
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    time_t t = timegm(&tm);
    *out_ms = (double)t * 1000.0 + frac - (double)offset_min * 60000.0;
    return true;
}

platform_api *sk_platform_api_new(sk_loop *loop, const platform_api_config *cfg)
{
    platform_api *api = calloc(1, sizeof *api);
    char *project = sk_platform_enc(cfg->project_id);
    if (!api || !project)
        goto fail;
    api->loop = loop;
    api->secret_scope = cfg->secret_scope;
    api->insecure = cfg->insecure_skip_verify;
    api->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 60000;
    api->max_response_bytes = cfg->max_response_bytes ? cfg->max_response_bytes : SK_HTTP_DEFAULT_MAX_BODY;
    if (asprintf(&api->prefix, "%s/v1/railway/projects/%s", cfg->base_url, project) < 0) {
        api->prefix = NULL;
        goto fail;
    }
    if (asprintf(&api->auth, "Bearer %s", cfg->token) < 0) {
        api->auth = NULL;
        goto fail;
    }
    api->token = strdup(cfg->token);
    if (!api->token || sk_secret_hold(api->token) != 0)
        goto fail;
    api->token_held = true;
    if (cfg->acting_user_id && *cfg->acting_user_id && !(api->acting_user = strdup(cfg->acting_user_id)))
        goto fail;
    if (cfg->ca_file && !(api->ca_file = strdup(cfg->ca_file)))
        goto fail;
    free(project);
    return api;
fail:
    free(project);
    sk_platform_api_free(api);
    return NULL;
}

platform_api *sk_platform_api_open(sk_loop *loop, const json_t *o, const char *what, const void *secret_scope,
                                   sk_error **err)
{
    platform_settings set;
    if (sk_platform_settings(o, what, &set, err) != 0)
        return NULL;
    json_t *rt = json_object_get(o, "request_timeout_ms"), *max = json_object_get(o, "max_response_bytes");
    const char *ca = json_string_value(json_object_get(o, "ca_file"));
    platform_api_config cfg = {
        .base_url = set.base_url,
        .project_id = set.project_id,
        .token = set.token,
        .acting_user_id = set.acting_user_id,
        .ca_file = ca && *ca ? ca : NULL,
        .insecure_skip_verify = json_is_true(json_object_get(o, "insecure_skip_verify")),
        .timeout_ms = json_is_number(rt) ? (long)json_number_value(rt) : 0,
        .max_response_bytes = json_is_number(max) ? (size_t)json_number_value(max) : 0,
        .secret_scope = secret_scope,
    };
    platform_api *api = sk_platform_api_new(loop, &cfg);
    sk_platform_settings_free(&set);
    if (!api)
        *err = sk_error_oom();
    return api;
}

void sk_platform_api_free(platform_api *api)
{
    if (!api)
        return;
    free(api->prefix);
    if (api->auth) {
        memset(api->auth, 0, strlen(api->auth));
        free(api->auth);
    }
    if (api->token) {
        if (api->token_held)
            sk_secret_release(api->token);
        memset(api->token, 0, strlen(api->token));
        free(api->token);
    }
    free(api->acting_user);
    free(api->ca_file);
    free(api);
}

/* Redacts every held token and the scope's env values from text, in every
 * form secrets.h knows: a new string, NULL on ENOMEM. */
static char *platform_api_redact(const platform_api *api, const char *text, size_t len, size_t *out_len)
{
    /* every held token, this sandbox's env values, in every encoded form;
     * before any cut, so a secret straddling it cannot half-survive */
    return sk_redact(api ? api->secret_scope : NULL, text, len, out_len);
}

/* ---- responses ------------------------------------------------------------ */

static sk_error *api_error_from_response(platform_call *c, int status, const char *body, size_t body_len,
                                         bool malformed_2xx)
{
    size_t rlen = 0;
    bool body_cut = body && body_len > PLATFORM_BODY_FIELD_MAX;
    char *raw = platform_api_redact(c->api, body ? body : "", body ? (body_cut ? PLATFORM_BODY_FIELD_MAX : body_len) : 0,
                                    &rlen);
    if (!raw)
        return sk_error_oom();
    const char *code = NULL, *proxy_message = NULL;
    json_t *doc = rlen ? json_loadb(raw, rlen, 0, NULL) : NULL;
    json_t *eobj = json_is_object(doc) ? json_object_get(doc, "error") : NULL;
    if (json_is_object(eobj) && json_is_string(json_object_get(eobj, "message")) &&
        json_is_string(json_object_get(eobj, "type"))) {
        code = json_string_value(json_object_get(eobj, "type"));
        proxy_message = json_string_value(json_object_get(eobj, "message"));
    }
    json_t *fields = json_object();
    json_object_set_new(fields, "status", json_integer(status));
    json_object_set_new(fields, "body", json_stringn_nocheck(raw, rlen));
    if (body_cut)
        json_object_set_new(fields, "body_truncated", json_true());
    if (code) {
        json_object_set_new(fields, "code", json_string_nocheck(code));
        json_object_set_new(fields, "proxy_message", json_string_nocheck(proxy_message));
    }
    json_object_set_new(fields, "method", json_string(c->method));
    json_object_set_new(fields, "path", json_string(c->path));
    json_object_set_new(fields, "url", json_string(c->url));
    sk_error *err;
    if (malformed_2xx) {
        json_object_set_new(fields, "malformed", json_true());
        err = sk_error_new(SK_ERR_PLATFORM_API, fields,
                           "Platform proxy returned a malformed response to %s %s (status %d)", c->method,
                           c->path, status);
    } else if (code) {
        err = sk_error_new(SK_ERR_PLATFORM_API, fields, "Platform proxy request failed with %d: %s: %s", status,
                           code, proxy_message);
    } else if (rlen) {
        bool cut = rlen > PLATFORM_MSG_BODY_MAX;
        err = sk_error_new(SK_ERR_PLATFORM_API, fields, "Platform proxy request failed with %d: %.*s%s", status,
                           (int)(cut ? PLATFORM_MSG_BODY_MAX : rlen), raw, cut ? "..." : "");
    } else {
        err = sk_error_new(SK_ERR_PLATFORM_API, fields, "Platform proxy request failed with %d", status);
    }
    json_decref(doc);
    free(raw);
    return err;
}

static sk_error *api_transport_error(platform_call *c, const sk_http_result *res)
{
    size_t rlen = 0;
    const char *detail = res->error ? res->error : sk_http_err_name(res->err);
    char *safe = platform_api_redact(c->api, detail, strlen(detail), &rlen);
    json_t *fields = json_pack("{s:s,s:s,s:s,s:s}", "method", c->method, "path", c->path, "url", c->url,
                               "reason", sk_http_err_name(res->err));
    sk_error *err;
    if (res->err == SK_HTTP_ERR_TOO_LARGE) {
        json_object_set_new(fields, "limit", json_integer((json_int_t)res->limit));
        json_object_set_new(fields, "provider", json_string("platform"));
        if (res->status)
            json_object_set_new(fields, "status", json_integer(res->status));
        err = sk_error_new(SK_ERR_RESPONSE_TOO_LARGE, fields,
                           "Platform proxy response to %s %s: %s larger than the limit of %zu bytes%s", c->method,
                           c->path, res->headers_too_large ? "headers" : "body", res->limit,
                           res->headers_too_large ? "" : " (option max_response_bytes)");
    } else if (res->err == SK_HTTP_ERR_TIMEOUT) {
        json_object_set_new(fields, "timeout_ms", json_integer(c->api->timeout_ms));
        err = sk_error_new(SK_ERR_TIMEOUT, fields, "Platform proxy request %s %s timed out after %ld ms", c->method,
                           c->path, c->api->timeout_ms);
    } else {
        err = sk_error_new(SK_ERR_NETWORK, fields, "Platform proxy request %s %s failed: %s", c->method, c->path,
                           safe ? safe : "transport error");
    }
    free(safe);
    return err;
}

/* The URL without user info (a proxy URL from the environment may carry
 * credentials). */
static char *api_safe_url(const char *url)
{
    const char *auth = strstr(url, "://");
    auth = auth ? auth + 3 : url;
    size_t alen = strcspn(auth, "/?#");
    const char *at = memchr(auth, '@', alen);
    char *out = NULL;
    if (asprintf(&out, "%.*s%s", (int)(auth - url), url, at ? at + 1 : auth) < 0)
        return NULL;
    return out;
}

static void call_free(platform_call *c)
{
    free(c->method);
    free(c->path);
    free(c->url);
    free(c);
}

static void call_on_done(sk_http *req, const sk_http_result *res, void *ud)
{
    (void)req;
    platform_call *c = ud;
    c->http = NULL;
    int status = res->err == SK_HTTP_OK ? res->status : 0;
    json_t *json = NULL;
    sk_error *err = NULL;
    if (res->err != SK_HTTP_OK) {
        err = api_transport_error(c, res);
    } else if (status < 200 || status > 299) {
        err = api_error_from_response(c, status, res->body, res->body_len, false);
    } else if (res->body_len > 0) {
        json = json_loadb(res->body, res->body_len, 0, NULL);
        if (!json)
            err = api_error_from_response(c, status, res->body, res->body_len, true);
    }
    c->in_cb = true;
    c->cb(status, json, err, c->ud);
    json_decref(json);
    call_free(c);
}

/* Completes rq as every request of the API goes: its shared headers (in
 * shared) are the credentials (authorization, the acting user when set),
 * then extra when given; its timeout, CA file and TLS verification are the
 * API's. */
static void api_complete(const platform_api *api, sk_http_request *rq, sk_http_header shared[3],
                         const sk_http_header *extra)
{
    size_t n = 0;
    shared[n++] = (sk_http_header){ "authorization", api->auth };
    if (api->acting_user)
        shared[n++] = (sk_http_header){ "x-acting-user-id", api->acting_user };
    if (extra)
        shared[n++] = *extra;
    rq->shared_headers = shared;
    rq->n_shared_headers = n;
    rq->timeout_ms = api->timeout_ms;
    rq->ca_file = api->ca_file;
    rq->insecure_skip_verify = api->insecure;
}

platform_call *sk_platform_api_call(platform_api *api, const char *method, const char *path,
                                 const json_t *body, platform_call_cb cb, void *ud, sk_error **err)
{
    platform_call *c = calloc(1, sizeof *c);
    char *url = NULL, *payload = NULL;
    if (!c || !(c->method = api_strdup(method)) || !(c->path = api_strdup(path)) ||
        asprintf(&url, "%s%s", api->prefix, path) < 0) {
        url = NULL;
        goto oom;
    }
    if (body && !(payload = json_dumps(body, JSON_COMPACT)))
        goto oom;
    c->api = api;
    if (!(c->url = api_safe_url(url)))
        goto oom;
    c->cb = cb;
    c->ud = ud;
    sk_http_request rq = {
        .method = method,
        .url = url,
        .body = payload,
        .body_len = payload ? strlen(payload) : 0,
        .max_body_bytes = api->max_response_bytes,
    };
    /* no body (exec-lease): no content-type at all, not curl's form default */
    sk_http_header shared[3], ctype = { "content-type", payload ? "application/json" : NULL };
    api_complete(api, &rq, shared, &ctype);
    static const sk_http_callbacks callbacks = { .done = call_on_done };
    const char *why = NULL;
    c->http = sk_http_start(api->loop, &rq, &callbacks, c, &why);
    if (!c->http) {
        *err = sk_error_new(SK_ERR_NETWORK, json_pack("{s:s,s:s}", "method", method, "path", path),
                            "Platform proxy request %s %s could not start: %s", method, path,
                            why ? why : "unknown error");
        free(url);
        if (payload) {
            memset(payload, 0, strlen(payload));
            free(payload);
        }
        call_free(c);
        return NULL;
    }
    free(url);
    if (payload) {
        memset(payload, 0, strlen(payload)); /* may carry env values */
        free(payload);
    }
    return c;
oom:
    free(payload);
    free(url);
    if (c)
        call_free(c);
    *err = sk_error_oom();
    return NULL;
}

sk_http *sk_platform_api_request(platform_api *api, const char *method, const char *path,
                                 const sk_http_header *headers, size_t n_headers, const char *body, size_t len,
                                 size_t recv_buffer_bytes, const sk_http_callbacks *cb, void *ud, const char **why)
{
    char *url = NULL;
    if (asprintf(&url, "%s%s", api->prefix, path) < 0) {
        *why = "out of memory";
        return NULL;
    }
    sk_http_request rq = {
        .method = method,
        .url = url,
        .headers = headers,
        .n_headers = n_headers,
        .body = body,
        .body_len = len,
        .body_borrowed = true,
        .recv_buffer_bytes = recv_buffer_bytes,
    };
    sk_http_header shared[3];
    api_complete(api, &rq, shared, NULL);
    sk_http *h = sk_http_start(api->loop, &rq, cb, ud, why);
    free(url);
    return h;
}

void sk_platform_api_cancel(platform_call *c)
{
    if (!c || c->in_cb)
        return;
    if (c->http)
        sk_http_cancel(c->http);
    call_free(c);
}
