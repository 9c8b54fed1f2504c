/* DockerSandbox's option helpers against upstream's @mastra/docker 0.3.0
 * (docs/protocols/docker.md §5): the container name (sanitizeContainerName,
 * per UTF-16 code unit as JavaScript replaces), dockerode's image split
 * (parseRepoTag), and the create body (fields left out when not given,
 * the forced labels, Ulimits in Docker's case). */
#include <stdlib.h>
#include <string.h>

#include "providers/docker/docker_config.h"

#include "tap.h"

static void name_is(const char *in, const char *want)
{
    char *got = sk_dk_sanitize_name(in);
    tap(got && strcmp(got, want) == 0, "sanitize '%s' -> '%s' (got '%s')", in, want, got ? got : "(null)");
    free(got);
}

static void split_is(const char *image, const char *repo, const char *tag)
{
    char *r = NULL, *t = NULL;
    int rc = sk_dk_split_image(image, &r, &t);
    tap(rc == 0 && strcmp(r, repo) == 0 && strcmp(t, tag) == 0, "split '%s' -> '%s' + '%s' (got '%s' + '%s')", image,
        repo, tag, r ? r : "", t ? t : "");
    free(r);
    free(t);
}

/* got equals want (which is released) */
static int same(const json_t *got, json_t *want)
{
    int eq = json_equal(got, want);
    json_decref(want);
    return eq;
}

static void body_checks(void)
{
    json_t *o = json_pack("{s:s,s:s,s:{s:s},s:I,s:b,s:[{s:s,s:i,s:i}],s:[],s:{s:s}}", "image", "alpine:3", "name", "Box 1",
                          "labels", "team", "qa", "memory", (json_int_t)1 << 26, "readonly_rootfs", 0, "ulimits", "name",
                          "nofile", "soft", 10, "hard", 20, "cap_drop", "volumes", "/h", "/c");
    dk_config c;
    sk_error *err = NULL;
    tap(sk_dk_config_parse(&c, "sb-1", o, &err) == 0, "config parses");
    json_t *env = json_pack("{s:s}", "A", "1");
    json_t *b = sk_dk_create_body(&c, env);
    json_t *h = json_object_get(b, "HostConfig");
    tap(strcmp(c.container_name, "Box-1") == 0, "container name from the name option");
    tap(strcmp(json_string_value(json_object_get(b, "Image")), "alpine:3") == 0, "Image");
    tap(same(json_object_get(b, "Cmd"), json_pack("[s,s]", "sleep", "infinity")), "Cmd defaults to sleep infinity");
    tap(same(json_object_get(b, "Env"), json_pack("[s]", "A=1")), "Env as K=V");
    tap(strcmp(json_string_value(json_object_get(b, "WorkingDir")), "/workspace") == 0, "WorkingDir /workspace");
    json_t *labels = json_object_get(b, "Labels");
    tap(json_object_size(labels) == 3 && strcmp(json_string_value(json_object_get(labels, "mastra.sandbox")), "true") == 0 &&
            strcmp(json_string_value(json_object_get(labels, "mastra.sandbox.id")), "sb-1") == 0,
        "labels: given plus mastra.sandbox and mastra.sandbox.id");
    tap(json_is_true(json_object_get(b, "OpenStdin")) && json_is_false(json_object_get(b, "Tty")), "OpenStdin, no Tty");
    tap(json_integer_value(json_object_get(h, "Memory")) == (json_int_t)1 << 26, "HostConfig.Memory");
    tap(json_is_false(json_object_get(h, "ReadonlyRootfs")), "ReadonlyRootfs false when given false");
    tap(json_is_false(json_object_get(h, "Privileged")), "Privileged false by default");
    tap(same(json_object_get(h, "Ulimits"), json_pack("[{s:s,s:i,s:i}]", "Name", "nofile", "Soft", 10, "Hard", 20)),
        "Ulimits in Docker's case");
    tap(same(json_object_get(h, "Binds"), json_pack("[s]", "/h:/c")), "Binds host:container");
    tap(json_is_array(json_object_get(h, "CapDrop")) && json_array_size(json_object_get(h, "CapDrop")) == 0,
        "an empty cap_drop is an empty array");
    tap(!json_object_get(h, "NetworkMode") && !json_object_get(h, "PidsLimit") && !json_object_get(h, "Tmpfs") &&
            !json_object_get(h, "CapAdd"),
        "options not given are left out");
    char *ins = sk_dk_config_instructions(&c);
    tap(ins && strcmp(ins, "You are working inside a Docker container (image: alpine:3).\n"
                           "The working directory is /workspace.\n"
                           "You can execute shell commands using executeCommand().\n"
                           "You can spawn background processes using processes.spawn().") == 0,
        "instructions: upstream's text");
    free(ins);
    json_decref(b);
    json_decref(env);
    sk_dk_config_free(&c);
    json_decref(o);
}

int main(void)
{
    name_is("docker-sandbox-abc-123456", "docker-sandbox-abc-123456");
    name_is("Spec Box/1", "Spec-Box-1");
    name_is("_under", "s-_under");
    name_is("-dash", "s--dash");
    name_is("a", "a-sandbox");
    name_is("", "s-");
    name_is("x", "x-sandbox");
    name_is("caf\xc3\xa9", "caf-");          /* one BMP character: one '-' */
    name_is("\xe2\x82\xac" "1", "s--1");     /* euro sign first: prefixed */
    name_is("a\xf0\x9f\x98\x80", "a--");     /* outside the BMP: two units */
    name_is("a\xff", "a-");                  /* not UTF-8: a unit per byte */
    split_is("node:22-slim", "node", "22-slim");
    split_is("node", "node", "latest");
    split_is("localhost:5000/app", "localhost:5000/app", "latest");
    split_is("localhost:5000/app:1", "localhost:5000/app", "1");
    split_is("app@sha256:abc", "app", "sha256:abc");
    body_checks();
    printf("1..%d\n", tap_n);
    return tap_failed != 0;
}
