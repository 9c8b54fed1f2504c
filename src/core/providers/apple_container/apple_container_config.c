/* AppleContainerSandbox options; see apple_container_config.h.
 *
 * Lua tables carry no key order, so where upstream walks a map in insertion
 * order (env, volumes, labels) sandkit walks it in ascending key order: the
 * argv is deterministic, and the config hash (which sorts keys itself) is
 * unaffected. */
#include "apple_container_config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

/* ---- string vectors ----------------------------------------------------- */

static void strv_take(ac_strv *a, char *s)
{
    if (!s) {
        a->failed = true;
        return;
    }
    if (a->failed) {
        free(s);
        return;
    }
    if (a->n + 2 > a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 32;
        char **v = realloc(a->v, cap * sizeof *v);
        if (!v) {
            free(s);
            a->failed = true;
            return;
        }
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = s;
    a->v[a->n] = NULL;
}

char *sk_ac_vformat(const char *fmt, va_list ap)
{
    char *s = NULL;
    return vasprintf(&s, fmt, ap) < 0 ? NULL : s;
}

void sk_ac_strv_push(ac_strv *a, const char *s) { strv_take(a, strdup(s)); }

void sk_ac_strv_pushf(ac_strv *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = sk_ac_vformat(fmt, ap);
    va_end(ap);
    strv_take(a, s);
}

void sk_ac_strv_free(ac_strv *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->v[i]);
    free(a->v);
    a->v = NULL;
    a->n = a->cap = 0;
    a->failed = false;
}

/* ---- JavaScript-compatible rendering ------------------------------------ */

/* Next code point of UTF-8 s (invalid bytes stand for themselves). */
static unsigned utf8_next(const unsigned char **p, const unsigned char *end)
{
    const unsigned char *s = *p;
    unsigned c = *s;
    int n = c >= 0xf0 && c < 0xf8 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
    if (c >= 0xf8 || (c >= 0x80 && c < 0xc0) || s + n >= end + (n ? 0 : 1)) {
        *p = s + 1;
        return c;
    }
    unsigned cp = n == 3 ? c & 7 : n == 2 ? c & 15 : n == 1 ? c & 31 : c;
    for (int i = 1; i <= n; i++) {
        if ((s[i] & 0xc0) != 0x80) {
            *p = s + 1;
            return c;
        }
        cp = cp << 6 | (s[i] & 0x3f);
    }
    *p = s + n + 1;
    return cp;
}

/* Compares as JavaScript compares strings: by UTF-16 code units. */
static int utf16_cmp(const char *a, const char *b)
{
    const unsigned char *pa = (const unsigned char *)a, *ea = pa + strlen(a);
    const unsigned char *pb = (const unsigned char *)b, *eb = pb + strlen(b);
    unsigned ua[2], ub[2];
    int na = 0, nb = 0, ia = 0, ib = 0;
    for (;;) {
        if (ia == na) {
            if (pa >= ea)
                return (ib < nb || pb < eb) ? -1 : 0;
            unsigned cp = utf8_next(&pa, ea);
            ia = 0;
            if (cp >= 0x10000) {
                ua[0] = 0xd800 + ((cp - 0x10000) >> 10);
                ua[1] = 0xdc00 + ((cp - 0x10000) & 0x3ff);
                na = 2;
            } else {
                ua[0] = cp;
                na = 1;
            }
        }
        if (ib == nb) {
            if (pb >= eb)
                return 1;
            unsigned cp = utf8_next(&pb, eb);
            ib = 0;
            if (cp >= 0x10000) {
                ub[0] = 0xd800 + ((cp - 0x10000) >> 10);
                ub[1] = 0xdc00 + ((cp - 0x10000) & 0x3ff);
                nb = 2;
            } else {
                ub[0] = cp;
                nb = 1;
            }
        }
        if (ua[ia] != ub[ib])
            return ua[ia] < ub[ib] ? -1 : 1;
        ia++;
        ib++;
    }
}

static int sorted_keys_cmp(const void *x, const void *y)
{
    return utf16_cmp(*(const char *const *)x, *(const char *const *)y);
}

const char **sk_ac_sorted_keys(const json_t *obj)
{
    size_t n = json_object_size(obj), i = 0;
    const char **keys = calloc(n + 1, sizeof *keys);
    if (!keys)
        return NULL;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v) keys[i++] = k;
    qsort(keys, n, sizeof *keys, sorted_keys_cmp);
    return keys;
}

/* ECMAScript Number::toString for a finite double. */
static int js_double(sk_buf *out, double v)
{
    if (v == 0)
        return sk_buf_append(out, "0", 1);
    if (v < 0) {
        if (sk_buf_append(out, "-", 1) != 0)
            return -1;
        v = -v;
    }
    /* shortest digits that round-trip */
    char buf[40], digits[24];
    int k = 0, e = 0;
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, v);
        if (strtod(buf, NULL) == v || p == 17)
            break;
    }
    char *ep = strchr(buf, 'e');
    e = atoi(ep + 1);
    for (char *s = buf; s < ep; s++)
        if (*s >= '0' && *s <= '9')
            digits[k++] = *s;
    while (k > 1 && digits[k - 1] == '0')
        k--;
    digits[k] = '\0';
    int n = e + 1; /* position of the decimal point */
    int rc = 0;
    if (k <= n && n <= 21) {
        rc |= sk_buf_append(out, digits, (size_t)k);
        for (int i = k; i < n; i++)
            rc |= sk_buf_append(out, "0", 1);
    } else if (0 < n && n <= 21) {
        rc |= sk_buf_append(out, digits, (size_t)n);
        rc |= sk_buf_append(out, ".", 1);
        rc |= sk_buf_append(out, digits + n, (size_t)(k - n));
    } else if (-6 < n && n <= 0) {
        rc |= sk_buf_append(out, "0.", 2);
        for (int i = 0; i < -n; i++)
            rc |= sk_buf_append(out, "0", 1);
        rc |= sk_buf_append(out, digits, (size_t)k);
    } else {
        rc |= sk_buf_append(out, digits, 1);
        if (k > 1) {
            rc |= sk_buf_append(out, ".", 1);
            rc |= sk_buf_append(out, digits + 1, (size_t)(k - 1));
        }
        rc |= sk_buf_appendf(out, "e%c%d", n - 1 >= 0 ? '+' : '-', abs(n - 1));
    }
    return rc ? -1 : 0;
}

int sk_ac_js_number(sk_buf *out, const json_t *num)
{
    if (json_is_integer(num)) {
        json_int_t i = json_integer_value(num);
        if (i > -(1LL << 53) && i < (1LL << 53))
            return sk_buf_appendf(out, "%lld", (long long)i);
        return js_double(out, (double)i);
    }
    double d = json_real_value(num);
    if (!isfinite(d))
        return sk_buf_append(out, "null", 4);
    return js_double(out, d);
}

/* JSON.stringify of a string. */
static int js_string(sk_buf *out, const char *s, size_t len)
{
    int rc = sk_buf_append(out, "\"", 1);
    for (size_t i = 0; i < len && rc == 0; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': rc = sk_buf_append(out, "\\\"", 2); break;
        case '\\': rc = sk_buf_append(out, "\\\\", 2); break;
        case '\b': rc = sk_buf_append(out, "\\b", 2); break;
        case '\f': rc = sk_buf_append(out, "\\f", 2); break;
        case '\n': rc = sk_buf_append(out, "\\n", 2); break;
        case '\r': rc = sk_buf_append(out, "\\r", 2); break;
        case '\t': rc = sk_buf_append(out, "\\t", 2); break;
        default:
            rc = c < 0x20 ? sk_buf_appendf(out, "\\u%04x", c) : sk_buf_append(out, s + i, 1);
        }
    }
    return rc ? -1 : sk_buf_append(out, "\"", 1);
}

/* Upstream's stableStringify: arrays in order, objects with sorted keys,
 * scalars through JSON.stringify, no whitespace. */
static int stable_stringify(sk_buf *out, const json_t *v)
{
    int rc = 0;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char **keys = sk_ac_sorted_keys(v);
        if (!keys)
            return -1;
        rc |= sk_buf_append(out, "{", 1);
        for (size_t i = 0; keys[i]; i++) {
            if (i)
                rc |= sk_buf_append(out, ",", 1);
            rc |= js_string(out, keys[i], strlen(keys[i]));
            rc |= sk_buf_append(out, ":", 1);
            rc |= stable_stringify(out, json_object_get(v, keys[i]));
        }
        free(keys);
        return rc | sk_buf_append(out, "}", 1);
    }
    case JSON_ARRAY:
        rc |= sk_buf_append(out, "[", 1);
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i)
                rc |= sk_buf_append(out, ",", 1);
            rc |= stable_stringify(out, json_array_get(v, i));
        }
        return rc | sk_buf_append(out, "]", 1);
    case JSON_STRING:
        return js_string(out, json_string_value(v), json_string_length(v));
    case JSON_INTEGER:
    case JSON_REAL:
        return sk_ac_js_number(out, v);
    case JSON_TRUE:
        return sk_buf_append(out, "true", 4);
    case JSON_FALSE:
        return sk_buf_append(out, "false", 5);
    default:
        return sk_buf_append(out, "null", 4);
    }
}

/* ---- options ------------------------------------------------------------ */

static sk_error *config_error(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static sk_error *config_error(const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = sk_ac_vformat(fmt, ap);
    va_end(ap);
    sk_error *e = sk_error_new(SK_ERR_CONFIG, json_pack("{s:s,s:s}", "provider", "apple-container", "key", key),
                               "%s", msg ? msg : "invalid option");
    free(msg);
    return e;
}

char *sk_ac_sanitize_name(const char *name)
{
    size_t n = strlen(name);
    char *out = malloc(n + 3);
    if (!out)
        return NULL;
    char *s = out;
    unsigned char first = n ? (unsigned char)name[0] : 0;
    bool alnum = (first >= 'a' && first <= 'z') || (first >= 'A' && first <= 'Z') || (first >= '0' && first <= '9');
    if (!alnum) {
        *s++ = 'c';
        *s++ = '-';
    }
    /* upstream replaces per UTF-16 code unit; one '-' per code point is the
     * same except for characters outside the BMP, which JavaScript sees as
     * two units (and so writes "--") */
    const unsigned char *p = (const unsigned char *)name, *end = p + n;
    while (p < end) {
        unsigned char c = *p;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
            c == '-') {
            *s++ = (char)c;
            p++;
            continue;
        }
        unsigned cp = utf8_next(&p, end);
        *s++ = '-';
        if (cp >= 0x10000)
            *s++ = '-';
    }
    *s = '\0';
    return out;
}

bool sk_ac_env_name_ok(const char *k)
{
    if (!((k[0] >= 'A' && k[0] <= 'Z') || (k[0] >= 'a' && k[0] <= 'z') || k[0] == '_'))
        return false;
    for (const char *p = k + 1; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return false;
    return true;
}

static int opt_string(const json_t *o, const char *key, const char *dflt, char **out, sk_error **err)
{
    json_t *v = json_object_get(o, key);
    if (v && !json_is_string(v)) {
        *err = config_error(key, "AppleContainerSandbox option '%s' must be a string", key);
        return -1;
    }
    const char *s = v ? json_string_value(v) : dflt;
    *out = NULL;
    if (s && !(*out = strdup(s))) {
        *err = sk_error_oom();
        return -1;
    }
    return 0;
}

static int opt_bool(const json_t *o, const char *key, bool dflt, bool *out, sk_error **err)
{
    json_t *v = json_object_get(o, key);
    if (v && !json_is_boolean(v)) {
        *err = config_error(key, "AppleContainerSandbox option '%s' must be a boolean", key);
        return -1;
    }
    *out = v ? json_is_true(v) : dflt;
    return 0;
}

/* A list of strings; an empty Lua table arrives as an empty object. */
static int opt_list(const json_t *o, const char *key, json_t **out, sk_error **err)
{
    json_t *v = json_object_get(o, key);
    if (!v || (json_is_object(v) && json_object_size(v) == 0)) {
        *out = json_array();
        return 0;
    }
    if (!json_is_array(v)) {
        *err = config_error(key, "AppleContainerSandbox option '%s' must be an array of strings", key);
        return -1;
    }
    for (size_t i = 0; i < json_array_size(v); i++) {
        if (!json_is_string(json_array_get(v, i))) {
            *err = config_error(key, "AppleContainerSandbox option '%s' must be an array of strings", key);
            return -1;
        }
    }
    *out = json_incref(v);
    return 0;
}

/* A map of strings to strings; an empty table may arrive as an empty array. */
static int opt_map(const json_t *o, const char *key, json_t **out, sk_error **err)
{
    json_t *v = json_object_get(o, key);
    if (!v || (json_is_array(v) && json_array_size(v) == 0)) {
        *out = json_object();
        return 0;
    }
    const char *k;
    json_t *x;
    if (!json_is_object(v))
        goto bad;
    json_object_foreach(v, k, x) {
        if (!json_is_string(x))
            goto bad;
    }
    *out = json_incref(v);
    return 0;
bad:
    *err = config_error(key, "AppleContainerSandbox option '%s' must map strings to strings", key);
    return -1;
}

/* libcrypto is in the process already (libcurl and libwebsockets use it). */
int sk_ac_config_sha256_hex(const void *data, size_t len, char hex[65])
{
    static const char digits[] = "0123456789abcdef";
    unsigned char md[32];
    unsigned int md_len = 0;
    if (!EVP_Digest(data, len, md, &md_len, EVP_sha256(), NULL) || md_len != sizeof md)
        return -1;
    for (size_t i = 0; i < sizeof md; i++) {
        hex[2 * i] = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 15];
    }
    hex[64] = '\0';
    return 0;
}

static int config_hash(ac_config *c)
{
    char *canon = sk_ac_config_canonical(c);
    if (!canon)
        return -1;
    char hex[65];
    if (sk_ac_config_sha256_hex(canon, strlen(canon), hex) != 0) {
        free(canon);
        return -1;
    }
    memcpy(c->hash, hex, 16);
    c->hash[16] = '\0';
    free(canon);
    return 0;
}

int sk_ac_config_parse(ac_config *c, const char *id, const json_t *o, sk_error **err)
{
    memset(c, 0, sizeof *c);
    if (!(c->id = strdup(id)))
        goto oom;
    if (opt_string(o, "name", NULL, &c->configured_name, err) != 0)
        return -1;
    if (!(c->container_name = sk_ac_sanitize_name(c->configured_name ? c->configured_name : id)))
        goto oom;
    if (opt_string(o, "image", AC_DEFAULT_IMAGE, &c->image, err) != 0)
        return -1;
    char *wd = NULL, *wd_alias = NULL;
    if (opt_string(o, "working_directory", NULL, &wd, err) != 0 ||
        opt_string(o, "working_dir", NULL, &wd_alias, err) != 0) {
        free(wd);
        return -1;
    }
    c->working_dir = wd ? wd : wd_alias ? wd_alias : strdup(AC_DEFAULT_WORKDIR);
    if (wd && wd_alias)
        free(wd_alias);
    if (!c->working_dir)
        goto oom;
    if (opt_string(o, "container_binary", AC_DEFAULT_BINARY, &c->binary, err) != 0)
        return -1;
    if (!*c->binary) {
        *err = config_error("container_binary", "AppleContainerSandbox option 'container_binary' must not be empty");
        return -1;
    }
    if (json_object_get(o, "command")) {
        if (opt_list(o, "command", &c->command, err) != 0)
            return -1;
    } else if (!(c->command = json_pack("[ss]", "sleep", "infinity"))) {
        goto oom;
    }
    if (opt_list(o, "mounts", &c->mounts, err) || opt_list(o, "published_ports", &c->published_ports, err) ||
        opt_list(o, "published_sockets", &c->published_sockets, err) || opt_list(o, "cap_add", &c->cap_add, err) ||
        opt_list(o, "cap_drop", &c->cap_drop, err) || opt_list(o, "tmpfs", &c->tmpfs, err) ||
        opt_list(o, "dns", &c->dns, err) || opt_list(o, "dns_search", &c->dns_search, err) ||
        opt_map(o, "env", &c->env, err) || opt_map(o, "volumes", &c->volumes, err) ||
        opt_map(o, "labels", &c->labels, err))
        return -1;
    if (opt_string(o, "network", NULL, &c->network, err) || opt_string(o, "memory", NULL, &c->memory, err) ||
        opt_string(o, "platform", NULL, &c->platform, err) || opt_string(o, "arch", NULL, &c->arch, err) ||
        opt_string(o, "os", NULL, &c->os, err))
        return -1;
    json_t *cpus = json_object_get(o, "cpus");
    if (cpus && !json_is_number(cpus) && !json_is_string(cpus)) {
        *err = config_error("cpus", "AppleContainerSandbox option 'cpus' must be a number or a string");
        return -1;
    }
    if (cpus && json_is_real(cpus) && !isfinite(json_real_value(cpus))) {
        *err = config_error("cpus", "AppleContainerSandbox option 'cpus' must be a finite number");
        return -1;
    }
    c->cpus = cpus ? json_incref(cpus) : NULL;
    if (opt_bool(o, "rosetta", false, &c->rosetta, err) || opt_bool(o, "readonly_rootfs", false, &c->readonly_rootfs, err) ||
        opt_bool(o, "ssh", false, &c->ssh, err) || opt_bool(o, "init", true, &c->init, err) ||
        opt_bool(o, "virtualization", false, &c->virtualization, err) || opt_bool(o, "no_dns", false, &c->no_dns, err) ||
        opt_bool(o, "delete_on_destroy", true, &c->delete_on_destroy, err))
        return -1;
    json_t *t = json_object_get(o, "timeout");
    if (t && (!json_is_number(t) || !(json_number_value(t) >= 0) || !isfinite(json_number_value(t)))) {
        *err = config_error("timeout", "AppleContainerSandbox option 'timeout' must be a number of milliseconds >= 0");
        return -1;
    }
    c->timeout_ms = t ? json_number_value(t) : AC_DEFAULT_TIMEOUT_MS;

    /* docs/protocols/apple-container.md §2 rule 3: Apple's --tmpfs takes a container path only */
    for (size_t i = 0; i < json_array_size(c->tmpfs); i++) {
        const char *e = json_string_value(json_array_get(c->tmpfs, i));
        if (e[0] != '/' || strpbrk(e, ":,")) {
            *err = config_error("tmpfs",
                                "Invalid Apple container tmpfs path \"%s\". Apple container --tmpfs accepts container "
                                "paths only, for example \"/tmp\".",
                                e);
            return -1;
        }
    }
    const char *k;
    json_t *x;
    json_object_foreach(c->env, k, x) {
        if (!sk_ac_env_name_ok(k)) {
            *err = config_error("env", "Invalid environment variable name for Apple container command: %s", k);
            return -1;
        }
    }
    if (config_hash(c) != 0)
        goto oom;
    return 0;
oom:
    *err = sk_error_oom();
    return -1;
}

void sk_ac_config_free(ac_config *c)
{
    free(c->id);
    free(c->container_name);
    free(c->configured_name);
    free(c->image);
    free(c->working_dir);
    free(c->binary);
    free(c->network);
    free(c->memory);
    free(c->platform);
    free(c->arch);
    free(c->os);
    json_t *refs[] = { c->command, c->mounts, c->published_ports, c->published_sockets, c->cap_add, c->cap_drop,
                       c->tmpfs, c->dns, c->dns_search, c->env, c->volumes, c->labels, c->cpus };
    for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++)
        json_decref(refs[i]);
    memset(c, 0, sizeof *c);
}

/* compactConfig: absent values, empty lists and empty maps are left out. */
static void compact_set(json_t *rec, const char *key, json_t *v)
{
    if (!v)
        return;
    if ((json_is_array(v) && json_array_size(v) == 0) || (json_is_object(v) && json_object_size(v) == 0)) {
        json_decref(v);
        return;
    }
    json_object_set_new(rec, key, v);
}

static json_t *opt_str(const char *s) { return s ? json_string_nocheck(s) : NULL; }
static json_t *ref(json_t *v) { return v ? json_incref(v) : NULL; }

char *sk_ac_config_canonical(const ac_config *c)
{
    json_t *rec = json_object();
    if (!rec)
        return NULL;
    compact_set(rec, "image", opt_str(c->image));
    compact_set(rec, "command", ref(c->command));
    compact_set(rec, "env", ref(c->env));
    compact_set(rec, "volumes", ref(c->volumes));
    compact_set(rec, "mounts", ref(c->mounts));
    compact_set(rec, "network", opt_str(c->network));
    compact_set(rec, "publishedPorts", ref(c->published_ports));
    compact_set(rec, "publishedSockets", ref(c->published_sockets));
    compact_set(rec, "cpus", ref(c->cpus));
    compact_set(rec, "memory", opt_str(c->memory));
    compact_set(rec, "platform", opt_str(c->platform));
    compact_set(rec, "arch", opt_str(c->arch));
    compact_set(rec, "os", opt_str(c->os));
    compact_set(rec, "rosetta", json_boolean(c->rosetta));
    compact_set(rec, "readonlyRootfs", json_boolean(c->readonly_rootfs));
    compact_set(rec, "ssh", json_boolean(c->ssh));
    compact_set(rec, "init", json_boolean(c->init));
    compact_set(rec, "virtualization", json_boolean(c->virtualization));
    compact_set(rec, "capAdd", ref(c->cap_add));
    compact_set(rec, "capDrop", ref(c->cap_drop));
    compact_set(rec, "tmpfs", ref(c->tmpfs));
    compact_set(rec, "dns", ref(c->dns));
    compact_set(rec, "dnsSearch", ref(c->dns_search));
    compact_set(rec, "noDns", json_boolean(c->no_dns));
    compact_set(rec, "labels", ref(c->labels));
    compact_set(rec, "workingDir", opt_str(c->working_dir));
    sk_buf out = { 0 };
    int rc = stable_stringify(&out, rec);
    json_decref(rec);
    if (rc != 0) {
        sk_buf_free(&out);
        return NULL;
    }
    return sk_buf_take(&out);
}

/* ---- argv --------------------------------------------------------------- */

static void push_list(ac_strv *a, const char *flag, const json_t *list)
{
    for (size_t i = 0; i < json_array_size(list); i++) {
        sk_ac_strv_push(a, flag);
        sk_ac_strv_push(a, json_string_value(json_array_get(list, i)));
    }
}

int sk_ac_run_argv(const ac_config *c, ac_strv *a, json_t **env)
{
    static const char *const mastra_keys[] = { "mastra.sandbox", "mastra.sandbox.id", "mastra.sandbox.config-hash" };
    const char *mastra_values[] = { "true", c->id, c->hash };
    bool mastra_done[3] = { false, false, false };
    *env = json_object();
    const char **env_keys = sk_ac_sorted_keys(c->env);
    const char **vol_keys = sk_ac_sorted_keys(c->volumes);
    const char **label_keys = sk_ac_sorted_keys(c->labels);
    if (!*env || !env_keys || !vol_keys || !label_keys)
        a->failed = true;
    sk_ac_strv_push(a, "run");
    sk_ac_strv_push(a, "-d");
    sk_ac_strv_push(a, "--name");
    sk_ac_strv_push(a, c->container_name);
    sk_ac_strv_push(a, "--workdir");
    sk_ac_strv_push(a, c->working_dir);
    for (size_t i = 0; env_keys && env_keys[i]; i++) {
        sk_ac_strv_push(a, "--env");
        sk_ac_strv_push(a, env_keys[i]);
        if (*env)
            json_object_set(*env, env_keys[i], json_object_get(c->env, env_keys[i]));
    }
    for (size_t i = 0; vol_keys && vol_keys[i]; i++) {
        sk_ac_strv_push(a, "--volume");
        sk_ac_strv_pushf(a, "%s:%s", vol_keys[i], json_string_value(json_object_get(c->volumes, vol_keys[i])));
    }
    push_list(a, "--mount", c->mounts);
    /* user labels, a Mastra key taking the place of a same-named user key */
    for (size_t i = 0; label_keys && label_keys[i]; i++) {
        const char *v = json_string_value(json_object_get(c->labels, label_keys[i]));
        for (int m = 0; m < 3; m++) {
            if (strcmp(label_keys[i], mastra_keys[m]) == 0) {
                v = mastra_values[m];
                mastra_done[m] = true;
            }
        }
        sk_ac_strv_push(a, "--label");
        sk_ac_strv_pushf(a, "%s=%s", label_keys[i], v);
    }
    for (int m = 0; m < 3; m++) {
        if (!mastra_done[m]) {
            sk_ac_strv_push(a, "--label");
            sk_ac_strv_pushf(a, "%s=%s", mastra_keys[m], mastra_values[m]);
        }
    }
    push_list(a, "--publish", c->published_ports);
    push_list(a, "--publish-socket", c->published_sockets);
    push_list(a, "--cap-add", c->cap_add);
    push_list(a, "--cap-drop", c->cap_drop);
    push_list(a, "--tmpfs", c->tmpfs);
    push_list(a, "--dns", c->dns);
    push_list(a, "--dns-search", c->dns_search);
    if (c->network && *c->network) {
        sk_ac_strv_push(a, "--network");
        sk_ac_strv_push(a, c->network);
    }
    if (c->cpus) {
        sk_ac_strv_push(a, "--cpus");
        if (json_is_string(c->cpus)) {
            sk_ac_strv_push(a, json_string_value(c->cpus));
        } else {
            sk_buf b = { 0 };
            if (sk_ac_js_number(&b, c->cpus) != 0)
                a->failed = true;
            sk_ac_strv_push(a, b.len ? b.data : "");
            sk_buf_free(&b);
        }
    }
    if (c->memory) {
        sk_ac_strv_push(a, "--memory");
        sk_ac_strv_push(a, c->memory);
    }
    if (c->platform && *c->platform) {
        sk_ac_strv_push(a, "--platform");
        sk_ac_strv_push(a, c->platform);
    }
    if (c->arch && *c->arch) {
        sk_ac_strv_push(a, "--arch");
        sk_ac_strv_push(a, c->arch);
    }
    if (c->os && *c->os) {
        sk_ac_strv_push(a, "--os");
        sk_ac_strv_push(a, c->os);
    }
    if (c->rosetta)
        sk_ac_strv_push(a, "--rosetta");
    if (c->readonly_rootfs)
        sk_ac_strv_push(a, "--read-only");
    if (c->ssh)
        sk_ac_strv_push(a, "--ssh");
    if (c->init)
        sk_ac_strv_push(a, "--init");
    if (c->virtualization)
        sk_ac_strv_push(a, "--virtualization");
    if (c->no_dns)
        sk_ac_strv_push(a, "--no-dns");
    sk_ac_strv_push(a, c->image);
    for (size_t i = 0; i < json_array_size(c->command); i++)
        sk_ac_strv_push(a, json_string_value(json_array_get(c->command, i)));
    free(env_keys);
    free(vol_keys);
    free(label_keys);
    if (a->failed) {
        json_decref(*env);
        *env = NULL;
        return -1;
    }
    return 0;
}

/* ---- info and instructions ---------------------------------------------- */

static json_t *number_ms(double ms)
{
    if (ms == floor(ms) && fabs(ms) < 9007199254740992.0)
        return json_integer((json_int_t)ms);
    return json_real(ms);
}

json_t *sk_ac_config_metadata(const ac_config *c)
{
    json_t *m = json_object();
    if (!m)
        return NULL;
    /* upstream's _serializableConfig, in snake_case; env is left out: its
     * values are secrets and never appear in info() */
    compact_set(m, "id", json_string_nocheck(c->id));
    compact_set(m, "name", opt_str(c->configured_name));
    compact_set(m, "image", opt_str(c->image));
    compact_set(m, "command", ref(c->command));
    compact_set(m, "volumes", ref(c->volumes));
    compact_set(m, "mounts", ref(c->mounts));
    compact_set(m, "network", opt_str(c->network));
    compact_set(m, "published_ports", ref(c->published_ports));
    compact_set(m, "published_sockets", ref(c->published_sockets));
    compact_set(m, "cpus", ref(c->cpus));
    compact_set(m, "memory", opt_str(c->memory));
    compact_set(m, "platform", opt_str(c->platform));
    compact_set(m, "arch", opt_str(c->arch));
    compact_set(m, "os", opt_str(c->os));
    compact_set(m, "rosetta", json_boolean(c->rosetta));
    compact_set(m, "readonly_rootfs", json_boolean(c->readonly_rootfs));
    compact_set(m, "ssh", json_boolean(c->ssh));
    compact_set(m, "init", json_boolean(c->init));
    compact_set(m, "virtualization", json_boolean(c->virtualization));
    compact_set(m, "cap_add", ref(c->cap_add));
    compact_set(m, "cap_drop", ref(c->cap_drop));
    compact_set(m, "tmpfs", ref(c->tmpfs));
    compact_set(m, "dns", ref(c->dns));
    compact_set(m, "dns_search", ref(c->dns_search));
    compact_set(m, "no_dns", json_boolean(c->no_dns));
    compact_set(m, "labels", ref(c->labels));
    compact_set(m, "working_dir", opt_str(c->working_dir));
    compact_set(m, "timeout", number_ms(c->timeout_ms));
    compact_set(m, "delete_on_destroy", json_boolean(c->delete_on_destroy));
    return m;
}

char *sk_ac_config_instructions(const ac_config *c)
{
    sk_buf b = { 0 };
    int rc = sk_buf_appendf(&b,
                            "Apple container sandbox: commands run inside a local OCI Linux container from image %s. "
                            "Working directory: %s.",
                            c->image, c->working_dir);
    size_t mounts = json_object_size(c->volumes) + json_array_size(c->mounts);
    if (mounts > 0)
        rc |= sk_buf_appendf(&b, " %zu host mount(s) are configured.", mounts);
    if (c->timeout_ms > 0)
        rc |= sk_buf_appendf(&b, " Default command timeout: %.0fs.", ceil(c->timeout_ms / 1000.0));
    if (rc != 0) {
        sk_buf_free(&b);
        return NULL;
    }
    return sk_buf_take(&b);
}
