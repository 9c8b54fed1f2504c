/* libFuzzer target: POSIX shell quoting (shell.c) as a property test.
 * The input is split at NUL bytes into arguments (NUL itself cannot be
 * quoted); the command "printf '%s\0' x" + sk_shell_append_arg(each) must
 * make every argument arrive as exactly one argv entry, byte for byte.
 * Checked for every input by a re-parser of the quoted text that also
 * rejects any byte a shell would interpret outside quotes, and for one input
 * in FUZZ_SH_EVERY (chosen by a hash, so a crash reproduces) through a real
 * /bin/sh. Also: quoting an argument that contains NUL fails and leaves the
 * buffer as it was.
 * Build: make fuzz (mk/fuzz.mk) links it with the core. */
#include <errno.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "shell.h"

enum { FUZZ_SH_EVERY = 64, FUZZ_MAX_ARGS = 256 };

typedef struct fuzz_args {
    const char *p[FUZZ_MAX_ARGS];
    size_t len[FUZZ_MAX_ARGS];
    size_t n;
} fuzz_args;

/* Bytes a quoter may leave bare: they mean nothing to the shell there. */
static int fuzz_is_plain(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("@%+=:,./_-", c) != NULL);
}

/* Splits quoted text (" w1 w2 ...") back into words. Knows single quotes
 * and backslash escapes only; anything else special outside quotes is a
 * failure (-1), as is an unterminated quote. Words are appended to out,
 * separated by NUL; returns the word count. */
static int fuzz_reparse(const char *s, size_t n, sk_buf *out)
{
    size_t i = 0;
    int words = 0;
    while (i < n) {
        if (s[i] != ' ')
            return -1; /* every word is introduced by exactly one space */
        i++;
        if (i >= n || s[i] == ' ')
            return -1; /* an empty word must be written '' */
        while (i < n && s[i] != ' ') {
            unsigned char c = (unsigned char)s[i];
            if (c == '\'') {
                const char *end = memchr(s + i + 1, '\'', n - i - 1);
                if (!end)
                    return -1;
                sk_buf_append(out, s + i + 1, (size_t)(end - (s + i + 1)));
                i = (size_t)(end - s) + 1;
            } else if (c == '\\') {
                if (i + 1 >= n || s[i + 1] != '\'')
                    return -1; /* the quoter only ever escapes ' */
                sk_buf_append(out, "'", 1);
                i += 2;
            } else if (fuzz_is_plain(c)) {
                sk_buf_append(out, s + i, 1);
                i++;
            } else {
                return -1;
            }
        }
        sk_buf_append(out, "", 1);
        words++;
    }
    return words;
}

/* Runs /bin/sh -c command; its stdout into out. Returns the exit status. */
static int fuzz_run_sh(const char *command, sk_buf *out)
{
    int fds[2];
    if (pipe(fds) != 0)
        abort();
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    char *argv[] = { "sh", "-c", (char *)command, NULL };
    /* HOME set so that an unquoted ~ would visibly expand */
    char *envp[] = { "PATH=/usr/bin:/bin", "LC_ALL=C", "HOME=/fuzz-home", NULL };
    pid_t pid;
    if (posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, envp) != 0)
        abort();
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    char chunk[4096];
    ssize_t r;
    /* libFuzzer's SIGALRM (-timeout) interrupts reads: EINTR is not EOF */
    while ((r = read(fds[0], chunk, sizeof chunk)) > 0 || (r < 0 && errno == EINTR))
        if (r > 0)
            sk_buf_append(out, chunk, (size_t)r);
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return status;
}

static uint32_t fuzz_hash(const uint8_t *d, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ d[i]) * 16777619u;
    return h;
}

static void fuzz_check_nul_rejected(const uint8_t *data, size_t size)
{
    if (!memchr(data, '\0', size))
        return;
    sk_buf b = { 0 };
    sk_buf_append(&b, "x", 1);
    if (sk_shell_quote(&b, (const char *)data, size) != -1 ||
        sk_shell_append_arg(&b, (const char *)data, size) != -1 || b.len != 1)
        abort();
    sk_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_check_nul_rejected(data, size);

    fuzz_args a = { .n = 0 };
    const char *s = (const char *)data, *end = s + size;
    while (a.n < FUZZ_MAX_ARGS) {
        const char *z = memchr(s, '\0', (size_t)(end - s));
        a.p[a.n] = s;
        a.len[a.n] = z ? (size_t)(z - s) : (size_t)(end - s);
        a.n++;
        if (!z)
            break;
        s = z + 1;
    }

    sk_buf quoted = { 0 }, expected = { 0 }, words = { 0 };
    for (size_t i = 0; i < a.n; i++) {
        if (sk_shell_append_arg(&quoted, a.p[i], a.len[i]) != 0)
            abort();
        sk_buf_append(&expected, a.p[i], a.len[i]);
        sk_buf_append(&expected, "", 1);
    }
    if (fuzz_reparse(quoted.data, quoted.len, &words) != (int)a.n || words.len != expected.len ||
        memcmp(words.data, expected.data, expected.len) != 0)
        abort();

    if (fuzz_hash(data, size) % FUZZ_SH_EVERY == 0) {
        /* a fixed first word: printf with no operands would print once */
        sk_buf cmd = { 0 }, got = { 0 };
        sk_buf_appendf(&cmd, "printf '%%s\\0' x");
        sk_buf_append(&cmd, quoted.data, quoted.len);
        int status = fuzz_run_sh(cmd.data, &got);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || got.len != expected.len + 2 ||
            memcmp(got.data, "x", 2) != 0 || memcmp(got.data + 2, expected.data, expected.len) != 0)
            abort();
        sk_buf_free(&cmd);
        sk_buf_free(&got);
    }
    sk_buf_free(&quoted);
    sk_buf_free(&expected);
    sk_buf_free(&words);
    return 0;
}
