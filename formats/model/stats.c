/* Aggregation of events into table rows, marks, counters and steps. */
#include "formats/model/stats.h"
#include "preload/common/event.h"

#include <stdlib.h>
#include <string.h>

#include "formats/util/vec.h"

void stats_init(struct stats *s)
{
	memset(s, 0, sizeof(*s));
	u64map_init(&s->row_ix);
	u64map_init(&s->mark_ix);
	u64map_init(&s->ctr_ix);
	u64map_init(&s->block_size);
	u64map_init(&s->copy_ix);
	u64map_init(&s->msg_ix);
	s->merge_cat[0] = s->merge_cat[1] = STR_NONE;
	s->mxnet_api_cat = STR_NONE;
	ranks_init(&s->ranks);
}

void stats_free(struct stats *s)
{
	size_t i;

	for (i = 0; i < s->nrows; i++) {
		free(s->rows[i].durs);
		sketch_free(&s->rows[i].sketch);
	}
	free(s->rows);
	free(s->marks);
	free(s->ctrs);
	free(s->steps);
	u64map_free(&s->row_ix);
	u64map_free(&s->mark_ix);
	u64map_free(&s->ctr_ix);
	u64map_free(&s->block_size);
	free(s->copies);
	u64map_free(&s->copy_ix);
	free(s->msgs);
	u64map_free(&s->msg_ix);
	concurrency_free(&s->mxnet_api);
	ranks_free(&s->ranks);
	memset(s, 0, sizeof(*s));
}

/* Index of the entry for key in an array of elem-byte entries, appended (zeroed) when
 * new; -1 when out of memory. */
static int64_t slot_for(struct u64map *ix, void *arr, size_t *n, size_t *cap, size_t elem,
			uint64_t key, int *created)
{
	uint64_t *v = u64map_upsert(ix, key, created);
	char *base;

	if (!v)
		return -1;
	if (!*created)
		return (int64_t)*v;
	if (vec_grow(arr, cap, *n + 1, elem)) {
		u64map_remove(ix, key, NULL);
		return -1;
	}
	memcpy(&base, arr, sizeof(base));
	memset(base + *n * elem, 0, elem);
	*v = *n;
	return (int64_t)(*n)++;
}

static struct row *row_for(struct stats *s, uint32_t cat, uint32_t name)
{
	uint64_t key = (uint64_t)cat << 32 | name;
	size_t c = (name * 2654435761u ^ cat) & 63;
	if (s->row_cache[c].key == key + 1)
		return &s->rows[s->row_cache[c].row];
	int created;
	int64_t i = slot_for(&s->row_ix, &s->rows, &s->nrows, &s->rows_cap, sizeof(struct row),
			     key, &created);

	if (i < 0)
		return NULL;
	s->row_cache[c].key = key + 1;
	s->row_cache[c].row = (uint32_t)i;
	if (created) {
		s->rows[i].cat = cat;
		s->rows[i].name = name;
		s->rows[i].min = UINT64_MAX;
		s->rows[i].first_t = UINT64_MAX;
	}
	return &s->rows[i];
}

/* Net byte sums saturate: sizes from a damaged capture (2^63 and up) must not overflow
 * (undefined behaviour in C). */
static inline int64_t sat_i64(int64_t a, int64_t b)
{
	int64_t s;
	if (!__builtin_add_overflow(a, b, &s))
		return s;
	return b > 0 ? INT64_MAX : INT64_MIN;
}

/* An allocator call's net bytes: + the block it returned, - the one it released (its
 * size known when its allocation was seen: blocks from before the capture count 0). */
static int net_bytes(struct stats *s, uint32_t image, const struct prof_event *e, int64_t *net)
{
	uint64_t key_base = (uint64_t)image << 47, old;
	*net = 0;
	if ((e->flags & PROF_EVF_FREES) && e->c &&
	    u64map_remove(&s->block_size, key_base ^ e->c, &old))
		*net = old > INT64_MAX ? INT64_MIN : -(int64_t)old;
	if ((e->flags & PROF_EVF_ALLOCS) && e->a) {
		int created;
		uint64_t *v = u64map_upsert(&s->block_size, key_base ^ e->a, &created);
		if (!v)
			return -1;
		*v = e->b;
		*net = sat_i64(*net, e->b > INT64_MAX ? INT64_MAX : (int64_t)e->b);
	}
	return 0;
}

/* Room in t's per-depth arrays for an event at depth d (and its children's level). */
static int depths(struct thread *t, unsigned d)
{
	size_t need = (size_t)d + 2, cap = t->ndepth ? t->ndepth : 4;
	if (need <= t->ndepth)
		return 0;
	while (cap < need)
		cap *= 2;
	if (cap > MODEL_MAX_DEPTH + 2)
		cap = MODEL_MAX_DEPTH + 2;
	uint64_t *c = realloc(t->child, cap * sizeof(*c));
	if (c)
		t->child = c;
	int64_t *md = c ? realloc(t->mem_direct, cap * sizeof(*md)) : NULL;
	if (md)
		t->mem_direct = md;
	int64_t *mn = md ? realloc(t->mem_nested, cap * sizeof(*mn)) : NULL;
	if (mn)
		t->mem_nested = mn;
	struct only_child *k = mn ? realloc(t->kids, cap * sizeof(*k)) : NULL;
	if (k)
		t->kids = k;
	struct cat_time *ct = k ? realloc(t->cat_time, cap * sizeof(*ct)) : NULL;
	if (!ct)
		return -1;
	t->cat_time = ct;
	size_t old = t->ndepth, more = cap - old;
	memset(c + old, 0, more * sizeof(*c));
	memset(md + old, 0, more * sizeof(*md));
	memset(mn + old, 0, more * sizeof(*mn));
	memset(k + old, 0, more * sizeof(*k));
	memset(ct + old, 0, more * sizeof(*ct));
	t->ndepth = cap;
	return 0;
}

/* Memory follows the same streaming rule as self time: an allocator call adds its net
 * bytes to its level; a call that ends takes what its level below gathered. */
static void complete_mem(struct stats *s, struct row *r, struct thread *t,
			 const struct prof_event *e, int is_memory, int64_t net)
{
	if (is_memory) {
		r->mem = sat_i64(r->mem, net);
		r->self_mem = sat_i64(r->self_mem, net);
		t->mem_direct[e->depth] = sat_i64(t->mem_direct[e->depth], net);
		return;
	}
	int64_t direct = t->mem_direct[e->depth + 1], nested = t->mem_nested[e->depth + 1];
	int64_t both = sat_i64(direct, nested);
	t->mem_direct[e->depth + 1] = t->mem_nested[e->depth + 1] = 0;
	r->self_mem = sat_i64(r->self_mem, direct);
	r->mem = sat_i64(r->mem, both);
	t->mem_nested[e->depth] = sat_i64(t->mem_nested[e->depth], both);
	s->has_mem |= direct || nested;
}

/* The first STATS_EXACT_DURS durations of a row kept, then all in its sketch. */
static int keep_duration(struct row *r, uint64_t dur)
{
	if (!r->sketch.count && r->ndurs < STATS_EXACT_DURS) {
		if (VEC_RESERVE(r->durs, r->durs_cap, r->ndurs + 1))
			return -1;
		r->durs[r->ndurs++] = dur;
		return 0;
	}
	for (size_t i = 0; i < r->ndurs; i++) /* the exact ones move over, holes left out */
		if (r->durs[i] != UINT64_MAX && sketch_add(&r->sketch, r->durs[i]))
			return -1;
	free(r->durs);
	r->durs = NULL;
	r->ndurs = r->durs_cap = 0;
	return sketch_add(&r->sketch, dur);
}

/* Self time is a call's time minus its callees' in every table but the allocator's: an
 * operator's Self includes the malloc and free it makes, as torch's Self CPU does (its
 * profiler has no allocator events), and the memory table's time is the allocator's own. */
static int complete(struct row *r, struct thread *t, const struct prof_event *e)
{
	uint64_t dur = e->t1 > e->t0 ? e->t1 - e->t0 : 0;
	uint64_t *child = &t->child[e->depth + 1];

	/* Events of a thread come in end order, callees first: what the deeper level
	 * gathered belongs to this event, which then adds itself to its own level. */
	r->self += dur > *child ? dur - *child : 0;
	*child = 0;
	if (e->cat != PROF_CAT_MEMORY)
		t->child[e->depth] += dur;
	r->count++;
	r->total += dur;
	if (e->t0 < r->first_t)
		r->first_t = e->t0;
	if (dur < r->min)
		r->min = dur;
	if (dur > r->max)
		r->max = dur;
	return keep_duration(r, dur);
}

static void cat_time_add(struct cat_time *c, uint32_t cat, uint64_t t, uint64_t t0)
{
	for (int i = 0; i < 3; i++) {
		if (!c->t[i] || c->cat[i] == cat) {
			c->t0[i] = !c->t[i] || t0 < c->t0[i] ? t0 : c->t0[i];
			c->cat[i] = cat;
			c->t[i] += t;
			return;
		}
	}
	/* a fourth category at one level: its nesting is not seen ("% of cat" lower) */
}

/* A call of category cat ended at level d: the calls of its category below it are inside
 * it (their time is returned); the others' time goes up to level d with its own. What
 * began before it is not below it (its own parent was not recorded): dropped. */
static uint64_t cat_time_end(struct thread *t, const struct prof_event *e, uint32_t cat)
{
	struct cat_time *below = &t->cat_time[e->depth + 1], *here = &t->cat_time[e->depth];
	uint64_t within = 0;
	for (int i = 0; i < 3; i++) {
		if (!below->t[i] || below->t0[i] < e->t0)
			continue;
		if (below->cat[i] == cat)
			within += below->t[i];
		else
			cat_time_add(here, below->cat[i], below->t[i], below->t0[i]);
	}
	memset(below, 0, sizeof(*below));
	cat_time_add(here, cat, e->t1 > e->t0 ? e->t1 - e->t0 : 0, e->t0);
	return within;
}

/* PyTorch's rule (its profiler's EventList._remove_dup_nodes): a call whose only child
 * is a call of the same name is one call, as when one overload of an operator forwards to
 * another (aten::mean calling aten::mean.dim). The child was counted when it ended; when
 * its parent ends and it was the only one, it is taken back out of the row (same row:
 * self time and self memory already add up to the merged call's; the count, total and
 * memory with callees lose it). For the operator and user tables, as torch's shows them;
 * allocator calls are not children here, as they are not in torch's tree. */
static int merges(struct stats *s, struct model *m, uint32_t cat)
{
	static const char *const names[2] = {PROF_CATNAME_OPERATOR, PROF_CATNAME_USER};
	for (int i = 0; i < 2; i++) {
		if (s->merge_cat[i] == STR_NONE &&
		    strtab_intern_str(&m->str, names[i], &s->merge_cat[i]))
			return 0;
		if (cat == s->merge_cat[i])
			return 1;
	}
	return 0;
}

static void take_only_child(struct stats *s, struct model *m, struct row *r,
			    const struct prof_event *e, struct only_child *below)
{
	size_t row = (size_t)(r - s->rows);
	/* t0: inside this call, not left at that depth by one before it was recorded */
	if (below->n == 1 && below->row == row && below->t0 >= e->t0 && merges(s, m, r->cat) &&
	    (r->sketch.count || below->dur_ix < r->ndurs)) {
		r->count--;
		r->total -= below->dur <= r->total ? below->dur : r->total;
		r->mem = sat_i64(r->mem, below->mem == INT64_MIN ? INT64_MAX : -below->mem);
		if (r->sketch.count) /* (its duration moved there, if it was exact) */
			sketch_remove(&r->sketch, below->dur);
		else
			r->durs[below->dur_ix] = UINT64_MAX; /* a hole, dropped by stats_finish */
		r->within -= below->dur <= r->within ? below->dur : r->within;
		r->merged++;
	}
	memset(below, 0, sizeof(*below));
}

/* This call ended at its level: the first one there is remembered. */
static void note_child(struct stats *s, struct row *r, struct only_child *here,
		       const struct prof_event *e, int64_t mem)
{
	if (here->n++ == 0)
		*here = (struct only_child){.t0 = e->t0,
					    .dur = e->t1 > e->t0 ? e->t1 - e->t0 : 0,
					    .mem = mem,
					    .row = (size_t)(r - s->rows),
					    .dur_ix = r->sketch.count ? SIZE_MAX : r->ndurs - 1,
					    .n = 1};
}

static int mark(struct stats *s, uint32_t name, uint64_t t)
{
	int created;
	int64_t i = slot_for(&s->mark_ix, &s->marks, &s->nmarks, &s->marks_cap,
			     sizeof(struct mark), name, &created);

	if (i < 0)
		return -1;
	s->marks[i].name = name;
	if (!s->marks[i].count++ || t < s->marks[i].first_t)
		s->marks[i].first_t = t;
	return 0;
}

static int counter(struct stats *s, uint32_t name, const struct prof_event *e)
{
	int created;
	int64_t i = slot_for(&s->ctr_ix, &s->ctrs, &s->nctrs, &s->ctrs_cap,
			     sizeof(struct counter), name, &created);
	struct counter *c;
	double v;

	if (i < 0)
		return -1;
	c = &s->ctrs[i];
	if (e->flags & PROF_EVF_DOUBLE) {
		memcpy(&v, &e->a, sizeof(v));
		c->is_double = 1;
	} else {
		v = (double)(int64_t)e->a;
	}
	c->name = name;
	if (!c->count++ || v < c->min)
		c->min = v;
	if (c->count == 1 || v > c->max)
		c->max = v;
	if (c->count == 1 || e->t0 < c->first_t)
		c->first_t = e->t0;
	/* at one instant the larger value is the last: not whichever was read last */
	if (c->count == 1 || e->t0 > c->last_t || (e->t0 == c->last_t && v >= c->last)) {
		c->last = v;
		c->last_t = e->t0;
	}
	return 0;
}

static int step(struct stats *s, uint32_t pid, uint64_t t)
{
	if (VEC_RESERVE(s->steps, s->steps_cap, s->nsteps + 1))
		return -1;
	s->steps[s->nsteps].pid = pid;
	s->steps[s->nsteps++].t = t;
	return 0;
}

/* One call of (cat, name) that moved e->b bytes, into a copies-like table. */
static int add_bytes(struct u64map *ix, struct copy_row **rows, size_t *n, size_t *cap,
		     uint32_t cat, uint32_t name, const struct prof_event *e)
{
	int created;
	int64_t i = slot_for(ix, rows, n, cap, sizeof(struct copy_row),
			     (uint64_t)cat << 32 | name, &created);
	if (i < 0)
		return -1;
	struct copy_row *x = &(*rows)[i];
	x->cat = cat;
	x->name = name;
	x->count++;
	x->bytes += e->b;
	x->total += e->t1 > e->t0 ? e->t1 - e->t0 : 0;
	return 0;
}

/* A copy or set on a GPU: its bytes, for the copies table (kernels have none). */
static int gpu_copy(struct stats *s, struct model *m, uint32_t cat, uint32_t name,
		    const struct prof_event *e)
{
	if (!s->gpu_cats) {
		if (strtab_intern_str(&m->str, PROF_CATNAME_CUDA_MEMCPY, &s->memcpy_cat) ||
		    strtab_intern_str(&m->str, PROF_CATNAME_CUDA_MEMSET, &s->memset_cat))
			return -1;
		s->gpu_cats = 1;
	}
	if (cat != s->memcpy_cat && cat != s->memset_cat)
		return 0;
	return add_bytes(&s->copy_ix, &s->copies, &s->ncopies, &s->copies_cap, cat, name, e);
}

/* A call that moved a message of known bytes (an MPI call: PROF_EVF_COMM). */
static int message(struct stats *s, uint32_t cat, uint32_t name, const struct prof_event *e)
{
	return add_bytes(&s->msg_ix, &s->msgs, &s->nmsgs, &s->msgs_cap, cat, name, e);
}

/* torch.profiler's step labels, ProfilerStep#N, are one row named "ProfilerStep*", as its
 * key_averages() shows them; the trace keeps each step's own name. */
static uint32_t row_name(struct model *m, uint32_t name)
{
	static const char prefix[] = "ProfilerStep#";
	size_t len, n = sizeof prefix - 1;
	uint32_t grouped;
	const char *str = strtab_get(&m->str, name, &len);
	if (!str || len <= n || memcmp(str, prefix, n) || strspn(str + n, "0123456789") != len - n)
		return name;
	return strtab_intern_str(&m->str, "ProfilerStep*", &grouped) ? name : grouped;
}

/* MXNet's table ends its C API domain with two counters, kept by MXNet as the calls run:
 * "MXNet C API Calls" (+1 per call) and "MXNet C API Concurrency" (+1 at each call's
 * start, -1 at its end). Here they are made from the calls, in the counters table. */
static int mxnet_api_call(struct stats *s, struct model *m, uint32_t image,
			  const struct prof_event *e)
{
	if (!s->mxnet_api.calls &&
	    (strtab_intern_str(&m->str, "MXNet C API Calls", &s->mxnet_counter[0]) ||
	     strtab_intern_str(&m->str, "MXNet C API Concurrency", &s->mxnet_counter[1])))
		return -1;
	return concurrency_add(&s->mxnet_api, m->img[image].tpid, e->t0, e->t1);
}

static int mxnet_counters(struct stats *s)
{
	struct concurrency *c = &s->mxnet_api;
	if (!c->calls)
		return 0;
	concurrency_finish(c);
	for (int i = 0; i < 2; i++) {
		int created;
		int64_t at = slot_for(&s->ctr_ix, &s->ctrs, &s->nctrs, &s->ctrs_cap,
				      sizeof(struct counter), s->mxnet_counter[i], &created);
		if (at < 0)
			return -1;
		struct counter *k = &s->ctrs[at];
		k->name = s->mxnet_counter[i];
		k->first_t = UINT64_MAX; /* after the program's own, as MXNet lists them */
		k->count = i ? 2 * c->calls : c->calls; /* MXNet's updates of each */
		k->min = i ? 0 : 1;
		k->max = i ? (double)c->most : (double)c->calls;
		k->last = i ? 0 : (double)c->calls;
	}
	return 0;
}

static int one_event(struct stats *s, struct model *m, uint32_t image, struct thread *t,
		     const struct prof_event *e)
{
	uint32_t name = model_name(m, image, e->name), cat;
	struct row *r;

	if (name == STR_NONE)
		return -1;
	switch (e->type) {
	case PROF_EV_COMPLETE:
		/* device memory is tabled per device (Memory: gpu/N); the calls that made it
		 * have their times in cuda_api, and these events have none */
		if ((int)e->cat == m->img[image].gpu_cat || (int)e->cat == m->img[image].mxnet_cat)
			return 0;
		cat = model_category(m, image, e->cat);
		if (e->cat == PROF_CAT_USER)
			name = row_name(m, name);
		if (cat == STR_NONE || !(r = row_for(s, cat, name)))
			return -1;
		if (m->img[image].rank >= 0 &&
		    ((e->cat != PROF_CAT_MEMORY && ranks_event(&s->ranks, m, image, cat, name, e)) ||
		     ranks_row(&s->ranks, m, image, (size_t)(r - s->rows), cat, name,
			       e->t1 > e->t0 ? e->t1 - e->t0 : 0) ||
		     (e->cat != PROF_CAT_MEMORY && !e->depth &&
		      ranks_active(&s->ranks, m, image, e->t1 > e->t0 ? e->t1 - e->t0 : 0))))
			return -1;
		int64_t net = 0;
		if (e->cat == PROF_CAT_MEMORY && net_bytes(s, image, e, &net))
			return -1;
		if ((e->flags & PROF_EVF_GPU) && gpu_copy(s, m, cat, name, e))
			return -1;
		if ((e->flags & PROF_EVF_COMM) && e->b != PROF_COMM_UNKNOWN && message(s, cat, name, e))
			return -1;
		if (depths(t, e->depth))
			return -1;
		if (e->cat == PROF_CAT_MEMORY) {
			complete_mem(s, r, t, e, 1, net);
			return complete(r, t, e);
		}
		if (s->mxnet_api_cat == STR_NONE &&
		    strtab_intern_str(&m->str, PROF_CATNAME_MXNET_C_API, &s->mxnet_api_cat))
			return -1;
		if (cat == s->mxnet_api_cat && mxnet_api_call(s, m, image, e))
			return -1;
		int64_t mem = sat_i64(t->mem_direct[e->depth + 1], t->mem_nested[e->depth + 1]);
		r->within += cat_time_end(t, e, cat);
		take_only_child(s, m, r, e, &t->kids[e->depth + 1]);
		complete_mem(s, r, t, e, 0, net);
		if (complete(r, t, e))
			return -1;
		note_child(s, r, &t->kids[e->depth], e, mem);
		return 0;
	case PROF_EV_INSTANT:
		if (e->cat == PROF_CAT_STEP && m->img[image].rank >= 0 &&
		    ranks_event(&s->ranks, m, image, STR_NONE, name, e))
			return -1;
		if (e->cat == PROF_CAT_STEP)
			return step(s, m->img[image].tpid, e->t0);
		return mark(s, name, e->t0);
	case PROF_EV_COUNTER:
		return counter(s, name, e);
	default:
		return 0;
	}
}

int stats_on_events(void *ctx, struct model *m, uint32_t image, uint32_t thread,
		    const struct prof_event *ev, uint32_t n)
{
	struct stats *s = ctx;
	struct thread *t = &m->thr[thread];
	uint32_t i;

	for (i = 0; i < n; i++) {
		if (ev[i].type == PROF_EV_LOST) {
			/* Ranges that ended in the gap never reported to their parents. */
			if (t->ndepth) {
				memset(t->child, 0, t->ndepth * sizeof(*t->child));
				memset(t->mem_direct, 0, t->ndepth * sizeof(*t->mem_direct));
				memset(t->mem_nested, 0, t->ndepth * sizeof(*t->mem_nested));
				memset(t->kids, 0, t->ndepth * sizeof(*t->kids));
				memset(t->cat_time, 0, t->ndepth * sizeof(*t->cat_time));
			}
			continue;
		}
		if (one_event(s, m, image, t, &ev[i]))
			return -1;
	}
	return 0;
}

static int by_pid_time(const void *a, const void *b)
{
	const struct step_time *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->t < y->t ? -1 : x->t > y->t;
}

static int step_summary(struct stats *s)
{
	uint64_t *gaps, sum = 0;
	size_t i, n = 0;

	s->step.count = s->nsteps;
	if (s->nsteps < 2)
		return 0;
	qsort(s->steps, s->nsteps, sizeof(*s->steps), by_pid_time);
	gaps = malloc(s->nsteps * sizeof(*gaps));
	if (!gaps)
		return -1;
	for (i = 1; i < s->nsteps; i++) {
		if (s->steps[i].pid != s->steps[i - 1].pid)
			continue;
		gaps[n] = s->steps[i].t - s->steps[i - 1].t;
		sum += gaps[n++];
	}
	s->step.intervals = n;
	if (n) {
		s->step.mean_ns = sum / n;
		s->step.median_ns = median_u64(gaps, n);
	}
	free(gaps);
	return 0;
}

int stats_finish(struct stats *s)
{
	size_t i;

	for (i = 0; i < s->nrows; i++) {
		struct row *r = &s->rows[i];
		if (r->sketch.count) {
			/* min and max stay as seen (a merged call's may be among them) */
			r->median = (uint64_t)(sketch_quantile(&r->sketch, 0.5) + 0.5);
			sketch_free(&r->sketch);
			continue;
		}
		if (r->merged) {
			/* drop the holes; min and max again without the calls taken out */
			size_t kept = 0;
			r->min = UINT64_MAX;
			r->max = 0;
			for (size_t j = 0; j < r->ndurs; j++) {
				uint64_t d = r->durs[j];
				if (d == UINT64_MAX)
					continue;
				r->durs[kept++] = d;
				r->min = d < r->min ? d : r->min;
				r->max = d > r->max ? d : r->max;
			}
			r->ndurs = kept;
		}
		r->median = median_u64(r->durs, r->ndurs);
		free(r->durs);
		r->durs = NULL;
		r->ndurs = r->durs_cap = 0;
	}
	if (mxnet_counters(s) || ranks_finish(&s->ranks))
		return -1;
	return step_summary(s);
}
