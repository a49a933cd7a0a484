/* Aggregates behind the tables: one row per (category, name) across all processes with
 * count, total, self (streaming, O(depth) per thread), min, max and the durations for an
 * exact median; marks, counters and steps. */
#ifndef PROF_FORMATS_STATS_H
#define PROF_FORMATS_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "formats/model/concurrency.h"
#include "formats/util/sketch.h"
#include "formats/model/model.h"
#include "formats/model/ranks.h"

#define STATS_EXACT_DURS 256

struct row {
	uint32_t cat, name; /* gids */
	uint64_t count, total, self, min, max;
	/* Net bytes allocated (allocations minus releases) during its calls, with and
	 * without what its callees did: PyTorch's "CPU Mem" and "Self CPU Mem". */
	int64_t mem, self_mem;
	/* Durations for the median: each of the first STATS_EXACT_DURS (an exact median),
	 * then all in a sketch (within 1%): a row's memory does not grow with its calls. */
	uint64_t *durs;
	size_t ndurs, durs_cap;
	struct sketch sketch; /* sketch.count != 0: durs were moved here */
	uint64_t median; /* set by stats_finish */
	uint64_t merged; /* calls taken into their same-name parent: durs has holes */
	/* time of its calls' callees of the same category: total - within is its share of
	 * the category's time, in which a nested call is counted once */
	uint64_t within;
	uint64_t first_t; /* its earliest call's start: orders categories (tables.c) */
};

/* Marks and counters carry their first time: the tables list them in time order, which
 * does not depend on the order the capture's threads and processes are read in. */
struct mark {
	uint32_t name;
	uint64_t count, first_t;
};

struct counter {
	uint32_t name;
	uint64_t count, last_t, first_t;
	double min, max, last;
	int is_double;
};

/* Bytes moved on a GPU per kind of copy or set (categories cuda_memcpy, cuda_memset); and
 * bytes of messages per MPI call (PROF_EVF_COMM with their bytes known). */
struct copy_row {
	uint32_t cat, name; /* gids: "cuda_memcpy", "Memcpy HtoD" */
	uint64_t count, bytes, total;
};

struct step_time {
	uint32_t pid;
	uint64_t t;
};

struct step_summary {
	uint64_t count, intervals;
	uint64_t mean_ns, median_ns; /* between consecutive steps of one process */
};

struct stats {
	struct row *rows;
	size_t nrows, rows_cap;
	struct u64map row_ix; /* cat gid << 32 | name gid -> row */
	struct {
		uint64_t key; /* + 1; 0 empty */
		uint32_t row;
	} row_cache[64];      /* rows found lately */
	struct mark *marks;
	size_t nmarks, marks_cap;
	struct u64map mark_ix;
	struct counter *ctrs;
	size_t nctrs, ctrs_cap;
	struct u64map ctr_ix;
	struct step_time *steps;
	size_t nsteps, steps_cap;
	struct step_summary step;
	struct copy_row *copies;
	size_t ncopies, copies_cap;
	struct u64map copy_ix;
	struct copy_row *msgs;
	size_t nmsgs, msgs_cap;
	struct u64map msg_ix;
	uint32_t memcpy_cat, memset_cat; /* gids, once gpu_cats */
	int gpu_cats;
	struct u64map block_size; /* image << 47 | pointer -> bytes, for net memory */
	int has_mem;              /* some non-memory row saw allocations */
	uint32_t merge_cat[2];    /* gids of the categories whose same-name only children
				   * merge ("operator", "user"); STR_NONE until known */
	/* MXNet's C API calls at once (its "MXNet C API Concurrency" counter) */
	uint32_t mxnet_api_cat;   /* gid; STR_NONE until known */
	uint32_t mxnet_counter[2]; /* gids of the counters' names, once a call was seen */
	struct concurrency mxnet_api;
	struct ranks ranks; /* across the ranks of a job (ranks.h) */
};

void stats_init(struct stats *s);
void stats_free(struct stats *s);
/* A model_events_fn; ctx is the struct stats. */
int stats_on_events(void *ctx, struct model *m, uint32_t image, uint32_t thread,
		    const struct prof_event *ev, uint32_t n);
/* Medians and the step summary, once every event was seen. 0 or -1. */
int stats_finish(struct stats *s);

/* Median of v[0..n) (mean of the two middle values when n is even); reorders v. */
uint64_t median_u64(uint64_t *v, size_t n);

#endif
