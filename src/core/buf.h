/* A growable byte buffer (output accumulation, request bodies). */
#ifndef SK_BUF_H
#define SK_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sk_buf {
    char *data; /* NUL-terminated when len > 0 */
    size_t len, cap;
    bool mapped; /* data is an anonymous mapping of cap bytes, not heap */
} sk_buf;

int sk_buf_append(sk_buf *b, const void *data, size_t len); /* 0 or -1 (ENOMEM) */
/* Room for at least `extra` more bytes at b->data + b->len; 0 or -1. */
int sk_buf_reserve(sk_buf *b, size_t extra);
/* The same, growing by doubling but never past `limit` bytes of capacity
 * unless more is needed, then exactly what is needed. */
int sk_buf_reserve_within(sk_buf *b, size_t extra, size_t limit);
/* The same for bulk data (captured output): past SK_BUF_MAP_MIN bytes the
 * buffer moves into its own anonymous mapping, aligned for and advised to
 * use huge pages and grown by mremap without copying (Linux; elsewhere, or
 * when the mapping cannot be had, the heap as above). A mapped buffer
 * stays mapped: every function here handles both. */
int sk_buf_reserve_bulk(sk_buf *b, size_t extra, size_t limit);
enum { SK_BUF_MAP_MIN = 4 * 1024 * 1024 };
/* Gives back the unused tail of the allocation (none for a mapping's last
 * page); no-op on failure. */
void sk_buf_shrink(sk_buf *b);
int sk_buf_appendf(sk_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sk_buf_reset(sk_buf *b);
void sk_buf_free(sk_buf *b);
/* Hands the contents to the caller (NUL-terminated, never NULL, for
 * free()) and empties b; a mapped buffer is copied to the heap first (NULL
 * when that fails: b is left as it was). Keep a mapped buffer whole with
 * sk_buf_move instead. */
char *sk_buf_take(sk_buf *b);
/* Moves the buffer (heap or mapping) to *dst and empties src. */
void sk_buf_move(sk_buf *dst, sk_buf *src);

#endif
