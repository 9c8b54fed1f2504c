/* Settable log sink with a level filter; see log.h. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "secrets.h"

static void log_stderr(sk_log_level level, const char *component, const char *msg, void *ud)
{
    (void)ud;
    fprintf(stderr, "sandkit %s [%s]: %s\n", sk_log_level_name(level), component, msg);
}

static sk_log_sink log_sink = log_stderr;
static void *log_ud;
static sk_log_level log_max = SK_LOG_WARN;

void sk_log_set_sink(sk_log_sink sink, void *ud)
{
    log_sink = sink ? sink : log_stderr;
    log_ud = sink ? ud : NULL;
}

void sk_log_set_level(sk_log_level max) { log_max = max; }

sk_log_level sk_log_get_level(void) { return log_max; }

bool sk_log_enabled(sk_log_level level) { return level <= log_max; }

const char *sk_log_level_name(sk_log_level level)
{
    switch (level) {
    case SK_LOG_ERROR: return "error";
    case SK_LOG_WARN: return "warn";
    case SK_LOG_INFO: return "info";
    case SK_LOG_DEBUG: return "debug";
    }
    return "?";
}

void sk_log(sk_log_level level, const char *component, const char *fmt, ...)
{
    if (!sk_log_enabled(level))
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    /* Lines from libraries arrive with their own newline. */
    size_t len = (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1;
    while (len > 0 && (msg[len - 1] == '\n' || msg[len - 1] == '\r'))
        msg[--len] = '\0';
    /* Lines may quote servers (error messages, libwebsockets): no secret
     * leaves through the log either. */
    if (sk_redact_needed(NULL, msg, len)) {
        char *safe = sk_redact(NULL, msg, len, NULL);
        log_sink(level, component ? component : "core", safe ? safe : "[line withheld: out of memory]", log_ud);
        free(safe);
        return;
    }
    log_sink(level, component ? component : "core", msg, log_ud);
}
