/* Modal client configuration, resolved as the JS SDK 0.7.x does
 * (docs/protocols/modal.md §1.1), plus the JWT `exp` reader the token refresh needs
 * (docs/protocols/modal.md §1.5, §1.8).
 *
 * sk_modal_config_resolve is pure: the environment comes through a lookup
 * function and the config file as text. sk_modal_config_load is the thin
 * loader that reads the real environment and file.
 *
 * Precedence per field: environment variable, then the profile's key, then
 * the default; afterwards non-empty token_id / token_secret / environment
 * options override. Empty values count as missing everywhere (the SDK uses
 * `||`). Profile = MODAL_PROFILE if non-empty, else the first table with a
 * truthy `active`; an unknown profile, a missing or unparsable file all give
 * empty profile data, silently. Profile keys are used only when they are
 * non-empty strings. */
#ifndef SK_MODAL_CONFIG_H
#define SK_MODAL_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#define SK_MODAL_DEFAULT_SERVER_URL "https://api.modal.com:443"
#define SK_MODAL_DEFAULT_IMAGE_BUILDER_VERSION "2024.10"
/* Config files above this size are treated as unparsable. */
#define SK_MODAL_CONFIG_MAX_FILE (1024 * 1024)

typedef struct sk_modal_config {
    char *server_url;            /* never NULL */
    char *token_id;              /* NULL when missing (every RPC must then fail) */
    char *token_secret;          /* NULL when missing; never log it */
    char *environment;           /* never NULL; "" lets the server pick */
    char *image_builder_version; /* never NULL */
    char *loglevel;              /* NULL when unset */
    char *profile;               /* the profile used, NULL when none */
    int64_t max_throttle_wait;   /* MODAL_MAX_THROTTLE_WAIT seconds; -1 = unset (unlimited) */
    char *ca_file;               /* ModalSandbox option: PEM roots for TLS; NULL = system roots */
} sk_modal_config;

typedef struct sk_modal_config_opts {
    const char *token_id, *token_secret, *environment; /* NULL or "" = not given */
} sk_modal_config_opts;

/* Returns the variable's value or NULL. */
typedef const char *(*sk_modal_getenv_fn)(const char *name, void *ud);

/* toml/toml_len: the config file's contents, NULL when there is no file.
 * opts may be NULL. 0, or -1 on ENOMEM (out is then empty: all NULL). */
int sk_modal_config_resolve(const sk_modal_config_opts *opts, sk_modal_getenv_fn getenv_fn, void *ud,
                            const char *toml, size_t toml_len, sk_modal_config *out);
/* The file to read: MODAL_CONFIG_PATH if non-empty, else $HOME/.modal.toml
 * (the password database when HOME is unset). Fresh string, NULL on ENOMEM
 * or when no home directory is known. */
char *sk_modal_config_path(sk_modal_getenv_fn getenv_fn, void *ud);
/* Reads the process environment and the file (synchronously: it is small
 * and read once per client, as the SDK does), then resolves. */
int sk_modal_config_load(const sk_modal_config_opts *opts, sk_modal_config *out);
void sk_modal_config_free(sk_modal_config *c);
/* "token_id" or "token_secret" when that credential is missing, else NULL. */
const char *sk_modal_config_missing(const sk_modal_config *c);

/* The `exp` claim (seconds since the epoch) of a three-segment JWT whose
 * payload is base64 (standard or URL-safe, padding optional) JSON. 0, or -1
 * when there is none: not three segments, undecodable, not an object, exp
 * missing, not a positive number. The caller then assumes now + 1200 s
 * (control plane) or "unknown" (router). */
int sk_jwt_exp(const char *jwt, int64_t *exp);

#endif
