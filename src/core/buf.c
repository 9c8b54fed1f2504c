/* Growable byte buffer; see buf.h. */
#include "buf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A mapped buffer's capacity is its mapping's length: whole pages. */
static size_t buf_pages(size_t n)
{
    static size_t page;
    if (!page) {
        long p = sysconf(_SC_PAGESIZE);
        page = p > 0 ? (size_t)p : 4096;
    }
    return (n + page - 1) / page * page;
}

/* Capacity `cap` in a mapping: the first time the bytes move from the heap
 * (at most SK_BUF_MAP_MIN of them), after that mremap moves pages, not
 * bytes. glibc would do the same for a large realloc, but only while its
 * mmap threshold is low: freeing one large mapped chunk raises the threshold
 * to that size, and from then on every capture grew in the heap, copying
 * at each doubling into freshly faulted pages. */
static int buf_map_grow(sk_buf *b, size_t cap)
{
    size_t len = buf_pages(cap);
    void *d;
    if (b->mapped)
        d = mremap(b->data, b->cap, len, MREMAP_MAYMOVE);
    else
        d = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (d == MAP_FAILED)
        return -1;
#ifdef MADV_HUGEPAGE
    (void)madvise(d, len, MADV_HUGEPAGE); /* a hint; refused where huge pages are off */
#endif
    if (!b->mapped) {
        if (b->len)
            memcpy(d, b->data, b->len + 1);
        free(b->data);
        b->mapped = true;
    }
    b->data = d;
    b->cap = len;
    return 0;
}

static int buf_grow(sk_buf *b, size_t extra, size_t limit, bool may_map)
{
    if (extra > (size_t)-1 / 2 - b->len)
        return -1;
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    if (cap > limit)
        cap = need > limit ? need : limit;
    if (b->mapped || (may_map && cap > SK_BUF_MAP_MIN))
        return buf_map_grow(b, cap);
    char *d = realloc(b->data, cap);
    if (!d)
        return -1;
    b->data = d;
    b->cap = cap;
    return 0;
}

int sk_buf_reserve_within(sk_buf *b, size_t extra, size_t limit) { return buf_grow(b, extra, limit, true); }

int sk_buf_reserve(sk_buf *b, size_t extra) { return buf_grow(b, extra, SIZE_MAX, false); }

int sk_buf_append(sk_buf *b, const void *data, size_t len)
{
    if (sk_buf_reserve(b, len) != 0)
        return -1;
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

int sk_buf_appendf(sk_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || sk_buf_reserve(b, (size_t)n) != 0)
        return -1;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

void sk_buf_reset(sk_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

void sk_buf_release(char *data, size_t map_len)
{
    if (map_len)
        munmap(data, map_len);
    else
        free(data);
}

void sk_buf_free(sk_buf *b)
{
    sk_buf_release(b->data, b->mapped ? b->cap : 0);
    b->data = NULL;
    b->len = b->cap = 0;
    b->mapped = false;
}

char *sk_buf_take_raw(sk_buf *b, size_t *map_len)
{
    char *d = b->data;
    *map_len = b->mapped ? b->cap : 0;
    b->data = NULL;
    b->len = b->cap = 0;
    b->mapped = false;
    return d;
}

char *sk_buf_shrink_raw(char *data, size_t len, size_t *map_len)
{
    if (!data)
        return NULL;
    if (*map_len) {
        /* In place, whole pages: the pages past the end go back. */
        size_t keep = buf_pages(len + 1);
        if (keep < *map_len && munmap(data + keep, *map_len - keep) == 0)
            *map_len = keep;
        return data;
    }
    char *shrunk = realloc(data, len + 1);
    return shrunk ? shrunk : data;
}

char *sk_buf_take(sk_buf *b)
{
    if (b->mapped) {
        char *d = malloc(b->len + 1);
        if (d) {
            memcpy(d, b->data, b->len);
            d[b->len] = '\0';
        }
        sk_buf_free(b);
        return d;
    }
    char *d = b->data ? b->data : calloc(1, 1);
    b->data = NULL;
    b->len = b->cap = 0;
    return d;
}
