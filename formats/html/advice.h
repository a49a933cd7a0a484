/* prof html's advice: rules that fire on what a capture shows, each with its evidence
 * and a concrete action (advice.c). The facts come from html_data.c's reads (the steps
 * and their phases) and from prof report's JSON (lost events, ranks). */
#ifndef PROF_FORMATS_HTML_ADVICE_H
#define PROF_FORMATS_HTML_ADVICE_H

#include <stddef.h>
#include <stdint.h>

#include "formats/util/json_writer.h"

struct model;
struct prof_event;

/* An allocation this small or smaller counts as small (a pool or a cache would serve
 * it without the allocator). */
#define ADVICE_SMALL_ALLOC 65536

struct advice_facts {
	const char *report; /* prof report's JSON of the capture */
	size_t report_len;
	/* the steps (html_data.c); counted ones leave out the first of step marks, which
	 * holds the start-up */
	uint64_t steps, counted_steps, step_ns, data_ns;
	uint64_t small_allocs_in_steps, ops_in_steps, steps_with_sync;
	/* gathered by advice_event over the whole capture */
	uint64_t *kernel_ns, *launch_ns; /* durations, the first ADVICE_SAMPLES of each */
	size_t nkernels, nlaunches, kernels_cap, launches_cap;
	uint64_t gpu_events, cuda_syncs;
	/* a cache of the category last looked up */
	uint32_t cache_image, cache_cat, cache_kind;
	int cached;
};

#define ADVICE_SAMPLES 1000000

/* Whether a call of this name waits for the GPU or reads a value back from it. */
int advice_is_sync(const char *name, size_t len);
/* One event of the capture (the second read). */
void advice_event(struct advice_facts *f, struct model *m, uint32_t image,
		  const struct prof_event *e);
/* Writes "advice":[{rule, title, evidence, action}...] into w. */
void advice_write(struct jw *w, struct advice_facts *f);
void advice_free(struct advice_facts *f);

#endif
