/* libFuzzer target: what AppleContainerSandbox makes of `container inspect`
 * output (both shapes, docs/protocols/apple-container.md §7) — the parse, the
 * ownership and config-hash checks, the state, the resources for info() — and
 * of a failed call's
 * stderr. The provider file is included, so its static functions are
 * reachable without a CLI (keep in step with apple_container.c).
 * Input: [flags][output]; flags bit 0 = the call succeeded (output is its
 * stdout) else it failed (output is its stderr); bit 1 = check only the
 * owner labels.
 * Properties beyond "no crash, no leak, no UB": exactly one of item / error
 * / missing; an error carries its fields (exit code, output, argv), also
 * for output that is not UTF-8; a container whose labels name another
 * sandbox is refused. */
#include "providers/apple_container/apple_container.c"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static ac_sandbox as;
    static bool ready;
    if (!ready) {
        sk_error *err = NULL;
        json_t *opts = json_object();
        if (sk_ac_config_parse(&as.cfg, "fuzz-sandbox", opts, &err) != 0)
            abort();
        json_decref(opts);
        ready = true;
    }
    ac_op op = { .as = &as };
    sk_ac_strv_push(&op.argv, "inspect");
    sk_ac_strv_push(&op.argv, as.cfg.container_name);

    /* the CLI runner hands over NUL-terminated output */
    char *out = malloc(size);
    memcpy(out, data + 1, size - 1);
    out[size - 1] = '\0';
    bool success = data[0] & 1;
    ac_cli_result r = {
        .exit_code = success ? 0 : 1,
        .success = success,
        .stdout_data = success ? out : "",
        .stdout_len = success ? size - 1 : 0,
        .stderr_data = success ? "" : out,
        .stderr_len = success ? 0 : size - 1,
    };
    json_t *item = NULL;
    sk_error *err = NULL;
    inspect_outcome oc = ac_inspect_parse(&op, &r, &item, &err);
    if ((oc == INSPECT_PRESENT) != (item != NULL) || (oc == INSPECT_FAILED) != (err != NULL))
        abort();
    if (err && (!err->fields || !json_is_integer(json_object_get(err->fields, "exit_code"))))
        abort();
    sk_error_free(err);
    if (item) {
        err = ac_check_owner(&op, item, data[0] & 2);
        const char *id = ac_label(item, "mastra.sandbox.id"), *mine = ac_label(item, "mastra.sandbox");
        bool owned = id && mine && strcmp(id, as.cfg.id) == 0 && strcmp(mine, "true") == 0;
        if (!owned && !err)
            abort();
        sk_error_free(err);
        (void)ac_running(item);
        ac_remember_resources(&as, item);
        json_decref(item);
    }
    json_decref(as.resources);
    as.resources = NULL;
    sk_ac_strv_free(&op.argv);
    free(out);
    return 0;
}
