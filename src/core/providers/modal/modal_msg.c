/* Modal request encoders and response decoders; see modal_msg.h. Field
 * order follows the field numbers, as ts-proto writes them, so the bytes
 * match the JS SDK's for the same values. */
#include "modal_msg.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pb.h"

#define TRY(x)              \
    do {                    \
        if ((x) != 0)       \
            goto fail;      \
    } while (0)

/* ---- encoding helpers ---- */

/* Elements of a repeated string have no presence: "" is written too. */
static int msg_put_strs(sk_buf *b, uint32_t field, sk_modal_strs s)
{
    for (size_t i = 0; i < s.n; i++)
        if (sk_pb_put_string(b, field, s.v[i] ? s.v[i] : "", SK_PB_EXPLICIT) != 0)
            return -1;
    return 0;
}

/* map<string,string> and SandboxTag entries: key = 1, value = 2. Empty
 * strings are left out of an entry, as ts-proto's entry encoders do. */
static int msg_put_kvs(sk_buf *b, uint32_t field, sk_modal_kvs kv)
{
    for (size_t i = 0; i < kv.n; i++) {
        size_t mark;
        if (sk_pb_begin(b, field, &mark) != 0 ||
            sk_pb_put_string(b, 1, kv.v[i].key, SK_PB_IMPLICIT) != 0 ||
            sk_pb_put_string(b, 2, kv.v[i].value, SK_PB_IMPLICIT) != 0 ||
            sk_pb_end(b, mark) != 0)
            return -1;
    }
    return 0;
}

/* An encoder that fails leaves out as it found it. */
static int msg_encode_fail(sk_buf *out, size_t start)
{
    out->len = start;
    if (out->data)
        out->data[start] = '\0';
    errno = ENOMEM;
    return -1;
}

/* ---- decoding helpers ---- */

/* Implicit-presence strings default to "" once decoding is done. */
static int msg_default_str(char **s)
{
    if (*s)
        return 0;
    *s = calloc(1, 1);
    if (!*s) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

static int msg_bad(void)
{
    errno = EBADMSG;
    return -1;
}

void sk_modal_generic_result_free(sk_modal_generic_result *r)
{
    free(r->exception);
    free(r->traceback);
    memset(r, 0, sizeof *r);
}

/* Decodes into *r without clearing it first: a repeated occurrence of a
 * sub-message field merges into the earlier one, as protobuf specifies. */
static int msg_decode_result(const sk_pb_field *outer, sk_modal_generic_result *r)
{
    sk_pb_reader rd;
    sk_pb_field f;
    int rc;
    sk_pb_reader_init(&rd, outer->data, outer->len);
    while ((rc = sk_pb_next(&rd, &f)) > 0) {
        if (f.num == 1 && f.wire == SK_PB_VARINT)
            r->status = sk_pb_as_int32(&f);
        else if (f.num == 2 && f.wire == SK_PB_LEN) {
            if (sk_pb_dup_string(&f, &r->exception) != 0)
                return -1;
        } else if (f.num == 3 && f.wire == SK_PB_VARINT)
            r->exitcode = sk_pb_as_int32(&f);
        else if (f.num == 4 && f.wire == SK_PB_LEN) {
            if (sk_pb_dup_string(&f, &r->traceback) != 0)
                return -1;
        }
    }
    return rc < 0 ? msg_bad() : 0;
}

static int msg_result_defaults(sk_modal_generic_result *r)
{
    return msg_default_str(&r->exception) || msg_default_str(&r->traceback) ? -1 : 0;
}

/* Messages made only of string fields numbered 1..n (slot i = field i+1). */
/* Reads a message of string fields 1..n into slots; absent ones stay NULL. */
static int msg_read_strings(const void *data, size_t len, char **slots[], size_t n)
{
    sk_pb_reader rd;
    sk_pb_field f;
    int rc;
    sk_pb_reader_init(&rd, data, len);
    while ((rc = sk_pb_next(&rd, &f)) > 0) {
        if (f.wire == SK_PB_LEN && f.num >= 1 && f.num <= n)
            if (sk_pb_dup_string(&f, slots[f.num - 1]) != 0)
                return -1;
    }
    return rc < 0 ? msg_bad() : 0;
}

static int msg_decode_strings(const void *data, size_t len, char **slots[], size_t n)
{
    if (msg_read_strings(data, len, slots, n) != 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (msg_default_str(slots[i]) != 0)
            return -1;
    return 0;
}

/* ---- AuthTokenGet ---- */

int sk_modal_decode_auth_token_get(const void *data, size_t len, sk_modal_auth_token_get_resp *out)
{
    memset(out, 0, sizeof *out);
    char **slots[] = {&out->token};
    if (msg_decode_strings(data, len, slots, 1) == 0)
        return 0;
    int e = errno;
    sk_modal_auth_token_get_resp_free(out);
    errno = e;
    return -1;
}

void sk_modal_auth_token_get_resp_free(sk_modal_auth_token_get_resp *m)
{
    free(m->token);
    m->token = NULL;
}

/* ---- AppGetOrCreate ---- */

int sk_modal_encode_app_get_or_create(sk_buf *out, const sk_modal_app_get_or_create_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->app_name, SK_PB_IMPLICIT));
    TRY(sk_pb_put_string(out, 2, m->environment_name, SK_PB_IMPLICIT));
    TRY(sk_pb_put_int32(out, 3, m->object_creation_type, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_decode_app_get_or_create(const void *data, size_t len, sk_modal_app_get_or_create_resp *out)
{
    memset(out, 0, sizeof *out);
    char **slots[] = {&out->app_id};
    if (msg_decode_strings(data, len, slots, 1) == 0)
        return 0;
    int e = errno;
    sk_modal_app_get_or_create_resp_free(out);
    errno = e;
    return -1;
}

void sk_modal_app_get_or_create_resp_free(sk_modal_app_get_or_create_resp *m)
{
    free(m->app_id);
    m->app_id = NULL;
}

/* ---- ImageGetOrCreate ---- */

int sk_modal_encode_image_get_or_create(sk_buf *out, const sk_modal_image_get_or_create_req *m)
{
    size_t start = out->len, image, base;
    TRY(sk_pb_begin(out, 2, &image));
    for (size_t i = 0; i < m->n_base_images; i++) {
        TRY(sk_pb_begin(out, 5, &base));
        TRY(sk_pb_put_string(out, 1, m->base_images[i].image_id, SK_PB_IMPLICIT));
        TRY(sk_pb_put_string(out, 2, m->base_images[i].docker_tag, SK_PB_IMPLICIT));
        TRY(sk_pb_end(out, base));
    }
    TRY(msg_put_strs(out, 6, m->dockerfile_commands));
    TRY(msg_put_strs(out, 12, m->secret_ids));
    TRY(sk_pb_end(out, image));
    TRY(sk_pb_put_string(out, 4, m->app_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_bool(out, 7, m->force_build, SK_PB_IMPLICIT));
    TRY(sk_pb_put_string(out, 9, m->builder_version, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_decode_image_get_or_create(const void *data, size_t len, sk_modal_image_get_or_create_resp *out)
{
    memset(out, 0, sizeof *out);
    sk_pb_reader rd;
    sk_pb_field f;
    int rc;
    sk_pb_reader_init(&rd, data, len);
    while ((rc = sk_pb_next(&rd, &f)) > 0) {
        if (f.wire != SK_PB_LEN)
            continue;
        if (f.num == 1)
            TRY(sk_pb_dup_string(&f, &out->image_id));
        else if (f.num == 2) {
            out->has_result = true;
            TRY(msg_decode_result(&f, &out->result));
        }
    }
    if (rc < 0) {
        msg_bad();
        goto fail;
    }
    TRY(msg_default_str(&out->image_id));
    if (out->has_result)
        TRY(msg_result_defaults(&out->result));
    return 0;
fail:;
    int e = errno;
    sk_modal_image_get_or_create_resp_free(out);
    errno = e;
    return -1;
}

void sk_modal_image_get_or_create_resp_free(sk_modal_image_get_or_create_resp *m)
{
    free(m->image_id);
    sk_modal_generic_result_free(&m->result);
    memset(m, 0, sizeof *m);
}

/* ---- ImageJoinStreaming ---- */

int sk_modal_encode_image_join_streaming(sk_buf *out, const sk_modal_image_join_streaming_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->image_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_float(out, 2, m->timeout, SK_PB_IMPLICIT));
    TRY(sk_pb_put_string(out, 3, m->last_entry_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_bool(out, 4, m->include_logs_for_finished, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_decode_image_join_streaming(const void *data, size_t len, sk_modal_image_join_streaming_resp *out)
{
    memset(out, 0, sizeof *out);
    sk_pb_reader rd;
    sk_pb_field f;
    int rc;
    sk_pb_reader_init(&rd, data, len);
    while ((rc = sk_pb_next(&rd, &f)) > 0) {
        if (f.num == 1 && f.wire == SK_PB_LEN) {
            out->has_result = true;
            TRY(msg_decode_result(&f, &out->result));
        } else if (f.num == 3 && f.wire == SK_PB_LEN) {
            TRY(sk_pb_dup_string(&f, &out->entry_id));
        } else if (f.num == 4 && f.wire == SK_PB_VARINT) {
            out->eof = sk_pb_as_bool(&f);
        }
        /* 2 task_logs and 5 metadata: ignored, as the JS SDK does. */
    }
    if (rc < 0) {
        msg_bad();
        goto fail;
    }
    TRY(msg_default_str(&out->entry_id));
    if (out->has_result)
        TRY(msg_result_defaults(&out->result));
    return 0;
fail:;
    int e = errno;
    sk_modal_image_join_streaming_resp_free(out);
    errno = e;
    return -1;
}

void sk_modal_image_join_streaming_resp_free(sk_modal_image_join_streaming_resp *m)
{
    free(m->entry_id);
    sk_modal_generic_result_free(&m->result);
    memset(m, 0, sizeof *m);
}

/* ---- SecretGetOrCreate ---- */

int sk_modal_encode_secret_get_or_create(sk_buf *out, const sk_modal_secret_get_or_create_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->deployment_name, SK_PB_IMPLICIT));
    TRY(sk_pb_put_string(out, 3, m->environment_name, SK_PB_IMPLICIT));
    TRY(sk_pb_put_int32(out, 4, m->object_creation_type, SK_PB_IMPLICIT));
    TRY(msg_put_kvs(out, 5, m->env_dict));
    TRY(sk_pb_put_string(out, 6, m->app_id, SK_PB_IMPLICIT));
    TRY(msg_put_strs(out, 7, m->required_keys));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_decode_secret_get_or_create(const void *data, size_t len, sk_modal_secret_get_or_create_resp *out)
{
    memset(out, 0, sizeof *out);
    char **slots[] = {&out->secret_id};
    if (msg_decode_strings(data, len, slots, 1) == 0)
        return 0;
    int e = errno;
    sk_modal_secret_get_or_create_resp_free(out);
    errno = e;
    return -1;
}

void sk_modal_secret_get_or_create_resp_free(sk_modal_secret_get_or_create_resp *m)
{
    free(m->secret_id);
    m->secret_id = NULL;
}

/* ---- SandboxCreate ---- */

static int msg_put_sandbox_definition(sk_buf *out, const sk_modal_sandbox_create_req *m)
{
    size_t def, res, gpu, ports, net;
    const sk_modal_sandbox_resources *r = &m->resources;
    if (sk_pb_begin(out, 2, &def) != 0 ||
        msg_put_strs(out, 1, m->entrypoint_args) != 0 ||
        sk_pb_put_string(out, 3, m->image_id, SK_PB_IMPLICIT) != 0 ||
        msg_put_strs(out, 4, m->secret_ids) != 0)
        return -1;
    if (sk_pb_begin(out, 5, &res) != 0 ||
        sk_pb_put_uint64(out, 2, r->memory_mb, SK_PB_IMPLICIT) != 0 ||
        sk_pb_put_uint64(out, 3, r->milli_cpu, SK_PB_IMPLICIT) != 0 ||
        sk_pb_begin(out, 4, &gpu) != 0 || sk_pb_end(out, gpu) != 0 ||
        sk_pb_put_uint64(out, 5, r->memory_mb_max, SK_PB_IMPLICIT) != 0 ||
        sk_pb_put_uint64(out, 6, r->ephemeral_disk_mb, SK_PB_IMPLICIT) != 0 ||
        sk_pb_put_uint64(out, 7, r->milli_cpu_max, SK_PB_IMPLICIT) != 0 ||
        sk_pb_end(out, res) != 0)
        return -1;
    if (sk_pb_put_uint64(out, 7, m->timeout_secs, SK_PB_IMPLICIT) != 0 ||
        sk_pb_put_string(out, 8, m->workdir, SK_PB_EXPLICIT) != 0 ||
        sk_pb_begin(out, 20, &ports) != 0 || sk_pb_end(out, ports) != 0 ||
        sk_pb_begin(out, 22, &net) != 0 ||
        sk_pb_put_int32(out, 1, m->network_access_type, SK_PB_IMPLICIT) != 0 ||
        sk_pb_end(out, net) != 0 ||
        sk_pb_put_string(out, 30, m->name, SK_PB_EXPLICIT) != 0)
        return -1;
    if (m->has_idle_timeout_secs &&
        sk_pb_put_uint64(out, 33, m->idle_timeout_secs, SK_PB_EXPLICIT) != 0)
        return -1;
    return sk_pb_end(out, def);
}

int sk_modal_encode_sandbox_create(sk_buf *out, const sk_modal_sandbox_create_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->app_id, SK_PB_IMPLICIT));
    TRY(msg_put_sandbox_definition(out, m));
    TRY(sk_pb_put_string(out, 3, m->environment_name, SK_PB_IMPLICIT));
    TRY(msg_put_kvs(out, 4, m->tags));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_decode_sandbox_create(const void *data, size_t len, sk_modal_sandbox_create_resp *out)
{
    memset(out, 0, sizeof *out);
    char **slots[] = {&out->sandbox_id};
    if (msg_decode_strings(data, len, slots, 1) == 0)
        return 0;
    int e = errno;
    sk_modal_sandbox_create_resp_free(out);
    errno = e;
    return -1;
}

void sk_modal_sandbox_create_resp_free(sk_modal_sandbox_create_resp *m)
{
    free(m->sandbox_id);
    m->sandbox_id = NULL;
}

/* ---- SandboxGetFromName ---- */

int sk_modal_encode_sandbox_get_from_name(sk_buf *out, const sk_modal_sandbox_get_from_name_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->sandbox_name, SK_PB_IMPLICIT));
    TRY(sk_pb_put_string(out, 2, m->environment_name, SK_PB_IMPLICIT));
    TRY(sk_pb_put_string(out, 3, m->app_name, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_decode_sandbox_get_from_name(const void *data, size_t len, sk_modal_sandbox_get_from_name_resp *out)
{
    memset(out, 0, sizeof *out);
    char **slots[] = {&out->sandbox_id};
    if (msg_decode_strings(data, len, slots, 1) == 0)
        return 0;
    int e = errno;
    sk_modal_sandbox_get_from_name_resp_free(out);
    errno = e;
    return -1;
}

void sk_modal_sandbox_get_from_name_resp_free(sk_modal_sandbox_get_from_name_resp *m)
{
    free(m->sandbox_id);
    m->sandbox_id = NULL;
}

/* ---- responses that are one optional GenericResult at field 1 ---- */

static int msg_decode_result_only(const void *data, size_t len, bool *has, sk_modal_generic_result *r)
{
    sk_pb_reader rd;
    sk_pb_field f;
    int rc;
    sk_pb_reader_init(&rd, data, len);
    while ((rc = sk_pb_next(&rd, &f)) > 0) {
        if (f.num == 1 && f.wire == SK_PB_LEN) {
            *has = true;
            if (msg_decode_result(&f, r) != 0)
                return -1;
        }
    }
    if (rc < 0)
        return msg_bad();
    return *has ? msg_result_defaults(r) : 0;
}

/* ---- SandboxWait ---- */

int sk_modal_encode_sandbox_wait(sk_buf *out, const sk_modal_sandbox_wait_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->sandbox_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_float(out, 2, m->timeout, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_decode_sandbox_wait(const void *data, size_t len, sk_modal_sandbox_wait_resp *out)
{
    memset(out, 0, sizeof *out);
    if (msg_decode_result_only(data, len, &out->has_result, &out->result) == 0)
        return 0;
    int e = errno;
    sk_modal_sandbox_wait_resp_free(out);
    errno = e;
    return -1;
}

void sk_modal_sandbox_wait_resp_free(sk_modal_sandbox_wait_resp *m)
{
    sk_modal_generic_result_free(&m->result);
    m->has_result = false;
}

/* ---- SandboxTerminate ---- */

int sk_modal_encode_sandbox_terminate(sk_buf *out, const sk_modal_sandbox_terminate_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->sandbox_id, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_decode_sandbox_terminate(const void *data, size_t len, sk_modal_sandbox_terminate_resp *out)
{
    memset(out, 0, sizeof *out);
    if (msg_decode_result_only(data, len, &out->has_existing_result, &out->existing_result) == 0)
        return 0;
    int e = errno;
    sk_modal_sandbox_terminate_resp_free(out);
    errno = e;
    return -1;
}

void sk_modal_sandbox_terminate_resp_free(sk_modal_sandbox_terminate_resp *m)
{
    sk_modal_generic_result_free(&m->existing_result);
    m->has_existing_result = false;
}

/* ---- SandboxGetTaskId ---- */

int sk_modal_encode_sandbox_get_task_id(sk_buf *out, const sk_modal_sandbox_get_task_id_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->sandbox_id, SK_PB_IMPLICIT));
    if (m->has_timeout)
        TRY(sk_pb_put_float(out, 2, m->timeout, SK_PB_EXPLICIT));
    TRY(sk_pb_put_bool(out, 3, m->wait_until_ready, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_decode_sandbox_get_task_id(const void *data, size_t len, sk_modal_sandbox_get_task_id_resp *out)
{
    memset(out, 0, sizeof *out);
    sk_pb_reader rd;
    sk_pb_field f;
    int rc;
    sk_pb_reader_init(&rd, data, len);
    while ((rc = sk_pb_next(&rd, &f)) > 0) {
        if (f.wire != SK_PB_LEN)
            continue;
        if (f.num == 1)
            TRY(sk_pb_dup_string(&f, &out->task_id)); /* optional: stays NULL if absent */
        else if (f.num == 2) {
            out->has_task_result = true;
            TRY(msg_decode_result(&f, &out->task_result));
        }
    }
    if (rc < 0) {
        msg_bad();
        goto fail;
    }
    if (out->has_task_result)
        TRY(msg_result_defaults(&out->task_result));
    return 0;
fail:;
    int e = errno;
    sk_modal_sandbox_get_task_id_resp_free(out);
    errno = e;
    return -1;
}

void sk_modal_sandbox_get_task_id_resp_free(sk_modal_sandbox_get_task_id_resp *m)
{
    free(m->task_id);
    sk_modal_generic_result_free(&m->task_result);
    memset(m, 0, sizeof *m);
}

/* ---- TaskGetCommandRouterAccess ---- */

int sk_modal_encode_task_get_command_router_access(sk_buf *out,
                                                   const sk_modal_task_get_command_router_access_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->task_id, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_decode_task_get_command_router_access(const void *data, size_t len,
                                                   sk_modal_task_get_command_router_access_resp *out)
{
    memset(out, 0, sizeof *out);
    char **slots[] = {&out->jwt, &out->url};
    if (msg_decode_strings(data, len, slots, 2) == 0)
        return 0;
    int e = errno;
    sk_modal_task_get_command_router_access_resp_free(out);
    errno = e;
    return -1;
}

void sk_modal_task_get_command_router_access_resp_free(sk_modal_task_get_command_router_access_resp *m)
{
    free(m->jwt);
    free(m->url);
    m->jwt = m->url = NULL;
}

/* ---- SandboxSnapshotFs ---- */

int sk_modal_encode_sandbox_snapshot_fs(sk_buf *out, const sk_modal_sandbox_snapshot_fs_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->sandbox_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_float(out, 2, m->timeout, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_decode_sandbox_snapshot_fs(const void *data, size_t len, sk_modal_sandbox_snapshot_fs_resp *out)
{
    memset(out, 0, sizeof *out);
    sk_pb_reader rd;
    sk_pb_field f;
    int rc;
    sk_pb_reader_init(&rd, data, len);
    while ((rc = sk_pb_next(&rd, &f)) > 0) {
        if (f.wire != SK_PB_LEN)
            continue;
        if (f.num == 1)
            TRY(sk_pb_dup_string(&f, &out->image_id));
        else if (f.num == 2) {
            out->has_result = true;
            TRY(msg_decode_result(&f, &out->result));
        }
    }
    if (rc < 0) {
        msg_bad();
        goto fail;
    }
    TRY(msg_default_str(&out->image_id));
    if (out->has_result)
        TRY(msg_result_defaults(&out->result));
    return 0;
fail:;
    int e = errno;
    sk_modal_sandbox_snapshot_fs_resp_free(out);
    errno = e;
    return -1;
}

void sk_modal_sandbox_snapshot_fs_resp_free(sk_modal_sandbox_snapshot_fs_resp *m)
{
    free(m->image_id);
    sk_modal_generic_result_free(&m->result);
    memset(m, 0, sizeof *m);
}

/* ---- TaskSnapshotFilesystem ---- */

int sk_modal_encode_task_snapshot_filesystem(sk_buf *out, const sk_modal_task_snapshot_filesystem_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->task_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_string(out, 2, m->snapshot_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_int64(out, 3, m->ttl_seconds, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_decode_task_snapshot_filesystem(const void *data, size_t len,
                                             sk_modal_task_snapshot_filesystem_resp *out)
{
    memset(out, 0, sizeof *out);
    char **slots[] = {&out->image_id};
    if (msg_decode_strings(data, len, slots, 1) == 0)
        return 0;
    int e = errno;
    sk_modal_task_snapshot_filesystem_resp_free(out);
    errno = e;
    return -1;
}

void sk_modal_task_snapshot_filesystem_resp_free(sk_modal_task_snapshot_filesystem_resp *m)
{
    free(m->image_id);
    m->image_id = NULL;
}

/* ---- TaskExecStart ---- */

int sk_modal_encode_task_exec_start(sk_buf *out, const sk_modal_task_exec_start_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->task_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_string(out, 2, m->exec_id, SK_PB_IMPLICIT));
    TRY(msg_put_strs(out, 3, m->command_args));
    TRY(sk_pb_put_int32(out, 4, m->stdout_config, SK_PB_IMPLICIT));
    TRY(sk_pb_put_int32(out, 5, m->stderr_config, SK_PB_IMPLICIT));
    if (m->has_timeout_secs)
        TRY(sk_pb_put_uint64(out, 6, m->timeout_secs, SK_PB_EXPLICIT));
    TRY(sk_pb_put_string(out, 7, m->workdir, SK_PB_EXPLICIT));
    TRY(msg_put_strs(out, 8, m->secret_ids));
    TRY(msg_put_kvs(out, 12, m->env));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

/* ---- TaskExecStdioRead ---- */

int sk_modal_encode_task_exec_stdio_read(sk_buf *out, const sk_modal_task_exec_stdio_read_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->task_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_string(out, 2, m->exec_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_uint64(out, 3, m->offset, SK_PB_IMPLICIT));
    TRY(sk_pb_put_int32(out, 4, m->file_descriptor, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_decode_task_exec_stdio_read(const void *data, size_t len, sk_modal_task_exec_stdio_read_resp *out)
{
    memset(out, 0, sizeof *out);
    sk_pb_reader rd;
    sk_pb_field f;
    int rc;
    sk_pb_reader_init(&rd, data, len);
    while ((rc = sk_pb_next(&rd, &f)) > 0) {
        if (f.num == 1 && f.wire == SK_PB_LEN)
            TRY(sk_pb_dup_bytes(&f, &out->data, &out->len));
    }
    if (rc < 0) {
        msg_bad();
        goto fail;
    }
    if (!out->data) {
        out->data = calloc(1, 1);
        if (!out->data) {
            errno = ENOMEM;
            goto fail;
        }
    }
    return 0;
fail:;
    int e = errno;
    sk_modal_task_exec_stdio_read_resp_free(out);
    errno = e;
    return -1;
}

void sk_modal_task_exec_stdio_read_resp_free(sk_modal_task_exec_stdio_read_resp *m)
{
    free(m->data);
    m->data = NULL;
    m->len = 0;
}

/* ---- TaskExecWait / TaskExecPoll ---- */

int sk_modal_encode_task_exec_ref(sk_buf *out, const sk_modal_task_exec_ref *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->task_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_string(out, 2, m->exec_id, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_decode_task_exec_wait(const void *data, size_t len, sk_modal_task_exec_wait_resp *out)
{
    memset(out, 0, sizeof *out);
    sk_pb_reader rd;
    sk_pb_field f;
    int rc;
    sk_pb_reader_init(&rd, data, len);
    while ((rc = sk_pb_next(&rd, &f)) > 0) {
        if (f.wire != SK_PB_VARINT || (f.num != 1 && f.num != 2))
            continue;
        /* oneof exit_status: the last member on the wire wins. */
        out->kind = f.num == 1 ? SK_MODAL_EXIT_CODE : SK_MODAL_EXIT_SIGNAL;
        out->value = sk_pb_as_int32(&f);
    }
    if (rc < 0) {
        memset(out, 0, sizeof *out);
        return msg_bad();
    }
    return 0;
}

/* ---- TaskExecStdinWrite ---- */

int sk_modal_encode_task_exec_stdin_write(sk_buf *out, const sk_modal_task_exec_stdin_write_req *m)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, m->task_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_string(out, 2, m->exec_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_uint64(out, 3, m->offset, SK_PB_IMPLICIT));
    TRY(sk_pb_put_bytes(out, 4, m->data, m->len, SK_PB_IMPLICIT));
    TRY(sk_pb_put_bool(out, 5, m->eof, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_decode_empty(const void *data, size_t len)
{
    sk_pb_reader rd;
    sk_pb_field f;
    int rc;
    sk_pb_reader_init(&rd, data, len);
    while ((rc = sk_pb_next(&rd, &f)) > 0)
        ;
    return rc < 0 ? msg_bad() : 0;
}

/* ---- google.rpc.Status (grpc-status-details-bin) ---- */

#define MSG_RETRY_POLICY_SUFFIX "/modal.client.RPCRetryPolicy"

/* Any{type_url = 1, value = 2}; if it holds an RPCRetryPolicy, read
 * retry_after_secs (float, field 1). */
static int msg_decode_any_retry(const sk_pb_field *any, sk_modal_status_details *out)
{
    sk_pb_reader rd;
    sk_pb_field f;
    int rc;
    const uint8_t *url = NULL, *val = NULL;
    size_t url_len = 0, val_len = 0;
    sk_pb_reader_init(&rd, any->data, any->len);
    while ((rc = sk_pb_next(&rd, &f)) > 0) {
        if (f.wire != SK_PB_LEN)
            continue;
        if (f.num == 1) {
            url = f.data;
            url_len = f.len;
        } else if (f.num == 2) {
            val = f.data;
            val_len = f.len;
        }
    }
    if (rc < 0)
        return -1;
    size_t sl = sizeof MSG_RETRY_POLICY_SUFFIX - 1;
    if (!url || url_len < sl || memcmp(url + url_len - sl, MSG_RETRY_POLICY_SUFFIX, sl) != 0)
        return 0;
    sk_pb_reader_init(&rd, val, val_len);
    float secs = 0;
    while ((rc = sk_pb_next(&rd, &f)) > 0)
        if (f.num == 1 && f.wire == SK_PB_I32)
            secs = sk_pb_as_float(&f);
    if (rc < 0)
        return -1;
    out->has_retry_after = true;
    out->retry_after_secs = secs;
    return 0;
}

int sk_modal_decode_status_details(const void *data, size_t len, sk_modal_status_details *out)
{
    memset(out, 0, sizeof *out);
    sk_pb_reader rd;
    sk_pb_field f;
    int rc;
    sk_pb_reader_init(&rd, data, len);
    while ((rc = sk_pb_next(&rd, &f)) > 0) {
        if (f.num == 1 && f.wire == SK_PB_VARINT)
            out->code = sk_pb_as_int32(&f);
        else if (f.num == 2 && f.wire == SK_PB_LEN)
            TRY(sk_pb_dup_string(&f, &out->message));
        else if (f.num == 3 && f.wire == SK_PB_LEN && msg_decode_any_retry(&f, out) != 0) {
            msg_bad();
            goto fail;
        }
    }
    if (rc < 0) {
        msg_bad();
        goto fail;
    }
    TRY(msg_default_str(&out->message));
    return 0;
fail:;
    int e = errno;
    sk_modal_status_details_free(out);
    errno = e;
    return -1;
}

void sk_modal_status_details_free(sk_modal_status_details *m)
{
    free(m->message);
    memset(m, 0, sizeof *m);
}

/* ---- container filesystem (Sandbox.open) ---- */

int sk_modal_encode_container_filesystem_exec(sk_buf *out, const sk_modal_container_filesystem_exec_req *m)
{
    size_t start = out->len, mark;
    TRY(sk_pb_begin(out, (uint32_t)m->kind, &mark));
    switch (m->kind) {
    case SK_MODAL_FS_OPEN:
        if (m->fd)
            TRY(sk_pb_put_string(out, 1, m->fd, SK_PB_EXPLICIT));
        TRY(sk_pb_put_string(out, 2, m->path, SK_PB_IMPLICIT));
        TRY(sk_pb_put_string(out, 3, m->mode, SK_PB_IMPLICIT));
        break;
    case SK_MODAL_FS_WRITE:
        TRY(sk_pb_put_string(out, 1, m->fd, SK_PB_IMPLICIT));
        TRY(sk_pb_put_bytes(out, 2, m->data, m->len, SK_PB_IMPLICIT));
        break;
    case SK_MODAL_FS_READ:
        TRY(sk_pb_put_string(out, 1, m->fd, SK_PB_IMPLICIT));
        if (m->has_n)
            TRY(sk_pb_put_uint64(out, 2, m->n, SK_PB_EXPLICIT));
        break;
    case SK_MODAL_FS_FLUSH:
    case SK_MODAL_FS_CLOSE:
        TRY(sk_pb_put_string(out, 1, m->fd, SK_PB_IMPLICIT));
        break;
    default:
        errno = EINVAL;
        goto fail;
    }
    TRY(sk_pb_end(out, mark));
    TRY(sk_pb_put_string(out, 10, m->task_id, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_decode_container_filesystem_exec(const void *data, size_t len,
                                              sk_modal_container_filesystem_exec_resp *out)
{
    memset(out, 0, sizeof *out);
    char **slots[] = {&out->exec_id, &out->file_descriptor}; /* file_descriptor is optional */
    if (msg_read_strings(data, len, slots, 2) == 0 && msg_default_str(&out->exec_id) == 0)
        return 0;
    int e = errno;
    sk_modal_container_filesystem_exec_resp_free(out);
    errno = e;
    return -1;
}

void sk_modal_container_filesystem_exec_resp_free(sk_modal_container_filesystem_exec_resp *m)
{
    free(m->exec_id);
    free(m->file_descriptor);
    m->exec_id = m->file_descriptor = NULL;
}

int sk_modal_encode_container_filesystem_exec_get_output(sk_buf *out, const char *exec_id, float timeout_secs)
{
    size_t start = out->len;
    TRY(sk_pb_put_string(out, 1, exec_id, SK_PB_IMPLICIT));
    TRY(sk_pb_put_float(out, 2, timeout_secs, SK_PB_IMPLICIT));
    return 0;
fail:
    return msg_encode_fail(out, start);
}

int sk_modal_decode_fs_batch(const void *data, size_t len, sk_modal_fs_batch *out,
                             void (*output)(void *ud, const uint8_t *d, size_t n), void *ud)
{
    memset(out, 0, sizeof *out);
    sk_pb_reader rd;
    sk_pb_field f;
    int rc;
    sk_pb_reader_init(&rd, data, len);
    while ((rc = sk_pb_next(&rd, &f)) > 0) {
        if (f.num == 1 && f.wire == SK_PB_LEN) {
            if (f.len && output)
                output(ud, f.data, f.len);
        } else if (f.num == 2 && f.wire == SK_PB_LEN) {
            /* SystemErrorMessage: error_code = 1, error_message = 2 */
            sk_pb_reader er;
            sk_pb_field g;
            int erc;
            out->has_error = true;
            sk_pb_reader_init(&er, f.data, f.len);
            while ((erc = sk_pb_next(&er, &g)) > 0) {
                if (g.num == 1 && g.wire == SK_PB_VARINT)
                    out->error_code = sk_pb_as_int32(&g);
                else if (g.num == 2 && g.wire == SK_PB_LEN) {
                    out->error_message = (const char *)g.data;
                    out->error_message_len = g.len;
                }
            }
            if (erc < 0)
                return msg_bad();
        } else if (f.num == 3 && f.wire == SK_PB_VARINT) {
            out->batch_index = f.v;
        } else if (f.num == 4 && f.wire == SK_PB_VARINT) {
            out->eof = sk_pb_as_bool(&f);
        }
    }
    return rc < 0 ? msg_bad() : 0;
}
