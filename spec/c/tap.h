/* TAP output for the C test programs: tap(ok, fmt, ...) prints
 * "ok N - ..." or "not ok N - ..."; end with printf("1..%d\n", tap_n) and
 * return tap_failed != 0. tap_bytes compares bytes, showing both on a
 * difference. */
#ifndef SK_TEST_TAP_H
#define SK_TEST_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

static int tap(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int tap(int ok, const char *fmt, ...)
{
    va_list ap;
    printf("%s %d - ", ok ? "ok" : "not ok", ++tap_n);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout); /* a crash later still shows what passed */
    if (!ok)
        tap_failed++;
    return ok;
}

/* Bytes as "#   label (n): xx xx ...", a diagnostic line. */
__attribute__((unused)) static void tap_hexdump(const char *label, const void *p, size_t n)
{
    const unsigned char *b = p;
    printf("#   %s (%zu):", label, n);
    for (size_t i = 0; i < n; i++)
        printf(" %02x", b[i]);
    printf("\n");
}

/* tap() of got being the bytes want; when not, both are shown in hex. */
__attribute__((unused)) static int tap_bytes(const char *name, const void *got, size_t gn, const void *want,
                                             size_t wn)
{
    int ok = gn == wn && (wn == 0 || memcmp(got, want, wn) == 0);
    if (!tap(ok, "%s", name)) {
        tap_hexdump("got ", got, gn);
        tap_hexdump("want", want, wn);
    }
    return ok;
}

#endif
