/* Shared state of the Chrome trace export (chrome_trace.c drives it in two passes over
 * the capture: count and plan, then write). */
#ifndef PROF_FORMATS_CHROME_H
#define PROF_FORMATS_CHROME_H

#include "formats/export/chrome_alloc.h"
#include "formats/export/chrome_heap.h"
#include "formats/export/dur_hist.h"
#include "formats/util/json_writer.h"
#include "formats/model/model.h"
#include "formats/model/outputs.h"

struct esc_cache {
	uint64_t *off; /* per gid: offset + 1 into bytes, 0 = not escaped yet */
	uint32_t *len;
	size_t n, cap_off, cap_len;
	char *bytes;
	size_t used, cap;
};

struct chrome {
	uint64_t max_events;
	uint64_t origin;
	struct model plan;  /* pass 1: the whole capture, for metadata and the plan */
	struct model out;   /* pass 2: names as they were at each point of the capture */
	/* the models the writers use: plan and out, or both the live model (chrome_live.c:
	 * one read as the capture is written) */
	struct model *pm, *om;
	struct model_fold fold; /* the launchers left out (all zero: none, --all-processes) */
	int all_processes;
	/* pass 1 */
	uint64_t always;    /* events the size rule keeps whatever their duration */
	uint64_t droppable; /* complete events other than user ranges */
	uint64_t hist[DUR_HIST_BUCKETS];
	struct heap_track heap;
	struct alloc_view alloc; /* which allocator calls are shown (chrome_alloc.h) */
	int alloc_as_captured;   /* alloc.all from the capture's trace_alloc fact */
	struct dur_rule rule;
	/* pass 2 */
	struct jw w;
	int first;
	uint64_t written, dropped, tie_left;
	/* chrome_live.c gives events out of capture order, each with its place in the
	 * capture: the size rule's ties are kept before tie_place_end (NULL: in order) */
	const uint64_t *ev_place;
	uint64_t tie_place_end;
	struct esc_cache esc;
	const char *damage;
	/* GPU work (chrome_gpu.c): image << 32 | correlation id -> FLOW_* bits */
	struct u64map flows;
	uint64_t flows_written;
	uint32_t kernel_cat; /* gid of "cuda_kernel" in the pass-2 model, or STR_NONE */
	/* several captures read as one: pass 1's collectives refine the hosts' clocks
	 * (formats/model/ranks.c), and pass 2 reads with that refinement (fix) */
	struct ranks *clock_ranks;
	int64_t *fix;
	int64_t *given_fix; /* pass 1 read again with the refinement found (refined()) */
	int several; /* the capture is a directory: maybe several sessions (and clocks) */
	/* the PyTorch profiler's flavor (chrome_kineto.c) */
	int is_kineto;
	struct {
		struct u64map step_start; /* image << 32 | thread -> where its next step began */
		struct u64map blocks;     /* image << 47 ^ pointer -> bytes: [memory]'s sizes */
		struct u64map gpu_rows;   /* device << 32 | stream seen */
		uint64_t devices;         /* bit d: GPU d had work */
		uint64_t next_id;         /* an operator's "External id" */
		char backend[8];          /* the collectives' library: nccl, gloo, mpi */
	} kineto;
};

/* chrome_kineto.c: Kineto's category for one of libprof's (both quoted), or NULL to
 * keep it; name is the event's, quoted. */
const char *kineto_cat(const char *cat, size_t clen, const char *name, size_t nlen);
/* ,"pid":DEVICE,"tid":STREAM of GPU work into out (64 bytes), its length; and the row
 * noted, for its names. */
size_t kineto_gpu_row(char *out, uint64_t where);
int kineto_note_gpu_row(struct chrome *c, uint64_t where);
/* Whether an operator's shapes text can be given as JSON ("Input Dims"). */
int kineto_dims(const char *s, size_t n);
/* A thread's first event (where its first step begins). 0 or -1. */
int kineto_note_thread(struct chrome *c, uint32_t image, uint32_t thread, uint64_t t0);
/* A step's end on a thread: its ProfilerStep#N slice since the previous one. */
int kineto_step(struct chrome *c, const char *pidtid, size_t pidtid_len, uint32_t image,
		uint32_t thread, const struct prof_event *e);
/* An allocator call (device -1) or a device allocation as "[memory]" instants. */
int kineto_memory(struct chrome *c, const char *pidtid, size_t pidtid_len, uint32_t image,
		  const struct prof_event *e, int device);
/* Pass 1: the devices with work, the collectives' library. */
void kineto_plan(struct chrome *c, struct model *m, uint32_t image, const struct prof_event *e);
/* The head before traceEvents, the events after the capture's, the tail after them. */
void kineto_head(struct chrome *c);
void kineto_events_end(struct chrome *c);
void kineto_tail(struct chrome *c);

/* A trace's state for the options (calloc'd, models empty, pm and om at plan and out);
 * NULL when out of memory. */
struct chrome *chrome_new(const struct chrome_options *o);
void chrome_free(struct chrome *c);
/* Pass 1 for one event of the model m: -1 (out of memory), 0 (not in the trace: an
 * allocator call left to the counter tracks, a record type not written), 1 (a complete
 * event the size rule may leave out), 2 (an event the trace always has). */
int chrome_plan_one(struct chrome *c, struct model *m, uint32_t image,
		    const struct prof_event *e);
/* Once pass 1 saw every event (c->pm read whole): the origin, the heap track and the
 * size rule. 0, or -1 when out of memory. */
int chrome_plan_done(struct chrome *c);
/* The trace's head and metadata into f; then its events; then its tail (the counter
 * tracks, otherData), flushed. 0, or -1 (out of memory, a write failed: c->w.err). */
int chrome_write_begin(struct chrome *c, FILE *f);
int chrome_write_end(struct chrome *c);
/* What was written, for the summary line. */
void chrome_summarize(const struct chrome *c, struct output_summary *sum);
/* Pass 1 hook: counts and the duration histogram. */
int chrome_plan_events(void *ctx, struct model *m, uint32_t image, uint32_t thread,
		       const struct prof_event *ev, uint32_t n);
/* Pass 2 hook: writes the trace events the rule keeps. */
int chrome_write_events(void *ctx, struct model *m, uint32_t image, uint32_t thread,
			const struct prof_event *ev, uint32_t n);
/* GPU work and CUPTI's API records (chrome_gpu.c). Pass 1: notes the correlation ids
 * of GPU work. Pass 2: the args of an X event (p has room for them), and the flow arrow
 * from a launch to its GPU work, after the X event of either end. */
int chrome_gpu_plan(struct chrome *c, uint32_t image, const struct prof_event *e);
char *chrome_gpu_args(struct chrome *c, char *p, uint32_t cat, const struct prof_event *e);
int chrome_gpu_flow(struct chrome *c, uint32_t image, const char *pidtid, size_t pidtid_len,
		    const struct prof_event *e);
#define CHROME_GPU_ARGS_MAX 160
/* The category of allocator calls in the trace (the tables' "memory"). */
#define CHROME_CAT_ALLOCATOR "cpu_memory"

/* The metadata events, the heap counter track and otherData. */
void chrome_write_meta(struct chrome *c);
void chrome_write_heap(struct chrome *c);
void chrome_write_other(struct chrome *c);

/* Separator before each element of traceEvents. */
static inline void chrome_sep(struct chrome *c)
{
	if (c->first) {
		c->first = 0;
		jw_lit(&c->w, "\n");
	} else {
		jw_lit(&c->w, ",\n");
	}
}

#endif
