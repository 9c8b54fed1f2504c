/* Baseline for the "platform" rows: the least a C client on the same
 * library (libwebsockets, its own poll loop, no event library on top) does
 * for one exec against spec/servers/platform with a lease already in hand:
 * connect offering "railway-shell, <jwt>", send init_exec and stdin_close,
 * read tagged binary frames until the exit frame, then drop the connection
 * (no closing handshake: the cheapest end). No JSON library: the frames are
 * fixed strings and the exit frame is found with memmem.
 *
 * usage: floor_platform exec   WS_URL JWT N WARMUP          one at a time, `true`
 *        floor_platform fanout WS_URL JWT ROUNDS WARMUP W   W at once, `true`
 *        floor_platform bytes  WS_URL JWT ROUNDS WARMUP SIZE `head -c SIZE /dev/zero`
 * prints one JSON line: {"bench":"floor_platform","mode":..,"failures":F,
 *   "bytes":B,"samples_us":[..]} (exec) or "samples_ms" (fanout, bytes), and
 *   "cpu_ms": this process's user + system CPU per measured batch */
#define _GNU_SOURCE
#include <sys/resource.h>
#include <libwebsockets.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "floor.h"

typedef struct conn {
    struct lws *wsi;
    int step;        /* frames written: 0 none, 1 init, 2 stdin_close */
    int tag;         /* stream of the binary message being received */
    size_t stdout_bytes;
    int finished;    /* counted in fl_done */
    int got_exit;
} conn;

static struct lws_context *fl_ctx;
static char fl_host[256], fl_path[512], fl_protocols[4096], fl_init[512];
static int fl_port;
static int fl_done, fl_failures;
static size_t fl_bytes;

static void conn_finish(conn *c, int ok)
{
    if (c->finished)
        return;
    c->finished = 1;
    fl_done++;
    if (!ok)
        fl_failures++;
    fl_bytes += c->stdout_bytes;
}

static double cpu_ms_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static int fl_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len)
{
    (void)user;
    conn *c = wsi ? lws_get_opaque_user_data(wsi) : NULL;
    if (!c)
        return 0;
    switch (reason) {
    case LWS_CALLBACK_CLIENT_ESTABLISHED:
        lws_callback_on_writable(wsi);
        return 0;
    case LWS_CALLBACK_CLIENT_WRITEABLE: {
        static const char stdin_close[] = "{\"type\":\"stdin_close\"}";
        unsigned char buf[LWS_PRE + 512];
        const char *msg = c->step == 0 ? fl_init : stdin_close;
        size_t n = strlen(msg);
        if (c->step >= 2)
            return 0;
        memcpy(buf + LWS_PRE, msg, n);
        if (lws_write(wsi, buf + LWS_PRE, n, LWS_WRITE_TEXT) < (int)n)
            return -1;
        if (++c->step < 2)
            lws_callback_on_writable(wsi);
        return 0;
    }
    case LWS_CALLBACK_CLIENT_RECEIVE:
        if (lws_frame_is_binary(wsi)) {
            const unsigned char *p = in;
            if (lws_is_first_fragment(wsi) && len > 0) {
                c->tag = p[0];
                p++;
                len--;
            }
            if (c->tag == 1)
                c->stdout_bytes += len;
            return 0;
        }
        if (memmem(in, len, "\"exit\"", 6)) {
            c->got_exit = 1;
            conn_finish(c, 1);
            lws_set_opaque_user_data(wsi, NULL);
            return -1; /* drop the connection */
        }
        return 0;
    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
    case LWS_CALLBACK_CLIENT_CLOSED:
        conn_finish(c, c->got_exit);
        lws_set_opaque_user_data(wsi, NULL);
        return 0;
    default:
        return 0;
    }
}

static const struct lws_protocols fl_protocols_table[] = {
    { "floor", fl_callback, 0, 0, 0, NULL, 0 },
    { NULL, NULL, 0, 0, 0, NULL, 0 },
};

static int conn_start(conn *c)
{
    memset(c, 0, sizeof *c);
    struct lws_client_connect_info ci = {
        .context = fl_ctx, .address = fl_host, .port = fl_port, .path = fl_path, .host = fl_host, .origin = fl_host,
        .protocol = fl_protocols, .local_protocol_name = "floor", .opaque_user_data = c, .pwsi = &c->wsi,
    };
    if (!lws_client_connect_via_info(&ci)) {
        conn_finish(c, 0);
        return -1;
    }
    return 0;
}

/* Runs `width` execs at once; returns their wall time in µs. */
static double run_batch(conn *conns, int width)
{
    fl_done = 0;
    double t0 = clock_us();
    for (int i = 0; i < width; i++)
        conn_start(&conns[i]);
    while (fl_done < width)
        lws_service(fl_ctx, 0);
    return clock_us() - t0;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: floor_platform exec|fanout|bytes WS_URL JWT N WARMUP [WIDTH|SIZE]\n");
        return 2;
    }
    const char *mode = argv[1];
    int n = atoi(argv[4]), warmup = atoi(argv[5]);
    long extra = argc > 6 ? atol(argv[6]) : 0;
    int width = strcmp(mode, "fanout") == 0 ? (int)extra : 1;
    if (n < 1 || width < 1 || (strcmp(mode, "bytes") == 0 && extra < 1)) {
        fprintf(stderr, "floor_platform: bad arguments\n");
        return 2;
    }
    if (sscanf(argv[2], "ws://%255[^:/]:%d%511s", fl_host, &fl_port, fl_path) < 2) {
        fprintf(stderr, "floor_platform: WS_URL must be ws://host:port/path\n");
        return 2;
    }
    if (!fl_path[0])
        strcpy(fl_path, "/");
    snprintf(fl_protocols, sizeof fl_protocols, "railway-shell, %s", argv[3]);
    if (strcmp(mode, "bytes") == 0)
        snprintf(fl_init, sizeof fl_init, "{\"type\":\"init_exec\",\"data\":{\"command\":\"head -c %ld /dev/zero\"}}",
                 extra);
    else
        snprintf(fl_init, sizeof fl_init, "{\"type\":\"init_exec\",\"data\":{\"command\":\"true\"}}");

    lws_set_log_level(LLL_ERR, NULL);
    struct lws_context_creation_info info = {
        .port = CONTEXT_PORT_NO_LISTEN,
        .protocols = fl_protocols_table,
        .max_http_header_data = 16384,
        .timeout_secs = 60, /* as sandkit's (src/core/ws.c): 1,000 handshakes at once outlast lws' 5 s */
    };
    fl_ctx = lws_create_context(&info);
    if (!fl_ctx) {
        fprintf(stderr, "floor_platform: lws_create_context failed\n");
        return 1;
    }
    conn *conns = calloc((size_t)width, sizeof *conns);
    double *samples = calloc((size_t)n, sizeof *samples);
    if (!conns || !samples)
        return 1;
    for (int i = 0; i < warmup; i++)
        run_batch(conns, width);
    fl_failures = 0;
    fl_bytes = 0;
    double cpu0 = cpu_ms_now();
    for (int i = 0; i < n; i++)
        samples[i] = run_batch(conns, width);
    double cpu_ms = (cpu_ms_now() - cpu0) / n;
    int in_us = strcmp(mode, "exec") == 0;
    printf("{\"bench\":\"floor_platform\",\"mode\":\"%s\",\"width\":%d,\"failures\":%d,\"bytes\":%zu,\"%s\":[", mode,
           width, fl_failures, fl_bytes, in_us ? "samples_us" : "samples_ms");
    for (int i = 0; i < n; i++)
        printf("%s%.1f", i ? "," : "", in_us ? samples[i] : samples[i] / 1000.0);
    qsort(samples, (size_t)n, sizeof *samples, cmp_double);
    printf("],\"median_%s\":%.1f,\"cpu_ms\":%.3f}\n", in_us ? "us" : "ms",
           in_us ? samples[n / 2] : samples[n / 2] / 1000.0, cpu_ms);
    free(conns);
    free(samples);
    lws_context_destroy(fl_ctx);
    return 0;
}
