/* The Engine API's multiplexed stream (docs/protocols/docker.md §4): each
 * frame is an 8-byte header { stream, 0, 0, 0, size (32-bit big-endian) }
 * then size payload bytes; stream 0 stdin, 1 stdout, 2 stderr, 3 an error
 * the daemon reports (moby's pkg/stdcopy "Systemerr").
 *
 * The demultiplexer keeps no payload: each piece reaches the callback as it
 * arrives, so a frame of any declared size costs 8 bytes of state. Bounded,
 * and fuzzed (spec/fuzz/fuzz_docker_frame.c). */
#ifndef SK_DOCKER_FRAME_H
#define SK_DOCKER_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    DK_STREAM_STDIN = 0,
    DK_STREAM_STDOUT = 1,
    DK_STREAM_STDERR = 2,
    DK_STREAM_SYSTEMERR = 3,
};

typedef enum {
    DK_DEMUX_OK = 0,
    DK_DEMUX_BAD_HEADER, /* an unknown stream byte or non-zero padding */
    DK_DEMUX_STOPPED,    /* the callback asked to stop */
} dk_demux_status;

typedef struct dk_demux {
    unsigned char hdr[8];
    size_t hdr_len;      /* header bytes gathered of the next frame */
    uint32_t left;       /* payload bytes still to come of the current frame */
    int stream;          /* of the current frame */
    dk_demux_status status; /* once not OK, stays so */
    unsigned char bad[8];   /* DK_DEMUX_BAD_HEADER: the header refused */
} dk_demux;

/* A payload piece (len > 0) of `stream`; non-zero stops the demultiplexer
 * (DK_DEMUX_STOPPED). */
typedef int (*dk_demux_cb)(void *ud, int stream, const char *data, size_t len);

void sk_dk_demux_init(dk_demux *d);
/* Feeds bytes as they came off the connection, in pieces of any size. */
dk_demux_status sk_dk_demux_feed(dk_demux *d, const char *data, size_t len, dk_demux_cb cb, void *ud);
/* Whether the stream may end here: no header or payload half-read. */
bool sk_dk_demux_at_boundary(const dk_demux *d);
/* Writes one frame header for a payload of len bytes (tests, the fuzzer). */
void sk_dk_frame_header(unsigned char hdr[8], int stream, uint32_t len);

#endif
