/* POSIX shell quoting. Single quotes preserve every byte except ' itself,
 * which is written as '\'' ; plain words are left bare. The bare set is
 * upstream's, [A-Za-z0-9._-/=:@] (Platform and Apple container providers),
 * so the command line sent to a provider is the same bytes as upstream's. */
#include "shell.h"

#include <string.h>

static int shell_is_plain(const char *s, size_t len)
{
    if (len == 0)
        return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              strchr("._-/=:@", c)))
            return 0;
    }
    return 1;
}

int sk_shell_quote(sk_buf *out, const char *arg, size_t len)
{
    if (memchr(arg, '\0', len))
        return -1;
    if (shell_is_plain(arg, len))
        return sk_buf_append(out, arg, len);
    if (sk_buf_append(out, "'", 1) != 0)
        return -1;
    const char *p = arg, *end = arg + len;
    while (p < end) {
        const char *q = memchr(p, '\'', (size_t)(end - p));
        size_t run = q ? (size_t)(q - p) : (size_t)(end - p);
        if (sk_buf_append(out, p, run) != 0)
            return -1;
        if (!q)
            break;
        if (sk_buf_append(out, "'\\''", 4) != 0)
            return -1;
        p = q + 1;
    }
    return sk_buf_append(out, "'", 1);
}

int sk_shell_append_arg(sk_buf *out, const char *arg, size_t len)
{
    if (memchr(arg, '\0', len))
        return -1;
    if (sk_buf_append(out, " ", 1) != 0)
        return -1;
    return sk_shell_quote(out, arg, len);
}
