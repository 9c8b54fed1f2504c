/* TAP output for the C test programs: tap(ok, fmt, ...) prints
 * "ok N - ..." or "not ok N - ..."; end with printf("1..%d\n", tap_n) and
 * return tap_failed != 0. */
#ifndef SK_TEST_TAP_H
#define SK_TEST_TAP_H

#include <stdarg.h>
#include <stdio.h>

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

#endif
