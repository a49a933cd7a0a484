/* Folded stacks (Brendan Gregg's format, what flamegraph.pl, speedscope and inferno
 * read): one line "root;frame;...;leaf VALUE" per distinct stack, outermost frame first.
 * The root is the process ("command (pid)"), optionally followed by the thread; the leaf
 * is the call itself (malloc, a traced function) below the frames of its call stack. */
#ifndef PROF_FORMATS_FOLDED_H
#define PROF_FORMATS_FOLDED_H

#include <stdint.h>
#include <stdio.h>

enum folded_weight {
	FOLDED_AUTO,  /* time when calls other than allocations have stacks, else bytes */
	FOLDED_TIME,  /* nanoseconds in the call, less its callees that have a line */
	FOLDED_BYTES, /* bytes asked for by the allocations */
	FOLDED_COUNT, /* calls */
};

struct folded_options {
	enum folded_weight weight;
	int threads; /* a frame per thread below the process */
	int all_processes; /* the launchers too (folded away by default: model_fold) */
};

struct folded_summary {
	enum folded_weight weight; /* the one used */
	uint64_t lines, calls, total;
};

/* "time", "bytes" or "count". */
const char *folded_weight_name(enum folded_weight w);

/* Writes the folded stacks of capture_path to out. Returns 0; 1 when the capture is
 * damaged (the lines cover every complete frame; err says what is wrong); 2 when it is
 * unusable or has no call stacks to fold (err says why). */
int folded_write(const char *capture_path, FILE *out, const struct folded_options *opt,
		 struct folded_summary *sum, char *err, size_t errlen);

#endif
