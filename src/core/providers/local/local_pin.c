/* LocalSandbox's pinned paths: the working directory and the user's
 * read_write_paths/read_only_paths are opened once, at the first start,
 * without trusting symlinks owned by others, and bwrap binds those
 * descriptors (docs/security.md §"LocalSandbox"). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../compat.h"
#include "../../fs_local.h"
#include "local_fs.h"
#include "local_state.h"

static size_t local_list_len(char **list)
{
    size_t n = 0;
    while (list && list[n])
        n++;
    return n;
}

/* path strictly inside dir (both absolute and folded). */
bool sk_local_path_inside(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/')
        return path[1] != '\0';
    return strncmp(path, dir, n) == 0 && path[n] == '/';
}

static bool local_in_writable(const local_sandbox *ls, const char *path)
{
    if (sk_local_path_inside(path, ls->workdir))
        return true;
    for (char **w = ls->rw_paths; *w; w++)
        if (sk_local_path_inside(path, *w))
            return true;
    return false;
}

/* ---- pinned paths ----------------------------------------------------------
 * Opened once, at the first start, before any command of this sandbox ran;
 * bwrap binds these descriptors, so renaming a path or putting a symlink in
 * its place later changes nothing that is mounted. */

static void local_close_fds(int *fds, size_t n)
{
    for (size_t i = 0; fds && i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

static void local_unrelay(local_sandbox *ls);

void sk_local_unpin(local_sandbox *ls)
{
    if (ls->wd_fd >= 0)
        close(ls->wd_fd);
    ls->wd_fd = -1;
    local_close_fds(ls->ro_fds, local_list_len(ls->ro_paths));
    local_close_fds(ls->rw_fds, local_list_len(ls->rw_paths));
    free(ls->ro_fds);
    free(ls->rw_fds);
    ls->ro_fds = ls->rw_fds = NULL;
    for (size_t i = 0; i < ls->n_chain; i++) {
        close(ls->chain_fds[i]);
        free(ls->chain_paths[i]);
    }
    free(ls->chain_fds);
    free(ls->chain_paths);
    ls->chain_fds = NULL;
    ls->chain_paths = NULL;
    ls->n_chain = 0;
    local_unrelay(ls);
    free(ls->binds);
    ls->binds = NULL;
    ls->n_binds = 0;
    ls->pinned = false;
}

/* The sandbox user may write to the directory (its mode; an ACL is taken
 * on trust). */
static bool local_writable_by(const local_sandbox *ls, int fd, const struct stat *st)
{
    if ((st->st_uid == ls->uid && (st->st_mode & S_IWUSR)) ||
        (st->st_gid == ls->gid && (st->st_mode & S_IWGRP)) || (st->st_mode & S_IWOTH))
        return true;
    char path[64]; /* works for a descriptor that only names the file too */
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return sk_has_posix_acl(path);
}

/* bwrap binds a descriptor by resolving it to its path and walking that
 * path as the sandbox user (it checks the result is the same inode), so
 * every directory above a bound path must be searchable by that user.
 * False, with the first directory it may not enter in blocked, when one is
 * not (such a bind is relayed, below). */
static bool local_reachable(const local_sandbox *ls, int fd, char *blocked, size_t blocked_len)
{
    char link[64], real[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, real, sizeof real - 1);
    if (n <= 0 || real[0] != '/')
        return true; /* bwrap will say */
    real[n] = '\0';
    for (char *slash = strchr(real + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        struct stat st;
        bool ok = stat(real, &st) != 0 ||
                  (st.st_uid == ls->uid ? (st.st_mode & S_IXUSR) != 0
                                        : st.st_gid == ls->gid ? (st.st_mode & S_IXGRP) != 0
                                                               : (st.st_mode & S_IXOTH) != 0) ||
                  sk_has_posix_acl(real);
        if (!ok) {
            snprintf(blocked, blocked_len, "%s", real);
            return false;
        }
        *slash = '/';
    }
    return true;
}

/* ---- relayed binds ---------------------------------------------------------
 * A bind the sandbox user cannot reach (the working directory ./ws of a
 * root shell in /root) gets an empty directory of its own in relay_dir; the
 * launcher of each command binds the path there, as root in a private
 * mount namespace, and checks it is still the pinned directory (local.c). */

static void local_unrelay(local_sandbox *ls)
{
    for (size_t i = 0; i < ls->n_binds; i++) {
        if (ls->binds[i].relay)
            rmdir(ls->binds[i].relay);
        free(ls->binds[i].relay);
        ls->binds[i].relay = NULL;
    }
    if (ls->relay_dir)
        rmdir(ls->relay_dir);
    free(ls->relay_dir);
    ls->relay_dir = NULL;
}

void sk_local_remove_relays(local_sandbox *ls)
{
    for (size_t i = 0; i < ls->n_binds; i++)
        if (ls->binds[i].relay)
            rmdir(ls->binds[i].relay);
    if (ls->relay_dir)
        rmdir(ls->relay_dir);
}

static sk_error *local_plan_relays(local_sandbox *ls)
{
    for (size_t i = 0; ls->drop_ids && i < ls->n_binds; i++) {
        local_bind *b = &ls->binds[i];
        char blocked[PATH_MAX];
        if (local_reachable(ls, b->fd, blocked, sizeof blocked))
            continue;
        if (!ls->unshare_exe)
            ls->unshare_exe = sk_find_executable("unshare");
        if (!ls->mount_exe)
            ls->mount_exe = sk_find_executable("mount");
        if (!ls->unshare_exe || !ls->mount_exe)
            return sk_error_new(SK_ERR_SANDBOX, json_pack("{s:s,s:s,s:I}", "path", b->path, "blocked_by", blocked,
                                                          "uid", (json_int_t)ls->uid),
                                "The sandbox user (uid %u) cannot reach %s: it may not enter %s, and "
                                "unshare and mount (util-linux, mount), which would bind it where that "
                                "user can, are not installed: apt-get install util-linux mount",
                                (unsigned)ls->uid, b->path, blocked);
        if (!ls->relay_dir) {
            char tmpl[] = "/tmp/sandkit-relay-XXXXXX";
            if (!mkdtemp(tmpl) || chmod(tmpl, 0711) != 0 || !(ls->relay_dir = strdup(tmpl))) {
                int e = errno ? errno : ENOMEM;
                rmdir(tmpl);
                return sk_error_new(SK_ERR_SANDBOX, json_pack("{s:s}", "path", b->path),
                                    "Cannot make a relay directory for %s: %s", b->path, strerror(e));
            }
        }
        if (asprintf(&b->relay, "%s/%zu", ls->relay_dir, i) < 0) {
            b->relay = NULL;
            return sk_error_oom();
        }
        if (mkdir(b->relay, 0755) != 0) {
            int e = errno;
            free(b->relay);
            b->relay = NULL;
            return sk_error_new(SK_ERR_SANDBOX, json_pack("{s:s}", "path", b->path),
                                "Cannot make a relay directory for %s: %s", b->path, strerror(e));
        }
    }
    return NULL;
}

/* ---- resolving a path without trusting others' symlinks -------------------
 * Each path a sandbox gets (working directory, read_only_paths,
 * read_write_paths) is resolved one component at a time, and a symlink on
 * the way is followed only if root or the caller owns it. A symlink planted
 * by a sandbox (owned by the sandbox user) or by another user could
 * otherwise point a root caller's chown and binds at any host directory:
 * an empty root-owned /usr/local/bin given to nobody, then filled by the
 * next command. Returns an O_PATH descriptor, or -1 with errno (EPERM and
 * *untrusted set: a symlink owned by someone else, named in link). */
enum { LOCAL_MAX_SYMLINKS = 40 };

static int local_open_trusted(const char *path, bool *untrusted, uid_t *owner, char *link, size_t link_len,
                              bool *created)
{
    *untrusted = false;
    if (created)
        *created = false;
    size_t cap = strlen(path) + 1;
    char *rest = malloc(cap);
    int cur = rest ? open("/", SK_O_DIR_REF | O_CLOEXEC) : -1;
    if (cur < 0) {
        free(rest);
        errno = rest ? errno : ENOMEM;
        return -1;
    }
    memcpy(rest, path, cap);
    int links = 0, e = 0;
    char *p = rest;
    for (;;) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        char *end = strchr(p, '/');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char comp[NAME_MAX + 1];
        if (len > NAME_MAX) {
            e = ENAMETOOLONG;
            break;
        }
        memcpy(comp, p, len);
        comp[len] = '\0';
        p += len;
        if (strcmp(comp, ".") == 0)
            continue;
        struct stat st;
        int next = sk_openat_ref_nofollow(cur, comp, &st);
        if (next < 0 && errno == ENOENT && created) {
            /* made here, beneath what was resolved so far: never through
             * a symlink this walk would refuse */
            bool made = mkdirat(cur, comp, 0755) == 0;
            if (made || errno == EEXIST)
                next = sk_openat_ref_nofollow(cur, comp, &st);
            if (made && next >= 0) {
                const char *q = p;
                while (*q == '/')
                    q++;
                *created = !*q; /* the last component */
            }
        }
        /* without O_PATH a symlink cannot be opened itself: it is looked
         * at through its directory instead */
        bool by_name = next < 0 && errno == ELOOP && S_ISLNK(st.st_mode);
        if (!by_name && next < 0) {
            e = errno;
            break;
        }
        if (!S_ISLNK(st.st_mode)) {
            close(cur);
            cur = next;
            continue;
        }
        char target[PATH_MAX];
        ssize_t n = -1;
        if (st.st_uid != 0 && st.st_uid != geteuid()) {
            *untrusted = true;
            *owner = st.st_uid;
            snprintf(link, link_len, "%s", comp);
            e = EPERM;
        } else if (++links > LOCAL_MAX_SYMLINKS) {
            e = ELOOP;
        } else if ((n = by_name ? readlinkat(cur, comp, target, sizeof target - 1)
                               : readlinkat(next, "", target, sizeof target - 1)) < 0) {
            e = errno;
        }
        if (next >= 0)
            close(next);
        if (e)
            break;
        target[n] = '\0';
        /* the rest of the path now follows the link's target */
        size_t left = strlen(p), need = (size_t)n + left + 1;
        char *joined = malloc(need > cap ? need : cap);
        if (!joined) {
            e = ENOMEM;
            break;
        }
        memcpy(joined, target, (size_t)n);
        memcpy(joined + n, p, left + 1);
        free(rest);
        rest = p = joined;
        cap = need > cap ? need : cap;
        if (target[0] == '/') {
            int root = open("/", SK_O_DIR_REF | O_CLOEXEC);
            if (root < 0) {
                e = errno;
                break;
            }
            close(cur);
            cur = root;
        }
    }
    free(rest);
    if (e) {
        close(cur);
        errno = e;
        return -1;
    }
    return cur;
}

static sk_error *local_untrusted_link(const char *key, const char *path, uid_t owner, const char *link)
{
    return sk_error_new(SK_ERR_SANDBOX, json_pack("{s:s,s:s,s:I}", "key", key, "path", path, "link_owner",
                                                  (json_int_t)owner),
                        "LocalSandbox %s %s leads through a symlink (%s) owned by uid %u, which sandkit does "
                        "not follow (only root's and the caller's own): name the real path",
                        key, path, link, (unsigned)owner);
}

static sk_error *local_path_error(const char *key, const char *path, int e)
{
    if (e == ENOENT)
        return sk_error_new(SK_ERR_SANDBOX, json_pack("{s:s,s:s}", "key", key, "path", path),
                            "LocalSandbox %s entry %s does not exist", key, path);
    return sk_error_new(SK_ERR_SANDBOX, json_pack("{s:s,s:s}", "key", key, "path", path),
                        "Cannot open %s entry %s: %s", key, path, strerror(e));
}

static bool local_dir_empty(int dirfd_)
{
    int fd = openat(dirfd_, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return false;
    }
    bool empty = true;
    struct dirent *e;
    while (empty && (e = readdir(d)))
        empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
    closedir(d);
    return empty;
}

static sk_error *local_not_writable(const local_sandbox *ls, const char *what, const char *path)
{
    return sk_error_new(SK_ERR_SANDBOX, json_pack("{s:s,s:I}", "path", path, "uid", (json_int_t)ls->uid),
                        "%s %s is not writable by the sandbox user (uid %u): chown it to that user%s",
                        what, path, (unsigned)ls->uid,
                        strcmp(what, "Working directory") == 0
                            ? ", or name a directory that does not exist yet or is empty (sandkit "
                              "gives it to the sandbox user)"
                            : "");
}

/* writable: a read_write_paths list, which the sandbox user must be able
 * to write (a root caller's commands run as that user). */
static sk_error *local_pin_list(local_sandbox *ls, char **paths, int **fds, const char *key, bool writable)
{
    size_t n = local_list_len(paths);
    if (!(*fds = malloc((n + 1) * sizeof **fds)))
        return sk_error_oom();
    for (size_t i = 0; i < n; i++)
        (*fds)[i] = -1;
    for (size_t i = 0; i < n; i++) {
        bool untrusted;
        uid_t owner;
        char link[NAME_MAX + 1];
        int fd = local_open_trusted(paths[i], &untrusted, &owner, link, sizeof link, NULL);
        if (fd < 0)
            return untrusted ? local_untrusted_link(key, paths[i], owner, link)
                             : local_path_error(key, paths[i], errno);
        (*fds)[i] = fd;
        struct stat st;
        if (!writable || !ls->drop_ids || fstat(fd, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode) && st.st_uid == 0 && local_dir_empty(fd)) {
            /* as the working directory: an empty one of root's is given */
            int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            int rc = dfd >= 0 ? fchown(dfd, ls->uid, ls->gid) : -1;
            if (dfd >= 0)
                close(dfd);
            if (rc == 0)
                continue;
        }
        if (!local_writable_by(ls, fd, &st))
            return local_not_writable(ls, "read_write_paths entry", paths[i]);
    }
    return NULL;
}

/* The bound writable directory (working directory or read_write_paths
 * entry) that path lies inside, and its pinned descriptor; NULL if none. */
static const char *local_writable_root(const local_sandbox *ls, const char *path, int *fd)
{
    if (!local_in_writable(ls, ls->workdir) && sk_local_path_inside(path, ls->workdir)) {
        *fd = ls->wd_fd;
        return ls->workdir;
    }
    for (size_t i = 0; ls->rw_paths[i]; i++) {
        if (!local_in_writable(ls, ls->rw_paths[i]) && sk_local_path_inside(path, ls->rw_paths[i])) {
            *fd = ls->rw_fds[i];
            return ls->rw_paths[i];
        }
    }
    return NULL;
}

static bool local_is_ro_path(const local_sandbox *ls, const char *path)
{
    for (char **r = ls->ro_paths; *r; r++)
        if (strcmp(*r, path) == 0)
            return true;
    return false;
}

static sk_error *local_chain_add(local_sandbox *ls, const char *path, size_t len, int fd)
{
    char *copy = strndup(path, len);
    char **paths = copy ? realloc(ls->chain_paths, (ls->n_chain + 1) * sizeof *paths) : NULL;
    if (paths)
        ls->chain_paths = paths;
    int *fds = paths ? realloc(ls->chain_fds, (ls->n_chain + 1) * sizeof *fds) : NULL;
    if (!fds) {
        free(copy);
        close(fd);
        return sk_error_oom();
    }
    ls->chain_fds = fds;
    ls->chain_paths[ls->n_chain] = copy;
    ls->chain_fds[ls->n_chain++] = fd;
    return NULL;
}

/* A read-only path inside a writable bind: its real place is walked from
 * the writable directory's descriptor without following a symlink, the
 * path itself is pinned from that walk, and each directory on the way is
 * pinned to be bound onto itself. A mount point cannot be renamed or
 * removed, so no command can move the read-only path (which would leave
 * its content reachable, writable, under another name) or put a symlink
 * on its way (which bwrap would follow for the destination). */
static sk_error *local_pin_nested(local_sandbox *ls, size_t i)
{
    const char *path = ls->ro_paths[i];
    int fd;
    const char *root = local_writable_root(ls, path, &fd);
    if (!root)
        return NULL;
    size_t off = strlen(root);
    if (off == 1)
        off = 0; /* "/" */
    int cur = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (cur < 0)
        return local_path_error("read_only_paths", path, errno);
    while (path[off] == '/') {
        const char *name = path + off + 1;
        const char *end = strchr(name, '/');
        size_t len = end ? (size_t)(end - name) : strlen(name);
        char comp[NAME_MAX + 1];
        if (len > NAME_MAX) {
            close(cur);
            return local_path_error("read_only_paths", path, ENAMETOOLONG);
        }
        memcpy(comp, name, len);
        comp[len] = '\0';
        struct stat st;
        int next = sk_openat_ref_nofollow(cur, comp, &st);
        int open_errno = errno;
        close(cur);
        /* without O_PATH a symlink is refused (ELOOP) instead of opened */
        bool link = next < 0 && open_errno == ELOOP;
        if (!link && next < 0)
            return local_path_error("read_only_paths", path, open_errno);
        off += 1 + len;
        if (link || S_ISLNK(st.st_mode) || (path[off] && !S_ISDIR(st.st_mode))) {
            if (next >= 0)
                close(next);
            return sk_error_new(SK_ERR_SANDBOX, json_pack("{s:s,s:s}", "key", "read_only_paths", "path", path),
                                "LocalSandbox read_only_paths entry %s, inside the writable directory %s, "
                                "leads through a symlink or a non-directory (%.*s); name its real path",
                                path, root, (int)off, path);
        }
        if (!path[off]) { /* the read-only path itself */
            close(ls->ro_fds[i]);
            ls->ro_fds[i] = next;
            return NULL;
        }
        /* a read-only path on the way is a mount point already */
        char *prefix = strndup(path, off);
        bool known = !prefix || local_is_ro_path(ls, prefix);
        for (size_t c = 0; !known && c < ls->n_chain; c++)
            known = strcmp(ls->chain_paths[c], prefix) == 0;
        free(prefix);
        if (!known) {
            int keep = fcntl(next, F_DUPFD_CLOEXEC, 0);
            sk_error *e = keep < 0 ? local_path_error("read_only_paths", path, errno)
                                   : local_chain_add(ls, path, off, keep);
            if (e) {
                close(next);
                return e;
            }
        }
        cur = next;
    }
    close(cur);
    return NULL;
}


static int local_bind_cmp(const void *a, const void *b)
{
    const local_bind *x = a, *y = b;
    size_t lx = strlen(x->path), ly = strlen(y->path);
    if (lx != ly)
        return lx < ly ? -1 : 1;
    if (x->ro != y->ro)
        return x->ro ? 1 : -1;
    return x->order < y->order ? -1 : (x->order > y->order);
}

/* Planned once the paths are pinned: they do not change while the sandbox
 * runs. -1 on ENOMEM. */
static int local_plan_binds(local_sandbox *ls)
{
    size_t n_ro = local_list_len(ls->ro_paths), n_rw = local_list_len(ls->rw_paths), n = 0;
    local_bind *binds = malloc((1 + n_ro + n_rw + ls->n_chain) * sizeof *binds);
    if (!binds)
        return -1;
    if (!local_in_writable(ls, ls->workdir)) {
        binds[n] = (local_bind){ ls->workdir, ls->wd_fd, false, n, NULL };
        n++;
    }
    for (size_t i = 0; i < n_rw; i++)
        if (!local_in_writable(ls, ls->rw_paths[i])) {
            binds[n] = (local_bind){ ls->rw_paths[i], ls->rw_fds[i], false, n, NULL };
            n++;
        }
    for (size_t i = 0; i < ls->n_chain; i++, n++)
        binds[n] = (local_bind){ ls->chain_paths[i], ls->chain_fds[i], false, n, NULL };
    for (size_t i = 0; i < n_ro; i++, n++)
        binds[n] = (local_bind){ ls->ro_paths[i], ls->ro_fds[i], true, n, NULL };
    qsort(binds, n, sizeof *binds, local_bind_cmp);
    ls->binds = binds;
    ls->n_binds = n;
    return 0;
}

/* Opens (making it if missing) and pins the working directory and the
 * paths. A root caller's working directory goes to the sandbox user when
 * sandkit created it or it is an empty directory of root's (made for the
 * sandbox); any other must already be writable by that user. */
sk_error *sk_local_pin(local_sandbox *ls)
{
    sk_error *err = NULL;
    bool untrusted;
    uid_t owner;
    char link[NAME_MAX + 1];
    bool created;
    int path_fd = local_open_trusted(ls->workdir, &untrusted, &owner, link, sizeof link, &created);
    if (path_fd < 0 && untrusted) {
        err = local_untrusted_link("working_directory", ls->workdir, owner, link);
        goto fail;
    }
    ls->wd_fd = path_fd >= 0 ? openat(path_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (path_fd >= 0) {
        int e = errno;
        close(path_fd);
        errno = e;
    }
    if (ls->wd_fd < 0) {
        err = sk_error_new(SK_ERR_SANDBOX, json_pack("{s:s}", "path", ls->workdir),
                           "Cannot create or open working directory %s: %s", ls->workdir, strerror(errno));
        goto fail;
    }
    if (ls->drop_ids) {
        struct stat st;
        bool give = created || (fstat(ls->wd_fd, &st) == 0 && st.st_uid == 0 && local_dir_empty(ls->wd_fd));
        if (give && fchown(ls->wd_fd, ls->uid, ls->gid) != 0) {
            err = sk_error_new(SK_ERR_SANDBOX, json_pack("{s:s}", "path", ls->workdir),
                               "Cannot give working directory %s to the sandbox user (uid %u): %s",
                               ls->workdir, (unsigned)ls->uid, strerror(errno));
            goto fail;
        }
        if (fstat(ls->wd_fd, &st) == 0 && !local_writable_by(ls, ls->wd_fd, &st)) {
            err = local_not_writable(ls, "Working directory", ls->workdir);
            goto fail;
        }
    }
    if ((err = local_pin_list(ls, ls->rw_paths, &ls->rw_fds, "read_write_paths", true)) ||
        (err = local_pin_list(ls, ls->ro_paths, &ls->ro_fds, "read_only_paths", false)))
        goto fail;
    for (size_t i = 0; ls->ro_paths[i]; i++)
        if ((err = local_pin_nested(ls, i)))
            goto fail;
    if (local_plan_binds(ls) != 0) {
        err = sk_error_oom();
        goto fail;
    }
    if ((err = local_plan_relays(ls)))
        goto fail;
    ls->pinned = true;
    return NULL;
fail:
    sk_local_unpin(ls);
    return err;
}

/* isolation "none" binds nothing; a missing path still fails start alike. */
sk_error *sk_local_check_paths(local_sandbox *ls)
{
    static const char *const keys[] = { "read_write_paths", "read_only_paths" };
    char **lists[] = { ls->rw_paths, ls->ro_paths };
    for (int k = 0; k < 2; k++)
        for (char **p = lists[k]; p && *p; p++)
            if (access(*p, F_OK) != 0)
                return local_path_error(keys[k], *p, errno);
    return NULL;
}


/* ---- sb.fs -----------------------------------------------------------------
 * Under bwrap, the same descriptors the commands' binds come from, mounted
 * in bwrap's order: the private /tmp, then the planned binds (a read-only
 * path over the writable directory it lies in). With isolation "none"
 * nothing is pinned and the commands run at the working directory's path:
 * sb.fs opens that path for each call, as a command's chdir does. */

extern const sk_provider sk_provider_local;

long sk_local_fs_generation(const sk_sandbox *sb)
{
    return ((const local_sandbox *)sb->impl)->fs_gen;
}

static int local_fs_mount(sk_fs_view *v, const char *path, int fd, bool ro)
{
    int dup = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    return dup < 0 ? -errno : sk_fs_view_mount(v, path, dup, ro);
}

int sk_local_fs_get(const sk_sandbox *sb, sk_sandbox_fs *fs)
{
    const local_sandbox *ls = sb->impl;
    if (ls->bwrap && (!ls->pinned || ls->tmp_fd < 0))
        return -ENOTCONN;
    int rc = 0;
    if (!ls->bwrap) {
        rc = sk_fs_view_mount_path(&fs->view, ls->workdir, ls->workdir, false);
    } else {
        rc = local_fs_mount(&fs->view, "/tmp", ls->tmp_fd, false);
        for (size_t i = 0; rc == 0 && i < ls->n_binds; i++)
            rc = local_fs_mount(&fs->view, ls->binds[i].path, ls->binds[i].fd, ls->binds[i].ro);
    }
    if (rc != 0) {
        sk_fs_view_clear(&fs->view);
        return rc;
    }
    fs->workdir = ls->workdir;
    fs->generation = ls->fs_gen;
    fs->as_user = ls->drop_ids;
    fs->uid = ls->uid;
    fs->gid = ls->gid;
    return 0;
}
