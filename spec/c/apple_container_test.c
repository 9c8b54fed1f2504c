/* AppleContainerSandbox's C helpers: the config-hash test vectors of
 * docs/protocols/apple-container.md §2.1, JavaScript number and seconds
 * formatting, name sanitising, upstream's shell quoting, the timeout wrapper
 * run by a real /bin/sh, the marker filter, and upstream's runner cases
 * (runAppleContainerCli, docs/protocols/apple-container.md §3) with /bin/sh
 * standing in for the CLI. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "buf.h"
#include "loop.h"
#include "providers/apple_container/apple_container_cli.h"
#include "providers/apple_container/apple_container_config.h"
#include "providers/apple_container/apple_container_shell.h"

#include "tap.h"

/* ---- config hash ----------------------------------------------------------- */

static void check_hash(const char *name, const char *options_json, const char *want_hash, const char *want_canon)
{
    json_error_t jerr;
    json_t *o = json_loads(options_json, 0, &jerr);
    ac_config c;
    sk_error *err = NULL;
    int rc = sk_ac_config_parse(&c, "apple-test", o, &err);
    char *canon = rc == 0 ? sk_ac_config_canonical(&c) : NULL;
    tap(rc == 0 && strcmp(c.hash, want_hash) == 0, "hash %s = %s (got %s)", name, want_hash, rc == 0 ? c.hash : "error");
    if (want_canon)
        tap(canon && strcmp(canon, want_canon) == 0, "canonical %s: %s", name, canon ? canon : "(null)");
    free(canon);
    sk_error_free(err);
    sk_ac_config_free(&c);
    json_decref(o);
}

static void test_hash(void)
{
    char hex[65];
    tap(sk_ac_config_sha256_hex("abc", 3, hex) == 0 && strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0, "sha256(abc)");
    tap(sk_ac_config_sha256_hex("", 0, hex) == 0 && strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") == 0, "sha256('')");
    char big[1000];
    memset(big, 'a', sizeof big);
    tap(sk_ac_config_sha256_hex(big, sizeof big, hex) == 0 && strcmp(hex, "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3") == 0, "sha256(a x 1000)");

    check_hash("all defaults", "{}", "dd262544bdd1d32c",
               "{\"command\":[\"sleep\",\"infinity\"],\"image\":\"node:22-slim\",\"init\":true,\"noDns\":false,"
               "\"readonlyRootfs\":false,\"rosetta\":false,\"ssh\":false,\"virtualization\":false,"
               "\"workingDir\":\"/workspace\"}");
    check_hash("alpine", "{\"image\":\"alpine:3.20\",\"command\":[\"sleep\",\"3600\"],\"working_dir\":\"/\"}",
               "850d57fb631c6ffa", NULL);
    check_hash("cpus 2", "{\"cpus\":2}", "dc2354af7cb1a6dc", NULL);
    check_hash("cpus \"2\"", "{\"cpus\":\"2\"}", "b498e047c23b158b", NULL);
    check_hash("env + label", "{\"env\":{\"NODE_ENV\":\"test\"},\"labels\":{\"app\":\"mastra\"}}", "6cd3225bc40271c2",
               NULL);
    /* rules the vectors do not reach */
    check_hash("cpus 2.0 is 2", "{\"cpus\":2.0}", "dc2354af7cb1a6dc", NULL);
    check_hash("empty lists and maps compact away", "{\"env\":{},\"mounts\":[],\"labels\":[]}", "dd262544bdd1d32c", NULL);
    check_hash("working_directory wins, same hash as working_dir", "{\"working_directory\":\"/\",\"working_dir\":\"/x\","
               "\"image\":\"alpine:3.20\",\"command\":[\"sleep\",\"3600\"]}", "850d57fb631c6ffa", NULL);
    check_hash("not hashed: id, name, timeout, delete_on_destroy, container_binary",
               "{\"name\":\"x\",\"timeout\":5,\"delete_on_destroy\":false,\"container_binary\":\"/c\"}",
               "dd262544bdd1d32c", NULL);
    json_t *o = json_loads("{\"network\":\"\",\"cpus\":1.5,\"labels\":{\"\xf0\x9f\x98\x80\":\"1\",\"\xef\xbd\x81\":\"2\","
                           "\"q\\\"\\n\":\"3\"}}",
                           0, NULL);
    ac_config c;
    sk_error *err = NULL;
    char *canon = sk_ac_config_parse(&c, "i", o, &err) == 0 ? sk_ac_config_canonical(&c) : NULL;
    /* JS sorts by UTF-16 code units: U+1F600 (surrogates D83D..) before U+FF41 */
    tap(canon && strstr(canon, "\"cpus\":1.5") && strstr(canon, "\"network\":\"\"") &&
            strstr(canon, "\"labels\":{\"q\\\"\\n\":\"3\",\"\xf0\x9f\x98\x80\":\"1\",\"\xef\xbd\x81\":\"2\"}"),
        "canonical: empty network kept, 1.5, JSON escapes, UTF-16 key order: %s", canon ? canon : "(null)");
    free(canon);
    sk_error_free(err);
    sk_ac_config_free(&c);
    json_decref(o);
}

/* ---- formatting ------------------------------------------------------------ */

static void test_numbers(void)
{
    static const struct {
        double v;
        const char *want;
    } cases[] = {
        { 2, "2" }, { 1.5, "1.5" }, { 0.1, "0.1" }, { 1e21, "1e+21" }, { 1e-7, "1e-7" }, { 123456789012, "123456789012" },
        { 0.000001, "0.000001" }, { 1.25e-7, "1.25e-7" }, { -3.5, "-3.5" }, { 0.30000000000000004, "0.30000000000000004" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *n = json_real(cases[i].v);
        sk_buf b = { 0 };
        sk_ac_js_number(&b, n);
        tap(b.len && strcmp(b.data, cases[i].want) == 0, "String(%.17g) = %s (got %s)", cases[i].v, cases[i].want,
            b.len ? b.data : "");
        sk_buf_free(&b);
        json_decref(n);
    }
    static const struct {
        double ms;
        const char *want;
    } secs[] = { { 1234, "1.234" }, { 10, "0.01" }, { 100, "0.1" }, { 300000, "300" }, { 1500, "1.5" }, { 0.5, "0.001" },
                 { 62.5, "0.063" }, { 1, "0.001" } };
    for (size_t i = 0; i < sizeof secs / sizeof secs[0]; i++) {
        char out[32];
        sk_ac_timeout_seconds(secs[i].ms, out);
        tap(strcmp(out, secs[i].want) == 0, "seconds(%g ms) = %s (got %s)", secs[i].ms, secs[i].want, out);
    }
}

static void test_names_and_quoting(void)
{
    static const char *const names[][2] = {
        { "my project/1", "my-project-1" }, { "_x", "c-_x" }, { "apple-test", "apple-test" }, { "", "c-" },
        { "\xc3\xa9t\xc3\xa9", "c--t-" }, { "a\xf0\x9f\x98\x80", "a--" }, { ".hidden", "c-.hidden" },
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char *s = sk_ac_sanitize_name(names[i][0]);
        tap(s && strcmp(s, names[i][1]) == 0, "sanitize '%s' = '%s' (got '%s')", names[i][0], names[i][1], s);
        free(s);
    }
    static const char *const words[][2] = {
        { "abc", "abc" }, { "a/b=c:d@e.f_g-h", "a/b=c:d@e.f_g-h" }, { "", "''" }, { "a b", "'a b'" },
        { "it's", "'it'\\''s'" }, { "a,b", "'a,b'" }, { "50%", "'50%'" },
    };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        sk_buf b = { 0 };
        sk_ac_shell_quote(&b, words[i][0], strlen(words[i][0]));
        tap(strcmp(b.len ? b.data : "", words[i][1]) == 0, "quote '%s' = %s", words[i][0], words[i][1]);
        sk_buf_free(&b);
    }
    tap(sk_ac_env_name_ok("A_1") && sk_ac_env_name_ok("_x") && !sk_ac_env_name_ok("1X") && !sk_ac_env_name_ok("A-B") &&
            !sk_ac_env_name_ok(""),
        "env names: ^[A-Za-z_][A-Za-z0-9_]*$");
}

/* ---- the wrapper under a real shell ------------------------------------------ */

/* Runs the wrapper for command with /bin/sh -lc; returns the exit status and
 * the stderr. */
static int run_wrapper(const char *command, double timeout_ms, char *err_out, size_t err_cap)
{
    char *script = sk_ac_timeout_script(command, timeout_ms, false);
    char path[] = "/tmp/ac-wrapper-XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fdopen(fd, "w");
    fputs(script, f);
    fclose(f);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "sh -c 'sh -lc \"$(cat %s)\"' 2>&1 1>/dev/null", path);
    FILE *p = popen(cmd, "r");
    size_t n = fread(err_out, 1, err_cap - 1, p);
    err_out[n] = '\0';
    int status = pclose(p);
    unlink(path);
    free(script);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_wrapper(void)
{
    char err[4096];
    int code = run_wrapper("exit 3", 5000, err, sizeof err);
    tap(code == 3 && !strstr(err, AC_TIMEOUT_MARKER), "wrapper passes an exit status through (%d)", code);
    code = run_wrapper("exit 124", 5000, err, sizeof err);
    tap(code == 124 && !strstr(err, AC_TIMEOUT_MARKER), "wrapper: a command's own 124 has no marker");
    code = run_wrapper("sleep 5", 100, err, sizeof err);
    tap(code == 124 && strstr(err, AC_TIMEOUT_MARKER "\n"), "wrapper: a timeout is 124 with the marker on stderr");
    code = run_wrapper("echo 'quote'\\''s'; printf %s \"$HOME\" >/dev/null", 5000, err, sizeof err);
    tap(code == 0, "wrapper quotes the command twice correctly");
    char *s = sk_ac_timeout_script("printf apple-container", 300000, false);
    tap(strncmp(s, "result_file=\"/tmp/.mastra-apple-container-exit-$$\"; rm -f \"$result_file\"; ", 73) == 0 &&
            strstr(s, "timeout 300s sh -lc 'sh -lc '\\''printf apple-container'\\'' & child=$!; trap '") &&
            strstr(s, "esac") == s + strlen(s) - 4,
        "wrapper text: result_file first, timeout 300s sh -lc, ends with the exit-code branch");
    free(s);
}

typedef struct collect {
    sk_buf out;
} collect;

static void collect_emit(void *ud, const char *d, size_t n) { sk_buf_append(&((collect *)ud)->out, d, n); }

static void test_marker(void)
{
    const char *chunks[] = { "Termi", "nated\n__MASTRA_APPLE", "_CONTAINER_TIMEOUT__", "\n" };
    ac_marker_filter f = { 0 };
    collect c = { 0 };
    for (int i = 0; i < 4; i++)
        sk_ac_marker_filter_feed(&f, chunks[i], strlen(chunks[i]), collect_emit, &c);
    bool seen = sk_ac_marker_filter_seen(&f);
    sk_ac_marker_filter_end(&f, true, collect_emit, &c);
    tap(seen && c.out.len && strcmp(c.out.data, "Terminated\n") == 0, "filter drops the marker line across chunks");
    sk_buf_reset(&c.out);
    const char *looks = "__MASTRA_APPLE_CONTAINER_TIMEOUT__ x\nnext";
    sk_ac_marker_filter_feed(&f, looks, strlen(looks), collect_emit, &c);
    sk_ac_marker_filter_end(&f, false, collect_emit, &c);
    tap(c.out.len && strcmp(c.out.data, "__MASTRA_APPLE_CONTAINER_TIMEOUT__ x\nnext") == 0,
        "filter passes a line that only starts like the marker");
    sk_buf_reset(&c.out);
    sk_ac_marker_filter_feed(&f, "  __MASTRA_APPLE_CONTAINER_TIMEOUT__\r\n", 38, collect_emit, &c);
    sk_ac_marker_filter_end(&f, false, collect_emit, &c);
    tap(c.out.len == 38, "filter releases held marker lines when it was no timeout");
    sk_ac_marker_filter_free(&f);
    sk_buf_free(&c.out);
    char s1[] = "Terminated\n__MASTRA_APPLE_CONTAINER_TIMEOUT__\n";
    size_t n = sk_ac_strip_marker(s1, strlen(s1));
    tap(n == 10 && memcmp(s1, "Terminated", 10) == 0, "strip: Terminated\\n<marker>\\n -> Terminated");
    char s2[] = "\n\na\n __MASTRA_APPLE_CONTAINER_TIMEOUT__ \nb\n\n";
    n = sk_ac_strip_marker(s2, strlen(s2));
    tap(n == 3 && memcmp(s2, "a\nb", 3) == 0, "strip: every marker line, then outer newlines");
}

/* ---- the runner --------------------------------------------------------------- */

typedef struct run_state {
    bool done;
    ac_cli_result r;
    char out[256], err[256];
    int chunks;
} run_state;

static void run_output(ac_cli *c, int stream, const char *data, size_t len, void *ud)
{
    (void)c;
    (void)stream;
    (void)data;
    (void)len;
    ((run_state *)ud)->chunks++;
}

static void run_exit(ac_cli *c, const ac_cli_result *r, void *ud)
{
    run_state *s = ud;
    s->done = true;
    s->r = *r;
    snprintf(s->out, sizeof s->out, "%.*s", (int)r->stdout_len, r->stdout_data);
    snprintf(s->err, sizeof s->err, "%.*s", (int)r->stderr_len, r->stderr_data);
    s->r.stdout_data = s->out;
    s->r.stderr_data = s->err;
    sk_ac_cli_free(c);
}

static const ac_cli_callbacks run_cb = { run_output, run_exit };

static ac_cli *run_sh(sk_loop *loop, run_state *s, const char *script, const json_t *env, double timeout_ms,
                      long long max, int *uv_err)
{
    char *argv[] = { "-c", (char *)script, NULL };
    ac_cli_opts o = { .binary = "/bin/sh", .argv = argv, .env = env, .timeout_ms = timeout_ms, .retain = true,
                      .max_retained = max };
    memset(s, 0, sizeof *s);
    return sk_ac_cli_run(loop, &o, &run_cb, s, uv_err);
}

static void wait_done(sk_loop *loop, run_state *s)
{
    double t0 = sk_now_ms();
    while (!s->done && sk_now_ms() - t0 < 20000)
        sk_loop_turn(loop, 100);
}

static void test_runner(void)
{
    sk_loop *loop = sk_loop_new();
    run_state s;
    int uv_err = 0;

    run_sh(loop, &s, "printf out; printf err >&2", NULL, 0, 0, &uv_err);
    wait_done(loop, &s);
    tap(s.done && s.r.success && s.r.exit_code == 0 && strcmp(s.out, "out") == 0 && strcmp(s.err, "err") == 0 &&
            !s.r.timed_out && !s.r.killed && s.chunks >= 2,
        "runner captures stdout and stderr");

    json_t *env = json_pack("{s:s}", "MASTRA_APPLE_CONTAINER_ENV_TEST", "available");
    run_sh(loop, &s, "printf %s \"${MASTRA_APPLE_CONTAINER_ENV_TEST:-missing}\"", env, 0, 0, &uv_err);
    wait_done(loop, &s);
    tap(strcmp(s.out, "available") == 0, "runner passes child environment variables to the CLI process");
    json_decref(env);

    run_sh(loop, &s, "printf 0123456789; printf abcdefghij >&2", NULL, 0, 4, &uv_err);
    wait_done(loop, &s);
    tap(strcmp(s.out, "6789") == 0 && strcmp(s.err, "ghij") == 0 && s.r.stdout_truncated && s.r.stderr_truncated &&
            s.r.stdout_dropped == 6 && s.r.stderr_dropped == 6,
        "runner retains only the newest output when max_retained is set");

    run_sh(loop, &s, "printf 'x\xc3\xa9\xc3\xa9'", NULL, 0, 3, &uv_err);
    wait_done(loop, &s);
    tap(strcmp(s.out, "\xc3\xa9") == 0 && s.r.stdout_dropped == 3, "retention starts on a UTF-8 boundary");

    double t0 = sk_now_ms();
    run_sh(loop, &s, "exec sleep 5", NULL, 10, 0, &uv_err);
    wait_done(loop, &s);
    tap(s.done && !s.r.success && s.r.timed_out && s.r.killed && sk_now_ms() - t0 < 4000,
        "runner times out and marks the command as killed");

    ac_cli *c = run_sh(loop, &s, "exec sleep 5", NULL, 0, 0, &uv_err);
    sk_ac_cli_kill(c, SIGKILL);
    t0 = sk_now_ms();
    wait_done(loop, &s);
    tap(s.done && !s.r.success && s.r.killed && !s.r.timed_out && sk_now_ms() - t0 < 4000, "runner aborts a running command");

    /* a CLI that ignores SIGTERM gets SIGKILL after the grace */
    c = run_sh(loop, &s, "trap '' TERM; echo ready; exec sleep 5", NULL, 0, 0, &uv_err);
    while (!s.chunks)
        sk_loop_turn(loop, 100);
    t0 = sk_now_ms();
    sk_ac_cli_kill(c, SIGTERM);
    wait_done(loop, &s);
    double took = sk_now_ms() - t0;
    tap(s.done && s.r.killed && s.r.exit_code == 137 && took >= 900 && took < 4000,
        "kill: SIGTERM, then SIGKILL after 1 s (%.0f ms)", took);

    /* a killed CLI whose pipes a leftover child holds still finishes */
    c = run_sh(loop, &s, "sleep 2 & echo started; wait", NULL, 0, 0, &uv_err);
    while (!s.chunks)
        sk_loop_turn(loop, 100);
    t0 = sk_now_ms();
    sk_ac_cli_kill(c, SIGTERM);
    wait_done(loop, &s);
    took = sk_now_ms() - t0;
    tap(s.done && s.r.killed && took < 2000, "a killed CLI finishes though a child holds its pipes (%.0f ms)", took);

    uv_err = 0;
    tap(run_sh(loop, &s, "true", NULL, 0, -1, &uv_err) == NULL && uv_err == UV_EINVAL,
        "runner validates retained output limits");

    char *argv[] = { NULL };
    ac_cli_opts o = { .binary = "/definitely/missing/container", .argv = argv };
    uv_err = 0;
    tap(sk_ac_cli_run(loop, &o, &run_cb, &s, &uv_err) == NULL && uv_err == UV_ENOENT,
        "runner reports a missing CLI binary (ENOENT)");

    /* the leftover `sleep 2` of the pipe case ends; then nothing is left */
    t0 = sk_now_ms();
    while (sk_loop_turn(loop, 100) && sk_now_ms() - t0 < 10000) {
    }
    sk_loop_free(loop);
}

int main(void)
{
    test_hash();
    test_numbers();
    test_names_and_quoting();
    test_wrapper();
    test_marker();
    test_runner();
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}
