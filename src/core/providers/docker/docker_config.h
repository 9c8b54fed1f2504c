/* DockerSandbox's options as upstream's @mastra/docker 0.3.0 reads them
 * (docs/protocols/docker.md §5): the container name, the labels, the
 * create body, info() metadata and the default instructions. */
#ifndef SK_DOCKER_CONFIG_H
#define SK_DOCKER_CONFIG_H

#include <stdbool.h>
#include <jansson.h>

#include "../../error.h"

typedef enum { DK_PULL_MISSING, DK_PULL_NEVER } dk_pull;

typedef struct dk_config {
    const json_t *options;   /* the sandbox's (borrowed; it outlives the config) */
    char *id;
    char *container_name;    /* sanitised (upstream's sanitizeContainerName) */
    char *image;
    char *working_dir;
    json_t *labels;          /* the given ones plus mastra.sandbox and mastra.sandbox.id */
    dk_pull pull;
    const char *docker_host; /* option, or NULL (borrowed from options) */
    long api_timeout_ms;
} dk_config;

#define DK_DEFAULT_IMAGE "node:22-slim"
#define DK_DEFAULT_WORKING_DIR "/workspace"
#define DK_DEFAULT_API_TIMEOUT_MS 60000L

int sk_dk_config_parse(dk_config *c, const char *id, const json_t *options, sk_error **err);
void sk_dk_config_free(dk_config *c);
/* upstream: characters outside [a-zA-Z0-9_.-] become '-', "s-" before a
 * first character that is not alphanumeric, "-sandbox" after a name shorter
 * than 2 (malloc'd). */
char *sk_dk_sanitize_name(const char *value);
/* POST /containers/create's body; env: the sandbox's env (values are
 * secrets: the body is wiped after sending). New reference. */
json_t *sk_dk_create_body(const dk_config *c, const json_t *env);
/* The ports option as ExposedPorts (into body) and PortBindings (into
 * host); 0 or -1 (ENOMEM). docker_ports.c */
int sk_dk_ports_apply(json_t *body, json_t *host, const json_t *ports);
/* "K=V" strings of env (an array), NULL for an empty env. */
json_t *sk_dk_env_array(const json_t *env);
/* dockerode's parseRepoTag: fromImage and tag ("latest" when none). */
int sk_dk_split_image(const char *image, char **repo, char **tag);
json_t *sk_dk_config_metadata(const dk_config *c);
char *sk_dk_config_instructions(const dk_config *c);

#endif
