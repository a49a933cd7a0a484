/* tables_write: reads a capture into the model and its aggregates, selects the rows the
 * options ask for, and hands them to the text, CSV or JSON writer. */
#define _GNU_SOURCE /* qsort_r */
#include "formats/model/outputs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "formats/model/memtrack.h"
#include "formats/tables/report.h"
#include "preload/common/event.h"

double row_percent(const struct report_cat *c, const struct row *w)
{
	return c->total ? 100.0 * (double)w->total / (double)c->total : 0.0;
}

int image_has_memory(const struct report *r, size_t i)
{
	const struct mem_image *mi = &r->m->img[i].mem;

	return mi->allocs || mi->frees;
}

struct sort_ctx {
	enum table_sort key;
	const struct model *m;
};

static uint64_t key_of(const struct row *w, enum table_sort key)
{
	switch (key) {
	case SORT_SELF:
		return w->self;
	case SORT_COUNT:
		return w->count;
	case SORT_AVG:
		return row_avg(w);
	case SORT_MAX:
		return w->max;
	case SORT_MEM: /* signed: the bias keeps negative values below positive ones */
		return (uint64_t)w->mem ^ (1ull << 63);
	case SORT_SELF_MEM:
		return (uint64_t)w->self_mem ^ (1ull << 63);
	default:
		return w->total;
	}
}

/* Largest first; equal keys by name so the output does not depend on capture order. */
static int by_key(const void *a, const void *b, void *arg)
{
	const struct sort_ctx *sc = arg;
	const struct row *x = *(struct row *const *)a, *y = *(struct row *const *)b;
	uint64_t kx = key_of(x, sc->key), ky = key_of(y, sc->key);
	size_t lx, ly;
	const char *nx, *ny;
	int c;

	if (kx != ky)
		return kx > ky ? -1 : 1;
	nx = model_str(sc->m, x->name, &lx);
	ny = model_str(sc->m, y->name, &ly);
	c = memcmp(nx, ny, lx < ly ? lx : ly);
	return c ? c : (lx > ly) - (lx < ly);
}

/* Fixed categories first in their enum order, then the others by their first call
 * (then name): the order they appeared in, whatever order the capture was read in. */
static unsigned cat_rank(const struct model *m, uint32_t cat)
{
	const char *name = model_str(m, cat, NULL), *f;
	unsigned i;

	for (i = 0; (f = prof_fixed_category_name(i)); i++)
		if (!strcmp(f, name))
			return i;
	return 1000;
}

static int by_time_then_name(uint64_t tx, uint32_t nx, uint64_t ty, uint32_t ny,
			     const struct model *m)
{
	if (tx != ty)
		return tx < ty ? -1 : 1;
	return strcmp(model_str(m, nx, NULL), model_str(m, ny, NULL));
}

static int find_cat(struct report *r, uint32_t cat)
{
	size_t i;
	struct report_cat *c;

	for (i = 0; i < r->ncats; i++)
		if (r->cats[i].cat == cat)
			return (int)i;
	c = realloc(r->cats, (r->ncats + 1) * sizeof(*c));
	if (!c)
		return -1;
	r->cats = c;
	memset(&c[r->ncats], 0, sizeof(*c));
	c[r->ncats].cat = cat;
	c[r->ncats].untimed = !model_alloc_timed(r->m) &&
			      !strcmp(model_str(r->m, cat, NULL), PROF_CATNAME_MEMORY);
	return (int)r->ncats++;
}

static int by_rank(const void *a, const void *b, void *arg)
{
	const struct report_cat *x = a, *y = b;
	unsigned rx = cat_rank(arg, x->cat);
	unsigned ry = cat_rank(arg, y->cat);

	if (rx != ry || rx < 1000)
		return (rx > ry) - (rx < ry);
	return by_time_then_name(x->first_t, x->cat, y->first_t, y->cat, arg);
}

static int group_rows(struct report *r)
{
	size_t i;

	for (i = 0; i < r->s->nrows; i++) {
		int c = find_cat(r, r->s->rows[i].cat);
		if (c < 0)
			return -1;
		if (!r->cats[c].all_rows || r->s->rows[i].first_t < r->cats[c].first_t)
			r->cats[c].first_t = r->s->rows[i].first_t;
		r->cats[c].all_rows++;
		/* a call inside one of its category is in that one's time already */
		const struct row *w = &r->s->rows[i];
		r->cats[c].total += w->total - (w->within < w->total ? w->within : w->total);
	}
	if (r->ncats)
		qsort_r(r->cats, r->ncats, sizeof(*r->cats), by_rank, r->m);
	for (i = 0; i < r->ncats; i++) {
		r->cats[i].rows = malloc(r->cats[i].all_rows * sizeof(struct row *));
		if (!r->cats[i].rows)
			return -1;
	}
	for (i = 0; i < r->s->nrows; i++) {
		struct report_cat *c = &r->cats[find_cat(r, r->s->rows[i].cat)];
		c->rows[c->nrows++] = &r->s->rows[i];
	}
	return 0;
}

static void sort_and_cut(struct report *r)
{
	size_t i;

	for (i = 0; i < r->ncats; i++) {
		struct report_cat *c = &r->cats[i];
		struct sort_ctx sc = { r->opt->sort, r->m };
		/* calls without durations: by count, unless sorted by what they have */
		if (c->untimed && sc.key != SORT_MEM && sc.key != SORT_SELF_MEM)
			sc.key = SORT_COUNT;
		if (c->nrows)
			qsort_r(c->rows, c->nrows, sizeof(*c->rows), by_key, &sc);
		if (r->opt->top > 0 && c->nrows > (size_t)r->opt->top)
			c->nrows = (size_t)r->opt->top;
	}
}

/* Keeps only the category the options name; -1 when it names none the capture has (a
 * fixed category is always accepted: it may just have no events). */
static int filter(struct report *r, const char *path, char *err, size_t errlen)
{
	const char *want = r->opt->category, *f;
	size_t i, k = 0, used;
	unsigned j;

	if (!want)
		return 0;
	for (i = 0; i < r->ncats; i++) {
		if (!strcmp(model_str(r->m, r->cats[i].cat, NULL), want))
			r->cats[k++] = r->cats[i];
		else
			free(r->cats[i].rows);
	}
	for (j = 0; (f = prof_fixed_category_name(j)); j++)
		if (!strcmp(f, want))
			break;
	if (k || f) {
		r->ncats = k;
		return 0;
	}
	used = (size_t)snprintf(err, errlen, "no category \"%s\" in %s (it has:", want, path);
	for (i = 0; i < r->ncats && used < errlen; i++)
		used += (size_t)snprintf(err + used, errlen - used, "%s %s", i ? "," : "",
					 model_str(r->m, r->cats[i].cat, NULL));
	if (used < errlen)
		snprintf(err + used, errlen - used, "%s)", r->ncats ? "" : " none");
	r->ncats = 0;
	return -1;
}

static int by_copy_time(const void *a, const void *b, void *arg)
{
	const struct copy_row *x = a, *y = b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(model_str(arg, x->name, NULL), model_str(arg, y->name, NULL));
}

static int by_mark_time(const void *a, const void *b, void *m)
{
	const struct mark *x = a, *y = b;
	return by_time_then_name(x->first_t, x->name, y->first_t, y->name, m);
}

static int by_counter_time(const void *a, const void *b, void *m)
{
	const struct counter *x = a, *y = b;
	return by_time_then_name(x->first_t, x->name, y->first_t, y->name, m);
}

static void sections(struct report *r)
{
	const char *c = r->opt->category;
	size_t i;

	for (i = 0; i < r->m->nimg; i++) {
		if (image_has_memory(r, i))
			r->show_memory = 1;
		for (size_t d = 0; d < MODEL_DEVICES; d++)
			if (r->m->img[i].gpu[d].allocs || r->m->img[i].gpu[d].frees)
				r->show_memory = 1;
	}
	/* in time order: not the order they were read in (their index maps are done with) */
	if (r->s->nmarks)
		qsort_r(r->s->marks, r->s->nmarks, sizeof *r->s->marks, by_mark_time, r->m);
	if (r->s->nctrs)
		qsort_r(r->s->ctrs, r->s->nctrs, sizeof *r->s->ctrs, by_counter_time, r->m);
	r->show_marks = r->s->nmarks > 0;
	r->show_counters = r->s->nctrs > 0;
	r->show_steps = r->s->nsteps > 0;
	r->show_copies = r->s->ncopies > 0;
	if (r->show_copies)
		qsort_r(r->s->copies, r->s->ncopies, sizeof(*r->s->copies), by_copy_time, r->m);
	r->show_messages = r->s->nmsgs > 0;
	if (r->show_messages)
		qsort_r(r->s->msgs, r->s->nmsgs, sizeof(*r->s->msgs), by_copy_time, r->m);
	if (c) {
		r->show_messages &= !strcmp(c, PROF_CATNAME_COLLECTIVE) || !strcmp(c, PROF_CATNAME_MPI);
		r->show_copies &= !strcmp(c, PROF_CATNAME_CUDA_MEMCPY) ||
				  !strcmp(c, PROF_CATNAME_CUDA_MEMSET);
		r->show_memory &= !strcmp(c, PROF_CATNAME_MEMORY);
		r->show_marks &= !strcmp(c, PROF_CATNAME_MARK);
		r->show_counters &= !strcmp(c, PROF_CATNAME_COUNTER);
		r->show_steps &= !strcmp(c, PROF_CATNAME_STEP);
	}
}



static int write_format(struct report *r, FILE *out)
{
	switch (r->opt->format) {
	case FORMAT_CSV:
		return table_csv(r, out);
	case FORMAT_JSON:
		return table_json(r, out);
	default:
		return table_text(r, out);
	}
}

static void summarize(const struct report *r, struct output_summary *sum)
{
	memset(sum, 0, sizeof(*sum));
	sum->events = r->m->events;
	sum->lost = r->lost;
	sum->lost_startup = model_lost_startup(r->m);
	sum->processes = model_npids(r->m);
	sum->processes_shown = model_shown_pids(r->m);
	if (r->damage) {
		sum->damaged = 1;
		snprintf(sum->damage, sizeof(sum->damage), "%s", r->damage);
	}
}

static int build_and_write(struct report *r, const char *path, FILE *out,
			   struct output_summary *sum, char *err, size_t errlen)
{
	if (group_rows(r)) {
		snprintf(err, errlen, "%s: out of memory", path);
		return 2;
	}
	if (filter(r, path, err, errlen))
		return 2;
	sort_and_cut(r);
	sections(r);
	r->origin = model_origin(r->m);
	r->duration = model_end(r->m) - r->origin;
	r->lost = model_lost(r->m);
	if (sum)
		summarize(r, sum);
	if (write_format(r, out) || fflush(out) || ferror(out)) {
		snprintf(err, errlen, "writing the tables: %s", strerror(errno ? errno : EIO));
		return 2;
	}
	return 0;
}

int tables_write_model(struct model *m, struct stats *s, const struct model_fold *fold,
		       int read_rc, const char *damage, const char *path, FILE *out,
		       const struct table_options *opt, struct output_summary *sum, char *err,
		       size_t errlen)
{
	struct report r;
	int rc;

	memset(&r, 0, sizeof(r));
	r.fold = fold;
	if (stats_finish(s)) {
		snprintf(err, errlen, "%s: out of memory", path);
		rc = 2;
	} else {
		r.m = m;
		r.s = s;
		r.opt = opt;
		r.damage = read_rc == CAP_READ_DAMAGED ? damage : NULL;
		rc = build_and_write(&r, path, out, sum, err, errlen);
		if (!rc && r.damage) {
			snprintf(err, errlen, "%s", damage);
			rc = 1;
		}
	}
	for (size_t i = 0; i < r.ncats; i++)
		free(r.cats[i].rows);
	free(r.cats);
	return rc;
}

int tables_write(const char *capture_path, FILE *out, const struct table_options *opt,
		 struct output_summary *sum, char *err, size_t errlen)
{
	return tables_write_fixes(capture_path, out, opt, sum, NULL, NULL, err, errlen);
}

int tables_write_fixes(const char *capture_path, FILE *out, const struct table_options *opt,
		       struct output_summary *sum, int64_t **fix, size_t *nfix, char *err,
		       size_t errlen)
{
	struct model m;
	struct stats s;
	struct model_fold fold = {0};
	char damage[512];
	int rc;

	if (errlen)
		err[0] = '\0';
	if (sum)
		memset(sum, 0, sizeof(*sum));
	model_init(&m);
	stats_init(&s);
	m.track_memory = 1;
	m.on_events = stats_on_events;
	m.ctx = &s;
	rc = opt->all_processes ? model_read(&m, capture_path, damage, sizeof(damage))
				: model_read_folded(&m, &fold, capture_path, damage, sizeof(damage));
	if (rc != CAP_READ_OK && rc != CAP_READ_DAMAGED) {
		snprintf(err, errlen, "%s", damage);
		rc = 2;
	} else {
		rc = tables_write_model(&m, &s, &fold, rc, damage, capture_path, out, opt, sum,
					err, errlen);
	}
	if (fix) {
		*fix = NULL;
		*nfix = 0;
		if (rc != 2 && m.sources.n > 1 && (*fix = calloc(m.sources.n, sizeof **fix))) {
			for (size_t i = 0; i < m.sources.n; i++)
				(*fix)[i] = m.src[i].fix_ns;
			*nfix = m.sources.n;
		} else if (rc != 2 && m.sources.n > 1) {
			snprintf(err, errlen, "%s: out of memory", capture_path);
			rc = 2;
		}
	}
	stats_free(&s);
	model_free(&m);
	model_fold_free(&fold);
	return rc;
}
