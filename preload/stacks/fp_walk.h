/* Walking a stack by frame pointers where the code keeps them (fp_walk.c). */
#ifndef PROF_PRELOAD_FP_WALK_H
#define PROF_PRELOAD_FP_WALK_H

#include <stdint.h>

#include "preload/common/config.h"

enum fp_walk_status {
	FP_WALK_BAD,        /* a frame pointer not believed: walk the stack another way */
	FP_WALK_END,        /* the whole stack */
	FP_WALK_FULL,       /* max frames */
	FP_WALK_STOPPED,    /* f[n - 1] lies in [stop_lo, stop_hi) */
	FP_WALK_OTHER_CODE, /* f[n - 1] is in code without frame pointers */
};

struct fp_walk {
	enum fp_walk_status status;
	unsigned n;  /* return addresses in f, the last one's frame included */
	uint64_t sp; /* where f[n - 1]'s frame's stack pointer was (f[n - 1] at sp - 8) */
	int unchecked; /* went through a frame libunwind has not confirmed yet */
	int spliced;   /* ends with frames of the last walk (struct fp_last) */
	unsigned used; /* frames whose frame pointer gave their caller: f[0..used) */
};

/* A thread's last whole stack with each frame's stack pointer, innermost first (ip[i]
 * at sp[i] - 8): a walk that reaches one of its frames unchanged takes the rest from it. */
struct fp_last {
	unsigned n;
	int truncated; /* the stack went on past ip[n - 1] */
	uint32_t gen;  /* stack.c's table generation it was made in */
	uint64_t ip[PROF_MAX_STACK_FRAMES];
	uint64_t sp[PROF_MAX_STACK_FRAMES];
};

/* Looks up libunwind's procedure bounds (libunwind: its dlopen handle); -1 when it
 * has none, and then no walk goes past the first frame. */
int prof_fp_setup(void *libunwind);
/* From the frame that returns to ip, whose stack pointer was sp (ip at sp - 8) and whose
 * %rbp was bp, outwards: f[0] = ip and each caller's return address after it (sps[i]:
 * frame i's stack pointer), while the code keeps frame pointers, at most max; from a
 * frame of last that is still there, last's frames. */
struct fp_walk prof_fp_walk(uint64_t *f, uint64_t *sps, unsigned max, uint64_t ip, uint64_t sp,
			    uint64_t bp, uint64_t stop_lo, uint64_t stop_hi,
			    const struct fp_last *last);
/* libunwind found another caller for the frame returning to ra: walk no more through it. */
void prof_fp_distrust(uint64_t ra);
/* libunwind found the same callers for the frames returning to f[0..n): believed. */
void prof_fp_checked(const uint64_t *f, unsigned n);
/* In a forked child: a growth of the verdicts another thread was making is not waited
 * for. */
void prof_fp_after_fork(void);
/* The thread's exit: its table of recent verdicts unmapped. */
void prof_fp_thread_exit(void);

#endif
