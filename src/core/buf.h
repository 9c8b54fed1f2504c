/* A growable byte buffer (output accumulation, request bodies). */
#ifndef SK_BUF_H
#define SK_BUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sk_buf {
    char *data; /* NUL-terminated when len > 0 */
    size_t len, cap;
    bool mapped; /* data is an anonymous mapping, see sk_buf_reserve_within */
} sk_buf;

int sk_buf_append(sk_buf *b, const void *data, size_t len); /* 0 or -1 (ENOMEM) */
/* Room for at least `extra` more bytes at b->data + b->len; 0 or -1. */
int sk_buf_reserve(sk_buf *b, size_t extra);
/* The same, growing by doubling but never past `limit` bytes of capacity
 * unless more is needed, then exactly what is needed. For bulk output
 * (captures): past SK_BUF_MAP_MIN the buffer moves into an anonymous
 * mapping that later growth extends with mremap (no copy) and that asks for
 * transparent huge pages (a 4 KiB page fault per 4 KiB written cost more
 * than the copy itself); docs/capture.md §"Memory". */
int sk_buf_reserve_within(sk_buf *b, size_t extra, size_t limit);
#define SK_BUF_MAP_MIN ((size_t)1 << 20)
int sk_buf_appendf(sk_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sk_buf_reset(sk_buf *b);
void sk_buf_free(sk_buf *b);
/* Hands the contents to the caller (NUL-terminated, never NULL but out of
 * memory) and empties b; free() it. A mapped buffer is copied first. */
char *sk_buf_take(sk_buf *b);
/* Hands the contents over as they are and empties b (NULL when b had no
 * allocation): *map_len is the mapping's length for a mapped buffer, else
 * 0. Release with sk_buf_release. */
char *sk_buf_take_raw(sk_buf *b, size_t *map_len);
/* Returns unused capacity past `len` bytes (plus the NUL) of what
 * sk_buf_take_raw handed over; may move it. */
char *sk_buf_shrink_raw(char *data, size_t len, size_t *map_len);
void sk_buf_release(char *data, size_t map_len);

#endif
