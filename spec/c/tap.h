/* TAP output for the C test programs: tap(ok, fmt, ...) prints
 * "ok N - ..." or "not ok N - ..."; end with printf("1..%d\n", tap_n) and
 * return tap_failed != 0. tap_bytes compares bytes, showing both on a
 * difference. */
#ifndef SK_TEST_TAP_H
#define SK_TEST_TAP_H

#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

/* Reads a spawned server's first `lines` lines (its address, ...) from fd
 * into buf (NUL-terminated), waiting at most 20 s for each read; returns
 * how many whole lines came. */
__attribute__((unused)) static int tap_read_lines(int fd, char *buf, size_t size, int lines)
{
    size_t len = 0;
    int seen = 0;
    buf[0] = '\0';
    while (seen < lines && len < size - 1) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, 20000) <= 0)
            break;
        ssize_t n = read(fd, buf + len, size - 1 - len);
        if (n <= 0)
            break;
        len += (size_t)n;
        buf[len] = '\0';
        seen = 0;
        for (char *c = buf; (c = strchr(c, '\n')); c++)
            seen++;
    }
    return seen;
}

#endif
