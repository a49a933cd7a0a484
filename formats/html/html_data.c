/* The data of prof html's page (html_data.h): two reads of the capture. The first finds
 * the steps (step marks, else ProfilerStep#N ranges, else the ends of Optimizer.step#,
 * else an MXNet Gluon loop's iterations: mx_step_ends) of the process that has most, and keeps the live-bytes curves; the second gives each
 * step its phases and keeps the timeline's window. */
#include "formats/html/html_data.h"

#include <stdlib.h>
#include <string.h>

#include "formats/html/advice.h"
#include "formats/model/memcurve.h"
#include "formats/model/model.h"
#include "formats/util/vec.h"

enum step_source { SRC_NONE, SRC_MARKS, SRC_PROFILER_STEP, SRC_OPTIMIZER, SRC_MXNET };

struct img_steps {
	uint64_t *marks, *opt_ends, (*ranges)[2];
	size_t nmarks, marks_cap, nopt, opt_cap, nranges, ranges_cap;
	/* MXNet: its autograd backward and recording calls' starts, its update operators' */
	uint64_t *mx_bwd, *mx_rec, (*mx_upd)[2];
	size_t nmx_bwd, mx_bwd_cap, nmx_rec, mx_rec_cap, nmx_upd, mx_upd_cap;
	uint64_t first_t; /* its first event */
};

struct step {
	uint64_t t0, t1;
	uint64_t ph[PH_N];
	uint64_t data_end, op_start, op_end, bwd_start, bwd_end, fp_start, bp_end;
	uint64_t allocs, syncs, ops; /* small allocations, host syncs, operator calls */
	uint64_t busy_fwd, busy_bwd; /* operators' own time in it (MXNet's steps: see there) */
	int has_bwd;
	/* GPU work's union: disjoint intervals in time order */
	uint64_t (*gpu)[2];
	size_t ngpu, gpu_cap;
};

struct tl_row {
	uint32_t image, thread;
};

struct html_data {
	const struct html_options *o;
	struct model first, second; /* the two reads' (the first keeps the memory curves) */
	struct img_steps *img;
	size_t nimg, img_cap;
	/* the steps shown */
	int64_t chosen;  /* image index, -1: none */
	enum step_source source;
	struct step *steps;
	size_t nsteps;
	/* timeline */
	uint64_t last_t; /* the capture's last event's end */
	uint64_t win0, win1;
	struct u64map row_ix, name_ix, cat_ix; /* image << 32 | thread, gid -> index + 1 */
	struct tl_row *rows;
	size_t nrows, rows_cap;
	uint32_t *names, *cats; /* gids by index */
	size_t nnames, names_cap, ncats, cats_cap;
	struct tl_event {
		uint32_t row, name, cat;
		uint8_t depth;
		uint64_t t0, t1;
	} *ev;
	size_t nev, ev_cap;
	uint64_t ev_left_out, ev_min_dur; /* beyond the cap: the longest kept */
	/* facts for the advice */
	struct advice_facts facts;
	int failed;
};

static int starts(const char *s, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);
	return n >= k && !memcmp(s, prefix, k);
}

static int contains(const char *s, size_t n, const char *word)
{
	size_t k = strlen(word);
	for (size_t i = 0; i + k <= n; i++)
		if (!memcmp(s + i, word, k))
			return 1;
	return 0;
}

/* An MXNet optimizer's update operator (sgd_update, multi_sgd_mom_update, adam_update,
 * lamb_update_phase1, ...): MXNet's names have no namespace, unlike PyTorch's. Asked of
 * every event's name: the endings first. */
static int is_mx_update(const char *s, size_t n)
{
	return ((n > 7 && !memcmp(s + n - 7, "_update", 7)) ||
		(n > 14 && !memcmp(s + n - 14, "_update_phase", 13))) &&
	       !contains(s, n, "::");
}

static const char *str(struct model *m, uint32_t gid, size_t *len)
{
	if (gid == STR_NONE) {
		*len = 0;
		return "";
	}
	return model_str(m, gid, len);
}

static int is_cat(struct model *m, uint32_t image, unsigned cat, const char *want)
{
	size_t len;
	const char *s = str(m, model_category(m, image, cat), &len);
	return len == strlen(want) && !memcmp(s, want, len);
}

static struct img_steps *steps_of(struct html_data *d, uint32_t image)
{
	if (image >= d->nimg) {
		if (VEC_RESERVE(d->img, d->img_cap, (size_t)image + 1))
			return NULL;
		memset(d->img + d->nimg, 0, ((size_t)image + 1 - d->nimg) * sizeof *d->img);
		d->nimg = (size_t)image + 1;
	}
	return &d->img[image];
}

/* ---- the first read: where the steps are ---- */

static int find_steps(void *ctx, struct model *m, uint32_t image, uint32_t thread_unused,
		      const struct prof_event *ev, uint32_t n)
{
	struct html_data *d = ctx;
	(void)thread_unused;
	struct img_steps *s = steps_of(d, image);
	if (!s)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		const struct prof_event *e = &ev[i];
		if (!s->first_t || e->t0 < s->first_t)
			s->first_t = e->t0;
		if (e->t1 > d->last_t)
			d->last_t = e->t1;
		if (e->type == PROF_EV_INSTANT && e->cat == PROF_CAT_STEP) {
			if (VEC_RESERVE(s->marks, s->marks_cap, s->nmarks + 1))
				return -1;
			s->marks[s->nmarks++] = e->t0;
			continue;
		}
		if (e->type != PROF_EV_COMPLETE || e->cat == PROF_CAT_MEMORY)
			continue;
		size_t len;
		const char *name = str(m, model_name(m, image, e->name), &len);
		if (starts(name, len, "ProfilerStep#")) {
			if (VEC_RESERVE(s->ranges, s->ranges_cap, s->nranges + 1))
				return -1;
			s->ranges[s->nranges][0] = e->t0;
			s->ranges[s->nranges++][1] = e->t1;
		} else if (starts(name, len, "Optimizer.step#")) {
			if (VEC_RESERVE(s->opt_ends, s->opt_cap, s->nopt + 1))
				return -1;
			s->opt_ends[s->nopt++] = e->t1;
		} else if (len == 20 && !memcmp(name, "MXAutogradBackwardEx", 20)) {
			if (VEC_RESERVE(s->mx_bwd, s->mx_bwd_cap, s->nmx_bwd + 1))
				return -1;
			s->mx_bwd[s->nmx_bwd++] = e->t0;
		} else if (len == 24 && !memcmp(name, "MXAutogradSetIsRecording", 24)) {
			if (VEC_RESERVE(s->mx_rec, s->mx_rec_cap, s->nmx_rec + 1))
				return -1;
			s->mx_rec[s->nmx_rec++] = e->t0;
		} else if (is_mx_update(name, len) && is_cat(m, image, e->cat, PROF_CATNAME_OPERATOR)) {
			if (VEC_RESERVE(s->mx_upd, s->mx_upd_cap, s->nmx_upd + 1))
				return -1;
			s->mx_upd[s->nmx_upd][0] = e->t0;
			s->mx_upd[s->nmx_upd++][1] = e->t1;
		}
	}
	return 0;
}

static int by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static int by_start(const void *a, const void *b)
{
	return by_u64(a, b);
}

/* Boundaries b[0..n-1] (sorted): step 1 from the process's first event to b[0], step k
 * from b[k-2] to b[k-1]: one step per boundary, as prof report counts marks. */
static int steps_between(struct html_data *d, uint64_t first, uint64_t *b, size_t n)
{
	qsort(b, n, sizeof *b, by_u64);
	d->steps = calloc(n ? n : 1, sizeof *d->steps);
	if (!d->steps)
		return -1;
	for (size_t i = 0; i < n; i++) {
		d->steps[i].t0 = i ? b[i - 1] : (first < b[0] ? first : b[0]);
		d->steps[i].t1 = b[i];
	}
	d->nsteps = n;
	return 0;
}

/* MXNet's Gluon loop marks no step: each iteration's loss.backward() is one
 * MXAutogradBackwardEx call, and the next iteration begins at its autograd.record()
 * (MXAutogradSetIsRecording, the first after that backward); the last iteration ends
 * where the last update operator (its trainer.step()) started after its backward ends.
 * MXNet's engine runs operators asynchronously and overlaps iterations (the next forward
 * starts as soon as the first weights are updated), so a step is the loop's own time and
 * its phases what ran in it. An iteration with no end found is no step. */
static size_t mx_step_ends(struct img_steps *s)
{
	qsort(s->mx_bwd, s->nmx_bwd, sizeof *s->mx_bwd, by_u64);
	qsort(s->mx_rec, s->nmx_rec, sizeof *s->mx_rec, by_u64);
	size_t n = 0, r = 0;
	for (size_t i = 0; i < s->nmx_bwd; i++) {
		uint64_t from = s->mx_bwd[i], end = 0;
		int last = i + 1 == s->nmx_bwd;
		while (r < s->nmx_rec && s->mx_rec[r] <= from)
			r++;
		if (!last && r < s->nmx_rec && s->mx_rec[r] < s->mx_bwd[i + 1])
			end = s->mx_rec[r];
		for (size_t k = 0; last && k < s->nmx_upd; k++)
			if (s->mx_upd[k][0] >= from && s->mx_upd[k][1] > end)
				end = s->mx_upd[k][1];
		if (end)
			s->mx_bwd[n++] = end; /* in place: the backward starts are not needed again */
	}
	return n;
}

static int choose_steps(struct html_data *d)
{
	size_t best = 0;
	d->chosen = -1;
	for (size_t i = 0; i < d->nimg; i++) {
		struct img_steps *s = &d->img[i];
		if (!s->nmarks && !s->nranges && !s->nopt && s->nmx_bwd)
			s->nmx_bwd = mx_step_ends(s);
		size_t k = s->nmarks ? s->nmarks : s->nranges ? s->nranges : s->nopt ? s->nopt
										  : s->nmx_bwd;
		if (k > best && !(i < d->first.nimg && d->first.img[i].folded)) {
			best = k;
			d->chosen = (int64_t)i;
		}
	}
	if (d->chosen < 0)
		return 0;
	struct img_steps *s = &d->img[d->chosen];
	if (s->nmarks) {
		d->source = SRC_MARKS;
		return steps_between(d, s->first_t, s->marks, s->nmarks);
	}
	if (s->nranges) {
		d->source = SRC_PROFILER_STEP;
		qsort(s->ranges, s->nranges, sizeof *s->ranges, by_start);
		d->steps = calloc(s->nranges, sizeof *d->steps);
		if (!d->steps)
			return -1;
		for (size_t i = 0; i < s->nranges; i++) {
			d->steps[i].t0 = s->ranges[i][0];
			d->steps[i].t1 = s->ranges[i][1];
		}
		d->nsteps = s->nranges;
		return 0;
	}
	if (s->nopt) {
		d->source = SRC_OPTIMIZER;
		return steps_between(d, s->first_t, s->opt_ends, s->nopt);
	}
	d->source = SRC_MXNET;
	return steps_between(d, s->first_t, s->mx_bwd, s->nmx_bwd);
}

/* ---- the second read: phases and the timeline ---- */

/* The step whose span holds t, or NULL. */
static struct step *step_at(struct html_data *d, uint64_t t)
{
	size_t lo = 0, hi = d->nsteps;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (d->steps[mid].t1 <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < d->nsteps && d->steps[lo].t0 <= t && t < d->steps[lo].t1)
		return &d->steps[lo];
	return NULL;
}

static uint64_t clipped(const struct step *s, uint64_t t0, uint64_t t1)
{
	uint64_t a = t0 > s->t0 ? t0 : s->t0, b = t1 < s->t1 ? t1 : s->t1;
	return b > a ? b - a : 0;
}

/* GPU work [a, b) into the step's union. */
static int gpu_busy(struct step *s, uint64_t a, uint64_t b)
{
	if (a < s->t0)
		a = s->t0;
	if (b > s->t1)
		b = s->t1;
	if (b <= a)
		return 0;
	size_t i = s->ngpu;
	while (i && s->gpu[i - 1][0] > a) /* mostly in order: from the end */
		i--;
	if (i && s->gpu[i - 1][1] >= a) { /* joins the one before */
		i--;
		if (b > s->gpu[i][1])
			s->gpu[i][1] = b;
	} else {
		if (VEC_RESERVE(s->gpu, s->gpu_cap, s->ngpu + 1))
			return -1;
		memmove(s->gpu + i + 1, s->gpu + i, (s->ngpu - i) * sizeof *s->gpu);
		s->gpu[i][0] = a;
		s->gpu[i][1] = b;
		s->ngpu++;
	}
	/* and whatever it now reaches */
	while (i + 1 < s->ngpu && s->gpu[i + 1][0] <= s->gpu[i][1]) {
		if (s->gpu[i + 1][1] > s->gpu[i][1])
			s->gpu[i][1] = s->gpu[i + 1][1];
		memmove(s->gpu + i + 1, s->gpu + i + 2, (s->ngpu - i - 2) * sizeof *s->gpu);
		s->ngpu--;
	}
	return 0;
}

static int phases(struct html_data *d, struct model *m, uint32_t image,
		  const struct prof_event *e)
{
	struct step *s = step_at(d, e->t0);
	if (!s)
		return 0;
	if (e->cat == PROF_CAT_MEMORY) {
		s->allocs += (e->flags & PROF_EVF_ALLOCS) && e->b <= ADVICE_SMALL_ALLOC;
		return 0;
	}
	if (e->type != PROF_EV_COMPLETE)
		return 0;
	if (e->flags & PROF_EVF_GPU)
		return gpu_busy(s, e->t0, e->t1);
	size_t nlen, clen;
	const char *name = str(m, model_name(m, image, e->name), &nlen);
	const char *cat = str(m, model_category(m, image, e->cat), &clen);
	uint64_t dur = clipped(s, e->t0, e->t1);
	if (advice_is_sync(name, nlen))
		s->syncs++;
	if (d->o->data_point ? starts(name, nlen, d->o->data_point)
			     : starts(name, nlen, "enumerate(DataLoader)#") ||
				       starts(name, nlen, "enumerate(DataPipe)#")) {
		s->ph[PH_DATA] += dur;
		if (e->t1 > s->data_end)
			s->data_end = e->t1;
		return 0;
	}
	int op = clen == strlen(PROF_CATNAME_OPERATOR) && !memcmp(cat, PROF_CATNAME_OPERATOR, clen);
	if (starts(name, nlen, "Optimizer.step#") || starts(name, nlen, "Optimizer.zero_grad#") ||
	    (op && is_mx_update(name, nlen))) {
		s->ph[PH_OPTIMIZER] += dur;
		return 0;
	}
	if (clen == strlen(PROF_CATNAME_COLLECTIVE) && !memcmp(cat, PROF_CATNAME_COLLECTIVE, clen)) {
		s->ph[PH_COLLECTIVE] += dur;
		return 0;
	}
	/* PyTorch's autograd nodes (AddmmBackward0) and engine rows; MXNet's _backward_X */
	int bwd = op && (contains(name, nlen, "Backward") || starts(name, nlen, "_backward_") ||
			 starts(name, nlen, "autograd::engine::evaluate_function"));
	/* MXNet's engine's own tasks are no layer's work */
	if (op && !(nlen == 14 && !memcmp(name, "DeleteVariable", 14)) &&
	    !(nlen == 10 && !memcmp(name, "WaitForVar", 10)))
		*(bwd ? &s->busy_bwd : &s->busy_fwd) += dur;
	if (bwd) {
		if (!s->has_bwd || e->t0 < s->bwd_start)
			s->bwd_start = e->t0;
		if (e->t1 > s->bwd_end)
			s->bwd_end = e->t1;
		s->has_bwd = 1;
	} else if (op) {
		if (!s->op_start || e->t0 < s->op_start)
			s->op_start = e->t0;
		if (e->t1 > s->op_end)
			s->op_end = e->t1;
	}
	s->ops += op;
	if (d->o->fp_point && nlen == strlen(d->o->fp_point) &&
	    !memcmp(name, d->o->fp_point, nlen) && (!s->fp_start || e->t0 < s->fp_start))
		s->fp_start = e->t0;
	if (d->o->bp_point && nlen == strlen(d->o->bp_point) &&
	    !memcmp(name, d->o->bp_point, nlen) && e->t1 > s->bp_end)
		s->bp_end = e->t1;
	return 0;
}

static int64_t index_of(struct u64map *ix, uint64_t key, void *arr_p, size_t *n, size_t *cap,
			size_t elem, const void *value)
{
	int created;
	uint64_t *v = u64map_upsert(ix, key, &created);
	if (!v)
		return -1;
	if (!created)
		return (int64_t)*v - 1;
	char **arr = arr_p;
	if (vec_grow(arr_p, cap, *n + 1, elem))
		return -1;
	memcpy(*arr + *n * elem, value, elem);
	*v = ++*n;
	return (int64_t)*n - 1;
}

static int by_length(const void *a, const void *b)
{
	const struct tl_event *x = a, *y = b;
	uint64_t lx = x->t1 - x->t0, ly = y->t1 - y->t0;
	return (lx < ly) - (lx > ly);
}

/* Over the cap: the longest events stay (what shows at the window's zoom; the
 * capture's reads go one after another, so keeping the first would drop later ranks),
 * and nothing shorter than the shortest kept is taken from now on. */
static void keep_longest(struct html_data *d)
{
	size_t k = d->o->max_timeline_events;
	if (d->nev <= k)
		return;
	qsort(d->ev, d->nev, sizeof *d->ev, by_length);
	d->ev_left_out += d->nev - k;
	d->nev = k;
	d->ev_min_dur = d->ev[k - 1].t1 - d->ev[k - 1].t0;
}

static int timeline(struct html_data *d, struct model *m, uint32_t image, uint32_t thread,
		    const struct prof_event *e)
{
	if (e->type != PROF_EV_COMPLETE || e->t1 < d->win0 || e->t0 > d->win1 ||
	    (e->cat == PROF_CAT_MEMORY && e->t1 - e->t0 < 20000))
		return 0;
	if (e->t1 - e->t0 < d->ev_min_dur) {
		d->ev_left_out++;
		return 0;
	}
	struct tl_row row = {image, thread};
	uint32_t name = model_name(m, image, e->name), cat = model_category(m, image, e->cat);
	int64_t r = index_of(&d->row_ix, (uint64_t)image << 32 | thread, &d->rows, &d->nrows,
			     &d->rows_cap, sizeof row, &row);
	int64_t ni = index_of(&d->name_ix, name, &d->names, &d->nnames, &d->names_cap,
			      sizeof name, &name);
	int64_t ci = index_of(&d->cat_ix, cat, &d->cats, &d->ncats, &d->cats_cap, sizeof cat,
			      &cat);
	if (r < 0 || ni < 0 || ci < 0 || VEC_RESERVE(d->ev, d->ev_cap, d->nev + 1))
		return -1;
	d->ev[d->nev++] = (struct tl_event){.row = (uint32_t)r, .name = (uint32_t)ni,
					    .cat = (uint32_t)ci, .depth = e->depth,
					    .t0 = e->t0, .t1 = e->t1};
	if (d->nev >= 4 * d->o->max_timeline_events)
		keep_longest(d);
	return 0;
}

static int second(void *ctx, struct model *m, uint32_t image, uint32_t thread,
		  const struct prof_event *ev, uint32_t n)
{
	struct html_data *d = ctx;
	for (uint32_t i = 0; i < n; i++) {
		const struct prof_event *e = &ev[i];
		if ((int64_t)image == d->chosen && phases(d, m, image, e))
			return -1;
		if (timeline(d, m, image, thread, e))
			return -1;
		advice_event(&d->facts, m, image, e);
	}
	return 0;
}

/* Once read: each step's forward, backward and what is left. */
static void finish_steps(struct html_data *d)
{
	for (size_t i = 0; i < d->nsteps; i++) {
		struct step *s = &d->steps[i];
		uint64_t dur = s->t1 - s->t0;
		uint64_t fp = s->fp_start ? s->fp_start : s->op_start;
		/* the forward starts after the data wait, where the wait comes first (a step
		 * mark at the top of the loop body leaves it at the step's end) */
		if (fp && fp < s->data_end && (!s->has_bwd || s->data_end <= s->bwd_start))
			fp = s->data_end;
		uint64_t bp_end = s->bp_end ? s->bp_end : s->bwd_end;
		if (d->source == SRC_MXNET) {
			/* MXNet's engine interleaves one iteration's backward with the next one's
			 * forward (mx_step_ends): no span is either; each is its operators' time */
			s->ph[PH_FORWARD] = s->busy_fwd;
			s->ph[PH_BACKWARD] = s->busy_bwd;
		} else if (s->has_bwd) {
			s->ph[PH_FORWARD] = fp && s->bwd_start > fp ? s->bwd_start - fp : 0;
			s->ph[PH_BACKWARD] = clipped(s, s->bwd_start, bp_end);
		} else if (fp) {
			/* no backward (inference): the forward runs to its last operator's end */
			s->ph[PH_FORWARD] = clipped(s, fp, s->op_end > fp ? s->op_end : fp);
		}
		for (size_t k = 0; k < s->ngpu; k++)
			s->ph[PH_GPU] += s->gpu[k][1] - s->gpu[k][0];
		uint64_t used = s->ph[PH_DATA] + s->ph[PH_FORWARD] + s->ph[PH_BACKWARD] +
				s->ph[PH_OPTIMIZER];
		if (used > dur) {
			/* overlapping phases (an optimizer inside the backward...): forward and
			 * backward share what data and optimizer leave */
			uint64_t fixed = s->ph[PH_DATA] + s->ph[PH_OPTIMIZER];
			double avail = dur > fixed ? (double)(dur - fixed) : 0;
			double fb = (double)(s->ph[PH_FORWARD] + s->ph[PH_BACKWARD]);
			s->ph[PH_FORWARD] = fb > 0 ? (uint64_t)((double)s->ph[PH_FORWARD] * avail / fb) : 0;
			s->ph[PH_BACKWARD] = fb > 0 ? (uint64_t)((double)s->ph[PH_BACKWARD] * avail / fb) : 0;
			used = fixed + s->ph[PH_FORWARD] + s->ph[PH_BACKWARD];
		}
		s->ph[PH_OTHER] = dur > used ? dur - used : 0;
		d->facts.steps++;
		if (i || d->source == SRC_PROFILER_STEP) {
			d->facts.step_ns += dur;
			d->facts.data_ns += s->ph[PH_DATA];
			d->facts.counted_steps++;
			d->facts.small_allocs_in_steps += s->allocs;
			d->facts.ops_in_steps += s->ops;
			d->facts.steps_with_sync += s->syncs > 0;
		}
	}
}

/* ---- the JSON ---- */

static const char *const phase_names[PH_N] = {"data", "forward", "backward", "optimizer",
					      "other", "collective", "gpu"};

static int by_dur(const void *a, const void *b)
{
	return by_u64(a, b);
}

static void write_steps(struct jw *w, struct html_data *d)
{
	static const char *const sources[] = {"none", "step marks", "ProfilerStep#N ranges",
					      "ends of Optimizer.step#",
					      "MXNet's autograd.record() after each backward"};
	uint64_t origin = model_origin(&d->first);
	jw_lit(w, "\"steps\":{\"source\":");
	jw_cstr(w, sources[d->source]);
	jw_lit(w, ",\"count\":");
	jw_u64(w, d->nsteps);
	jw_lit(w, ",\"pid\":");
	if (d->chosen >= 0 && (size_t)d->chosen < d->first.nimg)
		jw_u64(w, d->first.img[d->chosen].pid);
	else
		jw_lit(w, "null");
	jw_lit(w, ",\"fp_point\":");
	jw_cstr_or_null(w, d->o->fp_point);
	jw_lit(w, ",\"bp_point\":");
	jw_cstr_or_null(w, d->o->bp_point);
	/* slow: over 1.5 x the median of the steps counted (the first of marks is not) */
	/* with boundaries (marks, optimizer ends) step 1 runs from the process's start: the
	 * start-up, flagged and left out of the median and the averages */
	size_t from = d->source != SRC_PROFILER_STEP && d->nsteps > 1 ? 1 : 0,
	       n = d->nsteps - from;
	uint64_t *durs = n ? malloc(n * sizeof *durs) : NULL, median = 0;
	if (durs) {
		for (size_t i = 0; i < n; i++)
			durs[i] = d->steps[from + i].t1 - d->steps[from + i].t0;
		qsort(durs, n, sizeof *durs, by_dur);
		median = durs[n / 2];
		free(durs);
	}
	jw_lit(w, ",\"median_ns\":");
	jw_u64(w, median);
	jw_lit(w, ",\"list\":[");
	uint64_t sum[PH_N] = {0}, total = 0;
	for (size_t i = 0; i < d->nsteps; i++) {
		const struct step *s = &d->steps[i];
		uint64_t dur = s->t1 - s->t0;
		if (i >= from) {
			for (int k = 0; k < PH_N; k++)
				sum[k] += s->ph[k];
			total += dur;
		}
		if (i >= HTML_STEPS_LISTED)
			continue;
		jw_text(w, i ? ",\n{\"n\":" : "\n{\"n\":");
		jw_u64(w, i + 1);
		jw_lit(w, ",\"start_ns\":");
		jw_u64(w, s->t0 > origin ? s->t0 - origin : 0);
		jw_lit(w, ",\"dur_ns\":");
		jw_u64(w, dur);
		for (int k = 0; k < PH_N; k++) {
			jw_lit(w, ",\"");
			jw_text(w, phase_names[k]);
			jw_lit(w, "\":");
			jw_u64(w, s->ph[k]);
		}
		jw_lit(w, ",\"first\":");
		jw_text(w, i < from ? "true" : "false");
		jw_lit(w, ",\"slow\":");
		jw_text(w, i >= from && median && dur * 2 > median * 3 ? "true" : "false");
		jw_lit(w, "}");
	}
	jw_lit(w, "],\"listed\":");
	jw_u64(w, d->nsteps < HTML_STEPS_LISTED ? d->nsteps : HTML_STEPS_LISTED);
	jw_lit(w, ",\"average\":{\"steps\":");
	jw_u64(w, n);
	jw_lit(w, ",\"dur_ns\":");
	jw_u64(w, n ? total / n : 0);
	for (int k = 0; k < PH_N; k++) {
		jw_lit(w, ",\"");
		jw_text(w, phase_names[k]);
		jw_lit(w, "\":");
		jw_u64(w, n ? sum[k] / n : 0);
	}
	jw_lit(w, "}}");
}

static void write_memory(struct jw *w, struct html_data *d)
{
	struct model *m = &d->first;
	uint64_t origin = model_origin(m);
	int first = 1;
	jw_lit(w, "\"memory\":[");
	for (size_t i = 0; i < m->nimg; i++) {
		const struct image *im = &m->img[i];
		if (im->folded)
			continue;
		for (int dv = -1; dv < MODEL_DEVICES; dv++) {
			const struct mem_image *mi = MODEL_DOMAIN(im, dv);
			struct memcurve_point *p = NULL;
			size_t n = mi->curve ? memcurve_points(mi->curve, &p) : 0;
			if (!n) {
				free(p);
				continue;
			}
			jw_text(w, first ? "\n{\"pid\":" : ",\n{\"pid\":");
			first = 0;
			jw_u64(w, im->pid);
			jw_lit(w, ",\"label\":");
			size_t len;
			const char *label = str(m, im->label, &len);
			jw_str(w, label, len);
			char dev[32];
			if (dv < 0)
				snprintf(dev, sizeof dev, "heap");
			else
				model_device_name(dv, dev, sizeof dev);
			jw_lit(w, ",\"device\":");
			jw_cstr(w, dev);
			jw_lit(w, ",\"peak\":");
			jw_u64(w, mi->peak);
			jw_lit(w, ",\"peak_ns\":");
			jw_u64(w, mi->peak_t > origin ? mi->peak_t - origin : 0);
			/* at most ~1,000 points: each run's lowest and highest, so spikes (the
			 * peak among them) survive */
			struct memcurve_point *thin = n > HTML_MEMORY_POINTS
				? malloc((HTML_MEMORY_POINTS + 2) * sizeof *thin) : NULL;
			size_t k = thin ? memcurve_thin(p, n, HTML_MEMORY_POINTS, thin) : n;
			const struct memcurve_point *q = thin ? thin : p;
			jw_lit(w, ",\"points\":[");
			for (size_t i = 0; i < k; i++) {
				jw_text(w, i ? ",[" : "[");
				jw_u64(w, q[i].t > origin ? q[i].t - origin : 0);
				jw_lit(w, ",");
				jw_u64(w, q[i].live);
				jw_lit(w, "]");
			}
			free(thin);
			jw_lit(w, "]}");
			free(p);
		}
	}
	jw_lit(w, "]");
}

/* The strings of gids, as a JSON array. */
static void write_strings(struct jw *w, struct model *m, const uint32_t *gids, size_t n)
{
	jw_lit(w, "[");
	for (size_t i = 0; i < n; i++) {
		size_t len;
		const char *s = str(m, gids[i], &len);
		if (i)
			jw_lit(w, ",");
		jw_str(w, s, len);
	}
	jw_lit(w, "]");
}

static void write_timeline(struct jw *w, struct html_data *d)
{
	struct model *m = &d->second;
	uint64_t origin = model_origin(&d->first);
	keep_longest(d);
	jw_lit(w, "\"timeline\":{\"start_ns\":");
	jw_u64(w, d->win0 > origin ? d->win0 - origin : 0);
	jw_lit(w, ",\"end_ns\":");
	jw_u64(w, d->win1 > origin ? d->win1 - origin : 0);
	jw_lit(w, ",\"left_out\":");
	jw_u64(w, d->ev_left_out);
	jw_lit(w, ",\"chosen\":");
	jw_text(w, d->o->window_start_ns >= 0 ? "true" : "false");
	jw_lit(w, ",\"rows\":[");
	for (size_t i = 0; i < d->nrows; i++) {
		const struct image *im = &m->img[d->rows[i].image];
		const struct thread *t = &m->thr[d->rows[i].thread];
		jw_text(w, i ? ",{\"pid\":" : "{\"pid\":");
		jw_u64(w, im->pid);
		jw_lit(w, ",\"tid\":");
		jw_u64(w, t->tid);
		jw_lit(w, ",\"rank\":");
		if (im->rank >= 0)
			jw_u64(w, (uint64_t)im->rank);
		else
			jw_lit(w, "null");
		jw_lit(w, ",\"process\":");
		size_t len;
		const char *s = str(m, im->label, &len);
		jw_str(w, s, len);
		jw_lit(w, ",\"thread\":");
		s = str(m, t->name, &len);
		jw_str(w, s, len);
		jw_lit(w, "}");
	}
	jw_lit(w, "],\"names\":");
	write_strings(w, m, d->names, d->nnames);
	jw_lit(w, ",\"cats\":");
	write_strings(w, m, d->cats, d->ncats);
	/* [row, name, cat, depth, start ns, duration ns] */
	jw_lit(w, ",\"events\":[");
	for (size_t i = 0; i < d->nev; i++) {
		const struct tl_event *e = &d->ev[i];
		jw_text(w, i ? ",[" : "[");
		jw_u64(w, e->row);
		jw_lit(w, ",");
		jw_u64(w, e->name);
		jw_lit(w, ",");
		jw_u64(w, e->cat);
		jw_lit(w, ",");
		jw_u64(w, e->depth);
		jw_lit(w, ",");
		jw_u64(w, e->t0 > origin ? e->t0 - origin : 0);
		jw_lit(w, ",");
		jw_u64(w, e->t1 - e->t0);
		jw_lit(w, "]");
	}
	jw_lit(w, "]}");
}

/* The window: the one asked for, else three steps in the middle of the run (past the
 * first ones' warm-up), else its first two seconds. */
static void choose_window(struct html_data *d)
{
	uint64_t origin = model_origin(&d->first);
	if (d->o->window_start_ns >= 0) {
		d->win0 = origin + (uint64_t)d->o->window_start_ns;
		d->win1 = d->o->window_end_ns > d->o->window_start_ns
				  ? origin + (uint64_t)d->o->window_end_ns
				  : d->last_t;
		if (d->win1 < d->win0)
			d->win1 = d->win0;
	} else if (d->nsteps >= 3) {
		size_t k = d->nsteps / 2 - 1;
		d->win0 = d->steps[k].t0;
		d->win1 = d->steps[k + 2].t1;
	} else if (d->nsteps) {
		d->win0 = d->steps[0].t0;
		d->win1 = d->steps[d->nsteps - 1].t1;
	} else {
		d->win0 = origin;
		d->win1 = origin + 2000000000ull;
	}
}

static int read_with(struct html_data *d, struct model *m, const char *capture,
		     int (*fn)(void *, struct model *, uint32_t, uint32_t,
			       const struct prof_event *, uint32_t),
		     char *err, size_t errlen)
{
	struct model_fold fold = {0};
	m->on_events = fn;
	m->ctx = d;
	int rc = d->o->all_processes ? model_read(m, capture, err, errlen)
				     : model_read_folded(m, &fold, capture, err, errlen);
	model_fold_free(&fold);
	return rc;
}

static void html_data_free(struct html_data *d)
{
	model_free(&d->first);
	model_free(&d->second);
	for (size_t i = 0; i < d->nimg; i++) {
		free(d->img[i].marks);
		free(d->img[i].opt_ends);
		free(d->img[i].mx_bwd);
		free(d->img[i].mx_rec);
		free(d->img[i].mx_upd);
		free(d->img[i].ranges);
	}
	free(d->img);
	for (size_t i = 0; i < d->nsteps; i++)
		free(d->steps[i].gpu);
	free(d->steps);
	u64map_free(&d->row_ix);
	u64map_free(&d->name_ix);
	u64map_free(&d->cat_ix);
	free(d->rows);
	free(d->names);
	free(d->cats);
	free(d->ev);
	advice_free(&d->facts);
	free(d);
}

int html_data_write(struct jw *w, const char *capture, const struct html_options *o,
		    const char *report_json, size_t report_len, char *err, size_t errlen)
{
	struct html_data *d = calloc(1, sizeof *d);
	if (!d) {
		snprintf(err, errlen, "%s: out of memory", capture);
		return 2;
	}
	struct html_options opts = *o;
	if (!opts.max_timeline_events)
		opts.max_timeline_events = HTML_TIMELINE_MAX;
	d->o = &opts;
	d->facts.report = report_json;
	d->facts.report_len = report_len;
	model_init(&d->first);
	model_init(&d->second);
	d->first.track_memory = 1;
	d->first.keep_curves = 1;
	int rc = read_with(d, &d->first, capture, find_steps, err, errlen);
	int result = rc == CAP_READ_OK ? 0 : rc == CAP_READ_DAMAGED ? 1 : 2;
	if (result < 2 && choose_steps(d)) {
		snprintf(err, errlen, "%s: out of memory", capture);
		result = 2;
	}
	if (result < 2) {
		choose_window(d);
		rc = read_with(d, &d->second, capture, second, err, errlen);
		if (rc != CAP_READ_OK && rc != CAP_READ_DAMAGED)
			result = 2;
	}
	if (result < 2) {
		finish_steps(d);
		write_steps(w, d);
		jw_lit(w, ",\n");
		write_timeline(w, d);
		jw_lit(w, ",\n");
		write_memory(w, d);
		jw_lit(w, ",\n");
		advice_write(w, &d->facts);
	}
	html_data_free(d);
	return result;
}
