/* The advice of prof html (advice.h). Each rule states what it saw in numbers a user can
 * check in the tables, and one thing to do about it; a rule that cannot tell (too few
 * steps, no GPU where the rule is about one) stays silent. */
#include "formats/html/advice.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/model/model.h"
#include "formats/tables/textfmt.h"
#include "formats/util/json_read.h"
#include "formats/util/vec.h"

/* Thresholds, chosen so each rule fires only where the action pays off. */
#define DATA_SHARE_PCT 10          /* data wait over this share of a step */
#define SMALL_ALLOCS_PER_STEP 1000 /* small allocations per step */
#define OPS_PER_STEP 50            /* enough operators for dispatch to matter */
#define NS_PER_OP 20000            /* a step's time per operator under this: dispatch-bound */
#define KERNELS_MIN 100            /* kernels before their lengths mean anything */
#define WAIT_SHARE_PCT 10          /* others' collective wait over this share of their steps */

enum kind { K_OTHER, K_KERNEL, K_CUDA_API };

int advice_is_sync(const char *name, size_t len)
{
	static const char *const syncs[] = {"cudaDeviceSynchronize", "cudaStreamSynchronize",
					    "cudaEventSynchronize", "cuCtxSynchronize",
					    "cuStreamSynchronize", "cuEventSynchronize",
					    "aten::_local_scalar_dense", "aten::item"};
	for (size_t i = 0; i < sizeof syncs / sizeof *syncs; i++)
		if (len == strlen(syncs[i]) && !memcmp(name, syncs[i], len))
			return 1;
	return 0;
}

static int is_cuda_sync(const char *name, size_t len)
{
	return advice_is_sync(name, len) && len > 2 && !memcmp(name, "cu", 2);
}

static int is_launch(const char *name, size_t len)
{
	return (len >= 16 && !memcmp(name, "cudaLaunchKernel", 16)) ||
	       (len >= 14 && !memcmp(name, "cuLaunchKernel", 14));
}

static enum kind kind_of(struct advice_facts *f, struct model *m, uint32_t image, unsigned cat)
{
	if (f->cached && f->cache_image == image && f->cache_cat == cat)
		return (enum kind)f->cache_kind;
	size_t len = 0;
	uint32_t gid = model_category(m, image, cat);
	const char *s = gid == STR_NONE ? "" : model_str(m, gid, &len);
	enum kind k = K_OTHER;
	if (len == strlen(PROF_CATNAME_CUDA_KERNEL) && !memcmp(s, PROF_CATNAME_CUDA_KERNEL, len))
		k = K_KERNEL;
	else if (len == strlen(PROF_CATNAME_CUDA_API) && !memcmp(s, PROF_CATNAME_CUDA_API, len))
		k = K_CUDA_API;
	f->cached = 1;
	f->cache_image = image;
	f->cache_cat = cat;
	f->cache_kind = k;
	return k;
}

static void sample(uint64_t **v, size_t *n, size_t *cap, uint64_t x)
{
	if (*n < ADVICE_SAMPLES && !VEC_RESERVE(*v, *cap, *n + 1))
		(*v)[(*n)++] = x;
}

void advice_event(struct advice_facts *f, struct model *m, uint32_t image,
		  const struct prof_event *e)
{
	if (e->type != PROF_EV_COMPLETE || e->cat == PROF_CAT_MEMORY)
		return;
	if (e->flags & PROF_EVF_GPU)
		f->gpu_events++;
	enum kind k = kind_of(f, m, image, e->cat);
	if (k == K_KERNEL) {
		sample(&f->kernel_ns, &f->nkernels, &f->kernels_cap, e->t1 - e->t0);
	} else if (k == K_CUDA_API) {
		size_t len;
		uint32_t gid = model_name(m, image, e->name);
		const char *name = gid == STR_NONE ? "" : model_str(m, gid, &len);
		if (gid == STR_NONE)
			len = 0;
		if (is_launch(name, len))
			sample(&f->launch_ns, &f->nlaunches, &f->launches_cap, e->t1 - e->t0);
		else if (is_cuda_sync(name, len))
			f->cuda_syncs++;
	}
}

static int by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static uint64_t median(uint64_t *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof *v, by_u64);
	return v[n / 2];
}

static void rule(struct jw *w, int *first, const char *id, const char *title,
		 const char *evidence, const char *action)
{
	jw_text(w, *first ? "\n{\"rule\":" : ",\n{\"rule\":");
	*first = 0;
	jw_cstr(w, id);
	jw_lit(w, ",\"title\":");
	jw_cstr(w, title);
	jw_lit(w, ",\"evidence\":");
	jw_cstr(w, evidence);
	jw_lit(w, ",\"action\":");
	jw_cstr(w, action);
	jw_lit(w, "}");
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}

static void data_loading(struct jw *w, int *first, const struct advice_facts *f)
{
	if (f->counted_steps < 2 || f->data_ns * 100 < DATA_SHARE_PCT * f->step_ns)
		return;
	char a[TEXTFMT_LEN], b[TEXTFMT_LEN], ev[256];
	snprintf(ev, sizeof ev, "Waiting for the next batch takes %.1f%% of each step: %s of %s "
		 "on average over %llu steps.", pct(f->data_ns, f->step_ns),
		 fmt_dur(a, f->data_ns / f->counted_steps), fmt_dur(b, f->step_ns / f->counted_steps),
		 (unsigned long long)f->counted_steps);
	rule(w, first, "data_loading", "Data loading holds the steps back", ev,
	     "Load batches ahead of the step: DataLoader(num_workers=N) with N up to the free "
	     "cores, pin_memory=True for GPU training, persistent_workers=True and a larger "
	     "prefetch_factor; move decoding and augmentation out of the training loop.");
}

static void small_allocations(struct jw *w, int *first, const struct advice_facts *f)
{
	if (f->counted_steps < 2 ||
	    f->small_allocs_in_steps < SMALL_ALLOCS_PER_STEP * f->counted_steps)
		return;
	char a[TEXTFMT_LEN], b[TEXTFMT_LEN], ev[256];
	snprintf(ev, sizeof ev, "%s allocations of %s or less per step, on average over %llu "
		 "steps.", fmt_count(a, f->small_allocs_in_steps / f->counted_steps),
		 fmt_bytes(b, ADVICE_SMALL_ALLOC), (unsigned long long)f->counted_steps);
	rule(w, first, "small_allocations", "Many small allocations in every step", ev,
	     "Allocate once and reuse: preallocate buffers (tensors) outside the loop, use "
	     "out= and in-place operations, or a pool; a caching allocator (jemalloc or "
	     "tcmalloc by LD_PRELOAD) makes the rest cheaper. prof report --sort mem shows "
	     "where they come from.");
}

static void host_bound(struct jw *w, int *first, struct advice_facts *f)
{
	char a[TEXTFMT_LEN], b[TEXTFMT_LEN], ev[320];
	if (f->nkernels >= KERNELS_MIN && f->nlaunches) {
		uint64_t kernel = median(f->kernel_ns, f->nkernels);
		uint64_t launch = median(f->launch_ns, f->nlaunches);
		if (kernel >= launch)
			return;
		snprintf(ev, sizeof ev, "The median GPU kernel runs %s, shorter than the median "
			 "launch call that queues it (%s), over %llu kernels: the GPU waits for "
			 "the host.", fmt_dur(a, kernel), fmt_dur(b, launch),
			 (unsigned long long)f->nkernels);
	} else if (!f->gpu_events && f->counted_steps >= 2 &&
		   f->ops_in_steps >= OPS_PER_STEP * f->counted_steps &&
		   f->step_ns < NS_PER_OP * f->ops_in_steps) {
		snprintf(ev, sizeof ev, "%s operator calls per step, one every %s of the step on "
			 "average: the framework's per-operator dispatch is a large part of the "
			 "time.", fmt_count(a, f->ops_in_steps / f->counted_steps),
			 fmt_dur(b, f->step_ns / f->ops_in_steps));
	} else {
		return;
	}
	rule(w, first, "host_bound", "Host-bound dispatch: the operators are too small", ev,
	     "Give each operator more work: larger batches; fused operators (torch.compile, "
	     "fused optimizers with foreach=True or fused=True); on a GPU, CUDA graphs "
	     "(torch.cuda.graphs, torch.compile(mode=\"reduce-overhead\")) to launch many "
	     "kernels at once.");
}

static void sync_every_step(struct jw *w, int *first, const struct advice_facts *f)
{
	if (f->counted_steps < 3 || f->steps_with_sync < f->counted_steps ||
	    (!f->gpu_events && !f->cuda_syncs))
		return;
	char ev[256];
	snprintf(ev, sizeof ev, "Each of the %llu steps waits for the GPU at least once "
		 "(cudaDeviceSynchronize, cudaStreamSynchronize, tensor.item() and the like): "
		 "the host cannot queue the next step's work ahead.",
		 (unsigned long long)f->counted_steps);
	rule(w, first, "sync_every_step", "A host-device sync in every step", ev,
	     "Read values back less often: log the loss every N steps (or accumulate it on "
	     "the device), drop torch.cuda.synchronize() and .item()/.cpu()/print of GPU "
	     "tensors from the loop, use non_blocking=True copies.");
}

static uint64_t steps_time(const struct jnode *rank)
{
	const struct jnode *steps = json_get(rank, "steps");
	uint64_t sum = 0, t0, t1;
	for (size_t i = 0; steps && steps->type == J_ARR && i < steps->n; i++)
		if (!json_u64(json_get(&steps->items[i], "start_ns"), &t0) &&
		    !json_u64(json_get(&steps->items[i], "end_ns"), &t1) && t1 > t0)
			sum += t1 - t0;
	return sum;
}

/* Ranks without collectives between them: the one with much more CPU (or wall) time
 * than the others' median, as the rank table decided (stands_out). */
static void straggler_busy(struct jw *w, int *first, const struct jnode *ranks,
			   uint64_t slowest)
{
	const struct jnode *out = json_get(ranks, "stands_out");
	const struct jnode *by = json_get(ranks, "slowest_by");
	uint64_t value, median;
	if (!out || out->type != J_BOOL || !out->b || !by || by->type != J_STR ||
	    json_u64(json_get(ranks, "slowest_ns"), &value) ||
	    json_u64(json_get(ranks, "others_median_ns"), &median) || !median)
		return;
	char a[TEXTFMT_LEN], b[TEXTFMT_LEN], ev[320];
	snprintf(ev, sizeof ev, "Rank %llu is the slowest: %s %s, %.1fx the other ranks' median "
		 "(%s). No collectives join the ranks, so none waits for it, but the job lasts "
		 "as long as it does.",
		 (unsigned long long)slowest, strcmp(by->s, "cpu") ? "its wall time" : "its CPU time",
		 fmt_dur(a, value), (double)value / (double)median, fmt_dur(b, median));
	rule(w, first, "straggler", "One rank takes longer than the others", ev,
	     "Find what that rank does more of (the table across ranks in prof report): "
	     "uneven data shards or batch sizes, its data loading, a slower or busier host "
	     "or GPU, work only it does (logging, checkpoints, evaluation on rank 0).");
}

static void straggler(struct jw *w, int *first, const struct jnode *report)
{
	const struct jnode *ranks = json_get(report, "ranks");
	const struct jnode *list = ranks ? json_get(ranks, "ranks") : NULL;
	const struct jnode *with = ranks ? json_get(ranks, "collectives") : NULL;
	uint64_t slowest, n;
	if (!list || list->type != J_ARR || list->n < 2 ||
	    json_u64(json_get(ranks, "slowest_rank"), &slowest) || !(n = list->n))
		return;
	if (with && with->type == J_BOOL && !with->b) {
		straggler_busy(w, first, ranks, slowest);
		return;
	}
	uint64_t *waits = calloc(n, sizeof *waits), slow_wait = 0, others_time = 0;
	size_t k = 0;
	if (!waits)
		return;
	for (size_t i = 0; i < n; i++) {
		const struct jnode *r = &list->items[i];
		uint64_t rank, wait;
		if (json_u64(json_get(r, "rank"), &rank) || json_u64(json_get(r, "wait_ns"), &wait))
			continue;
		if (rank == slowest) {
			slow_wait = wait;
		} else {
			waits[k++] = wait;
			others_time += steps_time(r);
		}
	}
	uint64_t others = median(waits, k), each = k ? others_time / k : 0;
	free(waits);
	if (!k || !each || others < 2 * slow_wait || others * 100 < WAIT_SHARE_PCT * each)
		return;
	char a[TEXTFMT_LEN], b[TEXTFMT_LEN], ev[320];
	snprintf(ev, sizeof ev, "Rank %llu is the slowest: the other ranks wait %s in "
		 "collectives (median; %.1f%% of their steps' time) for it, while it waits %s.",
		 (unsigned long long)slowest, fmt_dur(a, others), pct(others, each),
		 fmt_dur(b, slow_wait));
	rule(w, first, "straggler", "One rank holds the others back", ev,
	     "Find what that rank does more of (the table across ranks in prof report): "
	     "uneven data shards or batch sizes, its data loading, a slower or busier host "
	     "or GPU, work only it does (logging, checkpoints, evaluation on rank 0).");
}

static void lost_events(struct jw *w, int *first, const struct jnode *report)
{
	uint64_t lost, events, startup = 0;
	if (json_u64(json_get(report, "lost_events"), &lost) || !lost ||
	    json_u64(json_get(report, "events"), &events))
		return;
	/* absent in reports made before it existed: all lost at a full ring then */
	if (json_u64(json_get(report, "lost_startup_events"), &startup) || startup > lost)
		startup = 0;
	char a[TEXTFMT_LEN], b[TEXTFMT_LEN], s[TEXTFMT_LEN], ev[512];
	int n = snprintf(ev, sizeof ev, "%s events were lost (%.2f%% of %s)", fmt_count(a, lost),
			 pct(lost, lost + events), fmt_count(b, lost + events));
	uint64_t waited = 0;
	if (json_u64(json_get(report, "drain_waited_max_ns"), &waited))
		waited = 0;
	char wt[TEXTFMT_LEN];
	if (startup < lost && waited >= MODEL_DRAIN_WAIT_SAID_NS)
		n += snprintf(ev + n, sizeof ev - (size_t)n, ": a thread wrote faster than the "
			      "collector drained its ring, which waited up to %s between two "
			      "drains (a busy machine's cores, or its compressing, held it), and "
			      "the full ring dropped them", fmt_dur(wt, waited));
	else if (startup < lost)
		n += snprintf(ev + n, sizeof ev - (size_t)n, ": a thread wrote faster than the "
			      "collector drained its ring, and the full ring dropped them");
	if (startup)
		snprintf(ev + n, sizeof ev - (size_t)n, "%s%s were made at start-up, before "
			 "libprof's constructor ran, and never reached a ring (a bigger ring "
			 "would not keep them).", startup < lost ? "; " : ": ",
			 fmt_count(s, startup));
	else
		snprintf(ev + n, sizeof ev - (size_t)n, ".");
	rule(w, first, "lost_events", "Events were lost: the tables are short of them", ev,
	     startup == lost
		     ? "No ring setting keeps these: libprof keeps up to 33.5 million calls made "
		       "before its constructor and waits for the collector to take them, so a loss "
		       "here means a start-up beyond that or a collector that stopped (or died) "
		       "while libprof started."
		     : "Record again with a bigger ring (PROFILER_RING_SIZE=64M; the default is 4M) "
		       "or with PROFILER_BLOCK=1 (prof record --block), which makes a writer wait "
		       "for room instead of dropping; or record fewer steps (PROFILER_SCHEDULE).");
}

static void unnamed_events(struct jw *w, int *first, const struct jnode *report)
{
	uint64_t names = 0, stacks = 0;
	json_u64(json_get(report, "unnamed_events"), &names);
	json_u64(json_get(report, "unstacked_events"), &stacks);
	if (!names && !stacks)
		return;
	char a[TEXTFMT_LEN], b[TEXTFMT_LEN], ev[256];
	snprintf(ev, sizeof ev, "%s events have no name (<unnamed> rows) and %s no call stack "
		 "((no stack) rows): a process's names or stacks reached what it may keep.",
		 fmt_count(a, names), fmt_count(b, stacks));
	rule(w, first, "unnamed_events", "Events lost their name or call stack", ev,
	     "Record again with a larger PROFILER_AREA_MAX (default 32G) or more room in "
	     "/dev/shm (df -h /dev/shm), or with a smaller PROFILER_STACK_DEPTH.");
}

/* MXNet's bulk segments (PROFILER_MXNET_BULK=1, or the user's own MXNET_EXEC_BULK_EXEC_*
 * settings, which win over libprof's): several operators ran as one ImperativeBulk, so
 * the operator table cannot name the layers inside. */
static void mxnet_bulk(struct jw *w, int *first, const struct jnode *report)
{
	const struct jnode *rows = json_get(report, "rows");
	uint64_t bulk_n = 0, bulk_ns = 0, op_ns = 0;
	if (!rows || rows->type != J_ARR)
		return;
	for (size_t i = 0; i < rows->n; i++) {
		const struct jnode *r = &rows->items[i], *cat = json_get(r, "category"),
				   *name = json_get(r, "name");
		uint64_t count, total;
		if (!cat || cat->type != J_STR || strcmp(cat->s, PROF_CATNAME_OPERATOR) || !name ||
		    name->type != J_STR || json_u64(json_get(r, "total_ns"), &total))
			continue;
		op_ns += total;
		if (!strcmp(name->s, "ImperativeBulk") && !json_u64(json_get(r, "count"), &count)) {
			bulk_n += count;
			bulk_ns += total;
		}
	}
	if (!bulk_n)
		return;
	char a[TEXTFMT_LEN], b[TEXTFMT_LEN], ev[320];
	snprintf(ev, sizeof ev, "%s ImperativeBulk calls hold %s, %.1f%% of the operators' "
		 "time: MXNet ran several operators as one bulk segment each, so the table cannot "
		 "name the layers inside.", fmt_count(a, bulk_n), fmt_dur(b, bulk_ns),
		 pct(bulk_ns, op_ns));
	rule(w, first, "mxnet_bulk", "MXNet's operators are hidden in bulk segments", ev,
	     "Record again with PROFILER_MXNET_BULK=0 (the default), and without "
	     "MXNET_EXEC_BULK_EXEC_TRAIN, MXNET_EXEC_BULK_EXEC_INFERENCE or "
	     "MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_* set in the environment (a value set there "
	     "wins): MXNet then runs every operator on its own, as while its own profiler "
	     "runs.");
}

void advice_write(struct jw *w, struct advice_facts *f)
{
	struct jnode report = {0};
	char err[128];
	int have_report = f->report && !json_parse(f->report, f->report_len, &report, err,
						   sizeof err);
	int first = 1;
	jw_lit(w, "\"advice\":[");
	data_loading(w, &first, f);
	small_allocations(w, &first, f);
	host_bound(w, &first, f);
	sync_every_step(w, &first, f);
	if (have_report) {
		straggler(w, &first, &report);
		lost_events(w, &first, &report);
		unnamed_events(w, &first, &report);
		mxnet_bulk(w, &first, &report);
		json_free(&report);
	}
	jw_lit(w, "]");
}

void advice_free(struct advice_facts *f)
{
	free(f->kernel_ns);
	free(f->launch_ns);
}
