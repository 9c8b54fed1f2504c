/* Protobuf wire primitives: a writer appending to an sk_buf and a
 * bounds-checked reader. No schema lives here; modal_msg.c builds the
 * messages from these.
 *
 * Why hand-written instead of protobuf-c: the C client encodes about fifteen
 * small requests and decodes about fifteen small responses. With protobuf-c
 * we would need protoc-c at build time, generated files that depend on the
 * reference server's .proto, and its proto3 presence handling for `optional`
 * and oneof members (which docs/protocols/modal.md §2.1 makes critical) hidden in generated
 * code. A hand-written codec keeps presence explicit at every call site
 * (SK_PB_IMPLICIT / SK_PB_EXPLICIT), skips unknown fields, and is small
 * enough to fuzz whole.
 *
 * Encoding rules (docs/protocols/modal.md §2.1): int32/int64 are plain two's-complement
 * varints, so negative values take 10 bytes (no zigzag; no field used by the
 * client is sint*). Implicit-presence fields are omitted when default;
 * explicit ones are always written. Sub-messages are always written when
 * begun. */
#ifndef SK_PB_H
#define SK_PB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "../../buf.h"

typedef enum sk_pb_wire {
    SK_PB_VARINT = 0,
    SK_PB_I64 = 1,
    SK_PB_LEN = 2,
    SK_PB_SGROUP = 3, /* only ever seen while skipping unknown fields */
    SK_PB_EGROUP = 4,
    SK_PB_I32 = 5
} sk_pb_wire;

/* proto3 presence: IMPLICIT fields are skipped when they hold the default
 * (0, false, "", empty bytes); EXPLICIT fields (`optional`, oneof members)
 * are written whatever the value. */
typedef enum sk_pb_presence { SK_PB_IMPLICIT = 0, SK_PB_EXPLICIT = 1 } sk_pb_presence;

#define SK_PB_MAX_FIELD 536870911u /* 2^29 - 1 */
#define SK_PB_VARINT_MAX 10

/* ---- writer: every function returns 0, or -1 on ENOMEM ---- */

/* Encodes v into out (at least SK_PB_VARINT_MAX bytes); returns the length. */
size_t sk_pb_varint_encode(uint8_t *out, uint64_t v);
size_t sk_pb_varint_size(uint64_t v);

int sk_pb_put_raw_varint(sk_buf *b, uint64_t v);
int sk_pb_put_tag(sk_buf *b, uint32_t field, sk_pb_wire wire);

int sk_pb_put_uint64(sk_buf *b, uint32_t field, uint64_t v, sk_pb_presence p);
/* uint32 and enums go through sk_pb_put_uint64 / sk_pb_put_int32. */
int sk_pb_put_int64(sk_buf *b, uint32_t field, int64_t v, sk_pb_presence p);
/* Sign-extended to 64 bits first, as protobuf requires. */
int sk_pb_put_int32(sk_buf *b, uint32_t field, int32_t v, sk_pb_presence p);
int sk_pb_put_bool(sk_buf *b, uint32_t field, bool v, sk_pb_presence p);
int sk_pb_put_fixed32(sk_buf *b, uint32_t field, uint32_t v, sk_pb_presence p);
int sk_pb_put_fixed64(sk_buf *b, uint32_t field, uint64_t v, sk_pb_presence p);
/* The default tested for IMPLICIT is +0.0 only (-0.0 is written, as protoc
 * does). */
int sk_pb_put_float(sk_buf *b, uint32_t field, float v, sk_pb_presence p);
int sk_pb_put_double(sk_buf *b, uint32_t field, double v, sk_pb_presence p);
/* data may be NULL when len is 0. IMPLICIT skips len 0. */
int sk_pb_put_bytes(sk_buf *b, uint32_t field, const void *data, size_t len, sk_pb_presence p);
/* NUL-terminated. NULL is never written (it means "unset"); "" is written
 * only when EXPLICIT. */
int sk_pb_put_string(sk_buf *b, uint32_t field, const char *s, sk_pb_presence p);
/* Packed repeated varints (one LEN field); nothing when n is 0. int32/int64
 * elements are passed sign-extended: (uint64_t)(int64_t)x. */
int sk_pb_put_packed_varints(sk_buf *b, uint32_t field, const uint64_t *v, size_t n);

/* Sub-message: begin writes the tag and remembers where the body starts;
 * end inserts the body length there. Nests; a begun message is always
 * written, even when empty. */
int sk_pb_begin(sk_buf *b, uint32_t field, size_t *mark);
int sk_pb_end(sk_buf *b, size_t mark);

/* ---- reader ---- */

typedef struct sk_pb_reader {
    const uint8_t *pos, *end;
    bool failed; /* sticky: every later call returns -1 */
} sk_pb_reader;

typedef struct sk_pb_field {
    uint32_t num;
    sk_pb_wire wire;     /* VARINT, I64, LEN, I32, or SGROUP (skipped group) */
    uint64_t v;          /* VARINT, I64 and I32 values */
    const uint8_t *data; /* LEN payload, or a group's body; points into the input */
    size_t len;
} sk_pb_field;

void sk_pb_reader_init(sk_pb_reader *r, const void *data, size_t len);
/* Reads the next field. Returns 1 with *f filled, 0 at the clean end of the
 * input, -1 if the input is malformed: truncated varint or value, varint
 * longer than 10 bytes or overflowing 64 bits, field number 0 or above
 * 2^29-1, wire type 6/7, a stray end-group, a length past the end, groups
 * nested deeper than 32. Never reads outside [data, data+len). A failure
 * is sticky. */
int sk_pb_next(sk_pb_reader *r, sk_pb_field *f);
/* One varint from [*p, end); advances *p. 0, or -1 if malformed. */
int sk_pb_read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v);
/* Next element of a packed repeated varint field (init the reader over
 * f->data/f->len). 1, 0 at end, -1 malformed. */
int sk_pb_next_packed_varint(sk_pb_reader *r, uint64_t *v);

/* Value views; the caller checks f->wire first (a field with an unexpected
 * wire type is treated as unknown and skipped, as ts-proto does). */
int32_t sk_pb_as_int32(const sk_pb_field *f); /* low 32 bits, as protobuf */
int64_t sk_pb_as_int64(const sk_pb_field *f);
uint32_t sk_pb_as_uint32(const sk_pb_field *f);
bool sk_pb_as_bool(const sk_pb_field *f);
float sk_pb_as_float(const sk_pb_field *f);   /* I32 */
double sk_pb_as_double(const sk_pb_field *f); /* I64 */

/* Copies a LEN field into a fresh NUL-terminated string, freeing *out first
 * (the last occurrence of a singular field wins). -1 with errno EBADMSG if
 * the value contains a NUL byte (it could not round-trip through a C
 * string), or ENOMEM. */
int sk_pb_dup_string(const sk_pb_field *f, char **out);
/* Copies a LEN field into fresh memory (NUL-terminated for convenience, the
 * terminator not counted in *len), freeing *out first. -1 on ENOMEM. */
int sk_pb_dup_bytes(const sk_pb_field *f, uint8_t **out, size_t *len);

#endif
