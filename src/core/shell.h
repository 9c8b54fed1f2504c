/* POSIX shell quoting: each argument arrives as exactly one argv entry,
 * byte for byte. NUL cannot be represented and is rejected. */
#ifndef SK_SHELL_H
#define SK_SHELL_H

#include <stddef.h>
#include "buf.h"

/* Appends ' ' + quoted(arg) to out. Returns 0, or -1 if arg contains NUL
 * (len counts bytes; arg need not be NUL-terminated) or on ENOMEM. */
int sk_shell_append_arg(sk_buf *out, const char *arg, size_t len);
/* Appends quoted(arg) with no leading space. */
int sk_shell_quote(sk_buf *out, const char *arg, size_t len);

#endif
