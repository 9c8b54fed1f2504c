/* Secret values (access tokens, token secrets, env values) and their
 * redaction from what the user sees: error messages, every string of an
 * error's fields, and log lines (docs/security.md §"Secrets").
 *
 * One process-wide registry, because the log sink is process-wide. Tokens
 * are held for every scope; env values for one scope (their sandbox), so an
 * env value such as "test" only ever cuts into its own sandbox's errors.
 * Holders count references: a sandbox holds its token and env values for
 * its lifetime, a process its per-command env.
 *
 * A held value is found in text written literally and in the forms servers
 * echo it in: JSON string escapes (\/ \" \\ \n ..., \uXXXX for any
 * character, surrogate pairs, one or more levels of escaping), percent-
 * encoding (either hex case, '+' for space, %25 double encoding), and
 * base64 (standard or URL-safe alphabet, any alignment; values of at least
 * SK_SECRET_BASE64_MIN_LEN bytes), and cut short at either end of the text
 * (SK_SECRET_PARTIAL_MIN). Values shorter than SK_SECRET_MIN_LEN
 * bytes are not held: "1" or "on" cannot be told from ordinary text, and
 * replacing them would garble every message. */
#ifndef SK_SECRETS_H
#define SK_SECRETS_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "error.h"

#define SK_SECRET_MIN_LEN 4
#define SK_SECRET_BASE64_MIN_LEN 6
/* A text that ends with the first bytes of a held value (a server cut it
 * short), or begins with its last bytes, has that piece cut too when it is
 * at least this long. */
#define SK_SECRET_PARTIAL_MIN 8
#define SK_REDACTED "[redacted]"

/* A token, for every scope. NULL, "" and values shorter than
 * SK_SECRET_MIN_LEN are ignored. 0, or -1 on ENOMEM (the value is then not
 * held: callers treat it as fatal or remember not to release it). */
int sk_secret_hold(const char *value);
void sk_secret_release(const char *value);
/* Every string value of a JSON object (an env table), for scope owner. */
int sk_secret_hold_env(const void *owner, const json_t *env);
void sk_secret_release_env(const void *owner, const json_t *env);

/* scope below: the sandbox whose env values apply (tokens always do);
 * NULL: every held value (log lines). */

/* A redacted copy of text (NUL-terminated), or NULL on ENOMEM. */
char *sk_redact(const void *scope, const char *text, size_t len, size_t *out_len);
/* True when text holds a secret of scope in any recognised form. */
bool sk_redact_needed(const void *scope, const char *text, size_t len);
/* Redacts e->message and every string in e->fields (nested values and
 * their keys too) in place. Never leaves a secret behind: when memory runs
 * out it drops the fields and replaces the message. NULL is a no-op. */
void sk_error_redact(const void *scope, sk_error *e);

/* Redacts every string (and every key below the top level) of v in place,
 * as for an error's fields. 0, or -1 on out of memory (v half done). */
int sk_json_redact(const void *scope, json_t *v);

/* Value of one hex digit (either case; c as an unsigned char), or -1.
 * Shared with grpc_frame.c's percent-decoding. */
int sk_hex_digit(int c);


#endif
