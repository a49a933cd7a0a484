/* Calls gathered by call stack as a capture streams past: one entry per (thread, stack,
 * category, name), for the outputs that key on stacks (folded stacks, `prof report
 * --group-by stack`). Stacks are only named once the whole capture was read, so the
 * grouping by frame names happens after, from these entries. */
#ifndef PROF_FORMATS_STACK_AGG_H
#define PROF_FORMATS_STACK_AGG_H

#include <stddef.h>
#include <stdint.h>

#include "formats/model/model.h"

struct stack_entry {
	uint32_t thread;      /* model thread index (which gives the image) */
	uint32_t stack;       /* model stack index + 1; 0: the calls had none */
	uint32_t cat, name;   /* gids */
	uint64_t count, total, max;
	uint64_t self;        /* less the time of every call nested in them */
	uint64_t stacked_self; /* less only nested calls that have a stack themselves */
	uint64_t allocs, bytes; /* allocations among them, and the bytes they asked for */
};

/* Per thread: time gathered by each nesting level for the level above (see stats.c). */
struct stack_agg_thread {
	uint64_t *child, *stacked_child;
	size_t cap;
};

struct stack_agg {
	struct stack_entry *e;
	size_t n, cap;
	struct u64map thread_stack; /* thread << 32 | stack -> pair index */
	struct u64map leaf;         /* cat gid << 32 | name gid -> leaf index */
	struct u64map entry_ix;     /* pair << 32 | leaf -> entry index */
	uint32_t npairs, nleaves;
	struct stack_agg_thread *thr;
	size_t nthr;
	int by_detail;              /* "stack" is the call's detail's gid + 1 (its input
				     * shapes, PROF_EVF_DETAIL), not its stack */
	uint64_t stacked;           /* calls with a stack */
	uint64_t stacked_other;     /* of them, calls outside the memory category */
};

void stack_agg_init(struct stack_agg *a);
void stack_agg_free(struct stack_agg *a);
/* A model_events_fn; ctx is the struct stack_agg. Only complete calls are gathered. */
int stack_agg_on_events(void *ctx, struct model *m, uint32_t image, uint32_t thread,
			const struct prof_event *ev, uint32_t n);

#endif
