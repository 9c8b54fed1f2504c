/* SHA-256 (FIPS 180-4) for the Apple container config-hash label. Kept
 * self-contained so the core links no crypto library for one digest. */
#ifndef SK_APPLE_CONTAINER_SHA256_H
#define SK_APPLE_CONTAINER_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct ac_sha256 {
    uint32_t h[8];
    uint64_t len;        /* bytes hashed so far */
    unsigned char block[64];
    size_t fill;
} ac_sha256;

void ac_sha256_init(ac_sha256 *s);
void ac_sha256_update(ac_sha256 *s, const void *data, size_t len);
void ac_sha256_final(ac_sha256 *s, unsigned char out[32]);
/* Lowercase hex digest of data into hex (65 bytes with the NUL). */
void ac_sha256_hex(const void *data, size_t len, char hex[65]);

#endif
