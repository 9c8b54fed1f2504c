/* The Engine API client; see docker_api.h and docs/protocols/docker.md §1-2. */
#include "docker_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../buf.h"
#include "../../http.h"
#include "../../secrets.h"

#define DK_DEFAULT_HOST "unix:///var/run/docker.sock"
#define DK_HOST_MAX 300
/* A daemon's error message kept whole up to this; a progress line up to
 * DK_LINE_MAX (longer ones are skipped: no pull line is that long). */
#define DK_MESSAGE_MAX 4096
#define DK_LINE_MAX ((size_t)1 << 20)
#define DK_RAW_MAX ((size_t)64 << 10)

struct dk_call {
    dk_api *api;
    char *method;
    char *path;        /* without the version */
    char *payload;     /* JSON body, or NULL */
    unsigned flags;
    long timeout_ms;
    bool versioned;
    bool delivering;   /* inside its callback */
    dk_call_cb cb;
    void *ud;
    sk_http *http;
    sk_buf line;       /* JSON_LINES: the line being read */
    bool line_skip;    /* ...which is over DK_LINE_MAX: skipped to its end */
    char *stream_error;
    sk_buf raw;        /* RAW_STREAM: the first DK_RAW_MAX bytes */
    dk_call *prev, *next;  /* api->calls */
    dk_call *wnext;        /* api->waiting */
};

/* ---- where the daemon is -------------------------------------------------- */

static bool dk_file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static char *dk_cert_file(const char *dir, const char *name)
{
    char *p = NULL;
    if (asprintf(&p, "%s/%s", dir, name) < 0)
        return NULL;
    if (!dk_file_exists(p)) {
        free(p);
        return NULL;
    }
    return p;
}

/* fmt takes the host (at most 64 bytes of it are shown) and its source. */
static sk_error *dk_config_error(const char *fmt, const char *host, const char *source)
{
    char shown[80];
    snprintf(shown, sizeof shown, "%.64s%s", host, strlen(host) > 64 ? "..." : "");
    return sk_error_new(SK_ERR_CONFIG, json_pack("{s:s,s:s}", "provider", "docker", "key", "docker_host"), fmt, shown,
                        source);
}

/* Whether a scheme is at most one edit (a letter changed, added, dropped,
 * or two swapped) from want: "unx", "tpc", "unixx". */
static bool dk_scheme_near(const char *s, size_t n, const char *want)
{
    size_t m = strlen(want), i = 0;
    while (i < n && i < m && s[i] == want[i])
        i++;
    if (i == n && i == m)
        return true;
    if (n == m) /* one changed, or two swapped */
        return strncmp(s + i + 1, want + i + 1, n - i - 1) == 0 ||
               (i + 1 < n && s[i] == want[i + 1] && s[i + 1] == want[i] && strncmp(s + i + 2, want + i + 2, n - i - 2) == 0);
    if (n == m + 1) /* one added */
        return strncmp(s + i + 1, want + i, m - i) == 0;
    if (n + 1 == m) /* one dropped */
        return strncmp(s + i, want + i + 1, n - i) == 0;
    return false;
}

/* What a host that is neither unix:// nor tcp:// most likely meant, in buf
 * (at most 64 bytes of it), or NULL: a bare socket path, http(s):// for
 * tcp://, or a scheme one letter off. */
static const char *dk_host_hint(const char *host, char *buf, size_t size)
{
    const char *sep = strstr(host, "://");
    const char *scheme = NULL, *rest = host;
    if (host[0] == '/') {
        scheme = "unix";
    } else if (sep) {
        size_t n = (size_t)(sep - host);
        rest = sep + 3;
        if (dk_scheme_near(host, n, "unix"))
            scheme = "unix";
        else if (dk_scheme_near(host, n, "tcp") || (n == 4 && strncmp(host, "http", 4) == 0) ||
                 (n == 5 && strncmp(host, "https", 5) == 0))
            scheme = "tcp";
    }
    if (!scheme)
        return NULL;
    snprintf(buf, size, "%s://%.64s%s", scheme, rest, strlen(rest) > 64 ? "..." : "");
    return buf;
}

int sk_dk_api_init(dk_api *api, sk_loop *loop, const void *secret_scope, const char *docker_host, long timeout_ms,
                   sk_error **err)
{
    memset(api, 0, sizeof *api);
    api->loop = loop;
    api->secret_scope = secret_scope;
    api->timeout_ms = timeout_ms;
    const char *env = getenv("DOCKER_HOST");
    const char *host = DK_DEFAULT_HOST;
    api->host_source = "default";
    if (docker_host && *docker_host) {
        host = docker_host;
        api->host_source = "option docker_host";
    } else if (env && *env) {
        host = env;
        api->host_source = "DOCKER_HOST";
    }
    /* a unix socket path fits sun_path; a host name, DNS's 253 bytes */
    if (strlen(host) > DK_HOST_MAX) {
        *err = dk_config_error("Docker host '%s' (%s) is too long to be a socket path or an address", host,
                               api->host_source);
        return -1;
    }
    if (!(api->host = strdup(host)))
        goto oom;
    if (strncmp(host, "unix://", 7) == 0) {
        const char *path = host + 7;
        if (!*path) {
            *err = dk_config_error("Docker host '%s' (%s) names no socket path", host, api->host_source);
            return -1;
        }
        if (!(api->unix_socket = strdup(path)) || !(api->base_url = strdup("http://docker")))
            goto oom;
        return 0;
    }
    if (strncmp(host, "tcp://", 6) != 0) {
        char hint[96];
        if (dk_host_hint(host, hint, sizeof hint)) {
            *err = dk_config_error("Docker host '%s' (%s) is not unix:// or tcp://", host, api->host_source);
            if (*err) {
                char *msg = NULL;
                if (asprintf(&msg, "%s (did you mean '%s'?)", (*err)->message, hint) >= 0) {
                    free((*err)->message);
                    (*err)->message = msg;
                }
            }
        } else {
            *err = dk_config_error("Docker host '%s' (%s) is not unix:// or tcp:// (ssh:// and npipe:// are not "
                                   "supported)", host, api->host_source);
        }
        return -1;
    }
    /* the docker CLI's rules: TLS when DOCKER_TLS_VERIFY or DOCKER_TLS is
     * set (non-empty); verified only with DOCKER_TLS_VERIFY; the files
     * ca.pem, cert.pem, key.pem from DOCKER_CERT_PATH, else ~/.docker */
    const char *verify = getenv("DOCKER_TLS_VERIFY"), *tls = getenv("DOCKER_TLS");
    bool use_tls = (verify && *verify) || (tls && *tls);
    const char *addr = host + 6;
    size_t alen = strcspn(addr, "/?#");
    if (alen == 0) {
        *err = dk_config_error("Docker host '%s' (%s) names no address", host, api->host_source);
        return -1;
    }
    /* a port unless given: 2376 with TLS, 2375 without */
    const char *colon = NULL;
    for (size_t i = 0; i < alen; i++)
        if (addr[i] == ':')
            colon = addr + i;
    bool bracket_end = alen && addr[alen - 1] == ']';
    bool has_port = colon && !bracket_end;
    if (has_port && (size_t)(colon - addr) == alen - 1) {
        *err = dk_config_error("Docker host '%s' (%s) has an empty port", host, api->host_source);
        return -1;
    }
    if (asprintf(&api->base_url, "%s://%.*s%s", use_tls ? "https" : "http", (int)alen, addr,
                 has_port ? "" : use_tls ? ":2376" : ":2375") < 0) {
        api->base_url = NULL;
        goto oom;
    }
    if (use_tls) {
        const char *dir = getenv("DOCKER_CERT_PATH");
        char *home_dir = NULL;
        if (!dir || !*dir) {
            const char *home = getenv("HOME");
            if (home && asprintf(&home_dir, "%s/.docker", home) < 0)
                home_dir = NULL;
            dir = home_dir;
        }
        if (dir) {
            api->ca_file = dk_cert_file(dir, "ca.pem");
            api->client_cert = dk_cert_file(dir, "cert.pem");
            api->client_key = dk_cert_file(dir, "key.pem");
        }
        free(home_dir);
        api->insecure = !(verify && *verify);
    }
    return 0;
oom:
    sk_dk_api_free(api);
    *err = sk_error_oom();
    return -1;
}

/* ---- calls ------------------------------------------------------------------ */

static void call_free(dk_call *c)
{
    dk_api *api = c->api;
    if (c->prev)
        c->prev->next = c->next;
    else if (api->calls == c)
        api->calls = c->next;
    if (c->next)
        c->next->prev = c->prev;
    for (dk_call **pp = &api->waiting; *pp; pp = &(*pp)->wnext)
        if (*pp == c) {
            *pp = c->wnext;
            break;
        }
    if (api->negotiating == c)
        api->negotiating = NULL;
    if (c->http)
        sk_http_cancel(c->http);
    free(c->method);
    free(c->path);
    if (c->payload) {
        memset(c->payload, 0, strlen(c->payload)); /* may carry env values */
        free(c->payload);
    }
    sk_buf_free(&c->line);
    sk_buf_free(&c->raw);
    free(c->stream_error);
    free(c);
}

void sk_dk_api_cancel(dk_call *c)
{
    if (c && !c->delivering)
        call_free(c);
}

void sk_dk_api_free(dk_api *api)
{
    while (api->calls)
        call_free(api->calls);
    free(api->host);
    free(api->base_url);
    free(api->unix_socket);
    free(api->ca_file);
    free(api->client_cert);
    free(api->client_key);
    memset(api, 0, sizeof *api);
}

char *sk_dk_api_versioned(const dk_api *api, const char *path)
{
    char *out = NULL;
    if (asprintf(&out, "/v%s%s", api->version, path) < 0)
        return NULL;
    return out;
}

void sk_dk_api_conn_opts(const dk_api *api, dk_conn_opts *o)
{
    memset(o, 0, sizeof *o);
    o->url = api->base_url;
    o->unix_socket = api->unix_socket;
    o->ca_file = api->ca_file;
    o->client_cert = api->client_cert;
    o->client_key = api->client_key;
    o->insecure = api->insecure;
    o->connect_timeout_ms = api->timeout_ms;
}

void sk_dk_api_http_target(const dk_api *api, sk_http_request *rq)
{
    rq->ca_file = api->ca_file;
    rq->client_cert = api->client_cert;
    rq->client_key = api->client_key;
    rq->insecure_skip_verify = api->insecure;
    rq->unix_socket = api->unix_socket;
    rq->version = SK_HTTP_1_1;
    if (!rq->timeout_ms)
        rq->timeout_ms = api->timeout_ms;
}

const char *sk_dk_reply_message(const dk_reply *r)
{
    const char *m = json_string_value(json_object_get(r->json, "message"));
    if (m)
        return m;
    return r->body ? r->body : "";
}

sk_error *sk_dk_api_error(const dk_api *api, const char *method, const char *path, const dk_reply *r,
                          const char *what)
{
    const char *msg = sk_dk_reply_message(r);
    size_t len = strlen(msg);
    while (len && (msg[len - 1] == '\n' || msg[len - 1] == '\r'))
        len--;
    bool cut = len > DK_MESSAGE_MAX;
    json_t *fields = json_object();
    json_object_set_new(fields, "status", json_integer(r->status));
    json_object_set_new(fields, "method", json_string(method));
    json_object_set_new(fields, "path", json_string(path));
    json_object_set_new(fields, "docker_host", json_string(api->host));
    json_object_set_new(fields, "docker_message", json_stringn_nocheck(msg, cut ? DK_MESSAGE_MAX : len));
    return sk_error_new(SK_ERR_DOCKER_API, fields, "%s failed (%s %s, status %d): %.*s%s", what, method, path,
                        r->status, (int)(cut ? DK_MESSAGE_MAX : len), msg, cut ? "..." : "");
}

sk_error *sk_dk_api_transport_error(const dk_api *api, const char *method, const char *path, bool timed_out,
                                    const char *detail)
{
    json_t *fields = json_pack("{s:s,s:s,s:s,s:s}", "method", method, "path", path, "docker_host", api->host,
                               "docker_host_source", api->host_source);
    const char *hint = strcmp(api->host_source, "default") == 0
                           ? "the default; set DOCKER_HOST or the docker_host option to choose another"
                           : api->host_source;
    if (timed_out) {
        json_object_set_new(fields, "timeout_ms", json_integer(api->timeout_ms));
        return sk_error_new(SK_ERR_TIMEOUT, fields,
                            "Docker daemon at %s (%s) did not answer %s %s within %ld ms", api->host, hint, method,
                            path, api->timeout_ms);
    }
    return sk_error_new(SK_ERR_NETWORK, fields, "Cannot reach the Docker daemon at %s (%s): %s %s: %s", api->host,
                        hint, method, path, detail ? detail : "transport error");
}

/* The reply points into c: c goes after the callback (which cannot cancel
 * it: delivering makes that a no-op). */
static void call_deliver(dk_call *c, const dk_reply *reply, sk_error *err)
{
    if (err)
        sk_error_redact(c->api->secret_scope, err);
    c->delivering = true;
    c->cb(reply, err, c->ud);
    sk_error_free(err);
    c->delivering = false;
    call_free(c);
}

static void call_on_line(dk_call *c, const char *line, size_t len)
{
    if (c->stream_error || len == 0)
        return;
    json_t *doc = json_loadb(line, len, 0, NULL);
    /* {"error": "...", "errorDetail": {"message": "..."}}: Docker and
     * Podman alike report a failed pull so, inside a 200 response */
    const char *e = json_string_value(json_object_get(doc, "error"));
    if (!e)
        e = json_string_value(json_object_get(json_object_get(doc, "errorDetail"), "message"));
    if (e)
        c->stream_error = strndup(e, DK_MESSAGE_MAX);
    json_decref(doc);
}

static void call_on_data(sk_http *req, const char *data, size_t len, void *ud)
{
    (void)req;
    dk_call *c = ud;
    if (c->flags & DK_CALL_RAW_STREAM) {
        size_t room = c->raw.len < DK_RAW_MAX ? DK_RAW_MAX - c->raw.len : 0;
        if (room)
            sk_buf_append(&c->raw, data, len < room ? len : room);
        return;
    }
    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        size_t n = nl ? (size_t)(nl - data) : len;
        if (!c->line_skip && c->line.len + n <= DK_LINE_MAX) {
            if (sk_buf_append(&c->line, data, n) != 0)
                c->line_skip = true;
        } else {
            c->line_skip = true;
        }
        if (!nl)
            return;
        if (!c->line_skip)
            call_on_line(c, c->line.data ? c->line.data : "", c->line.len);
        sk_buf_reset(&c->line);
        c->line_skip = false;
        data += n + 1;
        len -= n + 1;
    }
}

static sk_error *call_start_http(dk_call *c);

/* The API version is settled: the calls that waited for it start now,
 * each failing with a copy of err when there is one (the version could
 * not be had) or with its own error when it cannot start. */
static void api_release_waiting(dk_api *api, const sk_error *err)
{
    while (api->waiting) {
        dk_call *w = api->waiting;
        api->waiting = w->wnext;
        w->wnext = NULL;
        sk_error *werr = err ? sk_error_copy(err) : call_start_http(w);
        if (werr)
            call_deliver(w, NULL, werr);
    }
}

static dk_call *call_new(dk_api *api, const char *method, const char *path, const json_t *body, unsigned flags,
                         long timeout_ms, dk_call_cb cb, void *ud);

static void call_on_done(sk_http *req, const sk_http_result *res, void *ud)
{
    (void)req;
    dk_call *c = ud;
    c->http = NULL;
    if (res->err != SK_HTTP_OK) {
        char *vpath = c->versioned ? sk_dk_api_versioned(c->api, c->path) : NULL;
        const char *shown = vpath ? vpath : c->path;
        sk_error *err;
        if (res->err == SK_HTTP_ERR_TOO_LARGE) {
            err = sk_error_new(SK_ERR_RESPONSE_TOO_LARGE,
                               json_pack("{s:s,s:s,s:s,s:I}", "provider", "docker", "method", c->method, "path",
                                         shown, "limit", (json_int_t)res->limit),
                               "Docker daemon's response to %s %s: %s larger than the limit of %zu bytes", c->method,
                               shown, res->headers_too_large ? "headers" : "body", res->limit);
        } else {
            /* http.c's message starts with the request; the detail after it
             * (for a unix socket curl speaks of "port 80": said plainly) */
            const char *detail = res->error ? res->error : sk_http_err_name(res->err);
            const char *after = strstr(detail, ": ");
            char plain[512];
            if (c->api->unix_socket && res->err == SK_HTTP_ERR_CONNECT) {
                snprintf(plain, sizeof plain, "%s %s", c->api->unix_socket,
                         dk_file_exists(c->api->unix_socket) ? "refused the connection (is the daemon running?)"
                                                             : "does not exist (is the daemon running?)");
                detail = plain;
                after = NULL;
            }
            err = sk_dk_api_transport_error(c->api, c->method, shown, res->err == SK_HTTP_ERR_TIMEOUT,
                                            after ? after + 2 : detail);
        }
        free(vpath);
        if (c->api->negotiating == c) {
            /* the calls waiting for the version fail with it */
            c->api->negotiating = NULL;
            api_release_waiting(c->api, err);
        }
        call_deliver(c, NULL, err);
        return;
    }
    dk_reply reply = { .status = res->status };
    if (c->flags & DK_CALL_RAW_STREAM) {
        reply.body = c->raw.data ? c->raw.data : "";
        reply.body_len = c->raw.len;
    } else {
        reply.body = res->body ? res->body : "";
        reply.body_len = res->body ? res->body_len : 0;
    }
    if (c->flags & DK_CALL_JSON_LINES) {
        if (c->line.len && !c->line_skip)
            call_on_line(c, c->line.data, c->line.len);
        reply.stream_error = c->stream_error;
    }
    json_t *doc = NULL;
    if (reply.body_len && (reply.body[0] == '{' || reply.body[0] == '['))
        doc = json_loadb(reply.body, reply.body_len, 0, NULL);
    reply.json = doc;
    dk_api *api = c->api;
    if (api->negotiating == c) {
        /* the version: the daemon's, capped at what this client knows */
        api->negotiating = NULL;
        /* GET /_ping's API-Version header, as moby's client negotiates: Podman
         * answers GET /version in seconds (it asks its runtime and conmon for
         * their versions), and a fleet's sandboxes each ask at once */
        const char *v = NULL;
        for (size_t i = 0; res->status == 200 && i < res->n_headers; i++)
            if (strcasecmp(res->headers[i].name, "Api-Version") == 0)
                v = res->headers[i].value;
        if (!v && strcmp(c->path, "/_ping") == 0) {
            /* a daemon older than API 1.25 says it only in GET /version */
            dk_call *n = call_new(api, "GET", "/version", NULL, 0, 0, c->cb, NULL);
            sk_error *nerr = n ? NULL : sk_error_oom();
            if (n) {
                n->versioned = false;
                api->negotiating = n;
                if ((nerr = call_start_http(n))) {
                    api->negotiating = NULL;
                    call_free(n);
                }
            }
            json_decref(doc);
            if (!nerr) {
                call_deliver(c, NULL, NULL);
                return;
            }
            api_release_waiting(api, nerr);
            call_deliver(c, NULL, NULL);
            sk_error_free(nerr);
            return;
        }
        if (!v)
            v = json_string_value(json_object_get(doc, "ApiVersion"));
        int maj = 0, min = 0, cmaj = 0, cmin = 0, lmaj = 0, lmin = 0;
        sk_error *err = NULL;
        if (res->status != 200 || !v || sscanf(v, "%d.%d", &maj, &min) != 2) {
            err = res->status != 200 ? sk_dk_api_error(api, "GET", c->path, &reply, "Docker API version check")
                                     : sk_error_new(SK_ERR_DOCKER_API,
                                                    json_pack("{s:i,s:s,s:s,s:s}", "status", res->status, "method",
                                                              "GET", "path", c->path, "docker_host", api->host),
                                                    "Docker daemon at %s answered GET %s without an API version",
                                                    api->host, c->path);
        } else {
            sscanf(DK_API_VERSION_MAX, "%d.%d", &cmaj, &cmin);
            sscanf(DK_API_VERSION_MIN, "%d.%d", &lmaj, &lmin);
            if (maj < lmaj || (maj == lmaj && min < lmin))
                err = sk_error_new(SK_ERR_DOCKER_API,
                                   json_pack("{s:i,s:s,s:s,s:s,s:s}", "status", res->status, "method", "GET", "path",
                                             c->path, "docker_host", api->host, "api_version", v),
                                   "Docker daemon at %s speaks API %s; sandkit needs %s or newer", api->host, v,
                                   DK_API_VERSION_MIN);
            else if (maj > cmaj || (maj == cmaj && min > cmin))
                snprintf(api->version, sizeof api->version, "%s", DK_API_VERSION_MAX);
            else
                snprintf(api->version, sizeof api->version, "%d.%d", maj, min);
        }
        json_decref(doc);
        api_release_waiting(api, err); /* the calls waiting for it go now (or fail with it) */
        call_deliver(c, NULL, NULL); /* the negotiation call has no callback of its own */
        sk_error_free(err);
        return;
    }
    call_deliver(c, &reply, NULL);
    json_decref(doc);
}

/* Starts c's request; NULL, or the error it could not start with (c is
 * left to the caller). */
static sk_error *call_start_http(dk_call *c)
{
    char *vpath = c->versioned ? sk_dk_api_versioned(c->api, c->path) : strdup(c->path);
    char *url = NULL;
    if (!vpath || asprintf(&url, "%s%s", c->api->base_url, vpath) < 0) {
        free(vpath);
        return sk_error_oom();
    }
    sk_http_header headers[1] = { { "content-type", c->payload ? "application/json" : NULL } };
    sk_http_request rq = {
        .method = c->method,
        .url = url,
        .headers = headers,
        .n_headers = 1,
        .body = c->payload,
        .body_len = c->payload ? strlen(c->payload) : 0,
        .body_borrowed = c->payload != NULL,
        .timeout_ms = c->timeout_ms,
    };
    sk_dk_api_http_target(c->api, &rq);
    static const sk_http_callbacks plain = { .done = call_on_done };
    static const sk_http_callbacks streamed = { .data = call_on_data, .done = call_on_done };
    const char *why = NULL;
    bool stream = c->flags & (DK_CALL_JSON_LINES | DK_CALL_RAW_STREAM);
    c->http = sk_http_start(c->api->loop, &rq, stream ? &streamed : &plain, c, &why);
    free(url);
    sk_error *err = NULL;
    if (!c->http)
        err = sk_dk_api_transport_error(c->api, c->method, vpath, false, why ? why : "cannot start");
    free(vpath);
    return err;
}

static void negotiation_done(const dk_reply *reply, const sk_error *err, void *ud)
{
    (void)reply;
    (void)err;
    (void)ud;
}

static dk_call *call_new(dk_api *api, const char *method, const char *path, const json_t *body, unsigned flags,
                         long timeout_ms, dk_call_cb cb, void *ud)
{
    dk_call *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->api = api;
    c->flags = flags;
    c->timeout_ms = timeout_ms;
    c->cb = cb;
    c->ud = ud;
    c->versioned = true;
    if (!(c->method = strdup(method)) || !(c->path = strdup(path)) ||
        (body && !(c->payload = json_dumps(body, JSON_COMPACT)))) {
        free(c->method);
        free(c->path);
        free(c);
        return NULL;
    }
    c->next = api->calls;
    if (api->calls)
        api->calls->prev = c;
    api->calls = c;
    return c;
}

dk_call *sk_dk_api_call(dk_api *api, const char *method, const char *path, const json_t *body, unsigned flags,
                        long timeout_ms, dk_call_cb cb, void *ud, sk_error **err)
{
    dk_call *c = call_new(api, method, path, body, flags, timeout_ms, cb, ud);
    if (!c) {
        *err = sk_error_oom();
        return NULL;
    }
    sk_error *serr = NULL;
    if (api->version[0]) {
        if ((serr = call_start_http(c))) {
            call_free(c);
            *err = serr;
            return NULL;
        }
        return c;
    }
    c->wnext = api->waiting;
    api->waiting = c;
    if (!api->negotiating) {
        dk_call *n = call_new(api, "GET", "/_ping", NULL, 0, 0, negotiation_done, NULL);
        if (!n) {
            call_free(c);
            *err = sk_error_oom();
            return NULL;
        }
        n->versioned = false;
        api->negotiating = n;
        if ((serr = call_start_http(n))) {
            call_free(n);
            call_free(c);
            *err = serr;
            return NULL;
        }
    }
    return c;
}
