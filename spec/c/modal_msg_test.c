/* modal_msg: request encodings against golden bytes from protoc, response
 * decodings of protoc output, presence rules (docs/protocols/modal.md §2.1), unknown and
 * mistyped fields, and every truncation of every golden response. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "providers/modal/modal_msg.h"
#include "providers/modal/pb.h"

#include "tap.h"

static void bytes_eq(const char *name, const sk_buf *got, const uint8_t *want, size_t wn)
{
    char label[160];
    snprintf(label, sizeof label, "%s matches the protoc bytes", name);
    tap_bytes(label, got->data, got->len, want, wn);
}

static int streq(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* The goldens: spec/c/modal_goldens.txt (MODAL_GOLDENS overrides the
 * path), loaded once; G(NAME) is a golden's bytes and length. */
typedef struct golden {
    char name[32], type[64];
    uint8_t *data;
    size_t len;
} golden;

static golden goldens[96];
static size_t n_goldens;

static void goldens_load(void)
{
    const char *path = getenv("MODAL_GOLDENS");
    FILE *f = fopen(path ? path : "spec/c/modal_goldens.txt", "r");
    if (!f) {
        printf("Bail out! cannot open the goldens (run from the repository root): %s\n", strerror(errno));
        exit(1);
    }
    char line[4096], hex[2048];
    while (fgets(line, sizeof line, f)) {
        golden *g = &goldens[n_goldens];
        if (line[0] == '#' || line[0] == '\n' || n_goldens == sizeof goldens / sizeof goldens[0] ||
            sscanf(line, "%31s %63s %2047s", g->name, g->type, hex) != 3)
            continue;
        size_t n = strcmp(hex, "-") == 0 ? 0 : strlen(hex) / 2;
        g->data = malloc(n ? n : 1);
        for (size_t i = 0; i < n; i++)
            sscanf(hex + 2 * i, "%2hhx", &g->data[i]);
        g->len = n;
        n_goldens++;
    }
    fclose(f);
}

static const golden *gold(const char *name)
{
    for (size_t i = 0; i < n_goldens; i++)
        if (strcmp(goldens[i].name, name) == 0)
            return &goldens[i];
    printf("Bail out! no golden %s in spec/c/modal_goldens.txt\n", name);
    exit(1);
}

#define GD(name) (gold(#name)->data)
#define GL(name) (gold(#name)->len)
#define G(name) GD(name), GL(name)

#define ENCODE(name, fn, req, golden)      \
    do {                                   \
        sk_buf b_ = {0};                   \
        int rc_ = fn(&b_, req);            \
        tap(rc_ == 0, "%s encodes", name);  \
        bytes_eq(name, &b_, G(golden));    \
        sk_buf_free(&b_);                  \
    } while (0)

static void test_encoders(void)
{
    sk_modal_app_get_or_create_request app = {"mastra", "", SK_MODAL_OBJECT_CREATION_TYPE_CREATE_IF_MISSING};
    ENCODE("AppGetOrCreate", sk_modal_encode_app_get_or_create, &app, APP_REQ);

    const char *from[] = {"FROM ubuntu:22.04"};
    sk_modal_image_get_or_create_request img0 = {
        .has_image = true, .image = {.dockerfile_commands = {from, 1}}, .app_id = "ap-1", .builder_version = "2024.10"};
    ENCODE("ImageGetOrCreate layer 0", sk_modal_encode_image_get_or_create, &img0, IMAGE_REQ0);

    const char *cmds[] = {"FROM base", "RUN echo hi"};
    const char *st1[] = {"st-1"};
    sk_modal_base_image base = {"im-0", "base"};
    sk_modal_image_get_or_create_request img1 = {
        .has_image = true,
        .image = {.base_images = &base, .n_base_images = 1, .dockerfile_commands = {cmds, 2}, .secret_ids = {st1, 1}},
        .app_id = "ap-1",
        .force_build = true,
        .builder_version = "2024.10"};
    ENCODE("ImageGetOrCreate layer 1", sk_modal_encode_image_get_or_create, &img1, IMAGE_REQ1);

    sk_modal_image_join_streaming_request join = {"im-1", 55.0f, "1-0", false};
    ENCODE("ImageJoinStreaming", sk_modal_encode_image_join_streaming, &join, JOIN_REQ);

    sk_modal_kv env[] = {{"A", "1"}, {"B", "two words"}};
    sk_modal_secret_get_or_create_request sec = {.environment_name = "dev",
                                                 .object_creation_type = SK_MODAL_OBJECT_CREATION_TYPE_EPHEMERAL,
                                                 .env_dict = {env, 2}};
    ENCODE("SecretGetOrCreate", sk_modal_encode_secret_get_or_create, &sec, SECRET_REQ);

    /* As the SDK sends it: resources with an empty gpu_config, an empty
     * open_ports and network_access always. */
    sk_modal_sandbox_create_request c0 = {
        .app_id = "ap-1",
        .has_definition = true,
        .definition = {.image_id = "im-1",
                       .secret_ids = {st1, 1},
                       .has_resources = true,
                       .resources = {.has_gpu_config = true},
                       .timeout_secs = 300,
                       .workdir = "/work",
                       .has_open_ports = true,
                       .has_network_access = true,
                       .network_access = {.network_access_type = SK_MODAL_NETWORK_ACCESS_TYPE_OPEN},
                       .name = "sbx-1"}};
    ENCODE("SandboxCreate as the SDK sends it", sk_modal_encode_sandbox_create, &c0, CREATE_REQ0);

    const char *entry[] = {"sleep", ""};
    sk_modal_sandbox_tag tags[] = {{"k", "v"}};
    sk_modal_sandbox_create_request c1 = {
        .app_id = "ap-1",
        .has_definition = true,
        .definition = {.entrypoint_args = {entry, 2},
                       .image_id = "im-1",
                       .has_resources = true,
                       .resources = {.memory_mb = 512,
                                     .milli_cpu = 1500,
                                     .has_gpu_config = true,
                                     .memory_mb_max = 1024,
                                     .ephemeral_disk_mb = 7,
                                     .milli_cpu_max = 2000},
                       .workdir = "",
                       .has_open_ports = true,
                       .has_network_access = true,
                       .has_idle_timeout_secs = true,
                       .idle_timeout_secs = 0},
        .environment_name = "dev",
        .tags = tags,
        .n_tags = 1};
    ENCODE("SandboxCreate with explicit zero/empty optionals", sk_modal_encode_sandbox_create, &c1, CREATE_REQ1);

    sk_modal_sandbox_get_from_name_request fn = {"sbx-1", NULL, "mastra"};
    ENCODE("SandboxGetFromName", sk_modal_encode_sandbox_get_from_name, &fn, FROM_NAME_REQ);

    sk_modal_sandbox_wait_request w10 = {"sb-1", 10.0f}, w0 = {"sb-1", 0.0f};
    ENCODE("SandboxWait timeout 10", sk_modal_encode_sandbox_wait, &w10, WAIT_REQ10);
    ENCODE("SandboxWait timeout 0 (omitted)", sk_modal_encode_sandbox_wait, &w0, WAIT_REQ0);

    sk_modal_sandbox_terminate_request term = {"sb-1"};
    ENCODE("SandboxTerminate", sk_modal_encode_sandbox_terminate, &term, TERMINATE_REQ);

    sk_modal_sandbox_get_task_id_request tid = {"sb-1", true, 0.0f, true};
    ENCODE("SandboxGetTaskId optional timeout 0 present", sk_modal_encode_sandbox_get_task_id, &tid, TASK_ID_REQ);

    sk_modal_task_get_command_router_access_request ra = {"ta-1"};
    ENCODE("TaskGetCommandRouterAccess", sk_modal_encode_task_get_command_router_access, &ra, ROUTER_REQ);

    sk_modal_sandbox_snapshot_fs_request sfs = {"sb-1", 55.0f};
    ENCODE("SandboxSnapshotFs", sk_modal_encode_sandbox_snapshot_fs, &sfs, SNAPFS_REQ);

    sk_modal_task_snapshot_filesystem_request tsf = {"ta-1", "snap", true, -1};
    ENCODE("TaskSnapshotFilesystem ttl -1", sk_modal_encode_task_snapshot_filesystem, &tsf, TASKSNAP_REQ);
    {
        /* The exact bytes docs/protocols/modal.md §2.1 quotes for ttl_seconds = -1. */
        static const uint8_t ttl[] = {0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
        sk_buf b = {0};
        sk_modal_encode_task_snapshot_filesystem(&b, &tsf);
        tap(b.len >= sizeof ttl && memcmp(b.data + b.len - sizeof ttl, ttl, sizeof ttl) == 0,
            "ttl_seconds -1 is the 10-byte varint of docs/protocols/modal.md §2.1");
        sk_buf_free(&b);
    }

    const char *argv0[] = {"sh", "-c", "echo 'hi'"};
    sk_modal_kv xenv[] = {{"A", "1"}, {"PATH", "/bin"}};
    sk_modal_task_exec_start_request ex0 = {.task_id = "ta-1",
                                            .exec_id = "ex-1",
                                            .command_args = {argv0, 3},
                                            .stdout_config = SK_MODAL_TASK_EXEC_STDOUT_CONFIG_PIPE,
                                            .stderr_config = SK_MODAL_TASK_EXEC_STDERR_CONFIG_PIPE,
                                            .has_timeout_secs = true,
                                            .timeout_secs = 0,
                                            .workdir = "",
                                            .env = {xenv, 2}};
    ENCODE("TaskExecStart with env map and explicit zeros", sk_modal_encode_task_exec_start, &ex0, EXEC_REQ0);

    const char *argv1[] = {"true"};
    const char *st2[] = {"st-1", "st-2"};
    sk_modal_task_exec_start_request ex1 = {.task_id = "ta-1",
                                            .exec_id = "ex-1",
                                            .command_args = {argv1, 1},
                                            .has_timeout_secs = true,
                                            .timeout_secs = 30,
                                            .workdir = "/tmp",
                                            .secret_ids = {st2, 2}};
    ENCODE("TaskExecStart DEVNULL stdio, secrets", sk_modal_encode_task_exec_start, &ex1, EXEC_REQ1);

    sk_modal_task_exec_stdio_read_request rd0 = {"ta-1", "ex-1", 0, SK_MODAL_TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDOUT};
    sk_modal_task_exec_stdio_read_request rd1 = {"ta-1", "ex-1", 300,
                                                 SK_MODAL_TASK_EXEC_STDIO_FILE_DESCRIPTOR_STDERR};
    ENCODE("TaskExecStdioRead stdout offset 0 (both omitted)", sk_modal_encode_task_exec_stdio_read, &rd0,
           STDIO_REQ0);
    ENCODE("TaskExecStdioRead stderr offset 300", sk_modal_encode_task_exec_stdio_read, &rd1, STDIO_REQ1);

    sk_modal_task_exec_wait_request ref = {"ta-1", "ex-1"};
    ENCODE("TaskExecWait/Poll request", sk_modal_encode_task_exec_wait, &ref, WAIT_EXEC_REQ);

    sk_modal_task_exec_stdin_write_request in = {"ta-1", "ex-1", 5, "hi\0\xff", 4, true};
    ENCODE("TaskExecStdinWrite binary data", sk_modal_encode_task_exec_stdin_write, &in, STDIN_REQ);
    sk_modal_task_exec_stdin_write_request eof = {"ta-1", "ex-1", 9, NULL, 0, true};
    ENCODE("TaskExecStdinWrite eof (empty data omitted)", sk_modal_encode_task_exec_stdin_write, &eof,
           STDIN_EOF_REQ);
}

static void test_encoder_appends_and_map_rules(void)
{
    sk_buf b = {0};
    sk_buf_append(&b, "XY", 2);
    sk_modal_sandbox_terminate_request term = {"sb-1"};
    sk_modal_encode_sandbox_terminate(&b, &term);
    tap(b.len == 2 + GL(TERMINATE_REQ) && memcmp(b.data, "XY", 2) == 0 &&
            memcmp(b.data + 2, G(TERMINATE_REQ)) == 0,
        "encoders append after existing content");
    sk_buf_free(&b);

    /* ts-proto leaves empty keys/values out of a map entry; decoders
     * default them. */
    sk_modal_kv kv[] = {{"EMPTY", ""}};
    sk_modal_task_exec_start_request ex = {.env = {kv, 1}};
    sk_modal_encode_task_exec_start(&b, &ex);
    static const uint8_t want[] = {0x62, 0x07, 0x0a, 0x05, 'E', 'M', 'P', 'T', 'Y'};
    tap(b.len == sizeof want && memcmp(b.data, want, sizeof want) == 0,
        "map entry with an empty value omits the value, as the JS SDK");
    sk_buf_free(&b);

    /* Nothing set at all: an empty body (like AuthTokenGet's). */
    sk_modal_task_exec_wait_request none = {NULL, NULL};
    sk_modal_encode_task_exec_wait(&b, &none);
    tap(b.len == 0, "all-default request encodes to zero bytes");
    sk_buf_free(&b);

    /* A long body (> 127 bytes) needs a 2-byte length prefix in the
     * nested definition. */
    char longdir[300];
    memset(longdir, 'd', sizeof longdir - 1);
    longdir[0] = '/';
    longdir[sizeof longdir - 1] = '\0';
    sk_modal_sandbox_create_request c = {.has_definition = true, .definition = {.workdir = longdir}};
    sk_modal_encode_sandbox_create(&b, &c);
    sk_pb_reader r;
    sk_pb_field f;
    sk_pb_reader_init(&r, b.data, b.len);
    int ok = sk_pb_next(&r, &f) == 1 && f.num == 2 && f.wire == SK_PB_LEN && sk_pb_next(&r, &f) == 0;
    sk_pb_reader_init(&r, f.data, f.len);
    int found = 0;
    sk_pb_field g;
    while (sk_pb_next(&r, &g) == 1)
        if (g.num == 8 && g.len == strlen(longdir) && memcmp(g.data, longdir, g.len) == 0)
            found = 1;
    sk_pb_reader_init(&r, b.data, b.len);
    sk_pb_next(&r, &f);
    tap(ok && found && ((uint8_t)b.data[1] & 0x80) && f.len == b.len - 3,
        "nested definition over 127 bytes round-trips (2-byte length)");
    sk_buf_free(&b);
}

static void test_decoders(void)
{
    sk_modal_auth_token_get_response a;
    tap(sk_modal_decode_auth_token_get(G(AUTH_RESP), &a) == 0 && streq(a.token, "aaa.bbb.ccc"),
        "AuthTokenGetResponse.token");
    sk_modal_auth_token_get_response_free(&a);

    tap(sk_modal_decode_auth_token_get(NULL, 0, &a) == 0 && streq(a.token, ""),
        "empty AuthTokenGetResponse gives token \"\" (the caller treats it as fatal)");
    sk_modal_auth_token_get_response_free(&a);

    sk_modal_app_get_or_create_response app;
    tap(sk_modal_decode_app_get_or_create(G(APP_RESP), &app) == 0 && streq(app.app_id, "ap-123"),
        "AppGetOrCreateResponse.app_id");
    sk_modal_app_get_or_create_response_free(&app);

    sk_modal_image_get_or_create_response img;
    tap(sk_modal_decode_image_get_or_create(G(IMAGE_RESP_OK), &img) == 0 &&
            streq(img.image_id, "im-1") && img.has_result && img.result.status == SK_MODAL_GENERIC_STATUS_SUCCESS &&
            streq(img.result.exception, ""),
        "ImageGetOrCreateResponse SUCCESS (metadata skipped)");
    sk_modal_image_get_or_create_response_free(&img);
    tap(sk_modal_decode_image_get_or_create(G(IMAGE_RESP_FAIL), &img) == 0 &&
            img.result.status == SK_MODAL_GENERIC_STATUS_FAILURE && streq(img.result.exception, "boom") &&
            img.result.exitcode == -1 && streq(img.result.traceback, "tb"),
        "ImageGetOrCreateResponse FAILURE with exception, negative exitcode, traceback");
    sk_modal_image_get_or_create_response_free(&img);
    tap(sk_modal_decode_image_get_or_create(G(IMAGE_RESP_PENDING), &img) == 0 &&
            !img.has_result && img.result.status == 0,
        "ImageGetOrCreateResponse without result: build still running");
    sk_modal_image_get_or_create_response_free(&img);

    sk_modal_image_join_streaming_response j;
    tap(sk_modal_decode_image_join_streaming(G(JOIN_RESP), &j) == 0 && j.has_result &&
            j.result.status == 1 && streq(j.entry_id, "7-1") && j.eof,
        "ImageJoinStreamingResponse result, entry_id, eof (task_logs skipped)");
    sk_modal_image_join_streaming_response_free(&j);

    sk_modal_secret_get_or_create_response s;
    tap(sk_modal_decode_secret_get_or_create(G(SECRET_RESP), &s) == 0 &&
            streq(s.secret_id, "st-9"),
        "SecretGetOrCreateResponse.secret_id");
    sk_modal_secret_get_or_create_response_free(&s);

    sk_modal_sandbox_create_response c;
    tap(sk_modal_decode_sandbox_create(G(CREATE_RESP), &c) == 0 &&
            streq(c.sandbox_id, "sb-abcdefghijklmnopqrstuv"),
        "SandboxCreateResponse.sandbox_id");
    sk_modal_sandbox_create_response_free(&c);

    sk_modal_sandbox_get_from_name_response fn;
    tap(sk_modal_decode_sandbox_get_from_name(G(CREATE_RESP), &fn) == 0 &&
            streq(fn.sandbox_id, "sb-abcdefghijklmnopqrstuv"),
        "SandboxGetFromNameResponse.sandbox_id");
    sk_modal_sandbox_get_from_name_response_free(&fn);

    sk_modal_sandbox_wait_response w;
    tap(sk_modal_decode_sandbox_wait(G(WAIT_RESP_RUNNING), &w) == 0 && !w.has_result,
        "SandboxWaitResponse without result: running");
    sk_modal_sandbox_wait_response_free(&w);
    tap(sk_modal_decode_sandbox_wait(G(WAIT_RESP_EMPTY_RESULT), &w) == 0 &&
            w.has_result && w.result.status == 0 && streq(w.result.exception, ""),
        "SandboxWaitResponse with an empty result: present, status 0");
    sk_modal_sandbox_wait_response_free(&w);
    tap(sk_modal_decode_sandbox_wait(G(WAIT_RESP_DONE), &w) == 0 && w.has_result &&
            w.result.status == SK_MODAL_GENERIC_STATUS_TERMINATED && w.result.exitcode == 137,
        "SandboxWaitResponse TERMINATED");
    sk_modal_sandbox_wait_response_free(&w);

    sk_modal_sandbox_terminate_response t;
    tap(sk_modal_decode_sandbox_terminate(G(TERM_RESP), &t) == 0 && t.has_existing_result &&
            t.existing_result.status == SK_MODAL_GENERIC_STATUS_TIMEOUT,
        "SandboxTerminateResponse.existing_result");
    sk_modal_sandbox_terminate_response_free(&t);

    sk_modal_sandbox_get_task_id_response ti;
    tap(sk_modal_decode_sandbox_get_task_id(G(TASK_ID_RESP_EMPTY), &ti) == 0 &&
            streq(ti.task_id, "") && !ti.has_task_result,
        "SandboxGetTaskIdResponse optional task_id \"\" is present");
    sk_modal_sandbox_get_task_id_response_free(&ti);
    tap(sk_modal_decode_sandbox_get_task_id(G(TASK_ID_RESP_ID), &ti) == 0 &&
            streq(ti.task_id, "ta-77"),
        "SandboxGetTaskIdResponse task_id");
    sk_modal_sandbox_get_task_id_response_free(&ti);
    tap(sk_modal_decode_sandbox_get_task_id(G(TASK_ID_RESP_DONE), &ti) == 0 &&
            ti.task_id == NULL && ti.has_task_result && ti.task_result.status == 2 &&
            streq(ti.task_result.exception, "oops"),
        "SandboxGetTaskIdResponse task_result, task_id absent (NULL)");
    sk_modal_sandbox_get_task_id_response_free(&ti);
    tap(sk_modal_decode_sandbox_get_task_id(NULL, 0, &ti) == 0 && ti.task_id == NULL && !ti.has_task_result,
        "SandboxGetTaskIdResponse empty: still scheduling");
    sk_modal_sandbox_get_task_id_response_free(&ti);

    sk_modal_task_get_command_router_access_response ra;
    tap(sk_modal_decode_task_get_command_router_access(G(ROUTER_RESP), &ra) == 0 &&
            streq(ra.jwt, "h.p.s") && streq(ra.url, "https://127.0.0.1:8443"),
        "TaskGetCommandRouterAccessResponse jwt and url");
    sk_modal_task_get_command_router_access_response_free(&ra);

    sk_modal_sandbox_snapshot_fs_response sf;
    tap(sk_modal_decode_sandbox_snapshot_fs(G(SNAPFS_RESP), &sf) == 0 &&
            streq(sf.image_id, "im-snap") && sf.has_result && sf.result.status == 1,
        "SandboxSnapshotFsResponse");
    sk_modal_sandbox_snapshot_fs_response_free(&sf);

    sk_modal_task_snapshot_filesystem_response ts;
    tap(sk_modal_decode_task_snapshot_filesystem(G(TASKSNAP_RESP), &ts) == 0 &&
            streq(ts.image_id, "im-snap2"),
        "TaskSnapshotFilesystemResponse");
    sk_modal_task_snapshot_filesystem_response_free(&ts);

    sk_modal_task_exec_stdio_read_response rd;
    tap(sk_modal_decode_task_exec_stdio_read(G(STDIO_RESP), &rd) == 0 && rd.data_len == 8 &&
            memcmp(rd.data, "\0\1hello\xff", 8) == 0 && rd.data[8] == 0,
        "TaskExecStdioReadResponse binary data");
    sk_modal_task_exec_stdio_read_response_free(&rd);
    tap(sk_modal_decode_task_exec_stdio_read(NULL, 0, &rd) == 0 && rd.data_len == 0 && rd.data,
        "TaskExecStdioReadResponse empty: zero bytes, non-NULL");
    sk_modal_task_exec_stdio_read_response_free(&rd);

    /* The output path reads the chunk in place. */
    const uint8_t *chunk = NULL;
    size_t clen = 0;
    tap(sk_modal_decode_task_exec_stdio_chunk(G(STDIO_RESP), &chunk, &clen) == 0 && clen == 8 &&
            chunk == GD(STDIO_RESP) + GL(STDIO_RESP) - 8,
        "TaskExecStdioReadResponse read in place: the chunk points into the input");
    static const uint8_t two_chunks[] = {0x0a, 0x01, 'a', 0x10, 0x01, 0x0a, 0x02, 'b', 'c'};
    tap(sk_modal_decode_task_exec_stdio_chunk(two_chunks, sizeof two_chunks, &chunk, &clen) == 0 && clen == 2 &&
            chunk == two_chunks + 7,
        "in place: a mistyped field 2 is skipped and the last data field wins");
    tap(sk_modal_decode_task_exec_stdio_chunk(NULL, 0, &chunk, &clen) == 0 && chunk == NULL && clen == 0,
        "in place: an empty message is no chunk");
    errno = 0;
    tap(sk_modal_decode_task_exec_stdio_chunk(G(STDIO_RESP) - 1, &chunk, &clen) == -1 &&
            errno == EBADMSG && chunk == NULL && clen == 0,
        "in place: a truncated chunk is EBADMSG and no chunk");

    sk_modal_task_exec_wait_response ew;
    tap(sk_modal_decode_task_exec_wait(G(EXEC_WAIT_CODE0), &ew) == 0 &&
            ew.has_code && !ew.has_signal && ew.code == 0,
        "TaskExecWaitResponse code 0 (08 00) is present");
    tap(GL(EXEC_WAIT_CODE0) == 2 && GD(EXEC_WAIT_CODE0)[0] == 0x08 && GD(EXEC_WAIT_CODE0)[1] == 0x00,
        "protoc agrees code=0 is the 2 bytes 08 00");
    tap(sk_modal_decode_task_exec_wait(G(EXEC_WAIT_NEG), &ew) == 0 &&
            ew.has_code && ew.code == -1,
        "TaskExecWaitResponse negative code (10-byte varint)");
    tap(sk_modal_decode_task_exec_wait(G(EXEC_WAIT_SIG), &ew) == 0 &&
            ew.has_signal && !ew.has_code && ew.signal == 9,
        "TaskExecWaitResponse signal");
    tap(sk_modal_decode_task_exec_wait(NULL, 0, &ew) == 0 && !ew.has_code && !ew.has_signal,
        "TaskExecWaitResponse with neither: NONE");
    {
        static const uint8_t both[] = {0x08, 0x03, 0x10, 0x0f};
        static const uint8_t five[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0x0f};
        tap(sk_modal_decode_task_exec_wait(both, sizeof both, &ew) == 0 && ew.has_signal && !ew.has_code &&
                ew.signal == 15,
            "oneof: the last member on the wire wins");
        tap(sk_modal_decode_task_exec_wait(five, sizeof five, &ew) == 0 && ew.code == -1,
            "int32 -1 in its 5-byte form decodes too");
    }
    tap(sk_modal_decode_empty(G(APP_RESP)) == 0, "empty-response check ignores unknown fields");

    sk_modal_status_details st;
    tap(sk_modal_decode_status_details(G(STATUS_RETRY), &st) == 0 && st.code == 8 &&
            streq(st.message, "slow down") && st.has_retry_after && st.retry_after_secs == 1.5f,
        "google.rpc.Status with RPCRetryPolicy retry_after_secs 1.5");
    sk_modal_status_details_free(&st);
    tap(sk_modal_decode_status_details(G(STATUS_PLAIN), &st) == 0 && st.code == 5 &&
            !st.has_retry_after,
        "google.rpc.Status with another detail type: no retry delay");
    sk_modal_status_details_free(&st);
}

static void test_unknown_and_mistyped(void)
{
    /* Unknown fields of every wire type (a group too) around the real one,
     * a mistyped field 1 (varint) that must be skipped, and field 1 twice:
     * the last wins. */
    static const uint8_t msg[] = {
        0xb8, 0x06, 0x96, 0x01,                         /* 103: varint 150 */
        0x08, 0x05,                                     /* 1 as varint: wrong type, skipped */
        0xc1, 0x06, 1, 2, 3, 4, 5, 6, 7, 8,             /* 104: fixed64 */
        0x0a, 0x03, 'o', 'l', 'd',                      /* 1: "old" */
        0xca, 0x06, 0x02, 0xaa, 0xbb,                   /* 105: bytes */
        0xd5, 0x06, 1, 2, 3, 4,                         /* 106: fixed32 */
        0xdb, 0x06, 0x08, 0x01, 0x12, 0x00, 0xdc, 0x06, /* 107: group { 1: 1, 2: "" } */
        0x0a, 0x04, 's', 'b', '-', '2',                 /* 1: "sb-2" */
    };
    sk_modal_sandbox_create_response c;
    tap(sk_modal_decode_sandbox_create(msg, sizeof msg, &c) == 0 && streq(c.sandbox_id, "sb-2"),
        "unknown fields of all wire types skipped; mistyped field skipped; last value wins");
    sk_modal_sandbox_create_response_free(&c);

    static const uint8_t only_mistyped[] = {0x08, 0x05};
    tap(sk_modal_decode_sandbox_create(only_mistyped, sizeof only_mistyped, &c) == 0 && streq(c.sandbox_id, ""),
        "a field with the wrong wire type is lost, as in ts-proto");
    sk_modal_sandbox_create_response_free(&c);

    static const uint8_t nul[] = {0x0a, 0x03, 'a', 0x00, 'b'};
    errno = 0;
    tap(sk_modal_decode_sandbox_create(nul, sizeof nul, &c) == -1 && errno == EBADMSG && c.sandbox_id == NULL,
        "a string holding NUL is rejected (EBADMSG), struct left zeroed");

    /* Two result sub-messages merge, as protobuf specifies. */
    static const uint8_t merge[] = {0x0a, 0x02, 0x08, 0x02, 0x0a, 0x03, 0x12, 0x01, 'x'};
    sk_modal_sandbox_wait_response w;
    tap(sk_modal_decode_sandbox_wait(merge, sizeof merge, &w) == 0 && w.result.status == 2 &&
            streq(w.result.exception, "x"),
        "repeated sub-message occurrences merge");
    sk_modal_sandbox_wait_response_free(&w);

    static const uint8_t bad_nested[] = {0x0a, 0x02, 0x12, 0x05};
    errno = 0;
    tap(sk_modal_decode_sandbox_wait(bad_nested, sizeof bad_nested, &w) == -1 && errno == EBADMSG &&
            !w.has_result,
        "malformed nested GenericResult rejected");

    static const uint8_t bad_any[] = {0x1a, 0x04, 0x0a, 0x09, 'a', 'b'};
    sk_modal_status_details st;
    errno = 0;
    tap(sk_modal_decode_status_details(bad_any, sizeof bad_any, &st) == -1 && errno == EBADMSG,
        "malformed Any inside google.rpc.Status rejected");
}

/* ---- every truncation of every golden response ---- */

/* The decoder of a received message type, by its name in modal.proto;
 * NULL for a type that is sent. */
static const sk_modal_message *received(const char *type)
{
    for (const sk_modal_message *const *t = sk_modal_received; *t; t++)
        if (strcmp((*t)->name, type) == 0)
            return *t;
    return NULL;
}

/* Decodes and frees; returns the decode's rc (-2: not a received type). */
static int decode_golden(const golden *g, const void *d, size_t n)
{
    if (strcmp(g->type, "Status") == 0) {
        sk_modal_status_details st;
        int rc = sk_modal_decode_status_details(d, n, &st);
        sk_modal_status_details_free(&st);
        return rc;
    }
    const sk_modal_message *t = received(g->type);
    _Alignas(max_align_t) unsigned char m[1024];
    if (!t || t->size > sizeof m)
        return -2;
    int rc = sk_modal_decode(t, d, n, m);
    sk_modal_release(t, m);
    return rc;
}

/* True if a prefix ends exactly on a top-level field boundary. */
static int on_boundary(const uint8_t *d, size_t full, size_t cut)
{
    sk_pb_reader r;
    sk_pb_field f;
    sk_pb_reader_init(&r, d, full);
    if (cut == 0)
        return 1;
    while (sk_pb_next(&r, &f) == 1)
        if ((size_t)(r.pos - d) == cut)
            return 1;
    return 0;
}

static void test_truncations(void)
{
    int responses = 0;
    for (size_t i = 0; i < n_goldens; i++) {
        const golden *g = &goldens[i];
        if (g->len == 0 || decode_golden(g, g->data, g->len) == -2)
            continue;
        responses++;
        int bad = 0, rejected = 0;
        for (size_t cut = 0; cut <= g->len; cut++) {
            /* Exact-size copy, so the sanitizers see any read past the end. */
            uint8_t *copy = malloc(cut ? cut : 1);
            memcpy(copy, g->data, cut);
            errno = 0;
            int rc = decode_golden(g, copy, cut);
            int want_ok = on_boundary(g->data, g->len, cut);
            if (rc == 0 && !want_ok)
                bad++;
            if (rc != 0 && (want_ok || errno != EBADMSG))
                bad++;
            if (rc != 0)
                rejected++;
            free(copy);
        }
        tap(bad == 0 && rejected > 0, "%s (%s): every mid-field truncation rejected with EBADMSG (%d of %zu)",
            g->name, g->type, rejected, g->len + 1);
    }
    tap(responses >= 20, "every response golden is truncated (%d)", responses);
}

static void fs_collect(void *ud, const uint8_t *d, size_t n) { sk_buf_append(ud, d, n); }

static void test_container_filesystem(void)
{
    sk_buf b = { 0 };
    sk_modal_container_filesystem_exec_req open = { .task_id = "ta-1", .kind = SK_MODAL_FS_OPEN,
                                                    .path = "/a b", .mode = "w" };
    tap(sk_modal_encode_fs_op(&b, &open) == 0, "ContainerFilesystemExec open encodes");
    bytes_eq("ContainerFilesystemExec open", &b, G(FS_OPEN));
    sk_buf_reset(&b);
    sk_modal_container_filesystem_exec_req rd = { .task_id = "ta-1", .kind = SK_MODAL_FS_READ, .fd = "fd",
                                                  .has_n = true, .n = 300 };
    tap(sk_modal_encode_fs_op(&b, &rd) == 0, "ContainerFilesystemExec read encodes");
    bytes_eq("ContainerFilesystemExec read", &b, G(FS_READ));
    sk_buf_reset(&b);
    sk_modal_container_filesystem_exec_req wr = { .task_id = "ta-1", .kind = SK_MODAL_FS_WRITE, .fd = "fd",
                                                  .data = "\x00\xff", .len = 2 };
    tap(sk_modal_encode_fs_op(&b, &wr) == 0, "ContainerFilesystemExec write encodes");
    bytes_eq("ContainerFilesystemExec write", &b, G(FS_WRITE));
    sk_buf_reset(&b);
    sk_modal_container_filesystem_exec_req cl = { .task_id = "ta-1", .kind = SK_MODAL_FS_CLOSE, .fd = "fd" };
    tap(sk_modal_encode_fs_op(&b, &cl) == 0, "ContainerFilesystemExec close encodes");
    bytes_eq("ContainerFilesystemExec close", &b, G(FS_CLOSE));
    sk_buf_reset(&b);
    sk_modal_container_filesystem_exec_req bad = { .task_id = "ta-1", .kind = (sk_modal_fs_kind)7, .fd = "fd" };
    tap(sk_modal_encode_fs_op(&b, &bad) == -1 && b.len == 0,
        "an unknown operation is refused and leaves the buffer as it was");
    sk_modal_container_filesystem_exec_get_output_request out_req = {"fe-1", 55.0f};
    tap(sk_modal_encode_container_filesystem_exec_get_output(&b, &out_req) == 0,
        "ContainerFilesystemExecGetOutput encodes");
    bytes_eq("ContainerFilesystemExecGetOutput", &b, G(FS_GETOUT));
    sk_buf_free(&b);

    sk_modal_container_filesystem_exec_response r;
    tap(sk_modal_decode_container_filesystem_exec(G(FS_RESP), &r) == 0 &&
            streq(r.exec_id, "fe-1") && streq(r.file_descriptor, "fd-2"),
        "ContainerFilesystemExecResponse decodes exec_id and file_descriptor");
    sk_modal_container_filesystem_exec_response_free(&r);
    tap(sk_modal_decode_container_filesystem_exec("", 0, &r) == 0 && streq(r.exec_id, "") && !r.file_descriptor,
        "an empty response: exec_id \"\", no file descriptor");
    sk_modal_container_filesystem_exec_response_free(&r);
    for (size_t n = 1; n < GL(FS_RESP); n++) {
        int rc = sk_modal_decode_container_filesystem_exec(GD(FS_RESP), n, &r);
        if (rc == 0)
            sk_modal_container_filesystem_exec_response_free(&r);
        else if (r.exec_id || r.file_descriptor)
            tap(0, "a failed decode leaves nothing allocated (%zu bytes)", n);
    }

    sk_buf out = { 0 };
    sk_modal_fs_batch batch;
    tap(sk_modal_decode_fs_batch(G(FS_BATCH), &batch, fs_collect, &out) == 0 &&
            out.len == 3 && memcmp(out.data, "abc", 3) == 0 && batch.eof && batch.batch_index == 3 &&
            !batch.has_error,
        "FilesystemRuntimeOutputBatch: every output entry in order, batch_index, eof");
    sk_buf_free(&out);
    tap(sk_modal_decode_fs_batch(G(FS_BATCH_ERR), &batch, NULL, NULL) == 0 &&
            batch.has_error && batch.error_code == 2 && batch.error_message_len == 4 &&
            memcmp(batch.error_message, "nope", 4) == 0 && !batch.eof,
        "FilesystemRuntimeOutputBatch: the error's code and message");
    static const uint8_t truncated_error[] = { 0x12, 0x03, 0x08, 0x02, 0x12 };
    tap(sk_modal_decode_fs_batch(truncated_error, sizeof truncated_error, &batch, NULL, NULL) == -1 &&
            errno == EBADMSG,
        "a malformed error inside a batch is EBADMSG");
    tap(sk_modal_decode_fs_batch(GD(FS_BATCH), 5, &batch, NULL, NULL) == -1, "a truncated batch is refused");
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* a crash keeps the lines so far */
    goldens_load();
    test_encoders();
    test_encoder_appends_and_map_rules();
    test_decoders();
    test_unknown_and_mistyped();
    test_truncations();
    test_container_filesystem();
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}
