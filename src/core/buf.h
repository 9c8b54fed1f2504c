/* A growable byte buffer (output accumulation, request bodies). */
#ifndef SK_BUF_H
#define SK_BUF_H

#include <stddef.h>

typedef struct sk_buf {
    char *data; /* NUL-terminated when len > 0 */
    size_t len, cap;
} sk_buf;

int sk_buf_append(sk_buf *b, const void *data, size_t len); /* 0 or -1 (ENOMEM) */
/* Room for at least `extra` more bytes at b->data + b->len; 0 or -1. */
int sk_buf_reserve(sk_buf *b, size_t extra);
/* The same, growing by doubling but never past `limit` bytes of capacity
 * unless more is needed, then exactly what is needed. */
int sk_buf_reserve_within(sk_buf *b, size_t extra, size_t limit);
int sk_buf_appendf(sk_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sk_buf_reset(sk_buf *b);
void sk_buf_free(sk_buf *b);
/* Hands the contents to the caller (NUL-terminated, never NULL) and empties b. */
char *sk_buf_take(sk_buf *b);

#endif
