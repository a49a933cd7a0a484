/* The most calls of one kind in progress at once in a process, over every thread: MXNet's
 * "MXNet C API Concurrency" counter, made from the calls' start and end times. */
#ifndef LIBPROF_FORMATS_MODEL_CONCURRENCY_H
#define LIBPROF_FORMATS_MODEL_CONCURRENCY_H

#include <stddef.h>
#include <stdint.h>

struct concurrency {
	struct conc_edge {
		uint64_t t;
		uint32_t pid;
		int32_t delta; /* +1 a call begins, -1 one ends */
	} *edges;
	size_t n, cap;
	uint64_t calls;
	uint64_t most;   /* set by concurrency_finish */
	int partial;     /* calls past CONC_MAX_CALLS were counted, not placed in time */
};

/* Calls placed in time, at most (16 MiB of edges): beyond, most is a lower bound. */
#define CONC_MAX_CALLS (1u << 19)

/* One call of pid over [t0, t1]. 0, or -1 when out of memory. */
int concurrency_add(struct concurrency *c, uint32_t pid, uint64_t t0, uint64_t t1);
/* Sets c->most and frees the edges. */
void concurrency_finish(struct concurrency *c);
void concurrency_free(struct concurrency *c);

#endif
