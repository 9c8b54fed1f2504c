/* Typed errors crossing the core's API: a kind ("ConfigError", ...), a
 * message, and kind-specific fields as a JSON object (numbers, strings,
 * booleans). The binding turns one into a Lua error object. Messages must
 * never contain secrets: callers format them from non-secret values only;
 * what a server said may echo one, so the binding redacts every error
 * (secrets.h) before Lua sees it. */
#ifndef SK_ERROR_H
#define SK_ERROR_H

#include <jansson.h>

typedef struct sk_error {
    char *kind;
    char *message;
    json_t *fields; /* owned; may be NULL */
} sk_error;

/* fields is stolen (may be NULL). Returns NULL only on allocation failure. */
sk_error *sk_error_new(const char *kind, json_t *fields, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The one out-of-memory error of the core (kind OutOfMemoryError). */
sk_error *sk_error_oom(void);
sk_error *sk_error_copy(const sk_error *e);
void sk_error_free(sk_error *e);
/* Set a field (value stolen); no-op on NULL error. */
void sk_error_set(sk_error *e, const char *key, json_t *value);

#endif
