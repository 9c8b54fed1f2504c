/* Protobuf wire primitives; see pb.h for the rules and why hand-written. */
#include "pb.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define PB_GROUP_DEPTH_MAX 32

/* ---- writer ---- */

size_t sk_pb_varint_encode(uint8_t *out, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

size_t sk_pb_varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

int sk_pb_put_raw_varint(sk_buf *b, uint64_t v)
{
    uint8_t tmp[SK_PB_VARINT_MAX];
    return sk_buf_append(b, tmp, sk_pb_varint_encode(tmp, v));
}

int sk_pb_put_tag(sk_buf *b, uint32_t field, sk_pb_wire wire)
{
    return sk_pb_put_raw_varint(b, ((uint64_t)field << 3) | (uint64_t)wire);
}

static int pb_put_varint_field(sk_buf *b, uint32_t field, uint64_t v)
{
    if (sk_pb_put_tag(b, field, SK_PB_VARINT) != 0)
        return -1;
    return sk_pb_put_raw_varint(b, v);
}

int sk_pb_put_uint64(sk_buf *b, uint32_t field, uint64_t v, sk_pb_presence p)
{
    if (p == SK_PB_IMPLICIT && v == 0)
        return 0;
    return pb_put_varint_field(b, field, v);
}

int sk_pb_put_int64(sk_buf *b, uint32_t field, int64_t v, sk_pb_presence p)
{
    return sk_pb_put_uint64(b, field, (uint64_t)v, p);
}

int sk_pb_put_int32(sk_buf *b, uint32_t field, int32_t v, sk_pb_presence p)
{
    return sk_pb_put_uint64(b, field, (uint64_t)(int64_t)v, p);
}

int sk_pb_put_bool(sk_buf *b, uint32_t field, bool v, sk_pb_presence p)
{
    return sk_pb_put_uint64(b, field, v ? 1 : 0, p);
}

static int pb_put_le(sk_buf *b, uint64_t v, size_t n)
{
    uint8_t tmp[8];
    for (size_t i = 0; i < n; i++)
        tmp[i] = (uint8_t)(v >> (8 * i));
    return sk_buf_append(b, tmp, n);
}

/* A fixed-width field: n bytes little-endian, wire type I32 or I64. */
static int pb_put_fixed(sk_buf *b, uint32_t field, uint64_t v, sk_pb_presence p, sk_pb_wire wire, size_t n)
{
    if (p == SK_PB_IMPLICIT && v == 0)
        return 0;
    if (sk_pb_put_tag(b, field, wire) != 0)
        return -1;
    return pb_put_le(b, v, n);
}

int sk_pb_put_fixed32(sk_buf *b, uint32_t field, uint32_t v, sk_pb_presence p)
{
    return pb_put_fixed(b, field, v, p, SK_PB_I32, 4);
}

int sk_pb_put_fixed64(sk_buf *b, uint32_t field, uint64_t v, sk_pb_presence p)
{
    return pb_put_fixed(b, field, v, p, SK_PB_I64, 8);
}

int sk_pb_put_float(sk_buf *b, uint32_t field, float v, sk_pb_presence p)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    return sk_pb_put_fixed32(b, field, bits, p);
}

int sk_pb_put_double(sk_buf *b, uint32_t field, double v, sk_pb_presence p)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return sk_pb_put_fixed64(b, field, bits, p);
}

int sk_pb_put_bytes(sk_buf *b, uint32_t field, const void *data, size_t len, sk_pb_presence p)
{
    if (p == SK_PB_IMPLICIT && len == 0)
        return 0;
    if (sk_pb_put_tag(b, field, SK_PB_LEN) != 0 || sk_pb_put_raw_varint(b, len) != 0)
        return -1;
    return len ? sk_buf_append(b, data, len) : 0;
}

int sk_pb_put_string(sk_buf *b, uint32_t field, const char *s, sk_pb_presence p)
{
    if (!s)
        return 0;
    return sk_pb_put_bytes(b, field, s, strlen(s), p);
}

int sk_pb_put_packed_varints(sk_buf *b, uint32_t field, const uint64_t *v, size_t n)
{
    if (n == 0)
        return 0;
    size_t mark;
    if (sk_pb_begin(b, field, &mark) != 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (sk_pb_put_raw_varint(b, v[i]) != 0)
            return -1;
    return sk_pb_end(b, mark);
}

int sk_pb_begin(sk_buf *b, uint32_t field, size_t *mark)
{
    if (sk_pb_put_tag(b, field, SK_PB_LEN) != 0)
        return -1;
    *mark = b->len;
    return 0;
}

/* The body was written right after the tag; shift it to make room for its
 * length varint, which is only known now. */
int sk_pb_end(sk_buf *b, size_t mark)
{
    size_t body = b->len - mark;
    uint8_t tmp[SK_PB_VARINT_MAX];
    size_t n = sk_pb_varint_encode(tmp, body);
    if (sk_buf_append(b, tmp, n) != 0)
        return -1;
    memmove(b->data + mark + n, b->data + mark, body);
    memcpy(b->data + mark, tmp, n);
    return 0;
}

/* ---- reader ---- */

void sk_pb_reader_init(sk_pb_reader *r, const void *data, size_t len)
{
    r->pos = data;
    r->end = data ? r->pos + len : r->pos; /* no arithmetic on NULL */
    r->failed = false;
}

int sk_pb_read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    const uint8_t *q = *p;
    uint64_t out = 0;
    for (unsigned i = 0; i < SK_PB_VARINT_MAX; i++) {
        if (q >= end)
            return -1;
        uint8_t c = *q++;
        /* The 10th byte holds bit 63 only; anything more overflows. */
        if (i == SK_PB_VARINT_MAX - 1 && c > 1)
            return -1;
        out |= (uint64_t)(c & 0x7f) << (7 * i);
        if (!(c & 0x80)) {
            *p = q;
            *v = out;
            return 0;
        }
    }
    return -1;
}

static uint64_t pb_le(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static int pb_read_tag(sk_pb_reader *r, uint32_t *num, unsigned *wire)
{
    uint64_t tag;
    if (sk_pb_read_varint(&r->pos, r->end, &tag) != 0)
        return -1;
    uint64_t n = tag >> 3;
    if (n == 0 || n > SK_PB_MAX_FIELD)
        return -1;
    *num = (uint32_t)n;
    *wire = (unsigned)(tag & 7);
    return 0;
}

/* Reads one value of the given wire type (the tag already consumed). A
 * group is skipped up to its matching end tag. */
static int pb_read_value(sk_pb_reader *r, uint32_t num, unsigned wire, sk_pb_field *f, int depth)
{
    size_t left = (size_t)(r->end - r->pos);
    f->num = num;
    f->wire = (sk_pb_wire)wire;
    f->v = 0;
    f->data = NULL;
    f->len = 0;
    switch (wire) {
    case SK_PB_VARINT:
        return sk_pb_read_varint(&r->pos, r->end, &f->v);
    case SK_PB_I64:
        if (left < 8)
            return -1;
        f->v = pb_le(r->pos, 8);
        r->pos += 8;
        return 0;
    case SK_PB_I32:
        if (left < 4)
            return -1;
        f->v = pb_le(r->pos, 4);
        r->pos += 4;
        return 0;
    case SK_PB_LEN: {
        uint64_t n;
        if (sk_pb_read_varint(&r->pos, r->end, &n) != 0)
            return -1;
        if (n > (uint64_t)(r->end - r->pos))
            return -1;
        f->data = r->pos;
        f->len = (size_t)n;
        r->pos += n;
        return 0;
    }
    case SK_PB_SGROUP: {
        if (depth >= PB_GROUP_DEPTH_MAX)
            return -1;
        const uint8_t *start = r->pos;
        for (;;) {
            const uint8_t *before = r->pos;
            uint32_t n2;
            unsigned w2;
            if (r->pos >= r->end || pb_read_tag(r, &n2, &w2) != 0)
                return -1;
            if (w2 == SK_PB_EGROUP) {
                if (n2 != num)
                    return -1;
                f->data = start;
                f->len = (size_t)(before - start);
                return 0;
            }
            sk_pb_field inner;
            if (pb_read_value(r, n2, w2, &inner, depth + 1) != 0)
                return -1;
        }
    }
    default: /* stray end-group, or wire types 6 and 7 */
        return -1;
    }
}

int sk_pb_next(sk_pb_reader *r, sk_pb_field *f)
{
    if (r->failed)
        return -1;
    if (r->pos >= r->end)
        return 0;
    uint32_t num;
    unsigned wire;
    if (pb_read_tag(r, &num, &wire) != 0 || pb_read_value(r, num, wire, f, 0) != 0) {
        r->failed = true; /* a retry must not resume mid-field */
        return -1;
    }
    return 1;
}

int sk_pb_next_packed_varint(sk_pb_reader *r, uint64_t *v)
{
    if (r->failed)
        return -1;
    if (r->pos >= r->end)
        return 0;
    if (sk_pb_read_varint(&r->pos, r->end, v) != 0) {
        r->failed = true;
        return -1;
    }
    return 1;
}

int32_t sk_pb_as_int32(const sk_pb_field *f)
{
    return (int32_t)(uint32_t)f->v;
}

int64_t sk_pb_as_int64(const sk_pb_field *f)
{
    return (int64_t)f->v;
}

uint32_t sk_pb_as_uint32(const sk_pb_field *f)
{
    return (uint32_t)f->v;
}

bool sk_pb_as_bool(const sk_pb_field *f)
{
    return f->v != 0;
}

float sk_pb_as_float(const sk_pb_field *f)
{
    uint32_t bits = (uint32_t)f->v;
    float v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

double sk_pb_as_double(const sk_pb_field *f)
{
    double v;
    memcpy(&v, &f->v, sizeof v);
    return v;
}

int sk_pb_dup_bytes(const sk_pb_field *f, uint8_t **out, size_t *len)
{
    uint8_t *p = malloc(f->len + 1);
    if (!p) {
        errno = ENOMEM;
        return -1;
    }
    if (f->len)
        memcpy(p, f->data, f->len);
    p[f->len] = 0;
    free(*out);
    *out = p;
    *len = f->len;
    return 0;
}

int sk_pb_dup_string(const sk_pb_field *f, char **out)
{
    if (f->len && memchr(f->data, 0, f->len)) {
        errno = EBADMSG;
        return -1;
    }
    char *p = malloc(f->len + 1);
    if (!p) {
        errno = ENOMEM;
        return -1;
    }
    if (f->len)
        memcpy(p, f->data, f->len);
    p[f->len] = '\0';
    free(*out);
    *out = p;
    return 0;
}
