/* libFuzzer target: the TOML reader, the Modal config resolution on top of
 * it, and the JWT exp reader.
 * Properties checked beyond "no crash, no leak, no over-read":
 *  - a successful parse is an object that jansson can serialize (so every
 *    string is valid UTF-8);
 *  - a failed parse always says "line N: ..." with N within the input;
 *  - resolution always yields a server URL, environment and builder version.
 * Build: clang -g -O1 -fsanitize=fuzzer,address,undefined -Isrc/core \
 *   spec/fuzz/fuzz_toml.c src/core/providers/modal/toml.c src/core/providers/modal/modal_config.c \
 *   src/core/grpc_frame.c src/core/buf.c -ljansson -lm */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "providers/modal/modal_config.h"
#include "providers/modal/toml.h"

static const char *fuzz_getenv(const char *name, void *ud)
{
    (void)ud;
    return strcmp(name, "MODAL_TOKEN_SECRET") == 0 ? "from-env" : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    char err[256];
    json_t *doc = sk_toml_parse(text, size, err, sizeof err);
    if (doc) {
        if (!json_is_object(doc))
            abort();
        char *dump = json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!dump)
            abort();
        free(dump);
        json_decref(doc);
    } else {
        unsigned line = 0;
        size_t lines = 1;
        for (size_t i = 0; i < size; i++)
            lines += data[i] == '\n';
        if (sscanf(err, "line %u: ", &line) != 1 || line < 1 || line > lines)
            abort();
    }

    sk_modal_config c;
    if (sk_modal_config_resolve(NULL, fuzz_getenv, NULL, text, size, &c) == 0) {
        if (!c.server_url || !c.environment || !c.image_builder_version || !c.token_secret)
            abort();
        sk_modal_config_free(&c);
    }

    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    int64_t exp;
    if (sk_jwt_exp(s, &exp) == 0 && exp <= 0)
        abort();
    free(s);
    return 0;
}
