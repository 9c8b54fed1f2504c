/* sk_child_spawn (child.h): what a child starts with, on both ways of
 * spawning (the private-table clone, and posix_spawn for more keep_fds
 * than its window holds): only its stdio and keep_fds whatever we hold
 * open, default signals, its own session, working directory and
 * environment, posix_spawnp's PATH search and errors, no zombie after a
 * failure, and spawns from several threads at once. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "compat.h"

#include "fd_count.h"
#include "tap.h"

enum { MANY_KEEP = 20 };

typedef struct run_result {
    int rc;       /* sk_child_spawn's */
    int status;   /* waitpid's */
    char out[8192];
} run_result;

/* Runs `sh -c script` with stdout and stderr into one pipe, the given
 * keep_fds, cwd and envp; collects everything it writes. */
static run_result run(const char *script, const int *keep, int n_keep, const char *cwd, char **envp, bool new_group)
{
    run_result r = { 0 };
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        r.rc = errno;
        return r;
    }
    char *argv[] = { "sh", "-c", (char *)script, NULL };
    sk_proc_opts o = { .file = "sh", .argv = argv, .envp = envp, .cwd = cwd, .new_group = new_group,
                       .keep_fds = keep, .n_keep_fds = n_keep };
    int *copies = NULL;
    if (n_keep) { /* as proc.c hands them over: numbered above every target */
        copies = malloc((size_t)n_keep * sizeof *copies);
        for (int i = 0; i < n_keep; i++)
            copies[i] = fcntl(keep[i], F_DUPFD_CLOEXEC, 3 + n_keep);
    }
    pid_t pid = -1;
    r.rc = sk_child_spawn(&o, -1, p[1], p[1], copies, &pid);
    for (int i = 0; i < n_keep; i++)
        close(copies[i]);
    free(copies);
    close(p[1]);
    size_t len = 0;
    ssize_t got;
    while ((got = read(p[0], r.out + len, sizeof r.out - 1 - len)) > 0)
        len += (size_t)got;
    r.out[len] = '\0';
    close(p[0]);
    if (r.rc == 0)
        waitpid(pid, &r.status, 0);
    return r;
}

static int open_many(int *fds, int n)
{
    for (int i = 0; i < n; i++)
        if ((fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
            return -1;
    return 0;
}

static void close_all(int *fds, int n)
{
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

/* the shell's own descriptors, listed by a child of it (a glob in the
 * shell itself would show the directory it reads) */
static const char *list_fds = "ls /proc/$$/fd";

/* ls's names, in numeric order, as "0 1 2" (in place) */
static char *sorted_fds(char *out)
{
    int v[256], n = 0;
    for (char *t = strtok(out, " \n"); t && n < 256; t = strtok(NULL, " \n"))
        v[n++] = atoi(t);
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            int x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    out[0] = '\0';
    for (int i = 0; i < n; i++)
        sprintf(out + strlen(out), i ? " %d" : "%d", v[i]);
    return out;
}

static void *spawn_many(void *arg)
{
    int *bad = arg;
    for (int i = 0; i < 25; i++) {
        char script[64], want[32];
        snprintf(script, sizeof script, "echo %d-%d", (int)(intptr_t)pthread_self() % 1000, i);
        snprintf(want, sizeof want, "%d-%d\n", (int)(intptr_t)pthread_self() % 1000, i);
        run_result r = run(script, NULL, 0, NULL, NULL, true);
        if (r.rc != 0 || !WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0 || strcmp(r.out, want) != 0)
            (*bad)++;
    }
    return NULL;
}

/* valgrind runs a CLONE_VM spawn as a fork: a child's errno cannot reach
 * us (posix_spawn's neither), so spawn errors are not seen there */
static bool under_valgrind(void)
{
    const char *preload = getenv("LD_PRELOAD");
    return preload && strstr(preload, "vgpreload");
}

/* tap(), or a skip where the errno of a failed child cannot come back */
static void tap_errno(bool ok, const char *what, int rc)
{
    if (under_valgrind())
        tap(1, "# SKIP %s: under valgrind a child's errno does not come back", what);
    else
        tap(ok, "%s (%s)", what, strerror(rc));
}

int main(void)
{
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < 4096 && rl.rlim_max >= 4096) {
        rl.rlim_cur = 4096;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    /* the first spawn, with few descriptors open, places the window low */
    run_result r = run("exit 0", NULL, 0, NULL, NULL, false);
    tap(r.rc == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "a first spawn runs (rc %d)", r.rc);

    int many[2000];
    for (int i = 0; i < 2000; i++)
        many[i] = -1;
    int n_many = rl.rlim_cur >= 2100 ? 2000 : 500;
    tap(open_many(many, n_many) == 0, "%d descriptors open (not close-on-exec: none of them may reach a child)", n_many);
    for (int i = 0; i < n_many; i++)
        fcntl(many[i], F_SETFD, 0);

    r = run(list_fds, NULL, 0, NULL, NULL, false);
    tap(r.rc == 0 && strcmp(sorted_fds(r.out), "0 1 2") == 0, "with them open the child has its stdio only: %s",
        r.out);

    int kp[2][2];
    pipe2(kp[0], O_CLOEXEC);
    pipe2(kp[1], O_CLOEXEC);
    int keep2[2] = { kp[0][1], kp[1][1] };
    r = run("echo three >&3; echo four >&4; ls /proc/$$/fd", keep2, 2, NULL, NULL, false);
    close(kp[0][1]);
    close(kp[1][1]);
    char k3[32] = { 0 }, k4[32] = { 0 };
    ssize_t g3 = read(kp[0][0], k3, sizeof k3 - 1), g4 = read(kp[1][0], k4, sizeof k4 - 1);
    close(kp[0][0]);
    close(kp[1][0]);
    tap(r.rc == 0 && strcmp(sorted_fds(r.out), "0 1 2 3 4") == 0 && g3 > 0 && strcmp(k3, "three\n") == 0 && g4 > 0 &&
            strcmp(k4, "four\n") == 0,
        "keep_fds become 3 and 4, in order, and nothing else is there: %s", r.out);

    /* more than the window holds: posix_spawn, the same promise */
    int keepn[MANY_KEEP];
    for (int i = 0; i < MANY_KEEP; i++)
        keepn[i] = many[i];
    r = run(list_fds, keepn, MANY_KEEP, NULL, NULL, false);
    char want[256] = "0 1 2";
    for (int i = 0; i < MANY_KEEP; i++)
        snprintf(want + strlen(want), sizeof want - strlen(want), " %d", 3 + i);
    tap(r.rc == 0 && strcmp(sorted_fds(r.out), want) == 0, "%d keep_fds (past the window): exactly 0 .. %d: %s", MANY_KEEP,
        2 + MANY_KEEP, r.out);

    r = run("readlink /proc/$$/fd/0", NULL, 0, NULL, NULL, false);
    tap(r.rc == 0 && strcmp(r.out, "/dev/null\n") == 0, "stdin without a pipe is /dev/null: %s", r.out);

    /* signals: ignored, handled and blocked here; default and open there */
    struct sigaction ign = { .sa_handler = SIG_IGN }, old_pipe, old_usr2;
    sigaction(SIGPIPE, &ign, &old_pipe);
    sigaction(SIGUSR2, &ign, &old_usr2);
    sigset_t block, old_mask;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    pthread_sigmask(SIG_BLOCK, &block, &old_mask);
    /* read by the spawned process itself: a shell blocks every signal
     * around each fork, so its own status seen from a child it forked
     * says nothing about how it started */
    r = run("exec grep -E '^Sig(Blk|Ign)' /proc/self/status", NULL, 0, NULL, NULL, false);
    pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    sigaction(SIGPIPE, &old_pipe, NULL);
    sigaction(SIGUSR2, &old_usr2, NULL);
    unsigned long long blk = ~0ULL, ignd = ~0ULL;
    const char *b = strstr(r.out, "SigBlk:"), *i = strstr(r.out, "SigIgn:");
    if (b)
        blk = strtoull(b + 7, NULL, 16);
    if (i)
        ignd = strtoull(i + 7, NULL, 16);
    /* glibc's posix_spawn leaves its two internal signals (32, 33) ignored */
    tap(r.rc == 0 && blk == 0 && (ignd & 0x7fffffffULL) == 0,
        "the child starts with nothing blocked and nothing ignored: %s", r.out);

    /* a session of its own; without POSIX_SPAWN_SETSID (portable) a
     * process group of its own, which kill(-pid) needs either way */
    r = run("cut -d' ' -f5,6 /proc/$$/stat; echo $$", NULL, 0, NULL, NULL, true);
    int pgrp = 0, sid = 0, self = -1;
    sscanf(r.out, "%d %d %d", &pgrp, &sid, &self);
    bool own_session = SK_HAVE_CLONE_SPAWN || SK_HAVE_SPAWN_SETSID;
    tap(r.rc == 0 && self > 0 && pgrp == self && (!own_session || sid == self),
        "new_group: the child leads a %s of its own (group %d, session %d, pid %d)",
        own_session ? "session" : "process group", pgrp, sid, self);

    char dir[] = "/tmp/sk-child-XXXXXX";
    tap(mkdtemp(dir) != NULL, "a scratch directory");
    char *envp[] = { "SK_CHILD_TEST=seen", "PATH=/usr/bin:/bin", NULL };
    r = run("pwd; echo $SK_CHILD_TEST", NULL, 0, dir, envp, false);
    char want_cwd[128];
    snprintf(want_cwd, sizeof want_cwd, "%s\nseen\n", dir);
    tap(r.rc == 0 && strcmp(r.out, want_cwd) == 0, "cwd and envp: %s", r.out);

    /* errors as posix_spawnp reports them, with no child left behind */
    char missing[160];
    snprintf(missing, sizeof missing, "%s/gone", dir);
    r = run("exit 0", NULL, 0, missing, NULL, false);
    if (SK_HAVE_CLONE_SPAWN || SK_HAVE_SPAWN_CHDIR)
        tap_errno(r.rc == ENOENT, "a missing cwd: ENOENT", r.rc);
    else /* the /bin/sh in front that changes directory says it (compat.h) */
        tap(r.rc == 0 && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 127,
            "a missing cwd: the shell in front exits 127 (status %d)", r.status);

    char prog[160];
    snprintf(prog, sizeof prog, "%s/prog", dir);
    FILE *f = fopen(prog, "w");
    fputs("#!/bin/sh\necho ran\n", f);
    fclose(f);
    chmod(prog, 0644);
    const char *saved_path = getenv("PATH");
    char *path_copy = saved_path ? strdup(saved_path) : NULL;
    char path[256];
    snprintf(path, sizeof path, "/nonexistent:%s", dir);
    setenv("PATH", path, 1);
    char *pargv[] = { "prog", NULL };
    sk_proc_opts po = { .file = "prog", .argv = pargv };
    int dn = open("/dev/null", O_WRONLY | O_CLOEXEC);
    pid_t pid = -1;
    int rc = sk_child_spawn(&po, -1, dn, dn, NULL, &pid);
    tap_errno(rc == EACCES, "found on PATH but not executable: EACCES", rc);
    chmod(prog, 0755);
    po.file = "no-such-program-here";
    pargv[0] = "no-such-program-here";
    rc = sk_child_spawn(&po, -1, dn, dn, NULL, &pid);
    tap_errno(rc == ENOENT, "found nowhere on PATH: ENOENT", rc);
    int pp[2];
    pipe2(pp, O_CLOEXEC);
    po.file = "prog";
    pargv[0] = "prog";
    rc = sk_child_spawn(&po, -1, pp[1], dn, NULL, &pid);
    close(pp[1]);
    char ran[16] = { 0 };
    ssize_t gr = read(pp[0], ran, sizeof ran - 1);
    close(pp[0]);
    int st = -1;
    if (rc == 0)
        waitpid(pid, &st, 0);
    tap(rc == 0 && gr > 0 && strcmp(ran, "ran\n") == 0, "found on the second PATH entry once executable: %s", ran);
    if (path_copy)
        setenv("PATH", path_copy, 1);
    free(path_copy);
    close(dn);
    /* (under valgrind the failed children ran on and are reaped here) */
    while (under_valgrind() && waitpid(-1, NULL, WNOHANG) > 0) {
    }
    errno = 0;
    int left = waitpid(-1, NULL, WNOHANG);
    tap(left < 0 && errno == ECHILD, "no child is left over after the failures (%d)", left);
    unlink(prog);
    rmdir(dir);

    /* four threads spawning at once share the window */
    pthread_t t[4];
    int bad = 0;
    for (int k = 0; k < 4; k++)
        pthread_create(&t[k], NULL, spawn_many, &bad);
    for (int k = 0; k < 4; k++)
        pthread_join(t[k], NULL);
    tap(bad == 0, "100 spawns from four threads at once: every output its own (%d wrong)", bad);

    r = run(list_fds, NULL, 0, NULL, NULL, false);
    tap(r.rc == 0 && strcmp(sorted_fds(r.out), "0 1 2") == 0, "after all that, still stdio only: %s", r.out);
    close_all(many, n_many);

    /* what a module unload gives back, and takes anew at the next spawn */
    int window_fds = SK_HAVE_CLONE_SPAWN && !under_valgrind() ? 20 : 0;
    int before = count_fds();
    sk_child_spawn_release();
    int released = count_fds();
    r = run(list_fds, NULL, 0, NULL, NULL, false);
    int again = count_fds();
    tap(before - released == window_fds && again - released == window_fds && r.rc == 0 &&
            strcmp(sorted_fds(r.out), "0 1 2") == 0,
        "release closes the %d reserved descriptors (%d -> %d), the next spawn reserves them again (%d): %s",
        window_fds, before, released, again, r.out);

    /* a host that closes every descriptor above stderr (as daemons do)
     * and opens its own: the numbers of the window are its now */
    char fdir[] = "/tmp/sk-child-fds-XXXXXX";
    tap(mkdtemp(fdir) != NULL, "a scratch directory for the host's files");
    close_range(3, ~0U, 0);
    enum { HOST_FILES = 64 };
    int host[HOST_FILES];
    ino_t ino[HOST_FILES];
    for (int k = 0; k < HOST_FILES; k++) {
        char name[128];
        snprintf(name, sizeof name, "%s/f%d", fdir, k);
        host[k] = open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        struct stat st;
        ino[k] = host[k] >= 0 && fstat(host[k], &st) == 0 ? st.st_ino : 0;
    }
    r = run(list_fds, NULL, 0, NULL, NULL, false);
    int moved = 0;
    for (int k = 0; k < HOST_FILES; k++) {
        struct stat st;
        if (host[k] < 0 || fstat(host[k], &st) != 0 || st.st_ino != ino[k])
            moved++;
    }
    tap(r.rc == 0 && strcmp(sorted_fds(r.out), "0 1 2") == 0 && moved == 0,
        "after the host closed everything and opened %d files: stdio only (%s), none of its files replaced (%d)",
        HOST_FILES, r.out, moved);
    for (int k = 0; k < HOST_FILES; k++) {
        char name[128];
        snprintf(name, sizeof name, "%s/f%d", fdir, k);
        unlink(name);
        close(host[k]);
    }
    rmdir(fdir);
    printf("1..%d\n", tap_n);
    return tap_failed != 0;
}
