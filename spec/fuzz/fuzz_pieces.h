/* For the fuzzers that check "fed in pieces, the same as fed whole": the
 * input again in pieces of 1..max bytes, their sizes drawn from a seed of
 * its first bytes (so one input always splits the same way), each piece an
 * exact-size copy so that ASan sees any read past it. */
#ifndef SK_FUZZ_PIECES_H
#define SK_FUZZ_PIECES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct fuzz_pieces {
    const uint8_t *data;
    size_t size, off, max;
    uint32_t seed;
    uint8_t *piece; /* the current piece (freed by the next call), n bytes */
    size_t n;
} fuzz_pieces;

static fuzz_pieces fuzz_pieces_of(const uint8_t *data, size_t size, size_t max)
{
    fuzz_pieces p = { .data = data, .size = size, .max = max, .seed = 2166136261u };
    for (size_t i = 0; i < size && i < 8; i++)
        p.seed = (p.seed ^ data[i]) * 16777619u;
    return p;
}

/* Moves to the next piece; false (all freed) after the last. */
static bool fuzz_pieces_next(fuzz_pieces *p)
{
    free(p->piece);
    p->piece = NULL;
    if (p->off >= p->size)
        return false;
    p->seed = p->seed * 1103515245u + 12345u;
    p->n = 1 + (p->seed >> 16) % p->max;
    if (p->n > p->size - p->off)
        p->n = p->size - p->off;
    p->piece = malloc(p->n);
    memcpy(p->piece, p->data + p->off, p->n);
    p->off += p->n;
    return true;
}

/* Frees the last piece when the caller stops early. */
static void fuzz_pieces_end(fuzz_pieces *p)
{
    free(p->piece);
    p->piece = NULL;
}

#endif
