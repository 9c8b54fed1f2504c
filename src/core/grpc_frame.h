/* gRPC over HTTP/2 without the transport: length-prefixed message framing,
 * an incremental deframer for streamed bodies, the status carried in
 * headers or trailers, and the small codecs gRPC metadata needs
 * (grpc-message percent-encoding, "-bin" base64, grpc-timeout). http.c moves
 * the bytes; this file only interprets them (docs/protocols/modal.md §1.3). */
#ifndef SK_GRPC_FRAME_H
#define SK_GRPC_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "buf.h"

/* Both Modal SDKs cap messages at 100 MiB in each direction. */
#define SK_GRPC_MAX_MESSAGE (100u * 1024u * 1024u)
#define SK_GRPC_HEADER_LEN 5

typedef enum sk_grpc_code {
    SK_GRPC_OK = 0,
    SK_GRPC_CANCELLED = 1,
    SK_GRPC_UNKNOWN = 2,
    SK_GRPC_INVALID_ARGUMENT = 3,
    SK_GRPC_DEADLINE_EXCEEDED = 4,
    SK_GRPC_NOT_FOUND = 5,
    SK_GRPC_ALREADY_EXISTS = 6,
    SK_GRPC_PERMISSION_DENIED = 7,
    SK_GRPC_RESOURCE_EXHAUSTED = 8,
    SK_GRPC_FAILED_PRECONDITION = 9,
    SK_GRPC_ABORTED = 10,
    SK_GRPC_OUT_OF_RANGE = 11,
    SK_GRPC_UNIMPLEMENTED = 12,
    SK_GRPC_INTERNAL = 13,
    SK_GRPC_UNAVAILABLE = 14,
    SK_GRPC_DATA_LOSS = 15,
    SK_GRPC_UNAUTHENTICATED = 16
} sk_grpc_code;

/* "NOT_FOUND" etc.; NULL outside 0..16. */
const char *sk_grpc_code_name(int code);
/* The code for a response without grpc-status (docs/protocols/modal.md §1.3): 400
 * INTERNAL, 401 UNAUTHENTICATED, 403 PERMISSION_DENIED, 404 UNIMPLEMENTED,
 * 429/502/503/504 UNAVAILABLE, anything else (200 included) UNKNOWN. */
int sk_grpc_code_from_http(int http_status);

/* ---- framing ---- */

/* Fills the 5-byte prefix (flag 0, big-endian length). -1 if len does not
 * fit in 32 bits. */
int sk_grpc_frame_header(uint8_t hdr[SK_GRPC_HEADER_LEN], size_t len);
/* Appends prefix + message to out. -1 on ENOMEM or len > UINT32_MAX. */
int sk_grpc_frame_append(sk_buf *out, const void *msg, size_t len);

/* Deframer errors (sticky once returned). */
enum {
    SK_GRPC_DEFRAME_OK = 0,
    SK_GRPC_DEFRAME_ENOMEM = -1,
    SK_GRPC_DEFRAME_COMPRESSED = -2, /* flag 1: we never ask for compression */
    SK_GRPC_DEFRAME_BAD_FLAG = -3,   /* flag other than 0 or 1 */
    SK_GRPC_DEFRAME_TOO_LARGE = -4,  /* length above max_len */
    SK_GRPC_DEFRAME_TRUNCATED = -5,  /* stream ended inside a message */
    SK_GRPC_DEFRAME_STOPPED = -6     /* the callback asked to stop */
};

/* Called once per complete message. msg points into the fed chunk or into
 * the deframer's buffer, valid only during the call. Return non-zero to
 * stop: feed then returns SK_GRPC_DEFRAME_STOPPED. */
typedef int (*sk_grpc_message_cb)(void *ud, const uint8_t *msg, size_t len);

typedef struct sk_grpc_deframer {
    size_t max_len;
    uint8_t hdr[SK_GRPC_HEADER_LEN];
    size_t hdr_have;   /* bytes of the current prefix seen */
    size_t need;       /* length of the message being collected */
    sk_buf msg;        /* partial message spanning chunks (owned) */
    int error;
    uint64_t messages; /* delivered so far */
} sk_grpc_deframer;

/* max_len 0 means SK_GRPC_MAX_MESSAGE. */
void sk_grpc_deframer_init(sk_grpc_deframer *d, size_t max_len);
/* Feeds a chunk of any size (DATA frame boundaries do not matter). A
 * message lying whole inside the chunk is delivered without copying.
 * Returns SK_GRPC_DEFRAME_OK or an error code; after an error every later
 * call returns the same error and delivers nothing. */
int sk_grpc_deframer_feed(sk_grpc_deframer *d, const void *data, size_t len, sk_grpc_message_cb cb, void *ud);
/* At the end of the body: SK_GRPC_DEFRAME_TRUNCATED if a message (or its
 * prefix) was left incomplete, else the sticky error or OK. */
int sk_grpc_deframer_finish(sk_grpc_deframer *d);
void sk_grpc_deframer_free(sk_grpc_deframer *d);
const char *sk_grpc_deframe_strerror(int err);
/* The status a call reports for a deframing error: TOO_LARGE gives
 * RESOURCE_EXHAUSTED (as grpc-js), STOPPED gives CANCELLED, the rest
 * INTERNAL. */
int sk_grpc_deframe_code(int err);

/* ---- status from headers and trailers ---- */

typedef struct sk_grpc_status {
    int http_status;    /* 0 until a status line or :status is seen */
    int grpc_status;    /* -1 until grpc-status is seen */
    char *grpc_message; /* percent-decoded; NULL if absent (owned) */
    char *details_bin;  /* grpc-status-details-bin as received, base64 (owned) */
} sk_grpc_status;

void sk_grpc_status_init(sk_grpc_status *s);
void sk_grpc_status_free(sk_grpc_status *s);
/* One header from the initial HEADERS or from the trailers (grpc-status may
 * be in either: trailers-only responses). Names are matched
 * case-insensitively; other headers are ignored. A grpc-status that is not
 * a decimal 0..16 is recorded as UNKNOWN, as grpc-js does. 0, or -1 on
 * ENOMEM. */
int sk_grpc_status_header(sk_grpc_status *s, const char *name, size_t name_len, const char *value,
                          size_t value_len);
/* A raw line as libcurl's header callback delivers it ("HTTP/2 200\r\n",
 * "grpc-status: 5\r\n", the blank separator line): parses it and calls
 * sk_grpc_status_header. 0, or -1 on ENOMEM. */
int sk_grpc_status_header_line(sk_grpc_status *s, const char *line, size_t len);
/* The call's final code once the stream has ended: grpc-status if seen;
 * otherwise the HTTP mapping when the HTTP status is not 200; otherwise
 * UNKNOWN (a stream that ended without grpc-status). */
int sk_grpc_status_code(const sk_grpc_status *s);

/* ---- metadata codecs ---- */

/* grpc-message decoding: %XX becomes the byte; a malformed escape is kept
 * as is (the gRPC spec says never to fail on it), and %00 too, so the
 * result stays a C string. Returns a fresh string, or NULL on ENOMEM. */
char *sk_grpc_percent_decode(const char *s, size_t len);
/* grpc-message encoding: bytes outside 0x20..0x7e, and '%', become %XX. */
int sk_grpc_percent_encode(sk_buf *out, const char *s, size_t len);

/* Base64 for "-bin" metadata and JWT segments: the standard and the
 * URL-safe alphabets, padding optional. Appends to out. -1 with errno
 * EINVAL on a character outside the alphabets, misplaced padding, non-zero
 * trailing bits or a length of 4k+1; ENOMEM. */
int sk_grpc_base64_decode(const char *s, size_t len, sk_buf *out);

/* grpc-timeout value: at most 8 digits and a unit, the finest of m, S, M, H
 * that fits, rounded up (as grpc-go); capped at 99999999H. out must hold
 * SK_GRPC_TIMEOUT_LEN bytes. Returns the length written. */
#define SK_GRPC_TIMEOUT_LEN 10
size_t sk_grpc_timeout_format(char out[SK_GRPC_TIMEOUT_LEN], uint64_t ms);

#endif
