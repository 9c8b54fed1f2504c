/* AppleContainerSandbox options: parsing and validation, the config-hash
 * label, the `container run` argv (docs/protocols/apple-container.md §2, §2.1, §4.2), and what info()
 * and instructions() report. No I/O. */
#ifndef SK_APPLE_CONTAINER_CONFIG_H
#define SK_APPLE_CONTAINER_CONFIG_H

#include <stdarg.h>
#include <stdbool.h>
#include <jansson.h>
#include "../../buf.h"
#include "../../error.h"

#define AC_DEFAULT_IMAGE "node:22-slim"
#define AC_DEFAULT_WORKDIR "/workspace"
#define AC_DEFAULT_BINARY "container"
#define AC_DEFAULT_TIMEOUT_MS 300000.0

/* A growable NULL-terminated string vector (argv). */
typedef struct ac_strv {
    char **v;
    size_t n, cap;
    bool failed; /* ENOMEM on some push */
} ac_strv;

/* fmt with ap, malloc'd; NULL when out of memory. */
char *sk_ac_vformat(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
void sk_ac_strv_push(ac_strv *a, const char *s);
void sk_ac_strv_pushf(ac_strv *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sk_ac_strv_free(ac_strv *a);

typedef struct ac_config {
    char *id;              /* the sandbox id (labels) */
    char *container_name;  /* sanitised name option, else id */
    char *configured_name; /* the name option, or NULL */
    char *image;
    char *working_dir;     /* working_directory ?? working_dir ?? /workspace */
    char *binary;          /* container_binary ?? "container" */
    /* lists (JSON arrays of strings) and maps (JSON objects of strings);
     * always present, possibly empty; owned */
    json_t *command, *mounts, *published_ports, *published_sockets, *cap_add, *cap_drop, *tmpfs, *dns,
        *dns_search;
    json_t *env, *volumes, *labels;
    json_t *cpus;          /* number or string; NULL when unset */
    char *network, *memory, *platform, *arch, *os; /* NULL when unset */
    bool rosetta, readonly_rootfs, ssh, init, virtualization, no_dns, delete_on_destroy;
    double timeout_ms;     /* 0: none */
    char hash[17];         /* mastra.sandbox.config-hash */
} ac_config;

/* Reads options (types already checked by the Lua descriptor; values are
 * checked here). id is the sandbox id. 0, or -1 with *err (ConfigError). */
int sk_ac_config_parse(ac_config *c, const char *id, const json_t *opts, sk_error **err);
void sk_ac_config_free(ac_config *c);

/* The canonical string hashed for the config-hash label (malloc'd). */
char *sk_ac_config_canonical(const ac_config *c);
/* Lowercase hex SHA-256 of data into hex (65 bytes with the NUL); -1 when
 * libcrypto fails. */
int sk_ac_config_sha256_hex(const void *data, size_t len, char hex[65]);

/* `[^A-Za-z0-9_.-]` -> '-', then a "c-" prefix unless it starts with an
 * alphanumeric character. malloc'd. */
char *sk_ac_sanitize_name(const char *name);
/* ^[A-Za-z_][A-Za-z0-9_]*$ */
bool sk_ac_env_name_ok(const char *name);

/* Keys of obj sorted by UTF-16 code units (JavaScript's default sort), as a
 * NULL-terminated array of borrowed strings (free the array only). */
const char **sk_ac_sorted_keys(const json_t *obj);

/* JavaScript's String(number) for a JSON number (integer or real). */
int sk_ac_js_number(sk_buf *out, const json_t *num);

/* `container run` argv (without the binary) and the env map whose names
 * appear as bare `--env KEY` flags (new reference). 0, or -1 on ENOMEM. */
int sk_ac_run_argv(const ac_config *c, ac_strv *argv, json_t **env);

/* info().metadata: the compacted serialisable configuration (snake_case, env
 * values left out); new reference. */
json_t *sk_ac_config_metadata(const ac_config *c);
/* The default instructions text (malloc'd). */
char *sk_ac_config_instructions(const ac_config *c);

#endif
