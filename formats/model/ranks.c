/* Cross-rank analysis (ranks.h). Matching by order within a name is what the collectives'
 * semantics give: every rank of a process group calls them in the same order. A
 * collective's "wait" on a rank is the time from its arrival (start) to the last rank's,
 * at most its duration: one capture has one clock, so arrivals compare directly. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "formats/model/model.h"
#include "formats/model/ranks.h"
#include "formats/model/stats.h" /* median_u64 */
#include "formats/util/vec.h"
#include "preload/common/event.h"

void ranks_init(struct ranks *r)
{
	memset(r, 0, sizeof *r);
	u64map_init(&r->by_image);
	u64map_init(&r->row_ix);
	r->coll_cat = STR_NONE;
}

void ranks_free(struct ranks *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->p[i].coll);
		for (int k = 0; k < RANK_STEPS_KINDS; k++)
			free(r->p[i].bound[k]);
		free(r->p[i].optimizer);
		free(r->p[i].steps);
	}
	free(r->p);
	u64map_free(&r->by_image);
	free(r->rows);
	u64map_free(&r->row_ix);
	free(r->names);
	memset(r, 0, sizeof *r);
	r->coll_cat = STR_NONE;
}

const char *ranks_slow_by_name(enum rank_slow_by b)
{
	return b == RANK_SLOW_CPU ? "cpu" : b == RANK_SLOW_WALL ? "wall" : "waiting";
}

const char *ranks_step_kind_name(enum rank_step_kind k)
{
	static const char *const names[] = {"none", "steps", "ProfilerStep#N",
					    "Optimizer.step"};
	return k < RANK_STEPS_KINDS ? names[k] : "none";
}

static struct rank_proc *proc_of(struct ranks *r, struct model *m, uint32_t image)
{
	int created;
	uint64_t *v = u64map_upsert(&r->by_image, image, &created);
	if (!v)
		return NULL;
	if (!created)
		return &r->p[*v - 1];
	if (VEC_RESERVE(r->p, r->cap, r->n + 1)) {
		u64map_remove(&r->by_image, image, NULL);
		return NULL;
	}
	struct rank_proc *p = &r->p[r->n++];
	memset(p, 0, sizeof *p);
	p->image = image;
	p->rank = m->img[image].rank;
	*v = r->n;
	return p;
}

static int prefixed(const struct model *m, uint32_t gid, const char *prefix)
{
	size_t len, n = strlen(prefix);
	const char *s = model_str(m, gid, &len);
	return s && len > n && !memcmp(s, prefix, n);
}

static int add_bound(struct rank_proc *p, enum rank_step_kind k, uint64_t t, uint32_t name)
{
	if (p->nbound[k] >= RANKS_MAX_COLLECTIVES)
		return 0;
	if (VEC_RESERVE(p->bound[k], p->bound_cap[k], p->nbound[k] + 1) ||
	    (k == RANK_STEPS_OPTIMIZER &&
	     VEC_RESERVE(p->optimizer, p->optimizer_cap, p->nbound[k] + 1)))
		return -1;
	if (k == RANK_STEPS_OPTIMIZER)
		p->optimizer[p->nbound[k]] = name;
	p->bound[k][p->nbound[k]++] = t;
	return 0;
}

/* Keeps the boundaries of the optimizer called most (of the first 8 names; ties: the name
 * first in byte order, whatever order the events were read in). */
static void one_optimizer(const struct model *m, struct rank_proc *p)
{
	struct {
		uint32_t name;
		size_t count;
	} seen[8];
	size_t n = p->nbound[RANK_STEPS_OPTIMIZER], nseen = 0, kept = 0, best = 0;
	for (size_t i = 0; i < n; i++) {
		size_t j = 0;
		while (j < nseen && seen[j].name != p->optimizer[i])
			j++;
		if (j == nseen && nseen < sizeof seen / sizeof *seen)
			seen[nseen++] = (typeof(*seen)){p->optimizer[i], 0};
		if (j < nseen)
			seen[j].count++;
	}
	for (size_t j = 1; j < nseen; j++)
		if (seen[j].count > seen[best].count ||
		    (seen[j].count == seen[best].count &&
		     strcmp(model_str(m, seen[j].name, NULL), model_str(m, seen[best].name, NULL)) < 0))
			best = j;
	for (size_t i = 0; i < n; i++)
		if (p->optimizer[i] == seen[best].name)
			p->bound[RANK_STEPS_OPTIMIZER][kept++] = p->bound[RANK_STEPS_OPTIMIZER][i];
	p->nbound[RANK_STEPS_OPTIMIZER] = kept;
}

int ranks_active(struct ranks *r, struct model *m, uint32_t image, uint64_t dur)
{
	struct rank_proc *p = proc_of(r, m, image);
	if (!p)
		return -1;
	r->m = r->mw = m;
	p->active_ns += dur;
	return 0;
}

int ranks_row(struct ranks *r, struct model *m, uint32_t image, size_t row, uint32_t cat,
	      uint32_t name, uint64_t dur)
{
	int created;
	if (row > UINT32_MAX)
		return 0;
	uint64_t *v = u64map_upsert(&r->row_ix, (uint64_t)image << 32 | row, &created);
	if (!v)
		return -1;
	if (created) {
		if (VEC_RESERVE(r->rows, r->rows_cap, r->nrows + 1) || !proc_of(r, m, image)) {
			u64map_remove(&r->row_ix, (uint64_t)image << 32 | row, NULL);
			return -1;
		}
		r->rows[r->nrows] = (struct rank_row){.image = image, .cat = cat, .name = name};
		*v = ++r->nrows;
		r->m = m;
	}
	r->rows[*v - 1].count++;
	r->rows[*v - 1].total += dur;
	return 0;
}

int ranks_event(struct ranks *r, struct model *m, uint32_t image, uint32_t cat, uint32_t name,
		const struct prof_event *e)
{
	if (r->coll_cat == STR_NONE &&
	    strtab_intern_str(&m->str, PROF_CATNAME_COLLECTIVE, &r->coll_cat))
		return -1;
	enum rank_step_kind k = RANK_STEPS_NONE;
	if (e->type == PROF_EV_INSTANT && e->cat == PROF_CAT_STEP)
		k = RANK_STEPS_MARKS;
	else if (e->type == PROF_EV_COMPLETE && e->cat == PROF_CAT_USER &&
		 prefixed(m, name, "ProfilerStep")) /* "ProfilerStep*" in the rows */
		k = RANK_STEPS_PROFILER;
	else if (e->type == PROF_EV_COMPLETE && e->cat == PROF_CAT_USER &&
		 prefixed(m, name, "Optimizer.step#"))
		k = RANK_STEPS_OPTIMIZER;
	else if (e->type != PROF_EV_COMPLETE || cat != r->coll_cat)
		return 0;
	struct rank_proc *p = proc_of(r, m, image);
	if (!p)
		return -1;
	r->m = r->mw = m; /* the names and clocks, for ranks_finish */
	if (k != RANK_STEPS_NONE)
		return add_bound(p, k, k == RANK_STEPS_OPTIMIZER ? e->t1 : e->t0, name);
	if (p->ncoll >= RANKS_MAX_COLLECTIVES) {
		r->dropped++;
		return 0;
	}
	if (VEC_RESERVE(p->coll, p->coll_cap, p->ncoll + 1))
		return -1;
	p->coll[p->ncoll++] = (struct rank_coll){.name = name, .t0 = e->t0, .t1 = e->t1};
	return 0;
}

static int by_name_then_time(const void *a, const void *b)
{
	const struct rank_coll *x = a, *y = b;
	if (x->name != y->name)
		return x->name < y->name ? -1 : 1;
	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

static int by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* by rank; of one rank, the image with the most collectives first (then the earlier) */
static int by_rank(const void *a, const void *b)
{
	const struct rank_proc *x = a, *y = b;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->ncoll != y->ncoll)
		return x->ncoll > y->ncoll ? -1 : 1;
	return x->image < y->image ? -1 : x->image > y->image;
}

/* Whether every rank must arrive before any leaves a call of this name: all-reduce,
 * all-gather, all-to-all, reduce-scatter, barrier (not a broadcast, whose root may
 * return first). */
static int synchronizing(const struct model *m, uint32_t name)
{
	static const char *const words[] = {"all", "All", "barrier", "Barrier", "reduce_scatter",
					    "Reduce_scatter"};
	size_t len;
	const char *s = model_str(m, name, &len);
	for (size_t w = 0; s && w < sizeof words / sizeof *words; w++)
		if (memmem(s, len, words[w], strlen(words[w])))
			return 1;
	return 0;
}

/* A rank's leading calls of a synchronizing name that ended before another rank's first
 * began have no partner there (a window or flight recorder cut that rank's first call,
 * or a full ring lost it): left unmatched, so the rest pair up by order again. */
static void align_start(struct ranks *r, size_t *at, const size_t *end)
{
	for (int moved = 1; moved;) {
		uint64_t latest_first = 0;
		moved = 0;
		for (size_t i = 0; i < r->nranks; i++)
			if (at[i] < end[i] && r->p[i].coll[at[i]].t0 > latest_first)
				latest_first = r->p[i].coll[at[i]].t0;
		for (size_t i = 0; i < r->nranks; i++)
			while (at[i] < end[i] && r->p[i].coll[at[i]].t1 < latest_first) {
				at[i]++;
				r->unmatched++;
				moved = 1;
			}
	}
}

static uint32_t domain_of(const struct model *m, const struct rank_proc *p)
{
	return m->nimg > p->image && m->sources.n ? m->src[m->img[p->image].source].domain : 0;
}

/* The range of name in a rank's collectives (sorted by name): [*lo, return). */
static size_t name_run(const struct rank_proc *p, uint32_t name, size_t *lo)
{
	size_t a = 0, b = p->ncoll;
	while (a < b) {
		size_t mid = (a + b) / 2;
		if (p->coll[mid].name < name)
			a = mid + 1;
		else
			b = mid;
	}
	*lo = a;
	while (b < p->ncoll && p->coll[b].name == name)
		b++;
	return b;
}

static void shift_rank(struct rank_proc *p, int64_t by)
{
	for (size_t c = 0; c < p->ncoll; c++) {
		p->coll[c].t0 += (uint64_t)by;
		p->coll[c].t1 += (uint64_t)by;
	}
	for (int k = 0; k < RANK_STEPS_KINDS; k++)
		for (size_t b = 0; b < p->nbound[k]; b++)
			p->bound[k][b] += (uint64_t)by;
}

#define FIT_MAX_PAIRS 200000 /* end times compared per clock: plenty for a median */

/* Of a's calls [lo, end) (one name, in time order), the end time nearest t. */
static uint64_t nearest_end(const struct rank_proc *a, size_t lo, size_t end, uint64_t t)
{
	size_t l = lo, h = end;
	while (l < h) {
		size_t mid = l + (h - l) / 2;
		if (a->coll[mid].t1 < t)
			l = mid + 1;
		else
			h = mid;
	}
	if (l == end || (l > lo && t - a->coll[l - 1].t1 < a->coll[l].t1 - t))
		l--;
	return a->coll[l].t1;
}

/* Ranks on another host's clock (moved there by the captures' realtime anchors, as good
 * as the hosts' time sync): a synchronizing collective ends at about the same moment on
 * every rank, so the median difference between the end times of such calls on those
 * ranks and the nearest end of a call of the same name on the ranks of the first clock is
 * what that clock is still off by. Nearest, not the k-th: a rank that missed calls (a
 * late start, a window, a full ring) does not shift every pair; this needs the anchors
 * to be better than half the time between two calls of a name, which NTP (a millisecond)
 * is for training steps. The spread of the differences (1.4826 x their median absolute
 * deviation: a standard deviation's worth) is the error stated; ranks that always leave
 * a collective some microseconds apart bias the median by about that much, which no
 * capture can tell from a clock's offset. Only with ranks on the first clock to compare
 * with: its times are the job's. */
static int fit_clocks(struct ranks *r)
{
	struct model *m = r->mw;
	if (!m || m->sources.n < 2)
		return 0;
	int first_clock = 0;
	for (size_t i = 0; i < r->nranks && !first_clock; i++)
		first_clock = r->p[i].ncoll && !domain_of(m, &r->p[i]);
	if (!first_clock)
		return 0;
	uint64_t *d = malloc(FIT_MAX_PAIRS * sizeof *d);
	if (!d)
		return -1;
	for (uint32_t dom = 1; dom < m->sources.n; dom++) {
		if (m->src[dom].domain != dom)
			continue;
		size_t nd = 0;
		for (size_t i = 0; i < r->nranks * r->nranks; i++) {
			/* every rank on the first clock with every rank on this one */
			const struct rank_proc *a = &r->p[i / r->nranks], *b = &r->p[i % r->nranks];
			if (domain_of(m, a) || domain_of(m, b) != dom)
				continue;
			for (size_t x = 0; x < b->ncoll && nd < FIT_MAX_PAIRS;) {
				uint32_t name = b->coll[x].name;
				size_t blo = x, bend = name_run(b, name, &blo), alo, aend = name_run(a, name, &alo);
				x = bend;
				if (!synchronizing(m, name) || alo == aend)
					continue;
				for (size_t k = blo; k < bend && nd < FIT_MAX_PAIRS; k++) {
					uint64_t t = b->coll[k].t1;
					/* signed difference, kept in order as unsigned */
					d[nd++] = (nearest_end(a, alo, aend, t) - t) ^ (1ull << 63);
				}
			}
		}
		if (nd < 3)
			continue; /* too few to say: the anchors stand */
		uint64_t fix = median_u64(d, nd) ^ (1ull << 63);
		for (size_t j = 0; j < nd; j++) {
			uint64_t off = (d[j] ^ (1ull << 63)) - fix;
			d[j] = (int64_t)off < 0 ? 0 - off : off;
		}
		uint64_t spread = median_u64(d, nd) * 14826 / 10000;
		for (uint32_t s = 0; s < m->sources.n; s++)
			if (m->src[s].domain == dom) {
				m->src[s].fix_ns = (int64_t)((uint64_t)m->src[s].fix_ns + fix);
				m->src[s].fix_err_ns = spread;
				m->src[s].fix_pairs = nd;
				m->src[s].method = MODEL_CLOCK_COLLECTIVES;
			}
		for (size_t i = 0; i < r->nranks; i++)
			if (domain_of(m, &r->p[i]) == dom)
				shift_rank(&r->p[i], (int64_t)fix);
	}
	free(d);
	model_sources_refined(m);
	return 0;
}

/* The k-th call of each name on every rank is one collective. */
static int match(struct ranks *r, const struct model *m)
{
	size_t n = r->nranks, *at = calloc(2 * n, sizeof *at), *end = at + n;
	if (!at)
		return -1;
	for (;;) {
		/* the smallest name any rank has left */
		uint32_t name = STR_NONE;
		for (size_t i = 0; i < n; i++)
			if (at[i] < r->p[i].ncoll && r->p[i].coll[at[i]].name < name)
				name = r->p[i].coll[at[i]].name;
		if (name == STR_NONE)
			break;
		size_t fewest = SIZE_MAX;
		for (size_t i = 0; i < n; i++) {
			end[i] = at[i];
			while (end[i] < r->p[i].ncoll && r->p[i].coll[end[i]].name == name)
				end[i]++;
		}
		if (synchronizing(m, name))
			align_start(r, at, end);
		for (size_t i = 0; i < n; i++)
			fewest = end[i] - at[i] < fewest ? end[i] - at[i] : fewest;
		for (size_t k = 0; k < fewest; k++) {
			uint64_t last = 0;
			for (size_t i = 0; i < n; i++)
				last = r->p[i].coll[at[i] + k].t0 > last ? r->p[i].coll[at[i] + k].t0
									 : last;
			for (size_t i = 0; i < n; i++) {
				struct rank_coll *c = &r->p[i].coll[at[i] + k];
				uint64_t dur = c->t1 > c->t0 ? c->t1 - c->t0 : 0;
				c->wait = last - c->t0 < dur ? last - c->t0 : dur;
				r->p[i].matched++;
				r->p[i].wait_ns += c->wait;
			}
		}
		for (size_t i = 0; i < n; i++) {
			r->unmatched += end[i] - at[i] - fewest;
			at[i] = end[i];
		}
	}
	free(at);
	return 0;
}

/* Steps: the first kind every rank has boundaries of; step j runs from a rank's j-th
 * boundary to its next. */
static int steps(struct ranks *r)
{
	size_t n = r->nranks;
	for (size_t i = 0; i < n; i++)
		if (r->p[i].nbound[RANK_STEPS_OPTIMIZER])
			one_optimizer(r->m, &r->p[i]);
	for (int k = RANK_STEPS_MARKS; k < RANK_STEPS_KINDS && !r->step_kind; k++) {
		size_t fewest = SIZE_MAX;
		for (size_t i = 0; i < n; i++)
			fewest = r->p[i].nbound[k] < fewest ? r->p[i].nbound[k] : fewest;
		if (fewest >= 2) {
			r->step_kind = (enum rank_step_kind)k;
			r->nsteps = fewest - 1;
		}
	}
	if (!r->step_kind)
		return 0;
	for (size_t i = 0; i < n; i++) {
		struct rank_proc *p = &r->p[i];
		uint64_t *b = p->bound[r->step_kind];
		qsort(b, p->nbound[r->step_kind], sizeof *b, by_u64);
		p->steps = calloc(r->nsteps, sizeof *p->steps);
		if (!p->steps)
			return -1;
		for (size_t j = 0; j < r->nsteps; j++) {
			p->steps[j].t0 = b[j];
			p->steps[j].t1 = b[j + 1];
		}
		/* coll is in name order: each call to its step by search over the bounds */
		for (size_t c = 0; c < p->ncoll; c++) {
			const struct rank_coll *x = &p->coll[c];
			size_t lo = 0, hi = r->nsteps;
			while (lo < hi) {
				size_t mid = (lo + hi) / 2;
				if (p->steps[mid].t1 <= x->t0)
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo < r->nsteps && x->t0 >= p->steps[lo].t0) {
				p->steps[lo].coll_ns += x->t1 > x->t0 ? x->t1 - x->t0 : 0;
				p->steps[lo].wait_ns += x->wait;
			}
		}
	}
	return 0;
}

static int by_cat_name_image(const void *a, const void *b)
{
	const struct rank_row *x = a, *y = b;
	if (x->cat != y->cat)
		return x->cat < y->cat ? -1 : 1;
	if (x->name != y->name)
		return x->name < y->name ? -1 : 1;
	return x->image < y->image ? -1 : x->image > y->image;
}

/* largest max first; ties by category then name, whatever order rows were made in */
static int by_max_then_name(const void *a, const void *b, void *m)
{
	const struct rank_name *x = a, *y = b;
	if (x->max != y->max)
		return x->max > y->max ? -1 : 1;
	int c = strcmp(model_str(m, x->cat, NULL), model_str(m, y->cat, NULL));
	return c ? c : strcmp(model_str(m, x->name, NULL), model_str(m, y->name, NULL));
}

/* Each name's time on every rank compared: min, median, max, and the slowest rank. */
static int across(struct ranks *r)
{
	size_t n = r->nranks;
	struct u64map pos;
	uint64_t *tot = calloc(3 * n, sizeof *tot), *calls = tot + n, *sorted = tot + 2 * n;
	u64map_init(&pos);
	int rc = tot ? 0 : -1;
	for (size_t i = 0; !rc && i < n; i++) {
		int created;
		uint64_t *v = u64map_upsert(&pos, r->p[i].image, &created);
		if (v)
			*v = i + 1;
		else
			rc = -1;
	}
	if (!rc && r->nrows)
		qsort(r->rows, r->nrows, sizeof *r->rows, by_cat_name_image);
	for (size_t a = 0, b; !rc && a < r->nrows; a = b) {
		memset(tot, 0, 2 * n * sizeof *tot);
		size_t called = 0;
		for (b = a; b < r->nrows && r->rows[b].cat == r->rows[a].cat &&
			    r->rows[b].name == r->rows[a].name;
		     b++) {
			const uint64_t *at = u64map_find(&pos, r->rows[b].image);
			if (!at)
				continue; /* not the image compared for its rank */
			called += !calls[*at - 1];
			tot[*at - 1] += r->rows[b].total;
			calls[*at - 1] += r->rows[b].count;
		}
		if (called < 2)
			continue;
		if (VEC_RESERVE(r->names, r->names_cap, r->nnames + 1)) {
			rc = -1;
			break;
		}
		struct rank_name *x = &r->names[r->nnames++];
		*x = (struct rank_name){.cat = r->rows[a].cat, .name = r->rows[a].name,
					.ranks = called, .calls_min = UINT64_MAX};
		size_t slow = 0;
		x->min = UINT64_MAX;
		for (size_t i = 0; i < n; i++) {
			sorted[i] = tot[i];
			slow = tot[i] > tot[slow] ? i : slow;
			x->min = tot[i] < x->min ? tot[i] : x->min;
			x->calls_min = calls[i] < x->calls_min ? calls[i] : x->calls_min;
			x->calls_max = calls[i] > x->calls_max ? calls[i] : x->calls_max;
		}
		x->max = tot[slow];
		x->median = median_u64(sorted, n);
		x->slowest = r->p[slow].rank;
	}
	if (!rc && r->nnames)
		qsort_r(r->names, r->nnames, sizeof *r->names, by_max_then_name, (void *)r->m);
	u64map_free(&pos);
	free(tot);
	return rc;
}

/* A rank's waiting in the steps compared, or in all when there are none: the start-up's
 * collectives (a rank started late) do not speak for the training. */
uint64_t ranks_waited(const struct ranks *r, size_t i)
{
	if (!r->nsteps)
		return r->p[i].wait_ns;
	uint64_t sum = 0;
	for (size_t j = 0; j < r->nsteps; j++)
		sum += r->p[i].steps[j].wait_ns;
	return sum;
}

/* With collectives: the rank that waited least; the others waited for it. */
static int slowest_waiting(struct ranks *r)
{
	r->slow_by = RANK_SLOW_WAITING;
	r->slowest = 0;
	for (size_t i = 1; i < r->nranks; i++)
		if (ranks_waited(r, i) < ranks_waited(r, r->slowest))
			r->slowest = i;
	return 0;
}

static uint64_t busy(const struct ranks *r, size_t i)
{
	return r->slow_by == RANK_SLOW_CPU ? r->p[i].cpu_ns : r->p[i].wall_ns;
}

/* Without collectives nothing in the job waits for a slow rank, but the job ends when
 * it does: the rank with the most CPU time (wall time where some rank's CPU time is not
 * known: killed), and whether it stands out from the others' median. */
static int slowest_busy(struct ranks *r)
{
	uint64_t *others = malloc(r->nranks * sizeof *others);
	if (!others)
		return -1;
	r->slow_by = RANK_SLOW_CPU;
	for (size_t i = 0; i < r->nranks; i++)
		if (!r->p[i].cpu_ns)
			r->slow_by = RANK_SLOW_WALL;
	r->slowest = 0;
	for (size_t i = 1; i < r->nranks; i++)
		if (busy(r, i) > busy(r, r->slowest))
			r->slowest = i;
	size_t n = 0;
	for (size_t i = 0; i < r->nranks; i++)
		if (i != r->slowest)
			others[n++] = busy(r, i);
	r->slow_value = busy(r, r->slowest);
	r->others_median = median_u64(others, n);
	free(others);
	r->stands_out = r->slow_value && r->others_median &&
			r->slow_value * 100 >= r->others_median * RANKS_STANDS_OUT_PCT &&
			r->slow_value - r->others_median >= RANKS_STANDS_OUT_NS;
	return 0;
}

int ranks_finish(struct ranks *r)
{
	if (r->n < 2)
		return 0; /* no ranks to compare (and qsort may not be given NULL) */
	qsort(r->p, r->n, sizeof *r->p, by_rank);
	/* one image per rank (a rank's DataLoader workers have its rank too) */
	size_t kept = 0;
	for (size_t i = 0; i < r->n; i++) {
		if (kept && r->p[kept - 1].rank == r->p[i].rank)
			continue;
		struct rank_proc tmp = r->p[kept];
		r->p[kept++] = r->p[i];
		r->p[i] = tmp;
	}
	u64map_free(&r->by_image); /* the order changed: by_image is stale, not needed */
	u64map_init(&r->by_image);
	r->nranks = kept >= 2 ? kept : 0;
	if (!r->nranks)
		return 0;
	for (size_t i = 0; i < r->nranks; i++) {
		struct rank_proc *p = &r->p[i];
		const struct image *im = &r->m->img[p->image];
		r->collectives |= p->ncoll > 0;
		p->wall_ns = im->ended && im->end_ns > im->start_ns ? im->end_ns - im->start_ns : 0;
		p->cpu_ns = im->cpu_ns;
	}
	if (across(r))
		return -1;
	for (size_t i = 0; i < r->nranks; i++)
		for (size_t c = 0; c < r->p[i].ncoll; c++)
			r->p[i].coll_ns += r->p[i].coll[c].t1 > r->p[i].coll[c].t0
						   ? r->p[i].coll[c].t1 - r->p[i].coll[c].t0
						   : 0;
	for (size_t i = 0; i < r->nranks; i++)
		if (r->p[i].ncoll) /* a rank with steps only has no array */
			qsort(r->p[i].coll, r->p[i].ncoll, sizeof *r->p[i].coll, by_name_then_time);
	if (fit_clocks(r) || match(r, r->m) || steps(r))
		return -1;
	return r->collectives ? slowest_waiting(r) : slowest_busy(r);
}
