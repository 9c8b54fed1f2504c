/* DockerSandbox's options; see docker_config.h. */
#include "docker_config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes of the UTF-8 sequence at p (1 for a byte that starts none), and
 * how many UTF-16 code units JavaScript sees for it (*units). */
static size_t utf8_seq(const unsigned char *p, const unsigned char *end, int *units)
{
    size_t len = p[0] >= 0xF0 && p[0] <= 0xF4 ? 4 : p[0] >= 0xE0 ? 3 : p[0] >= 0xC2 && p[0] < 0xE0 ? 2 : 1;
    if (p[0] < 0x80 || p[0] > 0xF4 || (size_t)(end - p) < len)
        len = 1;
    for (size_t i = 1; i < len; i++)
        if ((p[i] & 0xC0) != 0x80)
            len = 1;
    *units = len == 4 ? 2 : 1; /* outside the BMP: a surrogate pair */
    return len;
}

char *sk_dk_sanitize_name(const char *value)
{
    size_t n = strlen(value);
    /* at most 2 units per 4 bytes: never longer than the input, plus affixes */
    char *out = malloc(n + sizeof "s-" + sizeof "-sandbox");
    if (!out)
        return NULL;
    char *o = out;
    /* the replaced string decides the prefix (upstream tests /^[a-zA-Z0-9]/) */
    unsigned char first = (unsigned char)value[0];
    if (!((first >= 'a' && first <= 'z') || (first >= 'A' && first <= 'Z') || (first >= '0' && first <= '9'))) {
        *o++ = 's';
        *o++ = '-';
    }
    /* upstream's /[^a-zA-Z0-9_.-]/g replaces each UTF-16 code unit */
    const unsigned char *p = (const unsigned char *)value, *end = p + n;
    while (p < end) {
        unsigned char ch = *p;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
            ch == '.' || ch == '-') {
            *o++ = (char)ch;
            p++;
            continue;
        }
        int units = 1;
        p += utf8_seq(p, end, &units);
        while (units--)
            *o++ = '-';
    }
    *o = '\0';
    if (strlen(out) < 2)
        strcat(out, "-sandbox");
    return out;
}

int sk_dk_split_image(const char *image, char **repo, char **tag)
{
    const char *at = strchr(image, '@'), *colon = strrchr(image, ':');
    const char *sep = at ? at : colon;
    *repo = *tag = NULL;
    if (sep && !strchr(sep + 1, '/')) {
        *repo = strndup(image, (size_t)(sep - image));
        *tag = strdup(sep + 1);
    } else {
        *repo = strdup(image);
        *tag = strdup("latest");
    }
    if (!*repo || !*tag) {
        free(*repo);
        free(*tag);
        *repo = *tag = NULL;
        return -1;
    }
    return 0;
}

static const char *opt_str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

int sk_dk_config_parse(dk_config *c, const char *id, const json_t *o, sk_error **err)
{
    memset(c, 0, sizeof *c);
    c->options = o;
    const char *name = opt_str(o, "name");
    const char *image = opt_str(o, "image");
    /* working_directory wins over working_dir (its upstream name) */
    const char *wd = opt_str(o, "working_directory");
    if (!wd)
        wd = opt_str(o, "working_dir");
    const char *pull = opt_str(o, "pull");
    c->pull = pull && strcmp(pull, "never") == 0 ? DK_PULL_NEVER : DK_PULL_MISSING;
    c->docker_host = opt_str(o, "docker_host");
    json_t *t = json_object_get(o, "api_timeout");
    c->api_timeout_ms = json_is_integer(t) && json_integer_value(t) > 0 ? (long)json_integer_value(t)
                                                                         : DK_DEFAULT_API_TIMEOUT_MS;
    c->id = strdup(id);
    c->container_name = sk_dk_sanitize_name(name ? name : id);
    c->image = strdup(image ? image : DK_DEFAULT_IMAGE);
    c->working_dir = strdup(wd ? wd : DK_DEFAULT_WORKING_DIR);
    json_t *given = json_object_get(o, "labels");
    c->labels = json_is_object(given) ? json_deep_copy(given) : json_object();
    if (!c->id || !c->container_name || !c->image || !c->working_dir || !c->labels ||
        json_object_set_new(c->labels, "mastra.sandbox", json_string("true")) != 0 ||
        json_object_set_new(c->labels, "mastra.sandbox.id", json_string(id)) != 0) {
        sk_dk_config_free(c);
        *err = sk_error_oom();
        return -1;
    }
    return 0;
}

void sk_dk_config_free(dk_config *c)
{
    free(c->id);
    free(c->container_name);
    free(c->image);
    free(c->working_dir);
    json_decref(c->labels);
    memset(c, 0, sizeof *c);
}

json_t *sk_dk_env_array(const json_t *env)
{
    if (json_object_size(env) == 0)
        return NULL;
    json_t *a = json_array();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)env, k, v) {
        char *kv = NULL;
        if (asprintf(&kv, "%s=%s", k, json_string_value(v) ? json_string_value(v) : "") < 0) {
            json_decref(a);
            return NULL;
        }
        json_array_append_new(a, json_string_nocheck(kv));
        memset(kv, 0, strlen(kv));
        free(kv);
    }
    return a;
}

/* Sets key to a copy of the option when it was given (upstream leaves
 * undefined fields out of the body). */
static void copy_opt(json_t *to, const char *key, const json_t *o, const char *opt)
{
    json_t *v = json_object_get(o, opt);
    if (v && !json_is_null(v))
        json_object_set_new(to, key, json_deep_copy(v));
}

/* An option that may arrive as an empty Lua table ({}: an empty array or
 * object): kept only with entries, as the array or object the API wants. */
static void copy_list(json_t *to, const char *key, const json_t *o, const char *opt)
{
    json_t *v = json_object_get(o, opt);
    if (json_is_array(v))
        json_object_set_new(to, key, json_deep_copy(v));
    else if (json_is_object(v) && json_object_size(v) == 0)
        json_object_set_new(to, key, json_array());
}

json_t *sk_dk_create_body(const dk_config *c, const json_t *env)
{
    const json_t *o = c->options;
    json_t *host = json_object();
    json_t *body = json_object();
    if (!host || !body)
        goto oom;
    json_t *volumes = json_object_get(o, "volumes");
    if (json_object_size(volumes) > 0) {
        json_t *binds = json_array();
        const char *hp;
        json_t *cp;
        json_object_foreach(volumes, hp, cp) {
            char *b = NULL;
            if (asprintf(&b, "%s:%s", hp, json_string_value(cp)) < 0)
                goto oom;
            json_array_append_new(binds, json_string_nocheck(b));
            free(b);
        }
        json_object_set_new(host, "Binds", binds);
    }
    copy_opt(host, "NetworkMode", o, "network");
    json_object_set_new(host, "Privileged", json_boolean(json_is_true(json_object_get(o, "privileged"))));
    copy_opt(host, "Memory", o, "memory");
    copy_opt(host, "MemorySwap", o, "memory_swap");
    copy_opt(host, "CpuShares", o, "cpu_shares");
    copy_opt(host, "CpuQuota", o, "cpu_quota");
    copy_opt(host, "CpuPeriod", o, "cpu_period");
    copy_opt(host, "PidsLimit", o, "pids_limit");
    copy_opt(host, "ReadonlyRootfs", o, "readonly_rootfs");
    copy_list(host, "CapDrop", o, "cap_drop");
    copy_list(host, "CapAdd", o, "cap_add");
    copy_list(host, "SecurityOpt", o, "security_opt");
    json_t *ulimits = json_object_get(o, "ulimits");
    if (json_is_array(ulimits)) {
        json_t *out = json_array();
        size_t i;
        json_t *u;
        json_array_foreach(ulimits, i, u) {
            json_array_append_new(out, json_pack("{s:O,s:O,s:O}", "Name", json_object_get(u, "name"), "Soft",
                                                 json_object_get(u, "soft"), "Hard", json_object_get(u, "hard")));
        }
        json_object_set_new(host, "Ulimits", out);
    }
    json_t *tmpfs = json_object_get(o, "tmpfs");
    if (json_is_object(tmpfs))
        json_object_set_new(host, "Tmpfs", json_deep_copy(tmpfs));
    if (sk_dk_ports_apply(body, host, json_object_get(o, "ports")) != 0)
        goto oom;

    json_t *cmd = json_object_get(o, "command");
    json_object_set_new(body, "Image", json_string(c->image));
    json_object_set_new(body, "Cmd", json_is_array(cmd) && json_array_size(cmd) ? json_deep_copy(cmd)
                                                                                 : json_pack("[s,s]", "sleep", "infinity"));
    json_t *env_a = sk_dk_env_array(env);
    json_object_set_new(body, "Env", env_a ? env_a : json_array());
    json_object_set_new(body, "WorkingDir", json_string(c->working_dir));
    json_object_set(body, "Labels", c->labels);
    json_object_set_new(body, "HostConfig", host);
    host = NULL;
    /* upstream: stdin kept open for interactive use, no TTY */
    json_object_set_new(body, "OpenStdin", json_true());
    json_object_set_new(body, "Tty", json_false());
    return body;
oom:
    json_decref(host);
    json_decref(body);
    return NULL;
}

json_t *sk_dk_config_metadata(const dk_config *c)
{
    return json_pack("{s:s,s:s,s:O}", "image", c->image, "working_dir", c->working_dir, "labels", c->labels);
}

char *sk_dk_config_instructions(const dk_config *c)
{
    char *out = NULL;
    /* upstream's text, word for word */
    if (asprintf(&out,
                 "You are working inside a Docker container (image: %s).\n"
                 "The working directory is %s.\n"
                 "You can execute shell commands using executeCommand().\n"
                 "You can spawn background processes using processes.spawn().",
                 c->image, c->working_dir) < 0)
        return NULL;
    return out;
}
