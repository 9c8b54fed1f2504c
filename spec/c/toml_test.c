/* toml: the ~/.modal.toml subset and the rest of TOML 1.0 that may share
 * the file, errors with line numbers; modal_config: resolution order of
 * docs/protocols/modal.md §1.1 (pure function and the file loader); sk_jwt_exp. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "providers/modal/modal_config.h"
#include "providers/modal/toml.h"

#include "tap.h"

/* Parses and compares with the expected JSON (compact, sorted keys). */
static void toml_is(const char *name, const char *text, const char *want_json)
{
    char err[200];
    size_t len = strlen(text);
    char *copy = malloc(len ? len : 1); /* exact size: no terminator to lean on */
    memcpy(copy, text, len);
    json_t *got = sk_toml_parse(copy, len, err, sizeof err);
    free(copy);
    json_t *want = json_loads(want_json, 0, NULL);
    int ok = got && want && json_equal(got, want);
    if (!tap(ok, "%s", name)) {
        char *g = got ? json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
        printf("#   got:  %s\n#   want: %s\n", g ? g : err, want_json);
        free(g);
    }
    json_decref(got);
    json_decref(want);
}

/* Expects a parse error whose message starts with "line N:" and contains
 * the given words. */
static void toml_err(const char *name, const char *text, size_t len, int line, const char *words)
{
    char err[200], prefix[32];
    char *copy = malloc(len ? len : 1);
    memcpy(copy, text, len);
    json_t *got = sk_toml_parse(copy, len, err, sizeof err);
    free(copy);
    snprintf(prefix, sizeof prefix, "line %d: ", line);
    int ok = !got && strncmp(err, prefix, strlen(prefix)) == 0 && strstr(err, words);
    if (!tap(ok, "error: %s", name))
        printf("#   got: %s\n#   want: %s...%s\n", got ? "(parsed)" : err, prefix, words);
    json_decref(got);
}
#define TOML_ERR(name, text, line, words) toml_err(name, text, sizeof text - 1, line, words)

static void test_toml_values(void)
{
    toml_is("the modal file shape",
            "# written by modal token set\n"
            "[default]\n"
            "token_id = \"ak-123\"\n"
            "token_secret = \"as-456\"\n"
            "\n"
            "[work]   # second profile\n"
            "token_id = 'ak-w'\n"
            "token_secret = 'as-w'\n"
            "active = true\n"
            "server_url = \"http://127.0.0.1:9000\"\n",
            "{\"default\":{\"token_id\":\"ak-123\",\"token_secret\":\"as-456\"},"
            "\"work\":{\"token_id\":\"ak-w\",\"token_secret\":\"as-w\",\"active\":true,"
            "\"server_url\":\"http://127.0.0.1:9000\"}}");
    toml_is("empty document", "", "{}");
    toml_is("only comments and blank lines, CRLF", "# a\r\n\r\n  # b\r\n", "{}");
    toml_is("BOM skipped, no final newline", "\xef\xbb\xbf" "a = 1", "{\"a\":1}");
    toml_is("basic string escapes",
            "s = \"tab\\there \\\"q\\\" back\\\\ nl\\n cr\\r bs\\b ff\\f \\u00e9 \\U0001F600\"",
            "{\"s\":\"tab\\there \\\"q\\\" back\\\\ nl\\n cr\\r bs\\b ff\\f \\u00e9 \\ud83d\\ude00\"}");
    toml_is("literal string keeps backslashes", "p = 'C:\\Users\\x'", "{\"p\":\"C:\\\\Users\\\\x\"}");
    toml_is("multi-line basic: first newline trimmed, line-ending backslash",
            "s = \"\"\"\none\ntwo \\\n    three\"\"\"", "{\"s\":\"one\\ntwo three\"}");
    toml_is("multi-line basic: quotes inside and at the end", "s = \"\"\"a \"\" b \"\"\"\"\"",
            "{\"s\":\"a \\\"\\\" b \\\"\\\"\"}");
    toml_is("multi-line literal", "s = '''\nraw \\n ''\nline'''", "{\"s\":\"raw \\\\n ''\\nline\"}");
    toml_is("multi-line CRLF normalised to LF", "s = \"\"\"a\r\nb\"\"\"", "{\"s\":\"a\\nb\"}");
    toml_is("UTF-8 in strings and comments", "s = \"h\xc3\xa9\" # \xe2\x82\xac\n", "{\"s\":\"h\\u00e9\"}");
    toml_is("integers", "a = 0\nb = +17\nc = -42\nd = 1_000_000\ne = 0xDEAD_beef\nf = 0o755\ng = 0b1101\n"
            "h = 9223372036854775807\ni = -9223372036854775808",
            "{\"a\":0,\"b\":17,\"c\":-42,\"d\":1000000,\"e\":3735928559,\"f\":493,\"g\":13,"
            "\"h\":9223372036854775807,\"i\":-9223372036854775808}");
    toml_is("floats", "a = 1.5\nb = -0.25\nc = 5e+2\nd = 6.626e-34\ne = 1_0.0_1", 
            "{\"a\":1.5,\"b\":-0.25,\"c\":500.0,\"d\":6.626e-34,\"e\":10.01}");
    toml_is("booleans", "t = true\nf = false", "{\"t\":true,\"f\":false}");
    toml_is("date-times kept as text",
            "a = 1979-05-27T07:32:00Z\nb = 1979-05-27 07:32:00.999-07:00\nc = 1979-05-27\nd = 07:32:00",
            "{\"a\":\"1979-05-27T07:32:00Z\",\"b\":\"1979-05-27 07:32:00.999-07:00\","
            "\"c\":\"1979-05-27\",\"d\":\"07:32:00\"}");
    toml_is("arrays: nested, mixed, multi-line with comments and trailing comma",
            "a = [1, 'two', [3.0, true], []]\nb = [\n  1, # one\n  2,\n]",
            "{\"a\":[1,\"two\",[3.0,true],[]],\"b\":[1,2]}");
    toml_is("inline tables, nested and with dotted keys", "p = { x = 1, y.z = \"w\", q = {} }",
            "{\"p\":{\"x\":1,\"y\":{\"z\":\"w\"},\"q\":{}}}");
    toml_is("dotted and quoted keys", "a.b.c = 1\na.b.d = 2\n\"quoted key\" = 3\n'lit.key' = 4\n\"\" = 5\n"
            "site.\"google.com\" = true",
            "{\"a\":{\"b\":{\"c\":1,\"d\":2}},\"quoted key\":3,\"lit.key\":4,\"\":5,"
            "\"site\":{\"google.com\":true}}");
    toml_is("headers with dotted names and implicit parents, defined later",
            "[a.b.c]\nx = 1\n[a]\ny = 2\n[ a . \"d\" ]\nz = 3",
            "{\"a\":{\"b\":{\"c\":{\"x\":1}},\"y\":2,\"d\":{\"z\":3}}}");
    toml_is("arrays of tables and sub-tables of their last element",
            "[[p]]\nn = 1\n[p.sub]\nk = 'a'\n[[p]]\nn = 2\n[[p.items]]\ni = 1\n[[p.items]]\ni = 2",
            "{\"p\":[{\"n\":1,\"sub\":{\"k\":\"a\"}},{\"n\":2,\"items\":[{\"i\":1},{\"i\":2}]}]}");
    toml_is("sub-table of a dotted-key table", "[f]\napple.color = 'red'\n[f.apple.texture]\nsmooth = true",
            "{\"f\":{\"apple\":{\"color\":\"red\",\"texture\":{\"smooth\":true}}}}");
}

static void test_toml_errors(void)
{
    TOML_ERR("duplicate key", "a = 1\n\nb = 2\na = 3\n", 4, "duplicate key 'a'");
    TOML_ERR("table defined twice", "[p]\nx = 1\n[q]\n[p]\n", 4, "defined more than once");
    TOML_ERR("table over a dotted-key table", "[f]\napple.color = 'red'\n[f.apple]\n", 3, "defined more than once");
    TOML_ERR("dotted key into an explicit table", "[a.b]\nz = 1\n[a]\nb.t = 2\n", 4, "dotted key");
    TOML_ERR("extending an inline table", "p = {x = 1}\np.y = 2\n", 2, "dotted key");
    TOML_ERR("header into an inline table", "p = {x = 1}\n[p.q]\n", 2, "not a table");
    TOML_ERR("header through a plain value", "a = 1\n[a.b]\n", 2, "not a table");
    TOML_ERR("array of tables over a static array", "a = []\n[[a]]\n", 2, "not an array of tables");
    TOML_ERR("key without value", "a =\n", 1, "missing value");
    TOML_ERR("key without equals", "a 1\n", 1, "expected '='");
    TOML_ERR("two values on a line", "a = 1 2\n", 1, "expected end of line");
    TOML_ERR("unterminated string", "\n\ns = \"abc\n", 3, "unterminated string");
    TOML_ERR("unterminated multi-line string", "s = '''abc\n\n", 3, "unterminated multi-line string");
    TOML_ERR("invalid escape", "s = \"\\q\"", 1, "invalid escape");
    TOML_ERR("surrogate escape", "s = \"\\uD800\"", 1, "Unicode scalar");
    TOML_ERR("control character in string", "s = \"a\x01\"", 1, "control character");
    TOML_ERR("invalid UTF-8 in string", "s = \"\xc3\x28\"", 1, "invalid UTF-8");
    TOML_ERR("overlong UTF-8 in comment", "# \xc0\xaf\n", 1, "invalid UTF-8");
    TOML_ERR("lone carriage return", "a = 1\rb = 2", 1, "carriage return");
    TOML_ERR("NUL byte", "a = 1\nb = \"x\0\"\n", 2, "NUL byte");
    TOML_ERR("leading zero", "a = 012", 1, "invalid");
    TOML_ERR("double underscore", "a = 1__0", 1, "invalid");
    TOML_ERR("trailing underscore", "a = 10_", 1, "invalid");
    TOML_ERR("sign on hex", "a = +0x10", 1, "invalid");
    TOML_ERR("integer overflow", "a = 9223372036854775808", 1, "out of range");
    TOML_ERR("negative overflow", "a = -9223372036854775809", 1, "out of range");
    TOML_ERR("float without fraction digits", "a = 1.", 1, "invalid");
    TOML_ERR("inf", "a = inf", 1, "inf and nan");
    TOML_ERR("float out of range", "a = 1e999", 1, "out of range");
    TOML_ERR("bad date", "a = 1979-13-27", 1, "date-time");
    TOML_ERR("bare word value", "a = yes", 1, "invalid value");
    TOML_ERR("newline in inline table", "a = {x = 1,\ny = 2}", 1, "inline table");
    TOML_ERR("trailing comma in inline table", "a = {x = 1,}", 1, "expected a key");
    TOML_ERR("unclosed array", "a = [1, 2\n\n", 3, "unterminated array");
    TOML_ERR("missing comma in array", "a = [1 2]", 1, "expected ','");
    TOML_ERR("unclosed header", "[a\n", 1, "expected ']'");
    TOML_ERR("header with extra bracket", "[a]]\n", 1, "expected end of line");
    TOML_ERR("empty header", "[]\n", 1, "expected a key");
    TOML_ERR("multi-line string as key", "\"\"\"k\"\"\" = 1", 1, "multi-line string used as a key");

    char deep[300];
    memset(deep, '[', sizeof deep);
    memcpy(deep, "a = ", 4);
    toml_err("arrays nested too deeply", deep, sizeof deep, 1, "nested too deeply");

    char small[8];
    json_t *j = sk_toml_parse("a = ", 4, small, sizeof small);
    tap(!j && strlen(small) == sizeof small - 1, "error message truncated to the caller's buffer");
}

/* ---- modal_config ---- */

typedef struct env_kv {
    const char *k, *v;
} env_kv;

static const char *fake_getenv(const char *name, void *ud)
{
    for (const env_kv *e = ud; e && e->k; e++)
        if (strcmp(e->k, name) == 0)
            return e->v;
    return NULL;
}

static int str_is(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static const char *MODAL_FILE = "[default]\n"
                                "token_id = \"ak-default\"\n"
                                "token_secret = \"as-default\"\n"
                                "[work]\n"
                                "token_id = \"ak-work\"\n"
                                "token_secret = \"as-work\"\n"
                                "server_url = \"http://127.0.0.1:1234\"\n"
                                "environment = \"staging\"\n"
                                "imageBuilderVersion = \"2025.06\"\n"
                                "loglevel = \"debug\"\n"
                                "active = true\n"
                                "[other]\n"
                                "token_id = \"ak-other\"\n"
                                "token_secret = 7\n"
                                "active = true\n";

static void resolve(const sk_modal_config_opts *o, const env_kv *env, const char *file, sk_modal_config *c)
{
    if (sk_modal_config_resolve(o, fake_getenv, (void *)env, file, file ? strlen(file) : 0, c) != 0)
        memset(c, 0, sizeof *c);
}

static void test_config(void)
{
    sk_modal_config c;
    const env_kv none[] = {{NULL, NULL}};

    resolve(NULL, none, NULL, &c);
    tap(str_is(c.server_url, "https://api.modal.com:443") && !c.token_id && !c.token_secret &&
            str_is(c.environment, "") && str_is(c.image_builder_version, "2024.10") && !c.loglevel &&
            !c.profile && c.max_throttle_wait == -1 && str_is(sk_modal_config_missing(&c), "token_id"),
        "no env, no file: defaults, token_id missing");
    sk_modal_config_free(&c);

    resolve(NULL, none, MODAL_FILE, &c);
    tap(str_is(c.profile, "work") && str_is(c.token_id, "ak-work") && str_is(c.token_secret, "as-work") &&
            str_is(c.server_url, "http://127.0.0.1:1234") && str_is(c.environment, "staging") &&
            str_is(c.image_builder_version, "2025.06") && str_is(c.loglevel, "debug") &&
            !sk_modal_config_missing(&c),
        "first table with active = true is the profile");
    sk_modal_config_free(&c);

    const env_kv prof[] = {{"MODAL_PROFILE", "default"}, {NULL, NULL}};
    resolve(NULL, prof, MODAL_FILE, &c);
    tap(str_is(c.profile, "default") && str_is(c.token_id, "ak-default") &&
            str_is(c.server_url, "https://api.modal.com:443"),
        "MODAL_PROFILE picks the profile over active");
    sk_modal_config_free(&c);

    const env_kv prof_other[] = {{"MODAL_PROFILE", "other"}, {NULL, NULL}};
    resolve(NULL, prof_other, MODAL_FILE, &c);
    tap(str_is(c.token_id, "ak-other") && !c.token_secret && str_is(sk_modal_config_missing(&c), "token_secret"),
        "a non-string profile value is ignored (token_secret missing)");
    sk_modal_config_free(&c);

    const env_kv unknown[] = {{"MODAL_PROFILE", "nope"}, {NULL, NULL}};
    resolve(NULL, unknown, MODAL_FILE, &c);
    tap(str_is(c.profile, "nope") && !c.token_id && str_is(c.server_url, "https://api.modal.com:443"),
        "an unknown profile gives empty data, silently");
    sk_modal_config_free(&c);

    const env_kv empty_prof[] = {{"MODAL_PROFILE", ""}, {NULL, NULL}};
    resolve(NULL, empty_prof, MODAL_FILE, &c);
    tap(str_is(c.profile, "work"), "an empty MODAL_PROFILE counts as unset");
    sk_modal_config_free(&c);

    const env_kv envs[] = {{"MODAL_TOKEN_ID", "ak-env"},
                           {"MODAL_TOKEN_SECRET", ""},
                           {"MODAL_SERVER_URL", "http://127.0.0.1:5555"},
                           {"MODAL_ENVIRONMENT", "prod"},
                           {"MODAL_IMAGE_BUILDER_VERSION", "2023.12"},
                           {"MODAL_LOGLEVEL", "warn"},
                           {"MODAL_MAX_THROTTLE_WAIT", "0"},
                           {NULL, NULL}};
    resolve(NULL, envs, MODAL_FILE, &c);
    tap(str_is(c.token_id, "ak-env") && str_is(c.token_secret, "as-work") &&
            str_is(c.server_url, "http://127.0.0.1:5555") && str_is(c.environment, "prod") &&
            str_is(c.image_builder_version, "2023.12") && str_is(c.loglevel, "warn") && c.max_throttle_wait == 0,
        "environment variables beat profile keys; an empty one falls through");
    sk_modal_config_free(&c);

    sk_modal_config_opts o = {"ak-opt", "as-opt", "opt-env"};
    resolve(&o, envs, MODAL_FILE, &c);
    tap(str_is(c.token_id, "ak-opt") && str_is(c.token_secret, "as-opt") && str_is(c.environment, "opt-env"),
        "options beat environment variables");
    sk_modal_config_free(&c);

    sk_modal_config_opts blank = {"", NULL, ""};
    resolve(&blank, envs, MODAL_FILE, &c);
    tap(str_is(c.token_id, "ak-env") && str_is(c.environment, "prod"), "empty options do not override");
    sk_modal_config_free(&c);

    resolve(NULL, none, "[broken\ntoken_id = 'x'\n", &c);
    tap(!c.token_id && !c.profile && str_is(c.server_url, "https://api.modal.com:443"),
        "an unparsable file is treated as empty");
    sk_modal_config_free(&c);

    resolve(NULL, none, "[a]\nactive = 0\ntoken_id = 'a'\n[b]\nactive = 'yes'\ntoken_id = 'b'\n", &c);
    tap(str_is(c.profile, "b") && str_is(c.token_id, "b"), "active is JavaScript-truthy (0 no, 'yes' yes)");
    sk_modal_config_free(&c);

    resolve(NULL, none, "top = 'x'\n[p]\nimage_builder_version = '2024.04'\nactive = true\n", &c);
    tap(str_is(c.image_builder_version, "2024.04"), "Go's image_builder_version key accepted too");
    sk_modal_config_free(&c);

    const env_kv badwait[] = {{"MODAL_MAX_THROTTLE_WAIT", "-5"}, {NULL, NULL}};
    resolve(NULL, badwait, NULL, &c);
    tap(c.max_throttle_wait == -1, "invalid MODAL_MAX_THROTTLE_WAIT leaves it unset");
    sk_modal_config_free(&c);

    const env_kv path1[] = {{"MODAL_CONFIG_PATH", "/etc/m.toml"}, {"HOME", "/home/u"}, {NULL, NULL}};
    const env_kv path2[] = {{"MODAL_CONFIG_PATH", ""}, {"HOME", "/home/u"}, {NULL, NULL}};
    char *p1 = sk_modal_config_path(fake_getenv, (void *)path1);
    char *p2 = sk_modal_config_path(fake_getenv, (void *)path2);
    tap(str_is(p1, "/etc/m.toml") && str_is(p2, "/home/u/.modal.toml"),
        "config path: MODAL_CONFIG_PATH, else $HOME/.modal.toml");
    free(p1);
    free(p2);
}

static void test_config_load(void)
{
    char path[] = "/tmp/sk_modal_toml_XXXXXX";
    int fd = mkstemp(path);
    const char *text = "[t]\nactive = true\ntoken_id = 'ak-file'\ntoken_secret = 'as-file'\n";
    int wrote = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);
    if (fd >= 0)
        close(fd);
    const char *names[] = {"MODAL_PROFILE", "MODAL_TOKEN_ID", "MODAL_TOKEN_SECRET", "MODAL_SERVER_URL",
                           "MODAL_ENVIRONMENT", "MODAL_IMAGE_BUILDER_VERSION", "MODAL_LOGLEVEL"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unsetenv(names[i]);
    setenv("MODAL_CONFIG_PATH", path, 1);
    setenv("MODAL_SERVER_URL", "http://127.0.0.1:7", 1);
    sk_modal_config c;
    int rc = sk_modal_config_load(NULL, &c);
    tap(wrote && rc == 0 && str_is(c.token_id, "ak-file") && str_is(c.token_secret, "as-file") &&
            str_is(c.server_url, "http://127.0.0.1:7") && str_is(c.profile, "t"),
        "loader reads MODAL_CONFIG_PATH and the process environment");
    sk_modal_config_free(&c);
    unlink(path);
    rc = sk_modal_config_load(NULL, &c);
    tap(rc == 0 && !c.token_id && str_is(c.server_url, "http://127.0.0.1:7"), "a missing file is no error");
    sk_modal_config_free(&c);
    unsetenv("MODAL_CONFIG_PATH");
    unsetenv("MODAL_SERVER_URL");
}

static void test_jwt(void)
{
    int64_t exp = 0;
    /* {"alg":"HS256"} . {"sub":"x","exp":1700000000} . sig */
    tap(sk_jwt_exp("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4IiwiZXhwIjoxNzAwMDAwMDAwfQ==.c2ln", &exp) == 0 &&
            exp == 1700000000,
        "exp from a padded standard-base64 payload");
    exp = 0;
    tap(sk_jwt_exp("h.eyJzdWIiOiJ4IiwiZXhwIjoxNzAwMDAwMDAwfQ.s", &exp) == 0 && exp == 1700000000,
        "unpadded payload");
    /* {"n":"??>","exp":1800000000.7}: URL-safe characters in the payload */
    exp = 0;
    tap(sk_jwt_exp("h.eyJuIjoiPz8-IiwiZXhwIjoxODAwMDAwMDAwLjd9.s", &exp) == 0 && exp == 1800000000,
        "URL-safe payload and a fractional exp (floored)");
    tap(sk_jwt_exp("a.b", &exp) == -1 && sk_jwt_exp("a.b.c.d", &exp) == -1 && sk_jwt_exp("", &exp) == -1 &&
            sk_jwt_exp(NULL, &exp) == -1,
        "not three segments: no exp");
    tap(sk_jwt_exp("h.e30.s", &exp) == -1 /* {} */ && sk_jwt_exp("h.eyJleHAiOiIxMjMifQ.s", &exp) == -1 /* string */
            && sk_jwt_exp("h.eyJleHAiOjB9.s", &exp) == -1 /* 0 */ && sk_jwt_exp("h.WzFd.s", &exp) == -1 /* [1] */
            && sk_jwt_exp("h.!!!.s", &exp) == -1 && sk_jwt_exp("h.bm90IGpzb24.s", &exp) == -1 /* not json */,
        "missing, non-numeric, zero exp, non-object or undecodable payload: no exp");
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* a crash keeps the lines so far */
    test_toml_values();
    test_toml_errors();
    test_config();
    test_config_load();
    test_jwt();
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}
