/* Control groups for local commands, so that a kill reaches every
 * descendant of a command, including those that left its process group
 * (setsid, double fork) and that a group signal cannot find.
 *
 * Layout: <this process's cgroup>/sandkit-<pid>-<random>/s<n> per sandbox and
 * .../s<n>/c<m> per command. Backends: cgroup v2 (`cgroup.kill`, kernel 5.14+)
 * or the v1 freezer (freeze, SIGKILL every listed pid, thaw). Used only where
 * the hierarchy is writable (typically root); otherwise every function is a
 * no-op returning NULL / -1 and callers carry on without. SANDKIT_CGROUP=off
 * (or v1, v2) in the environment overrides the choice, read once.
 * docs/security.md says what each mode promises with and without. */
#ifndef SK_CGROUP_H
#define SK_CGROUP_H

typedef struct sk_cgroup sk_cgroup;

/* "v2", "v1", or NULL when no cgroup backend is usable. Probed once per
 * process (again after a fork). */
const char *sk_cgroup_backend(void);

/* A new cgroup below parent (NULL: this process's sandkit directory), or
 * an empty one a released child left (a child may outlive its parent's
 * destroy: the parent's struct lives until its last child is released;
 * children and parent belong to one thread). NULL when cgroups are
 * unavailable, the parent is destroyed, or the directory cannot be made. */
sk_cgroup *sk_cgroup_new(sk_cgroup *parent);

/* The directory (for tests and metadata). */
const char *sk_cgroup_path(const sk_cgroup *cg);

/* How a child enters cg before it runs anything: the shell command
 * `echo $$ >'<cg>/cgroup.procs' || exit 125; ` to put in front of a
 * `/bin/sh -c` script (malloc'd: prefix + script), and the argv
 * `/bin/sh -c 'echo $$ >"$0" || exit 125; exec "$@"' <procs> argv...`
 * for any other program (malloc'd array of malloc'd strings; argv[0] is
 * resolved through our PATH first, as posix_spawnp would). The child moves
 * itself, so it is inside before it can fork: no race with its first fork.
 * The only additions to the command line are the cgroup's path and 125.
 * NULL on ENOMEM. */
char *sk_cgroup_enter_script(const sk_cgroup *cg, const char *script);
char **sk_cgroup_enter_argv(const sk_cgroup *cg, char *const argv[]);

/* SIGKILL to every process in cg and below, forks included. 0, or -1. */
int sk_cgroup_kill(sk_cgroup *cg);
/* sig to every process listed in cg and below (a process forked while the
 * lists are read may be missed: SIGKILL is the race-free one). */
int sk_cgroup_signal(sk_cgroup *cg, int sig);

/* Kills what is left, waits at most wait_ms for the kernel to empty the
 * tree, removes the directories, frees cg. 0, or -1 when something could
 * not be removed (swept again at exit). NULL is a no-op. */
int sk_cgroup_destroy(sk_cgroup *cg, int wait_ms);

/* Gives cg's directory back to its parent for reuse, or removes it, if it
 * is empty; kills nothing (a finished command's daemons stay until their
 * sandbox goes). Frees cg. */
void sk_cgroup_release(sk_cgroup *cg);

#endif
