/* gRPC framing, status and metadata codecs; see grpc_frame.h. */
#include "grpc_frame.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "secrets.h" /* sk_hex_digit */

static const char *const grpc_code_names[] = {
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
    "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
    "UNAUTHENTICATED",
};

const char *sk_grpc_code_name(int code)
{
    if (code < 0 || code > SK_GRPC_UNAUTHENTICATED)
        return NULL;
    return grpc_code_names[code];
}

int sk_grpc_code_from_http(int http_status)
{
    switch (http_status) {
    case 400:
        return SK_GRPC_INTERNAL;
    case 401:
        return SK_GRPC_UNAUTHENTICATED;
    case 403:
        return SK_GRPC_PERMISSION_DENIED;
    case 404:
        return SK_GRPC_UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504:
        return SK_GRPC_UNAVAILABLE;
    default:
        return SK_GRPC_UNKNOWN;
    }
}

/* ---- framing ---- */

int sk_grpc_frame_header(uint8_t hdr[SK_GRPC_HEADER_LEN], size_t len)
{
    if ((uint64_t)len > UINT32_MAX)
        return -1;
    hdr[0] = 0;
    hdr[1] = (uint8_t)(len >> 24);
    hdr[2] = (uint8_t)(len >> 16);
    hdr[3] = (uint8_t)(len >> 8);
    hdr[4] = (uint8_t)len;
    return 0;
}

int sk_grpc_frame_append(sk_buf *out, const void *msg, size_t len)
{
    uint8_t hdr[SK_GRPC_HEADER_LEN];
    if (sk_grpc_frame_header(hdr, len) != 0)
        return -1;
    size_t start = out->len;
    if (sk_buf_append(out, hdr, sizeof hdr) != 0)
        return -1;
    if (len && sk_buf_append(out, msg, len) != 0) {
        out->len = start;
        out->data[start] = '\0';
        return -1;
    }
    return 0;
}

void sk_grpc_deframer_init(sk_grpc_deframer *d, size_t max_len)
{
    memset(d, 0, sizeof *d);
    d->max_len = max_len ? max_len : SK_GRPC_MAX_MESSAGE;
}

void sk_grpc_deframer_free(sk_grpc_deframer *d)
{
    sk_buf_free(&d->msg);
}

static int deframer_fail(sk_grpc_deframer *d, int err)
{
    d->error = err;
    sk_buf_free(&d->msg);
    return err;
}

/* The prefix is complete: check it and start collecting the body. */
static int deframer_header_done(sk_grpc_deframer *d)
{
    if (d->hdr[0] == 1)
        return deframer_fail(d, SK_GRPC_DEFRAME_COMPRESSED);
    if (d->hdr[0] != 0)
        return deframer_fail(d, SK_GRPC_DEFRAME_BAD_FLAG);
    uint32_t n = (uint32_t)d->hdr[1] << 24 | (uint32_t)d->hdr[2] << 16 | (uint32_t)d->hdr[3] << 8 |
                 (uint32_t)d->hdr[4];
    if (n > d->max_len)
        return deframer_fail(d, SK_GRPC_DEFRAME_TOO_LARGE);
    d->need = n;
    return SK_GRPC_DEFRAME_OK;
}

static int deframer_deliver(sk_grpc_deframer *d, const uint8_t *msg, size_t len, sk_grpc_message_cb cb,
                            void *ud)
{
    d->hdr_have = 0;
    d->need = 0;
    d->messages++;
    if (cb(ud, msg, len) != 0)
        return deframer_fail(d, SK_GRPC_DEFRAME_STOPPED);
    return SK_GRPC_DEFRAME_OK;
}

int sk_grpc_deframer_feed(sk_grpc_deframer *d, const void *data, size_t len, sk_grpc_message_cb cb, void *ud)
{
    const uint8_t *p = data, *end = data ? p + len : p;
    if (d->error)
        return d->error;
    while (p < end) {
        if (d->hdr_have < SK_GRPC_HEADER_LEN) {
            size_t take = SK_GRPC_HEADER_LEN - d->hdr_have;
            if (take > (size_t)(end - p))
                take = (size_t)(end - p);
            memcpy(d->hdr + d->hdr_have, p, take);
            d->hdr_have += take;
            p += take;
            if (d->hdr_have < SK_GRPC_HEADER_LEN)
                break;
            int rc = deframer_header_done(d);
            if (rc != SK_GRPC_DEFRAME_OK)
                return rc;
            if (d->need == 0) {
                rc = deframer_deliver(d, p, 0, cb, ud);
                if (rc != SK_GRPC_DEFRAME_OK)
                    return rc;
                continue;
            }
        }
        size_t avail = (size_t)(end - p);
        if (d->msg.len == 0 && avail >= d->need) {
            /* Whole message inside this chunk: no copy. */
            const uint8_t *msg = p;
            p += d->need;
            int rc = deframer_deliver(d, msg, d->need, cb, ud);
            if (rc != SK_GRPC_DEFRAME_OK)
                return rc;
            continue;
        }
        size_t take = d->need - d->msg.len;
        if (take > avail)
            take = avail;
        if (sk_buf_append(&d->msg, p, take) != 0)
            return deframer_fail(d, SK_GRPC_DEFRAME_ENOMEM);
        p += take;
        if (d->msg.len == d->need) {
            int rc = deframer_deliver(d, (const uint8_t *)d->msg.data, d->msg.len, cb, ud);
            if (rc != SK_GRPC_DEFRAME_OK)
                return rc;
            sk_buf_reset(&d->msg);
        }
    }
    return SK_GRPC_DEFRAME_OK;
}

int sk_grpc_deframer_finish(sk_grpc_deframer *d)
{
    if (d->error)
        return d->error;
    if (d->hdr_have != 0)
        return deframer_fail(d, SK_GRPC_DEFRAME_TRUNCATED);
    return SK_GRPC_DEFRAME_OK;
}

const char *sk_grpc_deframe_strerror(int err)
{
    switch (err) {
    case SK_GRPC_DEFRAME_OK:
        return "ok";
    case SK_GRPC_DEFRAME_ENOMEM:
        return "out of memory while reading a gRPC message";
    case SK_GRPC_DEFRAME_COMPRESSED:
        return "compressed gRPC message received, but compression was not negotiated";
    case SK_GRPC_DEFRAME_BAD_FLAG:
        return "invalid gRPC message flag";
    case SK_GRPC_DEFRAME_TOO_LARGE:
        return "gRPC message larger than the maximum allowed";
    case SK_GRPC_DEFRAME_TRUNCATED:
        return "gRPC stream ended in the middle of a message";
    case SK_GRPC_DEFRAME_STOPPED:
        return "gRPC message reading stopped";
    default:
        return "unknown gRPC framing error";
    }
}

int sk_grpc_deframe_code(int err)
{
    switch (err) {
    case SK_GRPC_DEFRAME_OK:
        return SK_GRPC_OK;
    case SK_GRPC_DEFRAME_TOO_LARGE:
        return SK_GRPC_RESOURCE_EXHAUSTED;
    case SK_GRPC_DEFRAME_STOPPED:
        return SK_GRPC_CANCELLED;
    default:
        return SK_GRPC_INTERNAL;
    }
}

/* ---- status ---- */

void sk_grpc_status_init(sk_grpc_status *s)
{
    memset(s, 0, sizeof *s);
    s->grpc_status = -1;
}

void sk_grpc_status_free(sk_grpc_status *s)
{
    free(s->grpc_message);
    free(s->details_bin);
    sk_grpc_status_init(s);
}

static bool status_name_is(const char *name, size_t len, const char *want)
{
    return strlen(want) == len && strncasecmp(name, want, len) == 0;
}

/* Strict decimal; -1 if not all digits or above limit. */
static long status_parse_decimal(const char *v, size_t len, long limit)
{
    if (len == 0 || len > 9)
        return -1;
    long n = 0;
    for (size_t i = 0; i < len; i++) {
        if (v[i] < '0' || v[i] > '9')
            return -1;
        n = n * 10 + (v[i] - '0');
    }
    return n > limit ? -1 : n;
}

static int status_set_copy(char **dst, const char *v, size_t len)
{
    char *c = malloc(len + 1);
    if (!c)
        return -1;
    memcpy(c, v, len);
    c[len] = '\0';
    free(*dst);
    *dst = c;
    return 0;
}

int sk_grpc_status_header(sk_grpc_status *s, const char *name, size_t name_len, const char *value,
                          size_t value_len)
{
    if (status_name_is(name, name_len, "grpc-status")) {
        long code = status_parse_decimal(value, value_len, SK_GRPC_UNAUTHENTICATED);
        s->grpc_status = code < 0 ? SK_GRPC_UNKNOWN : (int)code;
    } else if (status_name_is(name, name_len, "grpc-message")) {
        char *m = sk_grpc_percent_decode(value, value_len);
        if (!m)
            return -1;
        free(s->grpc_message);
        s->grpc_message = m;
    } else if (status_name_is(name, name_len, "grpc-status-details-bin")) {
        return status_set_copy(&s->details_bin, value, value_len);
    } else if (status_name_is(name, name_len, ":status")) {
        long st = status_parse_decimal(value, value_len, 999);
        s->http_status = st < 0 ? 0 : (int)st;
    }
    return 0;
}

static bool status_is_ows(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

int sk_grpc_status_header_line(sk_grpc_status *s, const char *line, size_t len)
{
    while (len && status_is_ows(line[len - 1]))
        len--;
    if (len == 0)
        return 0;
    if (len > 5 && strncmp(line, "HTTP/", 5) == 0) {
        /* "HTTP/2 200" or "HTTP/1.1 200 OK": the code is the second word. */
        const char *sp = memchr(line, ' ', len);
        if (!sp)
            return 0;
        const char *code = sp + 1, *end = line + len;
        const char *ce = code;
        while (ce < end && *ce != ' ')
            ce++;
        long st = status_parse_decimal(code, (size_t)(ce - code), 999);
        s->http_status = st < 0 ? 0 : (int)st;
        return 0;
    }
    const char *colon = memchr(line, ':', len);
    if (!colon || colon == line)
        return 0;
    size_t name_len = (size_t)(colon - line);
    const char *v = colon + 1, *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    return sk_grpc_status_header(s, line, name_len, v, (size_t)(end - v));
}

int sk_grpc_status_code(const sk_grpc_status *s)
{
    if (s->grpc_status >= 0)
        return s->grpc_status;
    if (s->http_status != 0 && s->http_status != 200)
        return sk_grpc_code_from_http(s->http_status);
    return SK_GRPC_UNKNOWN;
}

/* ---- metadata codecs ---- */

char *sk_grpc_percent_decode(const char *s, size_t len)
{
    char *out = malloc(len + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '%' && i + 2 < len) {
            int hi = sk_hex_digit((unsigned char)s[i + 1]), lo = sk_hex_digit((unsigned char)s[i + 2]);
            if (hi >= 0 && lo >= 0 && (hi | lo) != 0) {
                out[o++] = (char)(hi << 4 | lo);
                i += 2;
                continue;
            }
        }
        out[o++] = s[i];
    }
    out[o] = '\0';
    return out;
}

int sk_grpc_percent_encode(sk_buf *out, const char *s, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c <= 0x7e && c != '%') {
            if (sk_buf_append(out, &s[i], 1) != 0)
                return -1;
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            if (sk_buf_append(out, e, 3) != 0)
                return -1;
        }
    }
    return 0;
}

static int b64_value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

int sk_grpc_base64_decode(const char *s, size_t len, sk_buf *out)
{
    size_t start = out->len;
    /* Padding, if any, only at the end and only up to a multiple of 4. */
    size_t pad = 0;
    while (len > 0 && s[len - 1] == '=' && pad < 2) {
        len--;
        pad++;
    }
    if ((pad && (len + pad) % 4 != 0) || len % 4 == 1)
        goto bad;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int v = b64_value(s[i]);
        if (v < 0)
            goto bad;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            uint8_t byte = (uint8_t)(acc >> bits);
            if (sk_buf_append(out, &byte, 1) != 0) {
                errno = ENOMEM;
                goto fail;
            }
        }
    }
    /* Leftover bits must be zero: a canonical encoding. */
    if (bits && (acc & ((1u << bits) - 1)) != 0)
        goto bad;
    return 0;
bad:
    errno = EINVAL;
fail:
    out->len = start;
    if (out->data)
        out->data[start] = '\0';
    return -1;
}

size_t sk_grpc_timeout_format(char out[SK_GRPC_TIMEOUT_LEN], uint64_t ms)
{
    static const struct {
        char unit;
        uint64_t ms;
    } units[] = {{'m', 1}, {'S', 1000}, {'M', 60000}, {'H', 3600000}};
    const uint64_t max = 99999999;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        uint64_t v = ms / units[i].ms + (ms % units[i].ms != 0);
        if (v <= max)
            return (size_t)snprintf(out, SK_GRPC_TIMEOUT_LEN, "%llu%c", (unsigned long long)v, units[i].unit);
    }
    return (size_t)snprintf(out, SK_GRPC_TIMEOUT_LEN, "%lluH", (unsigned long long)max);
}
