/* The secret registry and redaction; see secrets.h.
 *
 * Text is searched as it is and through up to SECRETS_MAX_LEVELS rounds of
 * decoding, each undoing one layer of percent-encoding and of JSON/JS string
 * escapes (a server may percent-encode a JSON document, or JSON-escape text
 * that is already escaped). A decoded copy keeps, for each byte, where its
 * escape began and ended in the original, so a value found at any depth is
 * cut out of the original text. Base64 is matched by precomputed encodings
 * of the value (and of its JSON-escaped spellings) at each alignment. Above
 * SECRETS_MAP_MAX bytes no position maps are kept (bounded memory): a value
 * found only after decoding then withholds the whole string. */
#include "secrets.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

/* Base64 spellings per value: 3 alignments of up to 4 spellings (raw, and
 * JSON-escaped three ways). */
#define SECRET_B64_MAX 12
#define SECRETS_MAX_LEVELS 4
#define SECRETS_MAP_MAX ((size_t)1 << 20)

typedef struct secret {
    const void *owner; /* NULL: every scope's (tokens); else one sandbox's (env) */
    char *value;
    size_t len;
    int refs;
    char *b64[SECRET_B64_MAX]; /* base64 cores (edge characters cut) */
    size_t b64_len[SECRET_B64_MAX];
    int n_b64;
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

static void secret_free_parts(secret *s)
{
    secret_wipe_free(s->value, s->len);
    for (int a = 0; a < s->n_b64; a++)
        secret_wipe_free(s->b64[a], s->b64_len[a]);
    s->n_b64 = 0;
}

/* The value as it sits inside a JSON string: escaped as JSON.stringify and
 * jansson do, with "/" escaped too, or with everything non-ASCII as \uXXXX
 * (Python's json.dumps). NULL on ENOMEM. */
enum { JSON_PLAIN, JSON_SLASH, JSON_ASCII };
static char *secret_json_spelling(const char *v, size_t len, int how, size_t *out_len)
{
    sk_buf b = { 0 };
    int rc = 0;
    for (size_t i = 0; i < len && rc == 0;) {
        unsigned char c = (unsigned char)v[i];
        if (c == '"' || c == '\\' || (c == '/' && how == JSON_SLASH)) {
            char e[2] = { '\\', (char)c };
            rc = sk_buf_append(&b, e, 2);
            i++;
        } else if (c < 0x20) {
            rc = sk_buf_appendf(&b, "\\u%04x", c);
            i++;
        } else if (c >= 0x80 && how == JSON_ASCII) {
            /* decode one UTF-8 sequence (invalid bytes pass as themselves) */
            unsigned long cp = c;
            size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
            if (n > 1 && i + n <= len) {
                cp = c & (0x3F >> (n - 1));
                for (size_t k = 1; k < n; k++)
                    cp = cp << 6 | ((unsigned char)v[i + k] & 0x3F);
            } else {
                n = 1;
            }
            if (cp >= 0x10000) {
                cp -= 0x10000;
                rc = sk_buf_appendf(&b, "\\u%04lx\\u%04lx", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
            } else {
                rc = sk_buf_appendf(&b, "\\u%04lx", cp);
            }
            i += n;
        } else {
            rc = sk_buf_append(&b, v + i, 1);
            i++;
        }
    }
    if (rc != 0) {
        secret_wipe_free(b.data, b.cap);
        return NULL;
    }
    *out_len = b.len;
    return sk_buf_take(&b);
}

/* Base64 cores of the value and of each distinct JSON spelling of it. */
static int secret_add_b64(secret *s)
{
    char *spelling[4] = { s->value, NULL, NULL, NULL };
    size_t slen[4] = { s->len, 0, 0, 0 };
    int rc = 0;
    for (int how = 0; how < 3 && rc == 0; how++)
        if (!(spelling[how + 1] = secret_json_spelling(s->value, s->len, how, &slen[how + 1])))
            rc = -1;
    for (int k = 0; k < 4 && rc == 0; k++) {
        bool dup = false;
        for (int j = 0; j < k; j++)
            dup |= slen[j] == slen[k] && memcmp(spelling[j], spelling[k], slen[k]) == 0;
        for (int a = 0; a < 3 && !dup && rc == 0; a++) {
            char *core = secret_b64_core(spelling[k], slen[k], a, &s->b64_len[s->n_b64]);
            if (!core)
                rc = -1;
            else
                s->b64[s->n_b64++] = core;
        }
    }
    for (int k = 1; k < 4; k++)
        secret_wipe_free(spelling[k], slen[k]);
    return rc;
}

static void secrets_rebuild_starts(void)
{
    memset(secrets_starts, 0, sizeof secrets_starts);
    if (!secrets_n)
        return;
    for (size_t i = 0; i < secrets_n; i++) {
        secret *s = &secrets[i];
        secrets_starts[(unsigned char)s->value[0]] = true;
        if (s->value[0] == ' ')
            secrets_starts['+'] = true;
        for (int a = 0; a < s->n_b64; a++) {
            if (!s->b64_len[a])
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

static int secret_hold_in(const void *owner, const char *value)
{
    if (!value || strlen(value) < SK_SECRET_MIN_LEN)
        return 0;
    size_t len = strlen(value);
    int rc = 0;
    pthread_mutex_lock(&secrets_lock);
    for (size_t i = 0; i < secrets_n; i++) {
        if (secrets[i].owner == owner && secrets[i].len == len && memcmp(secrets[i].value, value, len) == 0) {
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
    secret s = { .owner = owner, .len = len, .refs = 1 };
    if (!(s.value = strdup(value))) {
        rc = -1;
        goto out;
    }
    if (len >= SK_SECRET_BASE64_MIN_LEN && secret_add_b64(&s) != 0) {
        secret_free_parts(&s);
        rc = -1;
        goto out;
    }
    secrets[secrets_n++] = s;
    secrets_rebuild_starts();
out:
    pthread_mutex_unlock(&secrets_lock);
    return rc;
}

static void secret_release_in(const void *owner, const char *value)
{
    if (!value || strlen(value) < SK_SECRET_MIN_LEN)
        return;
    size_t len = strlen(value);
    pthread_mutex_lock(&secrets_lock);
    for (size_t i = 0; i < secrets_n; i++) {
        secret *s = &secrets[i];
        if (s->owner != owner || s->len != len || memcmp(s->value, value, len) != 0)
            continue;
        if (--s->refs == 0) {
            secret_free_parts(s);
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

int sk_secret_hold(const char *value) { return secret_hold_in(NULL, value); }
void sk_secret_release(const char *value) { secret_release_in(NULL, value); }

int sk_secret_hold_env(const void *owner, const json_t *env)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)env, k, v) {
        if (json_is_string(v) && secret_hold_in(owner, json_string_value(v)) != 0) {
            /* undo what was held so far: the caller fails as a whole */
            const char *k2;
            json_t *v2;
            json_object_foreach((json_t *)env, k2, v2) {
                if (v2 == v)
                    break;
                if (json_is_string(v2))
                    secret_release_in(owner, json_string_value(v2));
            }
            return -1;
        }
    }
    return 0;
}

void sk_secret_release_env(const void *owner, const json_t *env)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)env, k, v) {
        if (json_is_string(v))
            secret_release_in(owner, json_string_value(v));
    }
}

/* ---- decoding ---------------------------------------------------------- */

int sk_hex_digit(int c)
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
        int h = sk_hex_digit((unsigned char)t[k + (size_t)d]);
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

/* One escape at t[i] (percent, JSON/JS string escape): its decoded bytes in
 * out and its length in the text; 0 when t[i] starts none. */
static size_t escape_at(const char *t, size_t n, size_t i, unsigned char out[4], size_t *out_len)
{
    if (t[i] == '%') {
        long b = hex_at(t, n, i + 1, 2);
        if (b < 0)
            return 0;
        out[0] = (unsigned char)b;
        *out_len = 1;
        return 3;
    }
    if (t[i] != '\\' || i + 1 >= n)
        return 0;
    unsigned char e = (unsigned char)t[i + 1];
    unsigned char simple = e == '/' || e == '"' || e == '\'' || e == '\\' ? e
                           : e == 'n'                                      ? '\n'
                           : e == 't'                                      ? '\t'
                           : e == 'r'                                      ? '\r'
                           : e == 'b'                                      ? '\b'
                           : e == 'f'                                      ? '\f'
                                                                           : 0;
    if (simple) {
        out[0] = simple;
        *out_len = 1;
        return 2;
    }
    if (e == 'x') {
        long b = hex_at(t, n, i + 2, 2);
        if (b < 0)
            return 0;
        out[0] = (unsigned char)b;
        *out_len = 1;
        return 4;
    }
    if (e != 'u')
        return 0;
    long hi = hex_at(t, n, i + 2, 4);
    if (hi < 0)
        return 0;
    unsigned long cp = (unsigned long)hi;
    size_t used = 6;
    if (hi >= 0xD800 && hi <= 0xDBFF && i + 7 < n && t[i + 6] == '\\' && t[i + 7] == 'u') {
        long lo = hex_at(t, n, i + 8, 4);
        if (lo >= 0xDC00 && lo <= 0xDFFF) {
            cp = 0x10000 + (((unsigned long)hi - 0xD800) << 10) + ((unsigned long)lo - 0xDC00);
            used = 12;
        }
    }
    *out_len = utf8_encode(cp, out);
    return used;
}

/* Where each byte of a decoded level came from in the original text. */
typedef struct level_map {
    uint32_t *start, *stop; /* NULL: the identity (level 0) */
} level_map;

/* Undoes one layer of escapes of in[0..n) into out (room for n bytes).
 * With maps, fills next's start/stop from prev. Returns the decoded
 * length; *changed tells whether any escape was undone. */
static size_t decode_level(const char *in, size_t n, char *out, const level_map *prev, level_map *next,
                           bool *changed)
{
    size_t o = 0;
    *changed = false;
    for (size_t i = 0; i < n;) {
        unsigned char bytes[4];
        size_t blen = 0, used = escape_at(in, n, i, bytes, &blen);
        if (!used) {
            bytes[0] = (unsigned char)in[i];
            blen = used = 1;
        } else {
            *changed = true;
        }
        for (size_t k = 0; k < blen; k++) {
            if (next->start) {
                next->start[o] = prev->start ? prev->start[i] : (uint32_t)i;
                next->stop[o] = prev->stop ? prev->stop[i + used - 1] : (uint32_t)(i + used);
            }
            out[o++] = (char)bytes[k];
        }
        i += used;
    }
    return o;
}

/* ---- matching ---------------------------------------------------------- */

/* End of a literal occurrence of s at t[i] ('+' also stands for a space),
 * or 0. */
static size_t literal_match(const char *t, size_t n, size_t i, const char *s, size_t m)
{
    if (n - i < m)
        return 0;
    for (size_t k = 0; k < m; k++) {
        char a = t[i + k], b = s[k];
        if (a != b && !(b == ' ' && a == '+'))
            return 0;
    }
    return i + m;
}

static size_t b64_match(const char *t, size_t n, size_t i, const char *core, size_t len)
{
    if (!len || n - i < len)
        return 0;
    for (size_t k = 0; k < len; k++) {
        char a = t[i + k], b = core[k];
        if (a != b && !(b == '+' && a == '-') && !(b == '/' && a == '_'))
            return 0;
    }
    return i + len;
}

/* The longest match at t[i] of a secret in scope: its end, or 0. Lock held. */
static size_t secrets_match_at(const void *scope, const char *t, size_t n, size_t i)
{
    if (!secrets_starts[(unsigned char)t[i]])
        return 0;
    size_t best = 0;
    for (size_t k = 0; k < secrets_n; k++) {
        const secret *s = &secrets[k];
        if (scope && s->owner && s->owner != scope)
            continue;
        size_t end = literal_match(t, n, i, s->value, s->len);
        for (int a = 0; a < s->n_b64; a++) {
            size_t e = b64_match(t, n, i, s->b64[a], s->b64_len[a]);
            if (e > end)
                end = e;
        }
        if (end > best)
            best = end;
    }
    return best;
}

/* Spans of the original text to cut, sorted and merged as they are added. */
typedef struct spans {
    size_t *v; /* pairs: start, end */
    size_t n, cap;
} spans;

static int spans_add(spans *sp, size_t start, size_t end)
{
    /* merge with an overlapping or adjacent span (they mostly arrive in order) */
    for (size_t k = 0; k < sp->n; k++) {
        size_t *p = sp->v + 2 * k;
        if (start <= p[1] && end >= p[0]) {
            if (start < p[0])
                p[0] = start;
            if (end > p[1])
                p[1] = end;
            return 0;
        }
    }
    if (sp->n == sp->cap) {
        size_t cap = sp->cap ? sp->cap * 2 : 8;
        size_t *v = realloc(sp->v, cap * 2 * sizeof *v);
        if (!v)
            return -1;
        sp->v = v;
        sp->cap = cap;
    }
    sp->v[2 * sp->n] = start;
    sp->v[2 * sp->n + 1] = end;
    sp->n++;
    return 0;
}

static int spans_cmp(const void *a, const void *b)
{
    const size_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

enum { SCAN_OK = 0, SCAN_ENOMEM = -1 };

/* A hit [i, end) of the current level: recorded as a span of the original
 * (or the whole text marked, where no map says where). 1: stop scanning
 * (detect-only, or withheld whole), 0: go on, -1: ENOMEM. */
static int scan_hit(spans *sp, int level, bool maps, const level_map *m, size_t i, size_t end, bool *found,
                    bool *whole)
{
    *found = true;
    if (!sp)
        return 1;
    if (level == 0)
        return spans_add(sp, i, end) != 0 ? -1 : 0;
    if (maps)
        return spans_add(sp, m->start[i], m->stop[end - 1]) != 0 ? -1 : 0;
    *whole = true;
    return 1;
}

/* The longest piece (at least SK_SECRET_PARTIAL_MIN bytes, not the whole
 * value) of a secret in scope that ends t (a prefix, before an optional
 * "...") or begins it (a suffix): *head = its end at the start, *tail = its
 * start at the end. Lock held. */
static void secrets_partial_edges(const void *scope, const char *t, size_t n, size_t *head, size_t *tail)
{
    size_t end = n >= 3 && memcmp(t + n - 3, "...", 3) == 0 ? n - 3 : n;
    for (size_t k = 0; k < secrets_n; k++) {
        const secret *s = &secrets[k];
        if (scope && s->owner && s->owner != scope)
            continue;
        for (size_t l = s->len - 1; l >= SK_SECRET_PARTIAL_MIN; l--) {
            if (l <= end && *tail > end - l && memcmp(t + end - l, s->value, l) == 0)
                *tail = end - l;
            if (l <= n && *head < l && memcmp(t, s->value + s->len - l, l) == 0)
                *head = l;
        }
    }
}

/* Finds every held secret in text, at every decoding level, as spans of
 * the original (sp, may be NULL to only detect). *found: any at all;
 * *whole: one was found where no map says where (text withheld whole).
 * Lock held. */
static int secrets_scan(const void *scope, const char *text, size_t len, int max_levels, spans *sp, bool *found,
                        bool *whole)
{
    *found = *whole = false;
    if (!secrets_n || !len)
        return SCAN_OK;
    bool maps = sp && len <= SECRETS_MAP_MAX;
    char *cur = NULL, *next = NULL;
    level_map cur_map = { 0 }, next_map = { 0 };
    const char *t = text;
    size_t n = len;
    int rc = SCAN_OK;
    for (int level = 0;; level++) {
        for (size_t i = 0; i < n;) {
            size_t end = secrets_match_at(scope, t, n, i);
            if (!end) {
                i++;
                continue;
            }
            int hit = scan_hit(sp, level, maps, &cur_map, i, end, found, whole);
            if (hit < 0)
                goto oom;
            if (hit > 0)
                goto out;
            i = end;
        }
        /* a secret cut short where the text ends (a server truncating it), or
         * its tail where the text begins */
        size_t head = 0, tail = n;
        secrets_partial_edges(scope, t, n, &head, &tail);
        int hit = head ? scan_hit(sp, level, maps, &cur_map, 0, head, found, whole) : 0;
        if (hit == 0 && tail < n)
            hit = scan_hit(sp, level, maps, &cur_map, tail, n, found, whole);
        if (hit < 0)
            goto oom;
        if (hit > 0)
            goto out;
        if (level + 1 >= max_levels || (!memchr(t, '%', n) && !memchr(t, '\\', n)))
            break;
        if (!next && !(next = malloc(n)))
            goto oom;
        if (maps && !next_map.start) {
            next_map.start = malloc(n * sizeof *next_map.start);
            next_map.stop = malloc(n * sizeof *next_map.stop);
            if (!next_map.start || !next_map.stop)
                goto oom;
        }
        bool changed;
        size_t dn = decode_level(t, n, next, &cur_map, &next_map, &changed);
        if (!changed)
            break;
        /* the decoded level becomes current; the old buffers are reused */
        char *tb = cur;
        cur = next;
        next = tb;
        level_map tm = cur_map;
        cur_map = next_map;
        next_map = tm;
        t = cur;
        n = dn;
    }
    goto out;
oom:
    rc = SCAN_ENOMEM;
out:
    free(cur);
    free(next);
    free(cur_map.start);
    free(cur_map.stop);
    free(next_map.start);
    free(next_map.stop);
    return rc;
}

bool sk_redact_needed(const void *scope, const char *text, size_t len)
{
    bool found = false, whole = false;
    pthread_mutex_lock(&secrets_lock);
    (void)secrets_scan(scope, text, len, SECRETS_MAX_LEVELS, NULL, &found, &whole);
    pthread_mutex_unlock(&secrets_lock);
    return found;
}

#define WITHHELD SK_REDACTED " (withheld whole: it held a secret)"

/* text with the spans cut out, into b. */
static int redact_spans(sk_buf *b, const char *text, size_t len, spans *sp)
{
    int rc = 0;
    if (sp->n > 1)
        qsort(sp->v, sp->n, 2 * sizeof *sp->v, spans_cmp);
    size_t copied = 0;
    for (size_t k = 0; k < sp->n && rc == 0; k++) {
        size_t start = sp->v[2 * k], end = sp->v[2 * k + 1];
        if (start < copied)
            start = copied; /* overlapping after sorting */
        if (end <= copied)
            continue;
        rc = sk_buf_append(b, text + copied, start - copied);
        if (rc == 0)
            rc = sk_buf_append(b, SK_REDACTED, sizeof SK_REDACTED - 1);
        copied = end;
    }
    if (rc == 0)
        rc = sk_buf_append(b, text + copied, len - copied);
    return rc;
}

char *sk_redact(const void *scope, const char *text, size_t len, size_t *out_len)
{
    spans sp = { 0 };
    bool found = false, whole = false;
    sk_buf b = { 0 };
    pthread_mutex_lock(&secrets_lock);
    /* Large text: literal occurrences are cut where they are; one that only
     * decoding reveals withholds the whole text (no position maps). */
    bool large = len > SECRETS_MAP_MAX;
    int rc = secrets_scan(scope, text, len, large ? 1 : SECRETS_MAX_LEVELS, &sp, &found, &whole);
    if (rc == 0)
        rc = redact_spans(&b, text, len, &sp);
    if (rc == 0 && large && b.len) {
        rc = secrets_scan(scope, b.data, b.len, SECRETS_MAX_LEVELS, NULL, &found, &whole);
        if (rc == 0 && found) {
            memset(b.data, 0, b.cap);
            sk_buf_reset(&b);
            rc = sk_buf_append(&b, WITHHELD, sizeof WITHHELD - 1);
        }
    }
    pthread_mutex_unlock(&secrets_lock);
    free(sp.v);
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

static int redact_json(const void *scope, json_t *v, bool redact_keys, int depth);

static int redact_json_string(const void *scope, json_t *v)
{
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    if (!sk_redact_needed(scope, s, len))
        return 0;
    size_t rlen;
    char *r = sk_redact(scope, s, len, &rlen);
    if (!r)
        return -1;
    int rc = json_string_setn_nocheck(v, r, rlen);
    free(r);
    return rc;
}

static int redact_json_object(const void *scope, json_t *obj, bool redact_keys, int depth)
{
    const char *k;
    json_t *v;
    json_t *renamed = NULL; /* keys that held a secret, under their redacted names */
    void *tmp;
    json_object_foreach_safe(obj, tmp, k, v) {
        if (redact_json(scope, v, true, depth + 1) != 0)
            goto fail;
        if (!redact_keys || !sk_redact_needed(scope, k, strlen(k)))
            continue;
        char *rk = sk_redact(scope, k, strlen(k), NULL);
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

static int redact_json(const void *scope, json_t *v, bool redact_keys, int depth)
{
    if (depth > REDACT_MAX_DEPTH)
        return -1;
    if (json_is_string(v))
        return redact_json_string(scope, v);
    if (json_is_object(v))
        return redact_json_object(scope, v, redact_keys, depth);
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            if (redact_json(scope, json_array_get(v, i), true, depth + 1) != 0)
                return -1;
    }
    return 0;
}

int sk_json_redact(const void *scope, json_t *v)
{
    return v ? redact_json(scope, v, false, 0) : 0;
}

void sk_error_redact(const void *scope, sk_error *e)
{
    if (!e)
        return;
    int rc = 0;
    if (e->message && sk_redact_needed(scope, e->message, strlen(e->message))) {
        char *r = sk_redact(scope, e->message, strlen(e->message), NULL);
        if (r) {
            secret_wipe_free(e->message, strlen(e->message));
            e->message = r;
        } else {
            rc = -1;
        }
    }
    /* top-level keys are sandkit's own field names */
    if (rc == 0 && e->fields)
        rc = redact_json(scope, e->fields, false, 0);
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
