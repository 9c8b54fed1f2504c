/* Shell text for `container exec`; see apple_container_shell.h. The scripts
 * are rendered statement for statement as upstream joins them (with "; "),
 * so the argv a real Apple CLI receives is the one the TypeScript provider
 * sends. */
#include "apple_container_shell.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool shell_is_bare(const char *s, size_t len)
{
    if (len == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              strchr("._-/=:@", c)))
            return false;
    }
    return true;
}

int sk_ac_shell_quote(sk_buf *out, const char *s, size_t len)
{
    if (shell_is_bare(s, len))
        return sk_buf_append(out, s, len);
    if (sk_buf_append(out, "'", 1) != 0)
        return -1;
    for (size_t i = 0; i < len; i++) {
        int rc = s[i] == '\'' ? sk_buf_append(out, "'\\''", 4) : sk_buf_append(out, s + i, 1);
        if (rc != 0)
            return -1;
    }
    return sk_buf_append(out, "'", 1);
}

void sk_ac_timeout_seconds(double ms, char out[32])
{
    double x = ms / 1000.0;
    if (!(x > 0.001))
        x = 0.001;
    /* toFixed(3) picks the larger candidate on an exact tie; printf rounds
     * ties to even. Ties are exact in binary only when x * 2000 is an odd
     * integer. */
    double scaled = x * 1000.0;
    double lo = floor(scaled);
    if (scaled - lo == 0.5 && x * 2000.0 == floor(x * 2000.0)) {
        snprintf(out, 32, "%.3f", (lo + 1.0) / 1000.0);
    } else {
        snprintf(out, 32, "%.3f", x);
    }
    char *dot = strchr(out, '.');
    if (dot) {
        size_t n = strlen(out);
        while (n > 0 && out[n - 1] == '0')
            out[--n] = '\0';
        if (n > 0 && out[n - 1] == '.')
            out[--n] = '\0';
    }
}

char *sk_ac_timeout_script(const char *full_command, double timeout_ms, bool with_stdin)
{
    char secs[32];
    sk_ac_timeout_seconds(timeout_ms, secs);
    sk_buf inner = { 0 }, out = { 0 }, quoted = { 0 };
    int rc = 0;
    /* inner script */
    if (with_stdin)
        rc |= sk_buf_append(&inner, "exec 3<&0; ", 11);
    rc |= sk_buf_append(&inner, "sh -lc ", 7);
    rc |= sk_ac_shell_quote(&inner, full_command, strlen(full_command));
    rc |= sk_buf_appendf(&inner, "%s & child=$!; ", with_stdin ? " <&3 3<&-" : "");
    if (with_stdin)
        rc |= sk_buf_appendf(&inner, "exec 3<&-; ");
    rc |= sk_buf_appendf(&inner,
                         "trap 'kill -TERM \"$child\" 2>/dev/null; wait \"$child\" 2>/dev/null; exit %d' TERM INT; "
                         "wait \"$child\"; code=$?; "
                         "trap - TERM INT; "
                         "printf \"%%s\" \"$code\" > \"$MASTRA_TIMEOUT_RESULT_FILE\"; "
                         "exit \"$code\"",
                         AC_TIMEOUT_EXIT_CODE);
    if (rc != 0 || sk_ac_shell_quote(&quoted, inner.data, inner.len) != 0)
        goto fail;
    /* outer script */
    rc |= sk_buf_appendf(&out, "result_file=\"/tmp/.mastra-apple-container-exit-$$\"; rm -f \"$result_file\"; ");
    if (with_stdin) {
        rc |= sk_buf_appendf(&out, "exec 3<&0; MASTRA_TIMEOUT_RESULT_FILE=\"$result_file\" timeout %ss sh -lc %s <&3 3<&- & "
                                   "tpid=$!; exec 3<&-; "
                                   "trap 'kill -TERM \"$tpid\" 2>/dev/null; wait \"$tpid\" 2>/dev/null; rm -f \"$result_file\"; exit 143' TERM INT; "
                                   "wait \"$tpid\"; timeout_code=$?; trap - TERM INT; ",
                             secs, quoted.data);
    } else {
        rc |= sk_buf_appendf(&out, "MASTRA_TIMEOUT_RESULT_FILE=\"$result_file\" timeout %ss sh -lc %s; timeout_code=$?; ",
                             secs, quoted.data);
    }
    rc |= sk_buf_appendf(&out,
                         "if [ -f \"$result_file\" ]; then code=\"$(cat \"$result_file\")\"; rm -f \"$result_file\"; exit \"$code\"; fi; "
                         "rm -f \"$result_file\"; "
                         "case \"$timeout_code\" in 124|137|143) printf '%%s\\n' %s >&2; exit %d;; *) exit \"$timeout_code\";; esac",
                         AC_TIMEOUT_MARKER, AC_TIMEOUT_EXIT_CODE);
    if (rc != 0)
        goto fail;
    sk_buf_free(&inner);
    sk_buf_free(&quoted);
    return sk_buf_take(&out);
fail:
    sk_buf_free(&inner);
    sk_buf_free(&quoted);
    sk_buf_free(&out);
    return NULL;
}

/* ---- the marker --------------------------------------------------------- */

/* JavaScript's String.prototype.trim, for the ASCII whitespace a shell
 * line can carry. */
static bool marker_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

/* 1: the line (without its newline) is the marker; 0: it may still become
 * the marker when more bytes arrive; -1: it cannot be the marker. */
static int marker_match(const char *s, size_t len, bool complete)
{
    static const size_t mlen = sizeof AC_TIMEOUT_MARKER - 1;
    size_t i = 0;
    while (i < len && marker_space(s[i]))
        i++;
    size_t rest = len - i;
    size_t cmp = rest < mlen ? rest : mlen;
    if (memcmp(s + i, AC_TIMEOUT_MARKER, cmp) != 0)
        return -1;
    if (rest < mlen)
        return complete ? -1 : 0;
    for (size_t j = i + mlen; j < len; j++)
        if (!marker_space(s[j]))
            return -1;
    return complete ? 1 : 0;
}

void sk_ac_marker_filter_feed(ac_marker_filter *f, const char *data, size_t len, ac_emit_fn emit, void *ud)
{
    size_t start = 0;
    while (start < len) {
        const char *nl = memchr(data + start, '\n', len - start);
        size_t end = nl ? (size_t)(nl - data) + 1 : len; /* past the newline */
        const char *seg = data + start;
        size_t seglen = end - start;
        if (f->line_plain) {
            emit(ud, seg, seglen);
        } else {
            sk_buf_append(&f->line, seg, seglen);
            size_t body = f->line.len - (nl ? 1 : 0);
            int m = marker_match(f->line.data, body, nl != NULL);
            if (m < 0) {
                emit(ud, f->line.data, f->line.len);
                sk_buf_reset(&f->line);
                f->line_plain = nl == NULL;
            } else if (m > 0) {
                sk_buf_append(&f->held, f->line.data, f->line.len);
                sk_buf_reset(&f->line);
                f->seen = true;
            }
        }
        if (nl)
            f->line_plain = false;
        start = end;
    }
}

void sk_ac_marker_filter_end(ac_marker_filter *f, bool drop, ac_emit_fn emit, void *ud)
{
    if (f->line.len && marker_match(f->line.data, f->line.len, true) > 0) {
        sk_buf_append(&f->held, f->line.data, f->line.len);
        sk_buf_reset(&f->line);
        f->seen = true;
    }
    if (f->held.len && !drop)
        emit(ud, f->held.data, f->held.len);
    if (f->line.len)
        emit(ud, f->line.data, f->line.len);
    sk_buf_reset(&f->held);
    sk_buf_reset(&f->line);
}

bool sk_ac_marker_filter_seen(ac_marker_filter *f)
{
    return f->seen || (f->line.len && marker_match(f->line.data, f->line.len, true) > 0);
}

void sk_ac_marker_filter_free(ac_marker_filter *f)
{
    sk_buf_free(&f->line);
    sk_buf_free(&f->held);
}

size_t sk_ac_strip_marker(char *s, size_t len)
{
    size_t o = 0, i = 0;
    bool first = true;
    while (i <= len) {
        const char *nl = memchr(s + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - s) : len;
        if (marker_match(s + i, end - i, true) <= 0) {
            if (!first)
                s[o++] = '\n';
            memmove(s + o, s + i, end - i);
            o += end - i;
            first = false;
        }
        if (!nl)
            break;
        i = end + 1;
    }
    /* leading and trailing newlines */
    size_t a = 0;
    while (a < o && s[a] == '\n')
        a++;
    while (o > a && s[o - 1] == '\n')
        o--;
    memmove(s, s + a, o - a);
    o -= a;
    if (len > o)
        s[o] = '\0';
    return o;
}
