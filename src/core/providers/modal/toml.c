/* Strict TOML 1.0 reader producing jansson values; see toml.h. */
#include "toml.h"

#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../buf.h"

#define TOML_DEPTH_MAX 64
#define TOML_KEY_PARTS_MAX 64
#define TOML_NUMBER_MAX 128

/* What we know about each table (and array of tables) we created: the
 * redefinition rules depend on how it came to exist. */
enum {
    TOML_HEADER = 1,   /* defined by [header] */
    TOML_IMPLICIT = 2, /* created as a prefix of a header */
    TOML_DOTTED = 4,   /* created by a dotted key */
    TOML_SEALED = 8,   /* inline table: closed to any extension */
    TOML_AOT = 16      /* array created by [[header]] */
};

typedef struct toml_meta {
    json_t *v;
    unsigned flags;
} toml_meta;

typedef struct toml {
    const char *p, *end;
    int line;
    char *err;
    size_t errlen;
    toml_meta *meta;
    size_t n_meta, cap_meta;
    int depth;
} toml;

typedef struct toml_key {
    char *part[TOML_KEY_PARTS_MAX];
    size_t len[TOML_KEY_PARTS_MAX];
    size_t n;
} toml_key;

static int toml_fail(toml *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int toml_fail(toml *t, const char *fmt, ...)
{
    if (t->errlen && t->err[0] == '\0') {
        int n = snprintf(t->err, t->errlen, "line %d: ", t->line);
        if (n >= 0 && (size_t)n < t->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(t->err + n, t->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

/* Names a character without copying raw bytes into the message. */
static int toml_fail_char(toml *t, const char *what, char c)
{
    unsigned char u = (unsigned char)c;
    if (u > 0x20 && u < 0x7f)
        return toml_fail(t, "%s '%c'", what, c);
    return toml_fail(t, "%s byte 0x%02x", what, u);
}

static int toml_oom(toml *t)
{
    return toml_fail(t, "out of memory");
}

/* ---- table bookkeeping ----
 * Flags live in an open-addressing hash keyed by the json_t pointer, so
 * documents with many tables stay linear. Nothing is freed while parsing
 * succeeds, so a pointer is never reused for another table. */

static size_t toml_slot(const toml *t, const json_t *v)
{
    size_t mask = t->cap_meta - 1;
    size_t i = (size_t)(((uint64_t)(uintptr_t)v >> 4) * 0x9e3779b97f4a7c15ull) & mask;
    while (t->meta[i].v && t->meta[i].v != v)
        i = (i + 1) & mask;
    return i;
}

static unsigned toml_flags(const toml *t, const json_t *v)
{
    return t->cap_meta ? t->meta[toml_slot(t, v)].flags : 0;
}

static int toml_set_flags(toml *t, json_t *v, unsigned flags)
{
    if ((t->n_meta + 1) * 2 > t->cap_meta) {
        toml old = *t;
        t->cap_meta = old.cap_meta ? old.cap_meta * 2 : 64;
        t->meta = calloc(t->cap_meta, sizeof *t->meta);
        if (!t->meta) {
            t->meta = old.meta;
            t->cap_meta = old.cap_meta;
            return toml_oom(t);
        }
        for (size_t i = 0; i < old.cap_meta; i++)
            if (old.meta[i].v)
                t->meta[toml_slot(t, old.meta[i].v)] = old.meta[i];
        free(old.meta);
    }
    size_t i = toml_slot(t, v);
    if (!t->meta[i].v) {
        t->meta[i].v = v;
        t->n_meta++;
    }
    t->meta[i].flags = flags;
    return 0;
}

/* Inline tables and everything inside them can never be extended. */
static int toml_seal(toml *t, json_t *v)
{
    if (json_is_object(v)) {
        if (toml_set_flags(t, v, toml_flags(t, v) | TOML_SEALED) != 0)
            return -1;
        const char *k;
        json_t *c;
        json_object_foreach(v, k, c)
            if (toml_seal(t, c) != 0)
                return -1;
    } else if (json_is_array(v)) {
        size_t i;
        json_t *c;
        json_array_foreach(v, i, c)
            if (toml_seal(t, c) != 0)
                return -1;
    }
    return 0;
}

/* A new table stored under key in parent (key known to be absent). */
static json_t *toml_new_table(toml *t, json_t *parent, const char *k, size_t klen, unsigned flags)
{
    json_t *o = json_object();
    if (!o || json_object_setn_new(parent, k, klen, o) != 0) {
        toml_oom(t);
        return NULL;
    }
    if (toml_set_flags(t, o, flags) != 0)
        return NULL;
    return o;
}

/* ---- lexical helpers ---- */

static bool toml_eof(const toml *t)
{
    return t->p >= t->end;
}

static void toml_ws(toml *t)
{
    while (t->p < t->end && (*t->p == ' ' || *t->p == '\t'))
        t->p++;
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0. */
static size_t toml_utf8_len(const char *p, const char *end)
{
    const unsigned char *s = (const unsigned char *)p;
    size_t avail = (size_t)(end - p);
    if (s[0] < 0x80)
        return 1;
    size_t n;
    uint32_t cp;
    if (s[0] >= 0xc2 && s[0] <= 0xdf) {
        n = 2;
        cp = s[0] & 0x1f;
    } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
        n = 3;
        cp = s[0] & 0x0f;
    } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
        n = 4;
        cp = s[0] & 0x07;
    } else {
        return 0;
    }
    if (avail < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

/* Control characters other than tab are not allowed in comments or
 * strings. */
static bool toml_is_control(unsigned char c)
{
    return (c < 0x20 && c != '\t') || c == 0x7f;
}

static int toml_comment(toml *t)
{
    if (toml_eof(t) || *t->p != '#')
        return 0;
    t->p++;
    while (t->p < t->end && *t->p != '\n') {
        unsigned char c = (unsigned char)*t->p;
        if (c == '\r' && t->p + 1 < t->end && t->p[1] == '\n')
            break;
        if (toml_is_control(c))
            return toml_fail(t, "control character in comment");
        size_t n = toml_utf8_len(t->p, t->end);
        if (n == 0)
            return toml_fail(t, "invalid UTF-8 in comment");
        t->p += n;
    }
    return 0;
}

/* 1 if a newline was consumed, 0 if none here, -1 on a lone CR. */
static int toml_newline(toml *t)
{
    if (toml_eof(t))
        return 0;
    if (*t->p == '\n') {
        t->p++;
        t->line++;
        return 1;
    }
    if (*t->p == '\r') {
        if (t->p + 1 < t->end && t->p[1] == '\n') {
            t->p += 2;
            t->line++;
            return 1;
        }
        return toml_fail(t, "carriage return not followed by newline");
    }
    return 0;
}

/* After a statement: whitespace, an optional comment, then a newline or
 * the end of input. */
static int toml_line_end(toml *t)
{
    toml_ws(t);
    if (toml_comment(t) != 0)
        return -1;
    if (toml_eof(t))
        return 0;
    int nl = toml_newline(t);
    if (nl < 0)
        return -1;
    if (nl == 0)
        return toml_fail_char(t, "expected end of line, found", *t->p);
    return 0;
}

/* Whitespace, comments and newlines (inside arrays). */
static int toml_ws_nl(toml *t)
{
    for (;;) {
        toml_ws(t);
        if (toml_comment(t) != 0)
            return -1;
        int nl = toml_newline(t);
        if (nl < 0)
            return -1;
        if (nl == 0)
            return 0;
    }
}

static bool toml_starts(const toml *t, const char *s)
{
    size_t n = strlen(s);
    return (size_t)(t->end - t->p) >= n && memcmp(t->p, s, n) == 0;
}

/* ---- strings ---- */

static int toml_put_utf8(sk_buf *b, uint32_t cp)
{
    char s[4];
    size_t n;
    if (cp < 0x80) {
        s[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        s[0] = (char)(0xc0 | cp >> 6);
        s[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        s[0] = (char)(0xe0 | cp >> 12);
        s[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        s[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        s[0] = (char)(0xf0 | cp >> 18);
        s[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        s[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        s[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    return sk_buf_append(b, s, n);
}

/* One escape after the backslash (already consumed). */
static int toml_escape(toml *t, sk_buf *b)
{
    if (toml_eof(t))
        return toml_fail(t, "unterminated escape");
    char c = *t->p++;
    const char *simple = NULL;
    switch (c) {
    case 'b': simple = "\b"; break;
    case 't': simple = "\t"; break;
    case 'n': simple = "\n"; break;
    case 'f': simple = "\f"; break;
    case 'r': simple = "\r"; break;
    case '"': simple = "\""; break;
    case '\\': simple = "\\"; break;
    case 'u':
    case 'U': {
        int digits = c == 'u' ? 4 : 8;
        if (t->end - t->p < digits)
            return toml_fail(t, "truncated \\%c escape", c);
        uint32_t cp = 0;
        for (int i = 0; i < digits; i++) {
            char h = t->p[i];
            int v = h >= '0' && h <= '9' ? h - '0'
                  : h >= 'a' && h <= 'f' ? h - 'a' + 10
                  : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
            if (v < 0)
                return toml_fail(t, "invalid hex digit in \\%c escape", c);
            cp = cp << 4 | (uint32_t)v;
        }
        t->p += digits;
        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return toml_fail(t, "escape is not a Unicode scalar value");
        return toml_put_utf8(b, cp) == 0 ? 0 : toml_oom(t);
    }
    default:
        return toml_fail(t, "invalid escape sequence");
    }
    return sk_buf_append(b, simple, 1) == 0 ? 0 : toml_oom(t);
}

/* One ordinary character (checked) appended. */
static int toml_string_char(toml *t, sk_buf *b)
{
    unsigned char c = (unsigned char)*t->p;
    if (toml_is_control(c))
        return toml_fail(t, "control character in string");
    size_t n = toml_utf8_len(t->p, t->end);
    if (n == 0)
        return toml_fail(t, "invalid UTF-8 in string");
    if (sk_buf_append(b, t->p, n) != 0)
        return toml_oom(t);
    t->p += n;
    return 0;
}

/* One character of a string's body, or an escape in a basic (q '"') one,
 * appended. */
static int toml_string_piece(toml *t, sk_buf *b, char q)
{
    if (*t->p == '\\' && q == '"') {
        t->p++;
        return toml_escape(t, b);
    }
    return toml_string_char(t, b);
}

/* A closing run of quotes in a multi-line string: 3 to 5 quote characters
 * end it, the extra ones belonging to the content. Returns 1 when the
 * string ended, 0 when the quotes were content. */
static int toml_ml_quotes(toml *t, sk_buf *b, char q)
{
    size_t n = 0;
    while (t->p + n < t->end && t->p[n] == q)
        n++;
    if (n < 3) {
        if (sk_buf_append(b, t->p, n) != 0)
            return toml_oom(t);
        t->p += n;
        return 0;
    }
    if (n > 5)
        return toml_fail(t, "too many quotes at the end of a multi-line string");
    if (sk_buf_append(b, t->p, n - 3) != 0)
        return toml_oom(t);
    t->p += n;
    return 1;
}

/* Multi-line string body (the opening delimiter consumed). */
static int toml_ml_string(toml *t, sk_buf *b, char q)
{
    int nl = toml_newline(t); /* a newline right after the delimiter is trimmed */
    if (nl < 0)
        return -1;
    for (;;) {
        if (toml_eof(t))
            return toml_fail(t, "unterminated multi-line string");
        char c = *t->p;
        if (c == q) {
            int r = toml_ml_quotes(t, b, q);
            if (r != 0)
                return r < 0 ? -1 : 0;
            continue;
        }
        if (c == '\n' || c == '\r') {
            nl = toml_newline(t);
            if (nl < 0)
                return -1;
            if (sk_buf_append(b, "\n", 1) != 0)
                return toml_oom(t);
            continue;
        }
        if (c == '\\' && q == '"') {
            /* Line-ending backslash: drop it and all whitespace after. */
            const char *s = t->p + 1;
            while (s < t->end && (*s == ' ' || *s == '\t'))
                s++;
            if (s < t->end && (*s == '\n' || *s == '\r')) {
                t->p = s;
                for (;;) {
                    toml_ws(t);
                    nl = toml_newline(t);
                    if (nl < 0)
                        return -1;
                    if (nl == 0)
                        break;
                }
                continue;
            }
        }
        if (toml_string_piece(t, b, q) != 0)
            return -1;
    }
}

/* Any string at t->p; the result goes to b. multiline reports which kind
 * (keys must be single-line). */
static int toml_string(toml *t, sk_buf *b, bool *multiline)
{
    char q = *t->p;
    *multiline = false;
    if (toml_starts(t, q == '"' ? "\"\"\"" : "'''")) {
        *multiline = true;
        t->p += 3;
        return toml_ml_string(t, b, q);
    }
    t->p++;
    for (;;) {
        if (toml_eof(t) || *t->p == '\n' || *t->p == '\r')
            return toml_fail(t, "unterminated string");
        char c = *t->p;
        if (c == q) {
            t->p++;
            return 0;
        }
        if (toml_string_piece(t, b, q) != 0)
            return -1;
    }
}

/* ---- keys ---- */

static void toml_key_free(toml_key *k)
{
    for (size_t i = 0; i < k->n; i++)
        free(k->part[i]);
    k->n = 0;
}

static bool toml_is_bare(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

/* A possibly dotted key; stops before whatever follows it (after ws). */
static int toml_parse_key(toml *t, toml_key *k)
{
    k->n = 0;
    for (;;) {
        toml_ws(t);
        if (k->n == TOML_KEY_PARTS_MAX)
            return toml_fail(t, "key has too many parts");
        sk_buf b = {0};
        if (!toml_eof(t) && (*t->p == '"' || *t->p == '\'')) {
            bool ml;
            if (toml_string(t, &b, &ml) != 0) {
                sk_buf_free(&b);
                return -1;
            }
            if (ml) {
                sk_buf_free(&b);
                return toml_fail(t, "multi-line string used as a key");
            }
        } else {
            const char *s = t->p;
            while (t->p < t->end && toml_is_bare(*t->p))
                t->p++;
            if (t->p == s)
                return toml_fail(t, "expected a key");
            if (sk_buf_append(&b, s, (size_t)(t->p - s)) != 0)
                return toml_oom(t);
        }
        k->len[k->n] = b.len;
        k->part[k->n] = sk_buf_take(&b);
        k->n++;
        toml_ws(t);
        if (toml_eof(t) || *t->p != '.')
            return 0;
        t->p++;
    }
}

/* ---- values ---- */

static json_t *toml_value(toml *t);
static int toml_keyval(toml *t, json_t *table);

/* digit ( _? digit )* in the given base; returns digits consumed or -1. */
static int toml_digits(const char **s, const char *e, int base)
{
    int n = 0;
    bool last_us = true; /* no leading underscore */
    while (*s < e) {
        char c = **s;
        int v = c >= '0' && c <= '9' ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (c == '_') {
            if (last_us)
                return -1;
            last_us = true;
        } else if (v >= 0 && v < base) {
            last_us = false;
            n++;
        } else {
            break;
        }
        (*s)++;
    }
    return last_us && n > 0 ? -1 : n;
}

/* The token was validated by toml_number. */
static json_t *toml_integer(toml *t, const char *s, const char *e)
{
    bool neg = false;
    int base = 10;
    if (*s == '+' || *s == '-') {
        neg = *s == '-';
        s++;
    }
    if (e - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o' || s[1] == 'b')) {
        base = s[1] == 'x' ? 16 : s[1] == 'o' ? 8 : 2;
        s += 2;
    }
    uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (const char *q = s; q < e; q++) {
        if (*q == '_')
            continue;
        uint64_t d = (uint64_t)(*q >= '0' && *q <= '9' ? *q - '0'
                              : *q >= 'a' && *q <= 'f' ? *q - 'a' + 10 : *q - 'A' + 10);
        if (v > (limit - d) / (uint64_t)base) {
            toml_fail(t, "integer out of range");
            return NULL;
        }
        v = v * (uint64_t)base + d;
    }
    json_int_t out;
    if (!neg)
        out = (json_int_t)v;
    else if (v == (uint64_t)INT64_MAX + 1)
        out = INT64_MIN;
    else
        out = -(json_int_t)v;
    json_t *j = json_integer(out);
    if (!j)
        toml_oom(t);
    return j;
}

static json_t *toml_float(toml *t, const char *s, const char *e)
{
    char tmp[TOML_NUMBER_MAX];
    size_t n = 0;
    const char *dp = localeconv()->decimal_point; /* strtod follows the locale */
    size_t dpl = strlen(dp);
    for (const char *q = s; q < e; q++) {
        if (*q == '_')
            continue;
        const char *src = *q == '.' ? dp : q;
        size_t l = *q == '.' ? dpl : 1;
        if (n + l >= sizeof tmp) {
            toml_fail(t, "number too long");
            return NULL;
        }
        memcpy(tmp + n, src, l);
        n += l;
    }
    tmp[n] = '\0';
    char *endp;
    double d = strtod(tmp, &endp);
    if (*endp != '\0') {
        toml_fail(t, "invalid float");
        return NULL;
    }
    if (!isfinite(d)) {
        toml_fail(t, "float out of range");
        return NULL;
    }
    json_t *j = json_real(d);
    if (!j)
        toml_oom(t);
    return j;
}

/* Checks the shape of a number token and builds the value. */
static json_t *toml_number(toml *t, const char *s, const char *e)
{
    const char *q = s;
    if (q < e && (*q == '+' || *q == '-'))
        q++;
    if (e - q >= 3 && (memcmp(q, "inf", 3) == 0 || memcmp(q, "nan", 3) == 0) && e - q == 3) {
        toml_fail(t, "inf and nan are not supported");
        return NULL;
    }
    if (e - q > 2 && q[0] == '0' && (q[1] == 'x' || q[1] == 'o' || q[1] == 'b')) {
        if (q != s)
            goto bad;
        const char *r = q + 2;
        int base = q[1] == 'x' ? 16 : q[1] == 'o' ? 8 : 2;
        if (toml_digits(&r, e, base) <= 0 || r != e)
            goto bad;
        return toml_integer(t, s, e);
    }
    if (toml_digits(&q, e, 10) <= 0)
        goto bad;
    const char *int_end = q;
    bool is_float = false;
    if (q < e && *q == '.') {
        q++;
        if (toml_digits(&q, e, 10) <= 0)
            goto bad;
        is_float = true;
    }
    if (q < e && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < e && (*q == '+' || *q == '-'))
            q++;
        if (toml_digits(&q, e, 10) <= 0)
            goto bad;
        is_float = true;
    }
    if (q != e)
        goto bad;
    {
        const char *ip = s + (*s == '+' || *s == '-');
        if (int_end - ip > 1 && ip[0] == '0')
            goto bad; /* leading zero */
    }
    return is_float ? toml_float(t, s, e) : toml_integer(t, s, e);
bad:
    toml_fail(t, "invalid value");
    return NULL;
}

static bool toml_nd(const char *s, int n)
{
    for (int i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

static int toml_2d(const char *s)
{
    return (s[0] - '0') * 10 + (s[1] - '0');
}

/* HH:MM:SS(.frac)? at s; returns chars consumed or 0. */
static size_t toml_time(const char *s, const char *e)
{
    if (e - s < 8 || !toml_nd(s, 2) || s[2] != ':' || !toml_nd(s + 3, 2) || s[5] != ':' ||
        !toml_nd(s + 6, 2))
        return 0;
    if (toml_2d(s) > 23 || toml_2d(s + 3) > 59 || toml_2d(s + 6) > 60)
        return 0;
    size_t n = 8;
    if (s + n < e && s[n] == '.') {
        size_t f = 0;
        while (s + n + 1 + f < e && s[n + 1 + f] >= '0' && s[n + 1 + f] <= '9')
            f++;
        if (f == 0)
            return 0;
        n += 1 + f;
    }
    return n;
}

/* Local date, local time, local or offset date-time: validated, kept as
 * text. */
static json_t *toml_datetime(toml *t, const char *s, const char *e)
{
    const char *q = s;
    if (e - q >= 10 && toml_nd(q, 4) && q[4] == '-' && toml_nd(q + 5, 2) && q[7] == '-' &&
        toml_nd(q + 8, 2)) {
        int mon = toml_2d(q + 5), day = toml_2d(q + 8);
        if (mon < 1 || mon > 12 || day < 1 || day > 31)
            goto bad;
        q += 10;
        if (q < e) {
            if (*q != 'T' && *q != 't' && *q != ' ')
                goto bad;
            q++;
            size_t n = toml_time(q, e);
            if (n == 0)
                goto bad;
            q += n;
            if (q < e && (*q == 'Z' || *q == 'z')) {
                q++;
            } else if (q < e && (*q == '+' || *q == '-')) {
                if (e - q < 6 || !toml_nd(q + 1, 2) || q[3] != ':' || !toml_nd(q + 4, 2) ||
                    toml_2d(q + 1) > 23 || toml_2d(q + 4) > 59)
                    goto bad;
                q += 6;
            }
        }
    } else {
        size_t n = toml_time(q, e);
        if (n == 0)
            goto bad;
        q += n;
    }
    if (q != e)
        goto bad;
    json_t *j = json_stringn(s, (size_t)(e - s));
    if (!j)
        toml_oom(t);
    return j;
bad:
    toml_fail(t, "invalid date-time");
    return NULL;
}

static bool toml_is_token(char c)
{
    return toml_is_bare(c) || c == '+' || c == '.' || c == ':';
}

/* Booleans, numbers and date-times: one token (a date-time may contain one
 * space between date and time). */
static json_t *toml_scalar(toml *t)
{
    const char *s = t->p;
    while (t->p < t->end && toml_is_token(*t->p))
        t->p++;
    if (t->p - s == 10 && t->p + 1 < t->end && *t->p == ' ' && t->p[1] >= '0' && t->p[1] <= '9' &&
        s[4] == '-') {
        t->p++;
        while (t->p < t->end && toml_is_token(*t->p))
            t->p++;
    }
    const char *e = t->p;
    size_t n = (size_t)(e - s);
    if (n == 0) {
        if (toml_eof(t) || *t->p == '\n' || *t->p == '\r' || *t->p == '#')
            toml_fail(t, "missing value");
        else
            toml_fail_char(t, "unexpected character", *t->p);
        return NULL;
    }
    if (n == 4 && memcmp(s, "true", 4) == 0)
        return json_true();
    if (n == 5 && memcmp(s, "false", 5) == 0)
        return json_false();
    if ((n >= 5 && toml_nd(s, 4) && s[4] == '-') || (n >= 3 && toml_nd(s, 2) && s[2] == ':'))
        return toml_datetime(t, s, e);
    return toml_number(t, s, e);
}

static json_t *toml_array(toml *t)
{
    json_t *a = json_array();
    if (!a) {
        toml_oom(t);
        return NULL;
    }
    t->p++; /* [ */
    for (;;) {
        if (toml_ws_nl(t) != 0)
            goto fail;
        if (toml_eof(t)) {
            toml_fail(t, "unterminated array");
            goto fail;
        }
        if (*t->p == ']') {
            t->p++;
            return a;
        }
        json_t *v = toml_value(t);
        if (!v)
            goto fail;
        if (json_array_append_new(a, v) != 0) {
            toml_oom(t);
            goto fail;
        }
        if (toml_ws_nl(t) != 0)
            goto fail;
        if (!toml_eof(t) && *t->p == ',') {
            t->p++;
            continue;
        }
        if (!toml_eof(t) && *t->p == ']') {
            t->p++;
            return a;
        }
        toml_fail(t, toml_eof(t) ? "unterminated array" : "expected ',' or ']' in array");
        goto fail;
    }
fail:
    json_decref(a);
    return NULL;
}

static json_t *toml_inline_table(toml *t)
{
    json_t *o = json_object();
    if (!o) {
        toml_oom(t);
        return NULL;
    }
    if (toml_set_flags(t, o, 0) != 0)
        goto fail;
    t->p++; /* { */
    toml_ws(t);
    if (!toml_eof(t) && *t->p == '}') {
        t->p++;
        goto done;
    }
    for (;;) {
        toml_ws(t);
        if (toml_eof(t) || *t->p == '\n' || *t->p == '\r') {
            toml_fail(t, "unterminated inline table (newlines are not allowed in one)");
            goto fail;
        }
        if (toml_keyval(t, o) != 0)
            goto fail;
        toml_ws(t);
        if (!toml_eof(t) && *t->p == ',') {
            t->p++;
            continue;
        }
        if (!toml_eof(t) && *t->p == '}') {
            t->p++;
            goto done;
        }
        if (toml_eof(t) || *t->p == '\n' || *t->p == '\r')
            toml_fail(t, "unterminated inline table (newlines are not allowed in one)");
        else
            toml_fail(t, "expected ',' or '}' in inline table");
        goto fail;
    }
done:
    if (toml_seal(t, o) != 0)
        goto fail;
    return o;
fail:
    json_decref(o);
    return NULL;
}

static json_t *toml_value(toml *t)
{
    if (toml_eof(t)) {
        toml_fail(t, "missing value");
        return NULL;
    }
    if (t->depth >= TOML_DEPTH_MAX) {
        toml_fail(t, "values nested too deeply");
        return NULL;
    }
    char c = *t->p;
    json_t *v;
    if (c == '"' || c == '\'') {
        sk_buf b = {0};
        bool ml;
        if (toml_string(t, &b, &ml) != 0) {
            sk_buf_free(&b);
            return NULL;
        }
        v = json_stringn(b.data ? b.data : "", b.len);
        sk_buf_free(&b);
        if (!v)
            toml_oom(t);
        return v;
    }
    t->depth++;
    if (c == '[')
        v = toml_array(t);
    else if (c == '{')
        v = toml_inline_table(t);
    else
        v = toml_scalar(t);
    t->depth--;
    return v;
}

/* The table that all but the last of k's parts lead to from cur, for a
 * dotted key (header false) or a [header]; the missing ones are made
 * (TOML_DOTTED, TOML_IMPLICIT). NULL (failed) where a part names what such a
 * key cannot enter. */
static json_t *toml_descend(toml *t, json_t *cur, const toml_key *k, bool header)
{
    for (size_t i = 0; i + 1 < k->n; i++) {
        json_t *child = json_object_getn(cur, k->part[i], k->len[i]);
        if (!child) {
            cur = toml_new_table(t, cur, k->part[i], k->len[i], header ? TOML_IMPLICIT : TOML_DOTTED);
            if (!cur)
                return NULL;
            continue;
        }
        unsigned f = toml_flags(t, child);
        if (header && json_is_array(child) && (f & TOML_AOT) && json_array_size(child) > 0) {
            cur = json_array_get(child, json_array_size(child) - 1);
        } else if (header ? json_is_object(child) && !(f & TOML_SEALED)
                          : json_is_object(child) && !(f & (TOML_SEALED | TOML_HEADER)) &&
                                (f & (TOML_DOTTED | TOML_IMPLICIT))) {
            cur = child;
        } else {
            toml_fail(t, header ? "'%s' is not a table" : "cannot add keys to '%s' with a dotted key", k->part[i]);
            return NULL;
        }
    }
    return cur;
}

/* key = value into table; dotted keys create (or walk) sub-tables. */
static int toml_keyval(toml *t, json_t *table)
{
    toml_key k;
    int rc = -1;
    if (toml_parse_key(t, &k) != 0)
        goto out;
    if (toml_eof(t) || *t->p != '=') {
        toml_fail(t, "expected '=' after key");
        goto out;
    }
    t->p++;
    toml_ws(t);
    json_t *cur = toml_descend(t, table, &k, false);
    if (!cur)
        goto out;
    const char *last = k.part[k.n - 1];
    if (json_object_getn(cur, last, k.len[k.n - 1])) {
        toml_fail(t, "duplicate key '%s'", last);
        goto out;
    }
    json_t *v = toml_value(t);
    if (!v)
        goto out;
    if (json_object_setn_new(cur, last, k.len[k.n - 1], v) != 0) {
        toml_oom(t);
        goto out;
    }
    rc = 0;
out:
    toml_key_free(&k);
    return rc;
}

/* [a.b.c] or [[a.b.c]]: returns the table later key/values go into. */
static json_t *toml_header(toml *t, json_t *root)
{
    bool aot = toml_starts(t, "[[");
    t->p += aot ? 2 : 1;
    toml_key k;
    json_t *cur = NULL;
    if (toml_parse_key(t, &k) != 0)
        goto out;
    if (!toml_starts(t, aot ? "]]" : "]")) {
        toml_fail(t, aot ? "expected ']]' after table name" : "expected ']' after table name");
        goto out;
    }
    t->p += aot ? 2 : 1;
    json_t *tbl = toml_descend(t, root, &k, true);
    if (!tbl)
        goto out;
    const char *last = k.part[k.n - 1];
    size_t last_len = k.len[k.n - 1];
    json_t *child = json_object_getn(tbl, last, last_len);
    if (aot) {
        if (!child) {
            child = json_array();
            if (!child || json_object_setn_new(tbl, last, last_len, child) != 0) {
                toml_oom(t);
                goto out;
            }
            if (toml_set_flags(t, child, TOML_AOT) != 0)
                goto out;
        } else if (!json_is_array(child) || !(toml_flags(t, child) & TOML_AOT)) {
            toml_fail(t, "'%s' is already defined and is not an array of tables", last);
            goto out;
        }
        json_t *o = json_object();
        if (!o || json_array_append_new(child, o) != 0) {
            toml_oom(t);
            goto out;
        }
        if (toml_set_flags(t, o, TOML_HEADER) != 0)
            goto out;
        cur = o;
    } else if (!child) {
        cur = toml_new_table(t, tbl, last, last_len, TOML_HEADER);
    } else {
        unsigned f = toml_flags(t, child);
        if (!json_is_object(child) || (f & (TOML_HEADER | TOML_DOTTED | TOML_SEALED)) ||
            !(f & TOML_IMPLICIT)) {
            toml_fail(t, "table '%s' defined more than once", last);
            goto out;
        }
        if (toml_set_flags(t, child, f | TOML_HEADER) != 0)
            goto out;
        cur = child;
    }
out:
    toml_key_free(&k);
    return cur;
}

json_t *sk_toml_parse(const char *text, size_t len, char *err, size_t errlen)
{
    if (!text) {
        text = "";
        len = 0;
    }
    toml t = {.p = text, .end = text + len, .line = 1, .err = err, .errlen = errlen};
    if (errlen)
        err[0] = '\0';
    json_t *root = json_object();
    if (!root) {
        toml_oom(&t);
        return NULL;
    }
    if (memchr(text, '\0', len)) {
        /* Report the line of the first NUL. */
        for (const char *q = text; *q; q++)
            if (*q == '\n')
                t.line++;
        toml_fail(&t, "NUL byte in document");
        goto fail;
    }
    if (toml_starts(&t, "\xef\xbb\xbf"))
        t.p += 3;
    json_t *cur = root;
    while (!toml_eof(&t)) {
        toml_ws(&t);
        if (toml_eof(&t))
            break;
        char c = *t.p;
        if (c == '#' || c == '\n' || c == '\r') {
            if (toml_line_end(&t) != 0)
                goto fail;
            continue;
        }
        if (c == '[') {
            cur = toml_header(&t, root);
            if (!cur)
                goto fail;
        } else if (toml_keyval(&t, cur) != 0) {
            goto fail;
        }
        if (toml_line_end(&t) != 0)
            goto fail;
    }
    free(t.meta);
    return root;
fail:
    free(t.meta);
    json_decref(root);
    return NULL;
}
