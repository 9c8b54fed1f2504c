/* Typed errors; see error.h. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

sk_error *sk_error_new(const char *kind, json_t *fields, const char *fmt, ...)
{
    sk_error *e = calloc(1, sizeof *e);
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&msg, fmt, ap);
    va_end(ap);
    if (!e || n < 0 || !(e->kind = strdup(kind))) {
        free(e);
        if (n >= 0)
            free(msg);
        json_decref(fields);
        return NULL;
    }
    e->message = msg;
    e->fields = fields;
    return e;
}

sk_error *sk_error_copy(const sk_error *src)
{
    if (!src)
        return NULL;
    sk_error *e = sk_error_new(src->kind, src->fields ? json_deep_copy(src->fields) : NULL, "%s",
                               src->message);
    return e;
}

void sk_error_free(sk_error *e)
{
    if (!e)
        return;
    free(e->kind);
    free(e->message);
    json_decref(e->fields);
    free(e);
}

void sk_error_set(sk_error *e, const char *key, json_t *value)
{
    if (!e) {
        json_decref(value);
        return;
    }
    if (!e->fields)
        e->fields = json_object();
    json_object_set_new(e->fields, key, value);
}

sk_error *sk_error_oom(void) { return sk_error_new("OutOfMemoryError", NULL, "out of memory"); }
