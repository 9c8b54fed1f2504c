/* The secret registry and redaction; see secrets.h. The matcher reads one
 * secret character at a time from the text in whichever form it appears
 * (literal, escaped, percent-encoded), so a value is found even when a
 * server mixes forms; it never backtracks, so text is scanned in linear time
 * per secret. */
#include "secrets.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

typedef struct secret {
    char *value;
    size_t len;
    int refs;
    char *b64[3]; /* base64 of the value at each alignment, edge characters cut; NULL if short */
    size_t b64_len[3];
} secret;

static pthread_mutex_t secrets_lock = PTHREAD_MUTEX_INITIALIZER;
static secret *secrets;
static size_t secrets_n, secrets_cap;
static bool secrets_starts[256]; /* bytes a match can begin with */

static void secret_wipe_free(char *s, size_t len)
{
    if (!s)
        return;
    volatile char *p = s;
    for (size_t i = 0; i < len; i++)
        p[i] = 0;
    free(s);
}

/* The base64 characters that depend on the value's bytes only, when the
 * value starts `align` bytes into a 3-byte group. */
static char *secret_b64_core(const char *v, size_t len, int align, size_t *out_len)
{
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t total = (size_t)align + len + 2;
    unsigned char *bytes = calloc(total, 1);
    char *out = malloc((total / 3 + 1) * 4 + 1);
    if (!bytes || !out) {
        free(bytes);
        free(out);
        return NULL;
    }
    memcpy(bytes + align, v, len);
    size_t first_bit = (size_t)align * 8, end_bit = ((size_t)align + len) * 8, n = 0;
    for (size_t c = 0; (c + 1) * 6 <= total * 8; c++) {
        if (c * 6 < first_bit || (c + 1) * 6 > end_bit)
            continue;
        size_t bit = c * 6, byte = bit / 8, shift = bit % 8;
        unsigned pair = (unsigned)bytes[byte] << 8 | (byte + 1 < total ? bytes[byte + 1] : 0);
        out[n++] = alphabet[(pair >> (10 - shift)) & 63];
    }
    out[n] = '\0';
    secret_wipe_free((char *)bytes, total);
    *out_len = n;
    return out;
}

static void secrets_rebuild_starts(void)
{
    memset(secrets_starts, 0, sizeof secrets_starts);
    if (!secrets_n)
        return;
    secrets_starts['\\'] = secrets_starts['%'] = true;
    for (size_t i = 0; i < secrets_n; i++) {
        secret *s = &secrets[i];
        secrets_starts[(unsigned char)s->value[0]] = true;
        if (s->value[0] == ' ')
            secrets_starts['+'] = true;
        for (int a = 0; a < 3; a++) {
            if (!s->b64[a])
                continue;
            unsigned char c = (unsigned char)s->b64[a][0];
            secrets_starts[c] = true;
            if (c == '+')
                secrets_starts['-'] = true;
            if (c == '/')
                secrets_starts['_'] = true;
        }
    }
}

int sk_secret_hold(const char *value)
{
    if (!value || strlen(value) < SK_SECRET_MIN_LEN)
        return 0;
    size_t len = strlen(value);
    int rc = 0;
    pthread_mutex_lock(&secrets_lock);
    for (size_t i = 0; i < secrets_n; i++) {
        if (secrets[i].len == len && memcmp(secrets[i].value, value, len) == 0) {
            secrets[i].refs++;
            goto out;
        }
    }
    if (secrets_n == secrets_cap) {
        size_t cap = secrets_cap ? secrets_cap * 2 : 16;
        secret *v = realloc(secrets, cap * sizeof *v);
        if (!v) {
            rc = -1;
            goto out;
        }
        secrets = v;
        secrets_cap = cap;
    }
    secret s = { .len = len, .refs = 1 };
    if (!(s.value = strdup(value))) {
        rc = -1;
        goto out;
    }
    if (len >= SK_SECRET_BASE64_MIN_LEN) {
        for (int a = 0; a < 3; a++) {
            if (!(s.b64[a] = secret_b64_core(value, len, a, &s.b64_len[a]))) {
                for (int b = 0; b < a; b++)
                    secret_wipe_free(s.b64[b], s.b64_len[b]);
                secret_wipe_free(s.value, len);
                rc = -1;
                goto out;
            }
        }
    }
    secrets[secrets_n++] = s;
    secrets_rebuild_starts();
out:
    pthread_mutex_unlock(&secrets_lock);
    return rc;
}

void sk_secret_release(const char *value)
{
    if (!value || strlen(value) < SK_SECRET_MIN_LEN)
        return;
    size_t len = strlen(value);
    pthread_mutex_lock(&secrets_lock);
    for (size_t i = 0; i < secrets_n; i++) {
        secret *s = &secrets[i];
        if (s->len != len || memcmp(s->value, value, len) != 0)
            continue;
        if (--s->refs == 0) {
            secret_wipe_free(s->value, s->len);
            for (int a = 0; a < 3; a++)
                secret_wipe_free(s->b64[a], s->b64_len[a]);
            secrets[i] = secrets[--secrets_n];
            secrets_rebuild_starts();
        }
        break;
    }
    if (!secrets_n) {
        free(secrets);
        secrets = NULL;
        secrets_cap = 0;
    }
    pthread_mutex_unlock(&secrets_lock);
}

int sk_secret_hold_env(const json_t *env)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)env, k, v) {
        if (json_is_string(v) && sk_secret_hold(json_string_value(v)) != 0) {
            /* undo what was held so far: the caller fails as a whole */
            const char *k2;
            json_t *v2;
            json_object_foreach((json_t *)env, k2, v2) {
                if (v2 == v)
                    break;
                if (json_is_string(v2))
                    sk_secret_release(json_string_value(v2));
            }
            return -1;
        }
    }
    return 0;
}

void sk_secret_release_env(const json_t *env)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)env, k, v) {
        if (json_is_string(v))
            sk_secret_release(json_string_value(v));
    }
}

/* ---- matching ---------------------------------------------------------- */

static int hex_digit(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Value of `digits` hex digits at t[k], or -1. */
static long hex_at(const char *t, size_t n, size_t k, int digits)
{
    if (k + (size_t)digits > n)
        return -1;
    long v = 0;
    for (int d = 0; d < digits; d++) {
        int h = hex_digit((unsigned char)t[k + (size_t)d]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

static size_t utf8_encode(unsigned long cp, unsigned char out[4])
{
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | cp >> 6);
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | cp >> 12);
        out[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | cp >> 18);
    out[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* \uXXXX at t[k] (k at the 'u'), a surrogate pair too (its second half may
 * carry its own run of backslashes). Returns the end, or 0. */
static size_t unicode_escape_at(const char *t, size_t n, size_t k, unsigned long *cp)
{
    long hi = hex_at(t, n, k + 1, 4);
    if (hi < 0)
        return 0;
    size_t end = k + 5;
    if (hi >= 0xD800 && hi <= 0xDBFF) {
        size_t j = end;
        while (j < n && t[j] == '\\')
            j++;
        long lo = j > end && j < n && t[j] == 'u' ? hex_at(t, n, j + 1, 4) : -1;
        if (lo >= 0xDC00 && lo <= 0xDFFF) {
            *cp = 0x10000 + (((unsigned long)hi - 0xD800) << 10) + ((unsigned long)lo - 0xDC00);
            return j + 5;
        }
    }
    *cp = (unsigned long)hi;
    return end;
}

/* How much of the text at t[i] encodes the secret bytes at s[si]: returns
 * the text length consumed (0: no match) and the secret bytes in *used. */
static size_t unit_match(const char *t, size_t n, size_t i, const char *s, size_t m, size_t si, size_t *used)
{
    unsigned char c = (unsigned char)s[si], x = (unsigned char)t[i];
    *used = 1;
    if (x == '\\') {
        size_t k = i;
        while (k < n && t[k] == '\\')
            k++;
        size_t run = k - i;
        if (k < n) {
            unsigned char e = (unsigned char)t[k];
            unsigned char simple = e == '/' || e == '"' || e == '\'' ? e
                                   : e == 'n'                       ? '\n'
                                   : e == 't'                       ? '\t'
                                   : e == 'r'                       ? '\r'
                                   : e == 'b'                       ? '\b'
                                   : e == 'f'                       ? '\f'
                                                                    : 0;
            if (simple && simple == c)
                return k + 1 - i;
            if (e == 'u') {
                unsigned long cp;
                size_t end = unicode_escape_at(t, n, k, &cp);
                unsigned char u[4];
                size_t ul = end ? utf8_encode(cp, u) : 0;
                if (ul && si + ul <= m && memcmp(s + si, u, ul) == 0) {
                    *used = ul;
                    return end - i;
                }
            }
            if (e == 'x' && hex_at(t, n, k + 1, 2) == c)
                return k + 3 - i;
        }
        if (c == '\\')
            return run >= 4 ? 4 : run >= 2 ? 2 : 1; /* escaped twice, once, or literal */
        return 0;
    }
    if (x == '%') {
        /* %XX, and %25XX (double encoding), in either hex case */
        for (size_t k = i + 1;; k += 2) {
            long b = hex_at(t, n, k, 2);
            if (b == c)
                return k + 2 - i;
            if (b != '%')
                break;
        }
        return c == '%' ? 1 : 0;
    }
    if (x == '+' && c == ' ')
        return 1;
    return x == c ? 1 : 0;
}

/* End of an encoded occurrence of s starting at t[i], or 0. */
static size_t encoded_match(const char *t, size_t n, size_t i, const char *s, size_t m)
{
    size_t ti = i, si = 0;
    while (si < m) {
        if (ti >= n)
            return 0;
        size_t used, got = unit_match(t, n, ti, s, m, si, &used);
        if (!got)
            return 0;
        ti += got;
        si += used;
    }
    return ti;
}

static size_t b64_match(const char *t, size_t n, size_t i, const char *core, size_t len)
{
    if (n - i < len)
        return 0;
    for (size_t k = 0; k < len; k++) {
        char a = t[i + k], b = core[k];
        if (a != b && !(b == '+' && a == '-') && !(b == '/' && a == '_'))
            return 0;
    }
    return i + len;
}

/* The longest match of any secret at t[i]: its end, or 0. Lock held. */
static size_t secrets_match_at(const char *t, size_t n, size_t i)
{
    if (!secrets_starts[(unsigned char)t[i]])
        return 0;
    size_t best = 0;
    for (size_t k = 0; k < secrets_n; k++) {
        const secret *s = &secrets[k];
        size_t end = encoded_match(t, n, i, s->value, s->len);
        for (int a = 0; a < 3; a++) {
            size_t e = s->b64[a] ? b64_match(t, n, i, s->b64[a], s->b64_len[a]) : 0;
            if (e > end)
                end = e;
        }
        if (end > best)
            best = end;
    }
    return best;
}

bool sk_redact_needed(const char *text, size_t len)
{
    bool found = false;
    pthread_mutex_lock(&secrets_lock);
    for (size_t i = 0; secrets_n && i < len && !found; i++)
        found = secrets_match_at(text, len, i) != 0;
    pthread_mutex_unlock(&secrets_lock);
    return found;
}

char *sk_redact(const char *text, size_t len, size_t *out_len)
{
    sk_buf b = { 0 };
    int rc = sk_buf_reserve(&b, len + 1);
    pthread_mutex_lock(&secrets_lock);
    size_t i = 0, copied = 0;
    while (rc == 0 && i < len) {
        size_t end = secrets_n ? secrets_match_at(text, len, i) : 0;
        if (!end) {
            i++;
            continue;
        }
        rc = sk_buf_append(&b, text + copied, i - copied);
        if (rc == 0)
            rc = sk_buf_append(&b, SK_REDACTED, sizeof SK_REDACTED - 1);
        i = copied = end;
    }
    pthread_mutex_unlock(&secrets_lock);
    if (rc == 0)
        rc = sk_buf_append(&b, text + copied, len - copied);
    if (rc != 0) {
        secret_wipe_free(b.data, b.cap);
        return NULL;
    }
    if (out_len)
        *out_len = b.len;
    return sk_buf_take(&b);
}

/* ---- errors ------------------------------------------------------------- */

/* Server-supplied structures can nest; ours never go deeper than this. */
#define REDACT_MAX_DEPTH 64

static int redact_json(json_t *v, bool redact_keys, int depth);

static int redact_json_string(json_t *v)
{
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    if (!sk_redact_needed(s, len))
        return 0;
    size_t rlen;
    char *r = sk_redact(s, len, &rlen);
    if (!r)
        return -1;
    int rc = json_string_setn_nocheck(v, r, rlen);
    free(r);
    return rc;
}

static int redact_json_object(json_t *obj, bool redact_keys, int depth)
{
    const char *k;
    json_t *v;
    json_t *renamed = NULL; /* keys that held a secret, under their redacted names */
    void *tmp;
    json_object_foreach_safe(obj, tmp, k, v) {
        if (redact_json(v, true, depth + 1) != 0)
            goto fail;
        if (!redact_keys || !sk_redact_needed(k, strlen(k)))
            continue;
        char *rk = sk_redact(k, strlen(k), NULL);
        if (!rk || (!renamed && !(renamed = json_object())) || json_object_set(renamed, rk, v) != 0) {
            free(rk);
            goto fail;
        }
        free(rk);
        json_object_del(obj, k);
    }
    if (renamed && json_object_update(obj, renamed) != 0)
        goto fail;
    json_decref(renamed);
    return 0;
fail:
    json_decref(renamed);
    return -1;
}

static int redact_json(json_t *v, bool redact_keys, int depth)
{
    if (depth > REDACT_MAX_DEPTH)
        return -1;
    if (json_is_string(v))
        return redact_json_string(v);
    if (json_is_object(v))
        return redact_json_object(v, redact_keys, depth);
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            if (redact_json(json_array_get(v, i), true, depth + 1) != 0)
                return -1;
    }
    return 0;
}

void sk_error_redact(sk_error *e)
{
    if (!e)
        return;
    int rc = 0;
    if (e->message && sk_redact_needed(e->message, strlen(e->message))) {
        char *r = sk_redact(e->message, strlen(e->message), NULL);
        if (r) {
            secret_wipe_free(e->message, strlen(e->message));
            e->message = r;
        } else {
            rc = -1;
        }
    }
    /* top-level keys are sandkit's own field names */
    if (rc == 0 && e->fields)
        rc = redact_json(e->fields, false, 0);
    if (rc != 0) {
        /* Out of memory (or absurd nesting): give up on detail rather than
         * leave anything unredacted. */
        json_decref(e->fields);
        e->fields = NULL;
        static const char fallback[] = "details withheld: out of memory while redacting secrets";
        if (e->message) {
            size_t cap = strlen(e->message);
            memset(e->message, 0, cap);
            memcpy(e->message, fallback, cap < sizeof fallback - 1 ? cap : sizeof fallback - 1);
        }
    }
}
