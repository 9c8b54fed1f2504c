/* Typed errors; see error.h. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct kind_row {
    const char *name, *fields, *doc;
} kind_row;

static const kind_row kind_rows[SK_ERR_KIND_COUNT] = {
#define SK_ERROR_KIND_ROW(id, name, fields, doc) [SK_ERR_##id] = {#name, fields, doc},
    SK_ERROR_KINDS(SK_ERROR_KIND_ROW)
#undef SK_ERROR_KIND_ROW
};

static const kind_row *kind_row_of(sk_error_kind kind)
{
    return kind > SK_ERR_NONE && kind < SK_ERR_KIND_COUNT ? &kind_rows[kind] : NULL;
}

const char *sk_error_kind_name(sk_error_kind kind)
{
    const kind_row *r = kind_row_of(kind);
    return r ? r->name : NULL;
}

const char *sk_error_kind_fields(sk_error_kind kind)
{
    const kind_row *r = kind_row_of(kind);
    return r ? r->fields : NULL;
}

const char *sk_error_kind_doc(sk_error_kind kind)
{
    const kind_row *r = kind_row_of(kind);
    return r ? r->doc : NULL;
}

sk_error *sk_error_new(sk_error_kind kind, json_t *fields, const char *fmt, ...)
{
    sk_error *e = calloc(1, sizeof *e);
    char *msg = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&msg, fmt, ap);
    va_end(ap);
    if (!e || n < 0) {
        free(e);
        if (n >= 0)
            free(msg);
        json_decref(fields);
        return NULL;
    }
    e->kind = kind;
    e->message = msg;
    e->fields = fields;
    return e;
}

sk_error *sk_error_copy(const sk_error *src)
{
    if (!src)
        return NULL;
    return sk_error_new(src->kind, src->fields ? json_deep_copy(src->fields) : NULL, "%s", src->message);
}

void sk_error_free(sk_error *e)
{
    if (!e)
        return;
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

sk_error *sk_error_oom(void) { return sk_error_new(SK_ERR_OUT_OF_MEMORY, NULL, "out of memory"); }
