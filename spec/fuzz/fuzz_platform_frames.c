/* libFuzzer target: the PlatformSandbox exec data plane's parsing — the
 * WebSocket messages of one command (tagged binary output frames, JSON
 * text frames with the exit frame) and the exec-lease JSON — plus the
 * ISO-8601 reader and encodeURIComponent it relies on.
 * The file under test is included, so its static parsers are reachable
 * with a bare process and no socket (keep in step with platform_exec.c).
 * Input: frames, each [flags][len lo][len hi][len bytes]; flags bit 0 =
 * binary; flags bit 1 = the frame is also parsed as an exec lease.
 * Properties beyond "no crash, no leak, no UB":
 *  - stdout/stderr are exactly the tag 1/3 payloads that came before the
 *    first exit frame, in order; nothing is delivered after it;
 *  - the process finishes exactly when an exit frame arrives, with its
 *    exit code when that is a number an int can hold;
 *  - a parsed lease has a jwt and an endpoint. */
#include "providers/platform/platform_exec.c"

#include <limits.h>
#include <stdint.h>

static bool fuzz_exit_frame(const uint8_t *d, size_t n, bool *has_code, double *code)
{
    json_t *j = json_loadb((const char *)d, n, 0, NULL);
    const char *type = json_string_value(json_object_get(j, "type"));
    bool is_exit = type && strcmp(type, "exit") == 0;
    json_t *c = json_object_get(json_object_get(j, "data"), "exit_code");
    *has_code = json_is_number(c);
    *code = json_number_value(c);
    json_decref(j);
    return is_exit;
}

static void fuzz_lease(const uint8_t *d, size_t n)
{
    json_t *j = json_loadb((const char *)d, n, 0, NULL);
    if (!j)
        return;
    sk_error *err = NULL;
    platform_lease *l = lease_parse(j, &err);
    if (l) {
        if (!l->jwt[0] || !l->ws_endpoint[0] || !l->subprotocol[0] || err)
            abort();
        (void)lease_fresh(l);
        sk_platform_lease_unref(l);
    } else if (!err) {
        abort();
    }
    sk_error_free(err);
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sk_process *p = calloc(1, sizeof *p);
    p->capture = true;
    p->max_output = SK_MAX_OUTPUT_DEFAULT; /* as sk_process_new sets it from the options */
    p->refs = 1;
    platform_exec ex = { .p = p };
    platform_conn conn = { .ex = &ex };
    sk_buf want_out = { 0 }, want_err = { 0 };
    bool exited = false, has_code = false;
    double code = 0;

    size_t off = 0;
    while (off + 3 <= size) {
        uint8_t flags = data[off];
        size_t len = (size_t)data[off + 1] | (size_t)data[off + 2] << 8;
        off += 3;
        if (len > size - off)
            len = size - off;
        const uint8_t *f = data + off;
        off += len;
        if (flags & 2)
            fuzz_lease(f, len);
        /* the socket layer hands over a copy: an exact-length buffer lets
         * ASan see any read past the frame */
        char *copy = malloc(len ? len : 1);
        memcpy(copy, f, len);
        bool binary = flags & 1;
        if (!exited) {
            if (binary && len > 1 && (f[0] == EXEC_TAG_STDOUT || f[0] == EXEC_TAG_STDERR))
                sk_buf_append(f[0] == EXEC_TAG_STDOUT ? &want_out : &want_err, f + 1, len - 1);
            else if (!binary)
                exited = fuzz_exit_frame(f, len, &has_code, &code);
        }
        conn_on_message(NULL, binary, copy, len, &conn);
        free(copy);
        if (p->exited != exited)
            abort();
    }

    if (p->out.len != want_out.len || (want_out.len && memcmp(p->out.data, want_out.data, want_out.len)) ||
        p->err.len != want_err.len || (want_err.len && memcmp(p->err.data, want_err.data, want_err.len)))
        abort();
    if (exited && !p->error) {
        int expect = has_code && code >= INT_MIN && code <= INT_MAX ? (int)code : p->result.exit_code;
        if (p->result.exit_code != expect)
            abort();
    }

    /* the helpers the lease and request paths use */
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    double ms;
    (void)sk_platform_parse_iso(s, &ms);
    free(sk_platform_enc(s));
    free(s);

    sk_buf_free(&want_out);
    sk_buf_free(&want_err);
    sk_process_unref(p);
    return 0;
}
