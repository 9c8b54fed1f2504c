/* libFuzzer target: the Engine API stream demultiplexer
 * (src/core/providers/docker/docker_frame.c). Properties checked beyond "no
 * crash, no leak, no over-read":
 *  - feeding the input in pseudo-random pieces delivers exactly what feeding
 *    it whole delivers (stream by stream, byte for byte), with the same
 *    final status and the same boundary;
 *  - nothing is delivered that was not in the input: the payload bytes
 *    delivered never exceed the input less 8 bytes per header read;
 *  - re-framing what was delivered gives a stream that demultiplexes to the
 *    same bytes (the header writer and the reader agree).
 * Build: make fuzz FUZZERS=docker_frame (mk/fuzz.mk). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "fuzz_pieces.h"
#include "providers/docker/docker_frame.h"

typedef struct fuzz_log {
    sk_buf b;       /* each piece: stream byte then its bytes, pieces of one stream merged */
    sk_buf per[4];  /* every stream's bytes */
    size_t payload;
    int stop_after; /* stop when this many pieces were seen (-1: never) */
    int pieces;
} fuzz_log;

static int fuzz_on_piece(void *ud, int stream, const char *data, size_t len)
{
    fuzz_log *l = ud;
    if (stream < 0 || stream > 3 || len == 0)
        abort();
    sk_buf_append(&l->per[stream], data, len);
    l->payload += len;
    l->pieces++;
    return l->stop_after >= 0 && l->pieces >= l->stop_after;
}

static void fuzz_log_free(fuzz_log *l)
{
    sk_buf_free(&l->b);
    for (int i = 0; i < 4; i++)
        sk_buf_free(&l->per[i]);
}

static bool fuzz_same(const fuzz_log *a, const fuzz_log *b)
{
    for (int i = 0; i < 4; i++)
        if (a->per[i].len != b->per[i].len ||
            (a->per[i].len && memcmp(a->per[i].data, b->per[i].data, a->per[i].len) != 0))
            return false;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dk_demux whole, parts;
    fuzz_log lw = { .stop_after = -1 }, lp = { .stop_after = -1 };
    sk_dk_demux_init(&whole);
    sk_dk_demux_init(&parts);
    dk_demux_status sw = sk_dk_demux_feed(&whole, (const char *)data, size, fuzz_on_piece, &lw);

    fuzz_pieces ps = fuzz_pieces_of(data, size, 13);
    dk_demux_status sp = DK_DEMUX_OK;
    while (sp == DK_DEMUX_OK && fuzz_pieces_next(&ps))
        sp = sk_dk_demux_feed(&parts, (const char *)ps.piece, ps.n, fuzz_on_piece, &lp);
    fuzz_pieces_end(&ps);
    if (sw != sp || !fuzz_same(&lw, &lp))
        abort();
    if (sk_dk_demux_at_boundary(&whole) != sk_dk_demux_at_boundary(&parts))
        abort();
    if (lw.payload > size)
        abort();

    /* what was delivered, framed again, reads back the same */
    if (sw == DK_DEMUX_OK) {
        sk_buf again = { 0 };
        for (int s = 0; s < 4; s++) {
            if (!lw.per[s].len)
                continue;
            unsigned char hdr[8];
            sk_dk_frame_header(hdr, s, (uint32_t)lw.per[s].len);
            sk_buf_append(&again, hdr, 8);
            sk_buf_append(&again, lw.per[s].data, lw.per[s].len);
        }
        dk_demux d2;
        fuzz_log l2 = { .stop_after = -1 };
        sk_dk_demux_init(&d2);
        if (again.len && (sk_dk_demux_feed(&d2, again.data, again.len, fuzz_on_piece, &l2) != DK_DEMUX_OK ||
                          !sk_dk_demux_at_boundary(&d2) || !fuzz_same(&lw, &l2)))
            abort();
        fuzz_log_free(&l2);
        sk_buf_free(&again);
    }

    /* a callback that stops: nothing more is delivered, the status stays */
    dk_demux ds;
    fuzz_log lsd = { .stop_after = 1 };
    sk_dk_demux_init(&ds);
    dk_demux_status st = sk_dk_demux_feed(&ds, (const char *)data, size, fuzz_on_piece, &lsd);
    if (lsd.pieces > 1 || (lsd.pieces == 1 && st != DK_DEMUX_STOPPED))
        abort();
    /* once stopped or refused, it stays so */
    if (st != DK_DEMUX_OK &&
        (sk_dk_demux_feed(&ds, (const char *)data, size, fuzz_on_piece, &lsd) != st || lsd.pieces > 1))
        abort();

    fuzz_log_free(&lw);
    fuzz_log_free(&lp);
    fuzz_log_free(&lsd);
    return 0;
}
