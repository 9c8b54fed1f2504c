/* How a child process is to start (sk_proc_opts): what proc.c (processes
 * on the loop) is asked for and what child.c (the spawn itself) carries
 * out. A header of its own, so that neither of the two includes the other's
 * header for it: child.c sits below proc.c and knows nothing of the loop. */
#ifndef SK_PROC_OPTS_H
#define SK_PROC_OPTS_H

#include <stdbool.h>

#include "cgroup.h"

typedef struct sk_proc_opts {
    const char *file;         /* resolved through PATH when it has no '/' */
    char **argv;              /* NULL-terminated; argv[0] conventionally file */
    char **envp;              /* NULL-terminated "K=V"; NULL inherits ours */
    const char *cwd;          /* NULL: ours */
    bool new_group;           /* setsid(): signals go to the whole group */
    bool stdin_pipe;          /* else stdin is /dev/null */
    /* The cgroup the child enters itself (argv does that; see cgroup.h) or
     * NULL. Owned by the proc after a successful spawn: SIGKILL kills it,
     * and it is removed when the proc is freed if nothing lives in it. */
    sk_cgroup *cgroup;
    /* Descriptors the child keeps: keep_fds[i] becomes the child's fd 3 + i
     * (everything else above stderr is closed). */
    const int *keep_fds;
    int n_keep_fds;
    /* The child starts in a new, empty session keyring instead of ours,
     * which it could otherwise read (keys are shared by possession, not
     * by uid). */
    bool fresh_session_keyring;
} sk_proc_opts;

#endif
