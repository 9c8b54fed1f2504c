/* fs_local: every path resolves beneath the root, with openat2 and with the
 * fallback walk: "..", absolute symlinks, relative symlinks leading out and
 * symlinked directories never reach outside; the leaf of unlink/rename is
 * never followed; copy onto itself keeps the data; no descriptor leaks. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs_local.h"

#include "tap.h"

static char base[256], outside[256];

static void put(const char *dir, const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

static void run(const char *mode)
{
    int root = sk_fs_root_open(base, false);
    tap(root >= 0, "%s: root opens", mode);
    int fds = count_fds();

    int fd = sk_fs_open(root, "in/ok.txt", O_RDONLY, 0);
    tap(fd >= 0, "%s: a plain file opens", mode);
    if (fd >= 0)
        close(fd);
    tap(sk_fs_open(root, "../outside/secret.txt", O_RDONLY, 0) == -EXDEV, "%s: .. out is EXDEV", mode);
    tap(sk_fs_open(root, "in/../../outside/secret.txt", O_RDONLY, 0) == -EXDEV, "%s: nested .. out is EXDEV", mode);
    tap(sk_fs_open(root, "abs", O_RDONLY, 0) == -EXDEV, "%s: absolute symlink is EXDEV", mode);
    tap(sk_fs_open(root, "rel", O_RDONLY, 0) == -EXDEV, "%s: relative symlink out is EXDEV", mode);
    tap(sk_fs_open(root, "dirlink/secret.txt", O_RDONLY, 0) == -EXDEV, "%s: symlinked directory out is EXDEV", mode);
    int w = sk_fs_open(root, "dirlink/planted.txt", O_WRONLY | O_CREAT, 0644);
    tap(w == -EXDEV, "%s: no file is created through a symlinked directory", mode);
    if (w >= 0)
        close(w);
    char planted[512];
    snprintf(planted, sizeof planted, "%s/planted.txt", outside);
    tap(access(planted, F_OK) != 0, "%s: nothing planted outside", mode);
    struct stat st;
    tap(sk_fs_stat(root, "abs", true, &st) == 0 && S_ISLNK(st.st_mode), "%s: lstat sees the link itself", mode);
    tap(sk_fs_stat(root, "abs", false, &st) == -EXDEV, "%s: stat through the link is EXDEV", mode);
    tap(sk_fs_mkdir(root, "dirlink/newdir", 0755) == -EXDEV, "%s: mkdir through a link is EXDEV", mode);
    tap(sk_fs_open(root, "in/missing", O_RDONLY, 0) == -ENOENT, "%s: missing is ENOENT", mode);
    tap(sk_fs_open_parent(root, "in/..", &(const char *){ NULL }) == -EINVAL, "%s: a .. leaf is refused", mode);
    /* copy onto itself keeps the data */
    tap(sk_fs_copy(root, "in/ok.txt", "in/ok.txt", false) == 0, "%s: copy onto itself succeeds", mode);
    tap(sk_fs_stat(root, "in/ok.txt", false, &st) == 0 && st.st_size == 2, "%s: and keeps the bytes", mode);
    tap(sk_fs_copy(root, "in/ok.txt", "in/ok2.txt", true) == 0, "%s: copy", mode);
    tap(sk_fs_copy(root, "in/ok.txt", "in/ok2.txt", true) == -EEXIST, "%s: exclusive copy onto a file is EEXIST", mode);
    tap(sk_fs_copy(root, "in", "x", false) == -EISDIR, "%s: copying a directory is EISDIR", mode);
    tap(sk_fs_rename(root, "in/ok2.txt", "in/ok.txt", true) == -EEXIST, "%s: rename noreplace is EEXIST", mode);
    tap(sk_fs_unlink(root, "in/ok2.txt") == 0, "%s: unlink", mode);
    tap(count_fds() == fds, "%s: no descriptor leaked", mode);
    close(root);
}

int main(void)
{
    char tmpl[] = "/tmp/sandkit-fs-test-XXXXXX";
    if (!mkdtemp(tmpl))
        return 1;
    snprintf(base, sizeof base, "%s/root", tmpl);
    snprintf(outside, sizeof outside, "%s/outside", tmpl);
    mkdir(base, 0755);
    mkdir(outside, 0755);
    char p[512], t[512];
    snprintf(p, sizeof p, "%s/in", base);
    mkdir(p, 0755);
    put(p, "ok.txt", "ok");
    put(outside, "secret.txt", "SECRET");
    snprintf(p, sizeof p, "%s/abs", base);
    snprintf(t, sizeof t, "%s/secret.txt", outside);
    int rc = symlink(t, p);
    snprintf(p, sizeof p, "%s/rel", base);
    rc |= symlink("../outside/secret.txt", p);
    snprintf(p, sizeof p, "%s/dirlink", base);
    rc |= symlink(outside, p);
    tap(rc == 0, "fixture links made");

    run("openat2");
    sk_fs_force_fallback(true);
    run("fallback");
    sk_fs_force_fallback(false);

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpl);
    if (system(cmd) != 0)
        tap(0, "cleanup");
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}
