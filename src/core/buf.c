/* Growable byte buffer; see buf.h. */
#include "buf.h"
#include "compat.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if SK_HAVE_MREMAP
#include <sys/mman.h>
#include <unistd.h>
#endif

#if SK_HAVE_MREMAP
/* Bulk buffers: the page faults of filling fresh memory were most of the
 * CPU of capturing 100 MiB (25,600 faults at 4 KiB); a mapping aligned to
 * 2 MiB and advised MADV_HUGEPAGE takes 50 where transparent huge pages
 * are enabled ("madvise" or "always"), and growing it by mremap moves page
 * tables instead of bytes. bench/README.md §"The capture floor". */
enum { BUF_HUGE = 2 * 1024 * 1024 };

static size_t buf_page_round(size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (n + page - 1) / page * page;
}

/* A fresh mapping of len bytes (a page multiple) starting on a 2 MiB
 * boundary, or NULL. */
static char *buf_map_aligned(size_t len)
{
    if (len > SIZE_MAX - BUF_HUGE)
        return NULL;
    char *raw = mmap(NULL, len + BUF_HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    char *at = (char *)(((uintptr_t)raw + BUF_HUGE - 1) & ~(uintptr_t)(BUF_HUGE - 1));
    if (at > raw)
        munmap(raw, (size_t)(at - raw));
    munmap(at + len, (size_t)(raw + BUF_HUGE - at));
#ifdef MADV_HUGEPAGE
    (void)madvise(at, len, MADV_HUGEPAGE); /* advice: refused or ignored, the pages are small */
#endif
    return at;
}

/* Grows b into (or within) a mapping of at least cap bytes: in place when
 * the addresses after it are free, else its pages move to a new aligned
 * mapping; a heap buffer is copied over once. 0 or -1 (b unchanged). */
static int buf_map_grow(sk_buf *b, size_t cap)
{
    cap = buf_page_round(cap);
    if (b->mapped && mremap(b->data, b->cap, cap, 0) != MAP_FAILED) {
        b->cap = cap;
        return 0;
    }
    char *d = buf_map_aligned(cap);
    if (!d)
        return -1;
    if (b->mapped) {
        if (mremap(b->data, b->cap, b->cap, MREMAP_MAYMOVE | MREMAP_FIXED, d) == MAP_FAILED) {
            munmap(d, cap);
            return -1;
        }
    } else {
        if (b->len)
            memcpy(d, b->data, b->len + 1);
        free(b->data);
    }
    b->data = d;
    b->cap = cap;
    b->mapped = true;
    return 0;
}
#endif

static int buf_reserve(sk_buf *b, size_t extra, size_t limit, bool bulk)
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
#if SK_HAVE_MREMAP
    if (b->mapped || (bulk && cap >= SK_BUF_MAP_MIN)) {
        if (buf_map_grow(b, cap) == 0)
            return 0;
        if (b->mapped)
            return -1;
        /* no mapping to be had: the heap serves */
    }
#else
    (void)bulk;
#endif
    char *d = realloc(b->data, cap);
    if (!d)
        return -1;
    b->data = d;
    b->cap = cap;
    return 0;
}

int sk_buf_reserve_within(sk_buf *b, size_t extra, size_t limit) { return buf_reserve(b, extra, limit, false); }

int sk_buf_reserve_bulk(sk_buf *b, size_t extra, size_t limit) { return buf_reserve(b, extra, limit, true); }

int sk_buf_reserve(sk_buf *b, size_t extra) { return buf_reserve(b, extra, SIZE_MAX, false); }

void sk_buf_shrink(sk_buf *b)
{
    if (!b->data)
        return;
#if SK_HAVE_MREMAP
    if (b->mapped) {
        size_t keep = buf_page_round(b->len + 1);
        if (keep < b->cap && mremap(b->data, b->cap, keep, 0) != MAP_FAILED)
            b->cap = keep;
        return;
    }
#endif
    if (b->len + 1 < b->cap) {
        char *d = realloc(b->data, b->len + 1); /* glibc: mremap for large blocks, no copy */
        if (d) {
            b->data = d;
            b->cap = b->len + 1;
        }
    }
}

void sk_buf_move(sk_buf *dst, sk_buf *src)
{
    *dst = *src;
    src->data = NULL;
    src->len = src->cap = 0;
    src->mapped = false;
}

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

void sk_buf_free(sk_buf *b)
{
#if SK_HAVE_MREMAP
    if (b->mapped)
        munmap(b->data, b->cap);
    else
#endif
        free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->mapped = false;
}

char *sk_buf_take(sk_buf *b)
{
    char *d;
    if (b->mapped) {
        if (!(d = malloc(b->len + 1)))
            return NULL;
        memcpy(d, b->data, b->len + 1);
        sk_buf_free(b);
        return d;
    }
    d = b->data ? b->data : calloc(1, 1);
    b->data = NULL;
    b->len = b->cap = 0;
    return d;
}
