/* How a child process starts: its stdin, stdout and stderr, the descriptors
 * it is given (sk_proc_opts.keep_fds) and nothing else of ours, default
 * signal dispositions and an empty mask, optionally a session of its own
 * and another working directory; the program found through our PATH as
 * posix_spawnp would. */
#ifndef SK_CHILD_H
#define SK_CHILD_H

#include <sys/types.h>

#include "proc_opts.h"

/* in_fd -1: /dev/null. keep[i] (o->n_keep_fds of them, numbered above
 * 2 + n_keep_fds) becomes the child's 3 + i. Returns 0 or an errno value;
 * a child that could not exec has been reaped. */
int sk_child_spawn(const sk_proc_opts *o, int in_fd, int out_fd, int err_fd, const int *keep, pid_t *pid);

/* Gives back what spawning keeps between calls on Linux (a few reserved
 * descriptors and a stack); the next spawn takes them anew. Runs by itself
 * when the module is unloaded. */
void sk_child_spawn_release(void);

#endif
