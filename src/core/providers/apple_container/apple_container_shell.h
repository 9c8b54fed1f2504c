/* The shell text AppleContainerSandbox sends through `container exec`:
 * upstream's quoting rule, the in-container timeout wrapper
 * (docs/protocols/apple-container.md §5.2), and the filter that takes the
 * timeout marker out of a streamed stderr. */
#ifndef SK_APPLE_CONTAINER_SHELL_H
#define SK_APPLE_CONTAINER_SHELL_H

#include <stdbool.h>
#include <stddef.h>
#include "../../buf.h"

#define AC_TIMEOUT_MARKER "__MASTRA_APPLE_CONTAINER_TIMEOUT__"
#define AC_TIMEOUT_EXIT_CODE 124

/* Upstream's shellQuote: words of [A-Za-z0-9._-/=:@] stay bare, anything
 * else (the empty word too) is single-quoted with ' written as '\''.
 * 0, or -1 on ENOMEM. */
int sk_ac_shell_quote(sk_buf *out, const char *s, size_t len);

/* max(ms/1000, 0.001) with 3 decimals, trailing zeros and dot removed, as
 * JavaScript's toFixed(3) rounds. Writes into out (>= 32 bytes). */
void sk_ac_timeout_seconds(double ms, char out[32]);

/* The outer script for `sh -lc`: the full command under `timeout`, with the
 * result file and the marker (docs/protocols/apple-container.md §5.2).
 * with_stdin renders the sandkit variant for commands that read stdin: the
 * user command keeps the exec's stdin and a TERM/INT sent to the outer shell
 * reaches `timeout` (upstream has no stdin). malloc'd, NULL on ENOMEM. */
char *sk_ac_timeout_script(const char *full_command, double timeout_ms, bool with_stdin);

/* Removes lines whose trimmed text is the marker from a stderr stream while
 * passing everything else through as it arrives. Lines that could be the
 * marker are held until they are known; at the end the caller decides
 * whether they were the wrapper's marker (dropped) or output (released). */
typedef struct ac_marker_filter {
    sk_buf line;     /* the current line, held while it may be the marker */
    bool line_plain; /* the current line cannot be the marker: passed through */
    sk_buf held;     /* complete marker lines, in order */
    bool seen;       /* a marker line was seen */
} ac_marker_filter;

typedef void (*ac_emit_fn)(void *ud, const char *data, size_t len);

void sk_ac_marker_filter_feed(ac_marker_filter *f, const char *data, size_t len, ac_emit_fn emit, void *ud);
/* End of stream: a held partial line that is the marker counts as one; drop
 * decides whether held marker lines are discarded or released. */
void sk_ac_marker_filter_end(ac_marker_filter *f, bool drop, ac_emit_fn emit, void *ud);
/* True when data holds a line that is the marker (the end-of-stream check). */
bool sk_ac_marker_filter_seen(ac_marker_filter *f);
void sk_ac_marker_filter_free(ac_marker_filter *f);

/* Upstream's stripTimeoutMarker on a complete text, in place: drops marker
 * lines, then leading and trailing newlines. Returns the new length. */
size_t sk_ac_strip_marker(char *s, size_t len);

#endif
