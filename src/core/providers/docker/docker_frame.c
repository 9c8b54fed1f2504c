/* The Engine API's stream demultiplexer; see docker_frame.h. */
#include "docker_frame.h"

#include <string.h>

void sk_dk_demux_init(dk_demux *d) { memset(d, 0, sizeof *d); }

bool sk_dk_demux_at_boundary(const dk_demux *d)
{
    return d->status == DK_DEMUX_OK && d->hdr_len == 0 && d->left == 0;
}

void sk_dk_frame_header(unsigned char hdr[8], int stream, uint32_t len)
{
    hdr[0] = (unsigned char)stream;
    hdr[1] = hdr[2] = hdr[3] = 0;
    hdr[4] = (unsigned char)(len >> 24);
    hdr[5] = (unsigned char)(len >> 16);
    hdr[6] = (unsigned char)(len >> 8);
    hdr[7] = (unsigned char)len;
}

dk_demux_status sk_dk_demux_feed(dk_demux *d, const char *data, size_t len, dk_demux_cb cb, void *ud)
{
    while (len > 0 && d->status == DK_DEMUX_OK) {
        if (d->left > 0) {
            size_t n = len < d->left ? len : d->left;
            d->left -= (uint32_t)n;
            if (cb(ud, d->stream, data, n) != 0)
                d->status = DK_DEMUX_STOPPED;
            data += n;
            len -= n;
            continue;
        }
        size_t want = sizeof d->hdr - d->hdr_len;
        size_t n = len < want ? len : want;
        memcpy(d->hdr + d->hdr_len, data, n);
        d->hdr_len += n;
        data += n;
        len -= n;
        if (d->hdr_len < sizeof d->hdr)
            break;
        d->hdr_len = 0;
        /* moby writes 0 to 3 and zero padding; anything else is not this
         * protocol (a daemon that did not hijack, or a corrupted stream) */
        if (d->hdr[0] > DK_STREAM_SYSTEMERR || d->hdr[1] || d->hdr[2] || d->hdr[3]) {
            memcpy(d->bad, d->hdr, sizeof d->bad);
            d->status = DK_DEMUX_BAD_HEADER;
            break;
        }
        d->stream = d->hdr[0];
        d->left = (uint32_t)d->hdr[4] << 24 | (uint32_t)d->hdr[5] << 16 | (uint32_t)d->hdr[6] << 8 | d->hdr[7];
    }
    return d->status;
}
