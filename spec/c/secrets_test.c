/* secrets: the registry's reference counts, the short-value floor, and
 * redaction of every encoded form a server may echo a secret in (literal,
 * JSON escapes at one and two levels, \uXXXX for any character, percent-
 * encoding in both hex cases with '+' for space, base64 at each alignment),
 * in messages and in every string of an error's fields. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "log.h"
#include "secrets.h"

#include "tap.h"

#define SECRET "tok/en+Ab c\"d\xc3\xa9"

static char logged[512];
static void capture(sk_log_level level, const char *component, const char *msg, void *ud)
{
    (void)level;
    (void)component;
    (void)ud;
    snprintf(logged, sizeof logged, "%s", msg);
}

static void gone(const char *name, const char *text)
{
    size_t len = 0;
    char *r = sk_redact(NULL, text, strlen(text), &len);
    int ok = r && strstr(r, SK_REDACTED) && !sk_redact_needed(NULL, r, len) && strlen(r) == len;
    if (!tap(ok, "%s: redacted", name))
        printf("#   in:  %s\n#   out: %s\n", text, r ? r : "(null)");
    free(r);
}

static void kept(const char *name, const char *text)
{
    char *r = sk_redact(NULL, text, strlen(text), NULL);
    int ok = r && strcmp(r, text) == 0 && !sk_redact_needed(NULL, text, strlen(text));
    if (!tap(ok, "%s: left alone", name))
        printf("#   in:  %s\n#   out: %s\n", text, r ? r : "(null)");
    free(r);
}

int main(void)
{
    static const char other_scope;
    kept("nothing held", "tok/en+Ab c\"d\xc3\xa9");
    tap(sk_secret_hold(SECRET) == 0, "hold");
    tap(sk_secret_hold("abc") == 0 && !sk_redact_needed(NULL, "xx abc xx", 9), "a value under the floor is not held");

    gone("literal", "x " SECRET " y");
    gone("JSON \\/ and \\\" and \\u00e9", "{\"message\":\"bad token tok\\/en+Ab c\\\"d\\u00e9\"}");
    gone("JSON \\u for every character (upper hex)",
         "\\u0074\\u006F\\u006B\\u002F\\u0065\\u006E\\u002B\\u0041\\u0062\\u0020\\u0063\\u0022\\u0064\\u00E9");
    gone("JSON escaped twice", "{\"body\":\"{\\\"t\\\":\\\"tok\\\\/en+Ab c\\\\\\\"d\\\\u00e9\\\"}\"}");
    gone("percent-encoded, upper hex", "q=tok%2Fen%2BAb%20c%22d%C3%A9&x=1");
    gone("percent-encoded, lower hex, + for space", "q=tok%2fen%2bAb+c%22d%c3%a9");
    gone("percent-encoded twice", "q=tok%252Fen%252BAb%2520c%2522d%25C3%25A9");
    gone("every byte percent-encoded", "%74%6f%6b%2f%65%6e%2b%41%62%20%63%22%64%c3%a9");
    gone("mixed forms", "tok\\/en%2BAb+c\\u0022d%C3%A9");

    /* base64 at each alignment, standard and URL-safe alphabets */
    const char *b64[] = { "dG9rL2VuK0FiIGMiZMOp", "eHRvay9lbitBYiBjImTDqQ==", "eHh0b2svZW4rQWIgYyJkw6k=",
                          "eHh0b2svZW4rQWIgYyJkw6k" };
    for (size_t i = 0; i < sizeof b64 / sizeof *b64; i++) {
        char label[64];
        snprintf(label, sizeof label, "base64 #%zu", i + 1);
        gone(label, b64[i]);
    }

    /* layers: an echoed JSON request (the value JSON-escaped), then encoded again */
    gone("percent-encoded JSON document", "bad%20request%20%7B%22t%22%3A%22tok%2Fen%2BAb%20c%5C%22d%C3%A9%22%7D");
    gone("\\u-escaped JSON document",
         "\\u007B\\u0022t\\u0022:\\u0022tok/en+Ab c\\u005C\\u0022d\\u00E9\\u0022\\u007D");
    gone("base64 of a JSON document", "eyJ0IjoidG9rL2VuK0FiIGNcImTDqSJ9");
    gone("base64 of a JSON document with \\/", "eyJ0IjoidG9rXC9lbitBYiBjXCJkw6kifQ==");

    /* a large text found only after decoding: withheld whole (no maps kept) */
    {
        size_t big = (2u << 20) + 100;
        char *t = malloc(big + 1);
        memset(t, 'x', big);
        const char *enc = "tok%2Fen%2BAb%20c%22d%C3%A9";
        memcpy(t + big / 2, enc, strlen(enc));
        t[big] = '\0';
        size_t len = 0;
        char *r = sk_redact(NULL, t, big, &len);
        tap(r && len < 200 && strstr(r, SK_REDACTED) && !sk_redact_needed(NULL, r, len),
            "a 2 MiB text with an encoded secret is withheld whole: %.60s", r ? r : "(null)");
        free(r);
        memset(t, 'x', big);
        memcpy(t + big / 2, SECRET, strlen(SECRET));
        r = sk_redact(NULL, t, big, &len);
        tap(r && len == big - strlen(SECRET) + strlen(SK_REDACTED) && !sk_redact_needed(NULL, r, len),
            "a 2 MiB text with a literal secret has just that cut");
        free(r);
        free(t);
    }

    kept("a prefix of the secret", "tok/en+A and more");
    gone("cut short at the end (a truncating server)", "close 1011 bad init: tok/en+Ab c");
    gone("cut short before ...", "failed with 401: {\"t\":\"tok\\/en+Ab c...");
    gone("its tail at the start", "en+Ab c\"d\xc3\xa9 was echoed");
    kept("a piece under 8 bytes at the end", "the word tok/en+");
    kept("ordinary text", "Platform proxy request failed with 401: unauthorized");

    /* log lines: every held value, whatever its scope */
    sk_log_set_sink(capture, NULL);
    sk_log(SK_LOG_WARN, "test", "server said: %s", "tok%2Fen%2BAb%20c%22d%C3%A9");
    tap(strcmp(logged, "server said: " SK_REDACTED) == 0, "a log line is redacted: %s", logged);
    sk_log_set_sink(NULL, NULL);

    /* two holders, then releases */
    tap(sk_secret_hold(SECRET) == 0, "hold twice");
    sk_secret_release(SECRET);
    tap(sk_redact_needed(NULL, SECRET, strlen(SECRET)), "still held after one release");
    sk_secret_release(SECRET);
    tap(!sk_redact_needed(NULL, SECRET, strlen(SECRET)), "released");

    /* errors: message, nested strings, nested keys; top-level keys kept */
    tap(sk_secret_hold("env-value-1234") == 0 && sk_secret_hold("an env/value") == 0, "hold env values");
    json_t *env = json_pack("{s:s,s:s}", "A", "first value", "B", "second value");
    tap(sk_secret_hold_env(&env, env) == 0 && sk_redact_needed(&env, "x second value", 14) &&
            !sk_redact_needed(&other_scope, "x second value", 14), "hold an env table: in its own scope only");
    sk_error *e = sk_error_new(
        SK_ERR_PLATFORM_API,
        json_pack("{s:i,s:s,s:{s:[s,s],s:s}}", "status", 400, "body", "{\"env\":{\"K\":\"an env\\/value\"}}",
                  "details", "list", "ok", "xx env-value-1234 xx", "an env/value", "key is secret"),
        "%s", "Platform proxy request failed with 400: bad env an env/value and env%2Dvalue%2D1234");
    sk_error_redact(NULL, e);
    char *all = json_dumps(e->fields, JSON_SORT_KEYS | JSON_ENSURE_ASCII);
    tap(e && !strstr(e->message, "env/value") && !strstr(e->message, "1234") && strstr(e->message, SK_REDACTED),
        "error message redacted: %s", e ? e->message : "");
    tap(all && !strstr(all, "value") && !strstr(all, "1234") && strstr(all, "\"status\": 400") &&
            strstr(all, "\"body\""),
        "every field string and nested key redacted, top-level keys kept: %s", all ? all : "");
    free(all);
    sk_error_free(e);
    sk_secret_release_env(&env, env);
    tap(!sk_redact_needed(NULL, "x second value", 14), "env table released");
    json_decref(env);
    sk_secret_release("env-value-1234");
    sk_secret_release("an env/value");
    sk_error_redact(NULL, NULL);

    printf("1..%d\n", tap_n);
    return tap_failed != 0;
}
