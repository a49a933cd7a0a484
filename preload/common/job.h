/* The job a process belongs to, as its launcher's environment tells: launcher, rank,
 * local rank, world size, job id. Read by each process image itself, at its start. */
#ifndef PROF_PRELOAD_JOB_H
#define PROF_PRELOAD_JOB_H

#include <stddef.h>

/* "launcher=torchrun\nrank=1\nlocal_rank=1\nworld_size=2\njob=ID\nhost=NAME\n" (the
 * lines known) into out; "" when no launcher's variables are set. Returns the length.
 * Reads the environment and the host name only: safe in a child after fork. */
size_t prof_job_describe(char *out, size_t len);

/* This process's rank as the launcher set it (digits), or NULL. */
const char *prof_job_rank(void);

#endif
