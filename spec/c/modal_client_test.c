/* The Modal client without a server: UUIDv4 shape, secrets redacted from
 * errors, the ModalError fields, the localhost rule for the router, https
 * router URLs only, and a client-side failure (missing credentials)
 * delivered from the loop rather than from the starting call. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc_frame.h"
#include "loop.h"
#include "providers/modal/modal_msg.h"
#include "providers/modal/modal_client.h"

#include "tap.h"

static mc_client *client_with(sk_loop *loop, const char *url, const char *id, const char *secret)
{
    sk_modal_config cfg = { 0 };
    cfg.server_url = strdup(url);
    cfg.token_id = id ? strdup(id) : NULL;
    cfg.token_secret = secret ? strdup(secret) : NULL;
    cfg.environment = strdup("");
    cfg.image_builder_version = strdup("2024.10");
    cfg.max_throttle_wait = -1;
    return sk_mc_client_new(loop, &cfg, 0);
}

static void test_uuid(void)
{
    char a[37], b[37];
    sk_mc_uuid4(a);
    sk_mc_uuid4(b);
    int shape = strlen(a) == 36 && a[8] == '-' && a[13] == '-' && a[18] == '-' && a[23] == '-' && a[14] == '4' &&
                strchr("89ab", a[19]) != NULL;
    for (int i = 0; i < 36; i++)
        if (i != 8 && i != 13 && i != 18 && i != 23)
            shape &= strchr("0123456789abcdef", a[i]) != NULL;
    tap(shape, "uuid4 has the RFC 4122 version-4 shape (%s)", a);
    tap(strcmp(a, b) != 0, "two uuids differ");
}

static void test_errors(sk_loop *loop)
{
    const char *secret = "sk-very-secret-7777";
    mc_client *c = client_with(loop, "http://127.0.0.1:1", "ak-id", secret);
    char msg[256];
    snprintf(msg, sizeof msg, "bad token %s (and again: %s)", secret, secret);
    mc_reply r = { .code = SK_GRPC_UNAUTHENTICATED, .rpc = SK_MODAL_RPC_SANDBOX_CREATE, .message = msg };
    sk_error *e = sk_mc_error(c, &r, NULL);
    char *fields = json_dumps(e->fields, 0);
    tap(e->kind == SK_ERR_MODAL, "a gRPC failure is a ModalError");
    tap(!strstr(e->message, secret) && !strstr(fields, secret), "the token secret is redacted from message and fields");
    tap(strstr(e->message, "[redacted]") != NULL, "and marked as redacted: %s", e->message);
    tap(strncmp(e->message, SK_MODAL_RPC_SANDBOX_CREATE " UNAUTHENTICATED: ", strlen(SK_MODAL_RPC_SANDBOX_CREATE) + 18) == 0,
        "message reads '<rpc> <CODE>: <details>'");
    tap(json_integer_value(json_object_get(e->fields, "grpc_status")) == 16 &&
            strcmp(json_string_value(json_object_get(e->fields, "grpc_code")), "UNAUTHENTICATED") == 0 &&
            strcmp(json_string_value(json_object_get(e->fields, "rpc")), SK_MODAL_RPC_SANDBOX_CREATE) == 0,
        "fields grpc_status, grpc_code, rpc");
    free(fields);
    sk_error_free(e);

    mc_reply nf = { .code = SK_GRPC_NOT_FOUND, .rpc = SK_MODAL_RPC_SANDBOX_GET_FROM_NAME, .message = "gone" };
    e = sk_mc_error(c, &nf, "NotFoundError");
    tap(strcmp(json_string_value(json_object_get(e->fields, "sdk_error")), "NotFoundError") == 0,
        "the SDK's error class travels as sdk_error");
    sk_error_free(e);

    mc_reply ae = { .code = SK_GRPC_ALREADY_EXISTS, .rpc = SK_MODAL_RPC_SANDBOX_CREATE, .message = "taken" };
    e = sk_mc_error(c, &ae, NULL);
    tap(strcmp(json_string_value(json_object_get(e->fields, "sdk_error")), "AlreadyExistsError") == 0,
        "ALREADY_EXISTS defaults to AlreadyExistsError");
    sk_error_free(e);
    mc_reply de = { .code = SK_GRPC_DEADLINE_EXCEEDED, .rpc = SK_MODAL_RPC_APP_GET_OR_CREATE, .message = "slow" };
    e = sk_mc_error(c, &de, NULL);
    tap(strcmp(json_string_value(json_object_get(e->fields, "sdk_error")), "TimeoutError") == 0 &&
            e->kind == SK_ERR_MODAL,
        "DEADLINE_EXCEEDED is a ModalError with sdk_error TimeoutError");
    sk_error_free(e);
    mc_reply un = { .code = SK_GRPC_UNAVAILABLE, .rpc = SK_MODAL_RPC_APP_GET_OR_CREATE, .message = "down" };
    e = sk_mc_error(c, &un, NULL);
    tap(json_object_get(e->fields, "sdk_error") == NULL, "other codes carry no sdk_error");
    sk_error_free(e);

    mc_reply local = { .code = SK_GRPC_DEADLINE_EXCEEDED, .rpc = "x", .message = "Timeout expired",
                       .local = SK_ERR_TIMEOUT };
    e = sk_mc_error(c, &local, NULL);
    tap(e->kind == SK_ERR_TIMEOUT, "a client-side deadline is a TimeoutError");
    sk_error_free(e);
    sk_mc_client_free(c);
}

static void test_localhost(sk_loop *loop)
{
    static const struct {
        const char *url;
        int local;
    } cases[] = {
        { "http://127.0.0.1:8080", 1 },  { "http://localhost", 1 },     { "https://LOCALHOST:443", 1 },
        { "http://172.21.0.1:9", 1 },    { "127.0.0.1:5000", 1 },       { "http://[::1]:80", 0 },
        { "https://api.modal.com:443", 0 }, { "http://user@127.0.0.1:1", 1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mc_client *c = client_with(loop, cases[i].url, "a", "b");
        tap(c && sk_mc_client_localhost(c) == (cases[i].local != 0), "localhost(%s) = %d", cases[i].url, cases[i].local);
        sk_mc_client_free(c);
    }
}

static void test_router_url(sk_loop *loop)
{
    mc_client *c = client_with(loop, "http://127.0.0.1:1", "a", "b");
    sk_error *err = NULL;
    mc_router *r = sk_mc_router_new(c, "ta-1", "jwt", "http://127.0.0.1:1", &err);
    tap(!r && err && strstr(err->message, "must be https"), "a router URL must be https");
    sk_error_free(err);
    err = NULL;
    r = sk_mc_router_new(c, "ta-1", "a.b.c", "https://127.0.0.1:1", &err);
    tap(r && !err && strcmp(sk_mc_router_task_id(r), "ta-1") == 0, "an https router URL is accepted");
    sk_mc_router_unref(r);
    sk_mc_client_free(c);
}

typedef struct got {
    int calls;
    int code;
    char local[32];
    char rpc[128];
} got;

static void on_reply(void *ud, const mc_reply *r)
{
    got *g = ud;
    g->calls++;
    g->code = r->code;
    snprintf(g->local, sizeof g->local, "%s", r->local ? sk_error_kind_name(r->local) : "");
    snprintf(g->rpc, sizeof g->rpc, "%s", r->rpc);
}

static void test_missing_credentials(sk_loop *loop)
{
    mc_client *c = client_with(loop, "http://127.0.0.1:1", NULL, NULL);
    got g = { 0 };
    sk_buf msg = { 0 };
    mc_call *call = sk_mc_unary(c, SK_MODAL_RPC_APP_GET_OR_CREATE, &msg, 0, on_reply, &g);
    tap(call != NULL && g.calls == 0, "missing credentials: nothing is delivered from inside sk_mc_unary");
    for (int i = 0; i < 100 && g.calls == 0; i++)
        sk_loop_turn(loop, 10);
    tap(g.calls == 1 && strcmp(g.local, "ConfigError") == 0, "then a ConfigError arrives from the loop");
    tap(strcmp(g.rpc, SK_MODAL_RPC_APP_GET_OR_CREATE) == 0, "naming the call");

    /* a cancelled call never calls back */
    got h = { 0 };
    call = sk_mc_unary(c, SK_MODAL_RPC_APP_GET_OR_CREATE, &msg, 0, on_reply, &h);
    sk_mc_call_cancel(call);
    for (int i = 0; i < 5; i++)
        sk_loop_turn(loop, 5);
    tap(h.calls == 0, "a cancelled call stays silent");
    sk_mc_client_free(c);
}

int main(void)
{
    sk_loop *loop = sk_loop_new();
    test_uuid();
    test_errors(loop);
    test_localhost(loop);
    test_router_url(loop);
    test_missing_credentials(loop);
    sk_loop_free(loop);
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}
