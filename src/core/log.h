/* The core's logger: one settable sink (default: stderr) and a level filter.
 * Process-wide because libwebsockets' own log hook is process-wide.
 * Callers never pass secrets (tokens, header values, env values); lines
 * that quote a server are redacted all the same (secrets.h). */
#ifndef SK_LOG_H
#define SK_LOG_H

#include <stdbool.h>

typedef enum sk_log_level {
    SK_LOG_ERROR = 0,
    SK_LOG_WARN = 1,
    SK_LOG_INFO = 2,
    SK_LOG_DEBUG = 3
} sk_log_level;

/* component: short subsystem name ("ws", "http", "lws"); msg has no newline. */
typedef void (*sk_log_sink)(sk_log_level level, const char *component, const char *msg, void *ud);

/* NULL restores the default stderr sink. */
void sk_log_set_sink(sk_log_sink sink, void *ud);
/* Messages less severe than max are dropped (default SK_LOG_WARN). */
void sk_log_set_level(sk_log_level max);
sk_log_level sk_log_get_level(void);
bool sk_log_enabled(sk_log_level level);
const char *sk_log_level_name(sk_log_level level); /* "error", "warn", ... */

void sk_log(sk_log_level level, const char *component, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
