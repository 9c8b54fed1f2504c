/* sk_buf (buf.h), above all the bulk buffers that captured output lives
 * in: past SK_BUF_MAP_MIN they move into their own 2 MiB aligned mapping,
 * grow by mremap (in place, or moved when something sits right after
 * them), and every other function must keep working on them: append,
 * reset, shrink, move, take, free (the ASan and valgrind runs check the
 * frees). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "buf.h"
#include "compat.h"

#include "tap.h"

/* Byte i of the pattern the tests fill with: position-dependent, so a
 * move that lost or shifted a page shows. */
static char pattern(size_t i) { return (char)('a' + (i * 7 + i / 4096) % 26); }

/* Appends n pattern bytes through sk_buf_reserve_bulk and in-place writes,
 * as the capture path does. 0 or -1. */
static int fill_bulk(sk_buf *b, size_t n, size_t limit)
{
    while (n > 0) {
        size_t step = n < 65536 ? n : 65536;
        if (sk_buf_reserve_bulk(b, step, limit) != 0)
            return -1;
        for (size_t i = 0; i < step; i++)
            b->data[b->len + i] = pattern(b->len + i);
        b->len += step;
        b->data[b->len] = '\0';
        n -= step;
    }
    return 0;
}

static int holds_pattern(const char *d, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (d[i] != pattern(i))
            return 0;
    return d[len] == '\0';
}

static void test_small_stays_heap(void)
{
    sk_buf b = { 0 };
    tap(fill_bulk(&b, 100000, SIZE_MAX) == 0 && !b.mapped, "bulk: below SK_BUF_MAP_MIN the heap serves");
    tap(holds_pattern(b.data, b.len), "bulk: heap bytes intact");
    sk_buf_free(&b);
    tap(b.data == NULL && b.len == 0 && b.cap == 0 && !b.mapped, "free: empties");
}

static void test_mapped_growth(void)
{
    sk_buf b = { 0 };
    size_t total = 3 * (size_t)SK_BUF_MAP_MIN + 12345;
    tap(fill_bulk(&b, total, SIZE_MAX) == 0, "bulk: grows to %zu bytes", total);
    tap(b.mapped == (SK_HAVE_MREMAP != 0), "bulk: past SK_BUF_MAP_MIN the buffer is a mapping (where mremap is)");
    if (b.mapped)
        tap(((uintptr_t)b.data & (2 * 1024 * 1024 - 1)) == 0, "bulk: the mapping starts on a 2 MiB boundary");
    tap(holds_pattern(b.data, b.len) && b.len == total, "bulk: bytes intact across the copy to the mapping and growth");

#if SK_HAVE_MREMAP
    /* Something right after the mapping: growth cannot be in place, the
     * pages must move to a new mapping. */
    char *end = b.data + b.cap;
    void *blocker = mmap(end, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (blocker == end) {
        char *before = b.data;
        size_t more = b.cap - b.len + 1; /* just past the capacity */
        tap(fill_bulk(&b, more, SIZE_MAX) == 0 && b.data != before, "bulk: blocked in place, the mapping moves");
        tap(((uintptr_t)b.data & (2 * 1024 * 1024 - 1)) == 0, "bulk: the moved mapping is 2 MiB aligned");
        tap(holds_pattern(b.data, b.len) && b.len == total + more, "bulk: bytes intact after the move");
        munmap(blocker, 4096);
    } else {
        tap(1, "# SKIP could not place a blocker after the mapping");
        if (blocker != MAP_FAILED)
            munmap(blocker, 4096);
    }
#endif

    /* The generic functions on a mapped buffer. */
    size_t len = b.len;
    tap(sk_buf_append(&b, "xyz", 3) == 0 && b.len == len + 3 && memcmp(b.data + len, "xyz", 4) == 0,
        "append: works on a bulk buffer, NUL-terminated");
    b.len = len;
    b.data[len] = '\0';
    sk_buf_shrink(&b);
    tap(b.cap >= b.len + 1 && b.cap - (b.len + 1) < (size_t)sysconf(_SC_PAGESIZE) + (b.mapped ? 0 : 1),
        "shrink: the unused tail is given back (%zu of %zu)", b.cap, b.len + 1);
    tap(holds_pattern(b.data, b.len), "shrink: bytes intact");

    sk_buf moved;
    bool was_mapped = b.mapped;
    sk_buf_move(&moved, &b);
    tap(b.data == NULL && b.len == 0 && b.cap == 0 && !b.mapped, "move: the source is empty");
    tap(moved.mapped == was_mapped && moved.len == len && holds_pattern(moved.data, moved.len),
        "move: the destination has the bytes");

    char *copy = sk_buf_take(&moved);
    tap(copy && holds_pattern(copy, len), "take: a heap copy of a mapped buffer, NUL-terminated");
    tap(moved.data == NULL && moved.len == 0 && !moved.mapped, "take: the buffer is empty after");
    free(copy);
}

static void test_limit_and_reset(void)
{
    sk_buf b = { 0 };
    size_t limit = 6 * 1024 * 1024 + 1; /* max_output_bytes + 1, as sandbox.c passes */
    tap(fill_bulk(&b, limit - 1, limit) == 0, "limit: fills up to the limit");
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    tap(b.cap >= limit && b.cap <= (limit + page - 1) / page * page,
        "limit: the capacity stops at the limit, not the next doubling (%zu)", b.cap);
    bool mapped = b.mapped;
    sk_buf_reset(&b);
    tap(b.len == 0 && b.data && b.data[0] == '\0' && b.mapped == mapped, "reset: empty, keeps the allocation");
    tap(fill_bulk(&b, 1000, limit) == 0 && holds_pattern(b.data, b.len), "reset: refills from the start");
    sk_buf_free(&b);
}

int main(void)
{
    test_small_stays_heap();
    test_mapped_growth();
    test_limit_and_reset();
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}
