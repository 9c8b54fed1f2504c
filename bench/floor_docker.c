/* The DockerSandbox baseline: the Engine API calls sandkit makes for one
 * exec (docs/protocols/docker.md §3, §6), from C over the daemon's unix
 * socket with blocking I/O and nothing else:
 *   POST /containers/{id}/exec  (the same Cmd: sh -c <wrapper> sh <command>)
 *   POST /exec/{id}/start       (its own connection, Upgrade: tcp; the
 *                                 multiplexed stream read to EOF)
 *   GET  /exec/{id}/json        (ExitCode; again after 10 ms while Running)
 * The JSON calls share one keep-alive connection, as libcurl's do.
 *   floor_docker <socket> <api version> <container id> <execs> <command>
 * Prints {"samples_us":[...],"cpu_us":N} (N: its user + system CPU). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "floor.h"

#define WRAPPER "printf '\\\\036sk-pid:%s\\\\n' \\\"$$\\\" >&2; exec sh -c \\\"$1\\\""

static const char *sock_path;

static int dial(void)
{
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    snprintf(a.sun_path, sizeof a.sun_path, "%s", sock_path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        perror("connect");
        exit(1);
    }
    return fd;
}

static void send_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w <= 0) {
            perror("write");
            exit(1);
        }
        s += w;
        n -= (size_t)w;
    }
}

/* Buffered reads of one connection. */
typedef struct conn {
    int fd;
    char buf[65536];
    size_t off, len;
} conn;

static int conn_fill(conn *c)
{
    if (c->off > 0 && c->off == c->len)
        c->off = c->len = 0;
    ssize_t r = read(c->fd, c->buf + c->len, sizeof c->buf - c->len);
    if (r < 0) {
        perror("read");
        exit(1);
    }
    c->len += (size_t)r;
    return r > 0;
}

/* The response head (through "\r\n\r\n"), NUL-terminated in out. */
static void read_head(conn *c, char *out, size_t cap)
{
    for (;;) {
        char *end = memmem(c->buf + c->off, c->len - c->off, "\r\n\r\n", 4);
        if (end) {
            size_t n = (size_t)(end + 4 - (c->buf + c->off));
            if (n >= cap)
                n = cap - 1;
            memcpy(out, c->buf + c->off, n);
            out[n] = 0;
            c->off = (size_t)(end + 4 - c->buf);
            return;
        }
        if (c->len == sizeof c->buf || !conn_fill(c)) {
            fprintf(stderr, "floor_docker: bad response head\n");
            exit(1);
        }
    }
}

/* One JSON call on the keep-alive connection: the body (Content-Length or
 * chunked), NUL-terminated, in out. */
static void call(conn *c, const char *method, const char *path, const char *body, char *out, size_t cap)
{
    char req[8192];
    int n = snprintf(req, sizeof req,
                     "%s %s HTTP/1.1\r\nHost: docker\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                     method, path, body ? strlen(body) : 0, body ? body : "");
    send_all(c->fd, req, (size_t)n);
    char head[4096];
    read_head(c, head, sizeof head);
    size_t got = 0;
    const char *cl = strcasestr(head, "\r\ncontent-length:");
    if (cl) {
        size_t want = strtoul(cl + 17, NULL, 10);
        while (got < want) {
            if (c->off == c->len && !conn_fill(c))
                break;
            size_t take = c->len - c->off < want - got ? c->len - c->off : want - got;
            if (got + take < cap)
                memcpy(out + got, c->buf + c->off, take);
            got += take;
            c->off += take;
        }
    } else { /* chunked */
        for (;;) {
            char *nl;
            while (!(nl = memmem(c->buf + c->off, c->len - c->off, "\r\n", 2)))
                if (!conn_fill(c))
                    goto done;
            size_t size = strtoul(c->buf + c->off, NULL, 16);
            c->off = (size_t)(nl + 2 - c->buf);
            while (c->len - c->off < size + 2)
                if (!conn_fill(c))
                    goto done;
            if (got + size < cap)
                memcpy(out + got, c->buf + c->off, size);
            got += size;
            c->off += size + 2;
            if (size == 0)
                break;
        }
    }
done:
    out[got < cap ? got : cap - 1] = 0;
}

static double cpu_us(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: floor_docker <socket> <api version> <container id> <execs> <command>\n");
        return 2;
    }
    sock_path = argv[1];
    const char *ver = argv[2], *cid = argv[3], *cmd = argv[5];
    int n = atoi(argv[4]);
    double *samples = calloc((size_t)n, sizeof *samples);
    static conn api, stream;
    api.fd = dial();
    char body[4096], path[512], out[65536];
    /* the command as a JSON string (the bench's commands need no escapes) */
    snprintf(body, sizeof body,
             "{\"AttachStdin\":false,\"AttachStdout\":true,\"AttachStderr\":true,\"Tty\":false,"
             "\"Cmd\":[\"sh\",\"-c\",\"%s\",\"sh\",\"%s\"]}", WRAPPER, cmd);
    double cpu0 = cpu_us();
    for (int i = 0; i < n; i++) {
        double t0 = clock_us();
        snprintf(path, sizeof path, "/v%s/containers/%s/exec", ver, cid);
        call(&api, "POST", path, body, out, sizeof out);
        char *id = strstr(out, "\"Id\":\"");
        if (!id) {
            fprintf(stderr, "floor_docker: exec create: %s\n", out);
            return 1;
        }
        id += 6;
        *strchr(id, '"') = 0;
        char exec_id[128];
        snprintf(exec_id, sizeof exec_id, "%s", id);

        stream.fd = dial();
        stream.off = stream.len = 0;
        const char *sb = "{\"Detach\":false,\"Tty\":false}";
        char req[1024];
        int rn = snprintf(req, sizeof req,
                          "POST /v%s/exec/%s/start HTTP/1.1\r\nHost: docker\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n"
                          "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                          ver, exec_id, strlen(sb), sb);
        send_all(stream.fd, req, (size_t)rn);
        char head[4096];
        read_head(&stream, head, sizeof head);
        while (conn_fill(&stream))
            stream.off = stream.len; /* frames counted as bytes only: output is dropped */
        close(stream.fd);

        for (int tries = 0;; tries++) {
            snprintf(path, sizeof path, "/v%s/exec/%s/json", ver, exec_id);
            call(&api, "GET", path, NULL, out, sizeof out);
            if (!strstr(out, "\"Running\":true") || tries > 100)
                break;
            usleep(10000);
        }
        const char *ec = strstr(out, "\"ExitCode\":");
        if (!ec || atoi(ec + 11) != 0) {
            fprintf(stderr, "floor_docker: exec inspect: %s\n", out);
            return 1;
        }
        samples[i] = clock_us() - t0;
    }
    double cpu = cpu_us() - cpu0;
    printf("{\"samples_us\":[");
    for (int i = 0; i < n; i++)
        printf("%s%.1f", i ? "," : "", samples[i]);
    printf("],\"cpu_us\":%.0f}\n", cpu);
    free(samples);
    return 0;
}
