/* libFuzzer target: the WebSocket client's URL reader (ws.c), which takes
 * the exec endpoint a Platform proxy hands out in each lease. ws.c is
 * included, so the static reader is reachable without lws (keep in step
 * with ws.c). Input: [flags][url]; flags bit 0: also give a path override
 * (the url's second half).
 * Properties beyond "no crash, no leak, no UB": an accepted URL gives a
 * non-empty host without '/', '?', '#' or '@', a port in 1..65535, a path
 * that starts with '/', and no CR, LF or space in what goes into the
 * request line and the Host header, where a header could be injected. */
#include "ws.c"

#include <stdint.h>

static void fuzz_clean(const char *s)
{
    for (const char *p = s; *p; p++)
        if (*p == '\r' || *p == '\n' || *p == ' ')
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char *url = malloc(size);
    memcpy(url, data + 1, size - 1);
    url[size - 1] = '\0';
    char *override = NULL;
    if (data[0] & 1) {
        size_t half = strlen(url) / 2;
        override = strdup(url + half);
        url[half] = '\0';
    }
    sk_ws ws;
    memset(&ws, 0, sizeof ws);
    const char *why = ws_parse_url(&ws, url, override);
    if (!why) {
        if (!ws.host || !ws.host[0] || strpbrk(ws.host, "/?#@") || ws.port < 1 || ws.port > 65535 ||
            !ws.path || ws.path[0] != '/' || !ws.host_header || !ws.where)
            abort();
        fuzz_clean(ws.host);
        fuzz_clean(ws.host_header);
        fuzz_clean(ws.path);
    }
    free(ws.host);
    free(ws.host_header);
    free(ws.path);
    free(ws.where);
    free(url);
    free(override);
    return 0;
}
