/* A small strict TOML 1.0 reader, enough for ~/.modal.toml and for not
 * choking on whatever else a user keeps in that file.
 *
 * Why not a library: Debian 12 packages no C TOML parser (apt-cache search
 * toml lists only C++ ones, libcpptoml-dev and libtoml11-dev, and tomlc99 is
 * not packaged), and the core is C11 with jansson already linked.
 *
 * Supported: tables [a.b], arrays of tables [[a]], dotted / bare / quoted
 * keys, basic and literal strings (single- and multi-line, all TOML 1.0
 * escapes), integers (decimal, 0x, 0o, 0b, underscores), floats, booleans,
 * arrays, inline tables, comments. Date-times are checked for shape and
 * returned as their text. inf and nan are rejected (JSON has no such
 * number). The redefinition rules are enforced (duplicate keys, tables
 * defined twice, extending inline tables or dotted-key tables by header).
 * Input must be UTF-8; a leading BOM is skipped. */
#ifndef SK_TOML_H
#define SK_TOML_H

#include <stddef.h>
#include <jansson.h>

/* Parses text (len bytes; need not be NUL-terminated; NUL bytes are an
 * error). Returns a new JSON object (tables become objects, in document
 * order), or NULL with a message "line N: ..." in err (errlen bytes,
 * always NUL-terminated when errlen > 0). */
json_t *sk_toml_parse(const char *text, size_t len, char *err, size_t errlen);

#endif
