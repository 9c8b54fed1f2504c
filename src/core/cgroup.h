/* Control groups for local commands, so that a kill reaches every
 * descendant of a command, including those that left its process group
 * (setsid, double fork), and so that a sandbox's memory, process count and
 * CPU can be limited.
 *
 * Layout: <this process's cgroup>/sandkit-<pid>-<random>/s<n> per sandbox and
 * .../s<n>/c<m> per command, in the hierarchy that kills: cgroup v2
 * (`cgroup.kill`, kernel 5.14+) or the v1 freezer (freeze, SIGKILL every
 * listed pid, thaw). Limits live in the same directories where the v2
 * hierarchy has the controller (memory, pids, cpu); on a v1 or hybrid
 * machine, in the same layout under each v1 controller's own hierarchy
 * (its own sandkit-<pid>-<random>). Used only where the hierarchy is
 * writable (typically root); otherwise every function is a no-op returning
 * NULL / -1 and callers carry on without. SANDKIT_CGROUP=off (or v1, v2) in
 * the environment overrides the choice of the killing hierarchy, read once.
 * docs/security.md says what each mode promises with and without. */
#ifndef SK_CGROUP_H
#define SK_CGROUP_H

#include <stdint.h>

typedef struct sk_cgroup sk_cgroup;

/* "v2", "v1", or NULL when no cgroup backend is usable. Probed once per
 * process (again after a fork). */
const char *sk_cgroup_backend(void);

/* The controllers a limit needs. */
typedef enum { SK_CGROUP_MEMORY, SK_CGROUP_PIDS, SK_CGROUP_CPU, SK_CGROUP_NCTL } sk_cgroup_ctl;

/* "memory", "pids", "cpu". */
const char *sk_cgroup_ctl_name(sk_cgroup_ctl ctl);

/* A sandbox's limits; 0: not limited. */
typedef struct sk_cgroup_limits {
    int64_t memory;     /* bytes, swap not beyond (v2 memory.max, memory.swap.max 0; v1
                           memory.limit_in_bytes and memory.memsw.limit_in_bytes) */
    int64_t pids;       /* processes and threads (pids.max) */
    int64_t cpu_quota;  /* µs of CPU time per period (v2 cpu.max; v1 cpu.cfs_quota_us) */
    int64_t cpu_period; /* µs; 0: the kernel's (100000) */
} sk_cgroup_limits;

/* NULL when limits through ctl can be enforced in this process; otherwise
 * a sentence saying why not (static). Probed once per process: the v2
 * controller is enabled down to sandkit's directory, or the v1 controller's
 * hierarchy gets its sandkit directory. */
const char *sk_cgroup_unlimitable(sk_cgroup_ctl ctl);

/* A new sandbox cgroup (parent NULL) holding lim, or a new command cgroup
 * below parent (lim NULL: a command shares its sandbox's limits), possibly
 * an empty one a released child left (a child may outlive its parent's
 * destroy: the parent's struct lives until its last child is released;
 * children and parent belong to one thread). NULL when cgroups are
 * unavailable, the parent is destroyed, a directory cannot be made or a
 * limit cannot be written (*err_no then says why; 0 otherwise). */
sk_cgroup *sk_cgroup_new(sk_cgroup *parent, const sk_cgroup_limits *lim, int *err_no);

/* The directory in the killing hierarchy (for tests and metadata). */
const char *sk_cgroup_path(const sk_cgroup *cg);
/* The directory whose files hold ctl's limit and counters, and the
 * hierarchy's version ("v1", "v2"); NULL when cg has no such limit. */
const char *sk_cgroup_ctl_path(const sk_cgroup *cg, sk_cgroup_ctl ctl, const char **version);

/* How many processes of a command cgroup the kernel's OOM killer killed
 * since the cgroup was handed out (v2 memory.events, v1 memory.oom_control
 * `oom_kill`); 0 when its sandbox has no memory limit. */
long sk_cgroup_oom_kills(const sk_cgroup *cg);

/* How a child enters cg before it runs anything: the shell command
 * `echo $$ >'<cg>/cgroup.procs' || exit 125; ` (one per hierarchy) to put
 * in front of a `/bin/sh -c` script (malloc'd: prefix + script), and the
 * argv `/bin/sh -c 'echo $$ >"$0" || exit 125; ... exec "$@"' <procs>...
 * argv...` for any other program (malloc'd array of malloc'd strings;
 * *n_added says how many strings came before argv; argv[0] is resolved
 * through our PATH first, as posix_spawnp would). The child moves itself,
 * so it is inside before it can fork: no race with its first fork. The
 * only additions to the command line are the cgroups' paths and 125.
 * NULL on ENOMEM. */
char *sk_cgroup_enter_script(const sk_cgroup *cg, const char *script);
char **sk_cgroup_enter_argv(const sk_cgroup *cg, char *const argv[], int *n_added);

/* SIGKILL to every process in cg and below, forks included. 0, or -1. */
int sk_cgroup_kill(sk_cgroup *cg);
/* sig to every process listed in cg and below (a process forked while the
 * lists are read may be missed: SIGKILL is the race-free one). */
int sk_cgroup_signal(sk_cgroup *cg, int sig);

/* Destroying a cgroup in two halves, so the wait can run off the loop:
 * sk_cgroup_retire kills what is left (the kill is sent before it
 * returns), frees cg and returns its directories (NULL when none is left:
 * an empty tree is removed at once); sk_cgroup_remove waits at most
 * wait_ms for the killed tasks to leave, removes the directories and frees
 * them, from any thread. 0, or -1 when something could not be removed
 * (swept again at exit). */
typedef struct sk_cgroup_dirs sk_cgroup_dirs;
sk_cgroup_dirs *sk_cgroup_retire(sk_cgroup *cg);
int sk_cgroup_remove(sk_cgroup_dirs *dirs, int wait_ms);
/* Both at once. NULL is a no-op. */
int sk_cgroup_destroy(sk_cgroup *cg, int wait_ms);

/* Gives cg's directory back to its parent for reuse, or removes it, if it
 * is empty; kills nothing (a finished command's daemons stay until their
 * sandbox goes). Frees cg. */
void sk_cgroup_release(sk_cgroup *cg);

#endif
