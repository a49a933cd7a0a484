/* The call tree of a capture (prof tree): per process, every call path of complete
 * events (a call, a range, an operator inside another on its thread) with its calls,
 * total and self time, merged over the process's threads, as uftrace graph and the
 * PyTorch profiler's tree view show them. */
#ifndef PROF_FORMATS_CALLTREE_H
#define PROF_FORMATS_CALLTREE_H

#include <stdint.h>
#include <stdio.h>

struct calltree_options {
	unsigned max_depth;    /* levels printed (0: all) */
	double min_percent;    /* paths under this share of their process's total left out */
	int memory;            /* allocator calls too (left out by default: they are leaves
				  that drown the tree; prof report has them) */
	int threads;           /* a tree per thread, not merged per process */
	int all_processes;     /* launchers too (docs/FORMATS.md, "Folded launchers") */
};

/* Writes the tree of capture to out. 0, 1 (the capture is damaged: the tree of what came
 * before, err says where), or 2 (unusable: err says why). */
int calltree_write(const char *capture, FILE *out, const struct calltree_options *o,
		   char *err, size_t errlen);

#endif
