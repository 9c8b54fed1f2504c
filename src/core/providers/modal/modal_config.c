/* Modal configuration resolution and JWT expiry; see modal_config.h. */
#include "modal_config.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../buf.h"
#include "../../grpc_frame.h"
#include "toml.h"

static bool config_nonempty(const char *s)
{
    return s && *s;
}

/* A profile key, only if it is a non-empty string. */
static const char *config_profile_str(json_t *profile, const char *key)
{
    const char *s = json_string_value(json_object_get(profile, key));
    return config_nonempty(s) ? s : NULL;
}

/* JavaScript truthiness of a parsed TOML value (`if (profileData.active)`). */
static bool config_truthy(json_t *v)
{
    if (!v)
        return false;
    switch (json_typeof(v)) {
    case JSON_TRUE:
    case JSON_OBJECT:
    case JSON_ARRAY:
        return true;
    case JSON_STRING:
        return json_string_length(v) > 0;
    case JSON_INTEGER:
        return json_integer_value(v) != 0;
    case JSON_REAL:
        return json_real_value(v) != 0;
    default:
        return false;
    }
}

/* Profile data: a table of the document, or NULL (empty). */
static json_t *config_pick_profile(json_t *doc, const char *wanted, const char **name)
{
    *name = NULL;
    if (!doc)
        return NULL;
    if (config_nonempty(wanted)) {
        *name = wanted;
        json_t *p = json_object_get(doc, wanted);
        return json_is_object(p) ? p : NULL;
    }
    const char *k;
    json_t *v;
    json_object_foreach(doc, k, v) {
        if (json_is_object(v) && config_truthy(json_object_get(v, "active"))) {
            *name = k;
            return v;
        }
    }
    return NULL;
}

static const char *config_first(const char *a, const char *b, const char *c)
{
    return config_nonempty(a) ? a : config_nonempty(b) ? b : c;
}

/* Copy of s, or NULL for NULL. -1 on ENOMEM. */
static int config_dup(char **dst, const char *s)
{
    if (!s) {
        *dst = NULL;
        return 0;
    }
    *dst = strdup(s);
    return *dst ? 0 : -1;
}

/* Non-negative decimal seconds; anything else leaves it unset. */
static int64_t config_parse_wait(const char *s)
{
    if (!config_nonempty(s) || strlen(s) > 15)
        return -1;
    int64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v;
}

int sk_modal_config_resolve(const sk_modal_config_opts *opts, sk_modal_getenv_fn getenv_fn, void *ud,
                            const char *toml, size_t toml_len, sk_modal_config *out)
{
    static const sk_modal_config_opts no_opts;
    if (!opts)
        opts = &no_opts;
    memset(out, 0, sizeof *out);
    json_t *doc = NULL;
    if (toml) {
        char err[1];
        doc = sk_toml_parse(toml, toml_len, err, sizeof err); /* unparsable = empty */
    }
    const char *name;
    json_t *p = config_pick_profile(doc, getenv_fn("MODAL_PROFILE", ud), &name);

    const char *server = config_first(getenv_fn("MODAL_SERVER_URL", ud), config_profile_str(p, "server_url"),
                                      SK_MODAL_DEFAULT_SERVER_URL);
    const char *id = config_first(getenv_fn("MODAL_TOKEN_ID", ud), config_profile_str(p, "token_id"), NULL);
    const char *secret =
        config_first(getenv_fn("MODAL_TOKEN_SECRET", ud), config_profile_str(p, "token_secret"), NULL);
    const char *env =
        config_first(getenv_fn("MODAL_ENVIRONMENT", ud), config_profile_str(p, "environment"), "");
    /* JS reads imageBuilderVersion, Go image_builder_version: accept both. */
    const char *ibv = config_first(getenv_fn("MODAL_IMAGE_BUILDER_VERSION", ud),
                                   config_first(config_profile_str(p, "imageBuilderVersion"),
                                                config_profile_str(p, "image_builder_version"), NULL),
                                   SK_MODAL_DEFAULT_IMAGE_BUILDER_VERSION);
    const char *loglevel = config_first(getenv_fn("MODAL_LOGLEVEL", ud), config_profile_str(p, "loglevel"), NULL);

    id = config_first(opts->token_id, id, NULL);
    secret = config_first(opts->token_secret, secret, NULL);
    env = config_first(opts->environment, env, "");

    out->max_throttle_wait = config_parse_wait(getenv_fn("MODAL_MAX_THROTTLE_WAIT", ud));
    int rc = 0;
    if (config_dup(&out->server_url, server) || config_dup(&out->token_id, id) ||
        config_dup(&out->token_secret, secret) || config_dup(&out->environment, env) ||
        config_dup(&out->image_builder_version, ibv) || config_dup(&out->loglevel, loglevel) ||
        config_dup(&out->profile, name)) {
        sk_modal_config_free(out);
        errno = ENOMEM;
        rc = -1;
    }
    json_decref(doc);
    return rc;
}

void sk_modal_config_free(sk_modal_config *c)
{
    free(c->server_url);
    if (c->token_secret)
        memset(c->token_secret, 0, strlen(c->token_secret));
    free(c->token_id);
    free(c->token_secret);
    free(c->environment);
    free(c->image_builder_version);
    free(c->loglevel);
    free(c->ca_file);
    free(c->profile);
    memset(c, 0, sizeof *c);
    c->max_throttle_wait = -1;
}

const char *sk_modal_config_missing(const sk_modal_config *c)
{
    if (!config_nonempty(c->token_id))
        return "token_id";
    if (!config_nonempty(c->token_secret))
        return "token_secret";
    return NULL;
}

char *sk_modal_config_path(sk_modal_getenv_fn getenv_fn, void *ud)
{
    const char *path = getenv_fn("MODAL_CONFIG_PATH", ud);
    if (config_nonempty(path))
        return strdup(path);
    const char *home = getenv_fn("HOME", ud);
    char pwbuf[4096];
    struct passwd pw, *res = NULL;
    if (!config_nonempty(home)) {
        if (getpwuid_r(getuid(), &pw, pwbuf, sizeof pwbuf, &res) != 0 || !res || !res->pw_dir)
            return NULL;
        home = res->pw_dir;
    }
    sk_buf b = {0};
    if (sk_buf_appendf(&b, "%s/.modal.toml", home) != 0) {
        sk_buf_free(&b);
        return NULL;
    }
    return sk_buf_take(&b);
}

static const char *config_process_getenv(const char *name, void *ud)
{
    (void)ud;
    return getenv(name);
}

/* The whole file, or NULL (missing, unreadable, too large: all "no file"). */
static char *config_read_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    char *data = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > SK_MODAL_CONFIG_MAX_FILE)
        goto out;
    data = malloc((size_t)st.st_size + 1);
    if (!data)
        goto out;
    size_t have = 0;
    for (;;) {
        ssize_t n = read(fd, data + have, (size_t)st.st_size + 1 - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || (n > 0 && have + (size_t)n > (size_t)st.st_size)) {
            /* Error, or the file grew while we read it. */
            free(data);
            data = NULL;
            goto out;
        }
        if (n == 0)
            break;
        have += (size_t)n;
    }
    *len = have;
out:
    close(fd);
    return data;
}

int sk_modal_config_load(const sk_modal_config_opts *opts, sk_modal_config *out)
{
    char *path = sk_modal_config_path(config_process_getenv, NULL);
    size_t len = 0;
    char *text = path ? config_read_file(path, &len) : NULL;
    int rc = sk_modal_config_resolve(opts, config_process_getenv, NULL, text, len, out);
    if (text)
        memset(text, 0, len); /* it may hold a token secret */
    free(text);
    free(path);
    return rc;
}

int sk_jwt_exp(const char *jwt, int64_t *exp)
{
    if (!jwt)
        return -1;
    const char *dot1 = strchr(jwt, '.');
    const char *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    if (!dot2 || strchr(dot2 + 1, '.'))
        return -1;
    sk_buf payload = {0};
    int rc = -1;
    json_t *claims = NULL;
    if (sk_grpc_base64_decode(dot1 + 1, (size_t)(dot2 - dot1 - 1), &payload) != 0 || payload.len == 0)
        goto out;
    claims = json_loadb(payload.data, payload.len, 0, NULL);
    json_t *v = json_object_get(claims, "exp");
    double d;
    if (json_is_integer(v))
        d = (double)json_integer_value(v);
    else if (json_is_real(v))
        d = json_real_value(v);
    else
        goto out;
    if (!(d > 0) || d >= 9.2e18)
        goto out;
    *exp = (int64_t)floor(d);
    rc = 0;
out:
    json_decref(claims);
    sk_buf_free(&payload);
    return rc;
}
