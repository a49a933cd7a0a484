/* chrome_export: pass 1 reads the whole capture to count events, build the duration
 * histogram and the live-heap track and pick the size rule; pass 2 reads it again and
 * writes the events the rule keeps. Two reads cost a second decompression but keep
 * memory independent of the number of events. */
#include "formats/model/outputs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/export/chrome.h"
#include "formats/model/ranks.h"

int chrome_plan_one(struct chrome *c, struct model *m, uint32_t image,
		    const struct prof_event *e)
{
	if (c->alloc_as_captured) {
		/* the session's choice, in the facts that lead the capture */
		const char *f = model_fact(m, "trace_alloc");
		c->alloc.all = f && !strcmp(f, "all");
		c->alloc_as_captured = 0;
	}
	if ((e->flags & (PROF_EVF_GPU | PROF_EVF_TID)) && chrome_gpu_plan(c, image, e))
		return -1;
	if (c->is_kineto)
		kineto_plan(c, m, image, e);
	if (e->type == PROF_EV_COMPLETE && e->cat == PROF_CAT_MEMORY) {
		int shown = alloc_view_shown(&c->alloc, 0, image, e, model_origin(m));
		if (shown <= 0)
			return shown;
	}
	if (e->type == PROF_EV_COMPLETE && e->cat != PROF_CAT_USER) {
		c->droppable++;
		c->hist[dur_bucket(e->t1 > e->t0 ? e->t1 - e->t0 : 0)]++;
		return 1;
	}
	if (e->type >= PROF_EV_COMPLETE && e->type <= PROF_EV_LOST) {
		c->always++;
		return 2;
	}
	return 0;
}

/* A rank's collectives, for the clocks of several captures read as one. */
static int plan_collective(struct chrome *c, struct model *m, uint32_t image,
			   const struct prof_event *e)
{
	if (!c->several || m->img[image].rank < 0 || e->type != PROF_EV_COMPLETE ||
	    e->cat < PROF_CAT_FIRST_DYNAMIC)
		return 0;
	return ranks_event(c->clock_ranks, m, image, model_category(m, image, e->cat),
			   model_name(m, image, e->name), e);
}

int chrome_plan_events(void *ctx, struct model *m, uint32_t image, uint32_t thread,
		       const struct prof_event *ev, uint32_t n)
{
	(void)thread;
	for (uint32_t i = 0; i < n; i++)
		if (chrome_plan_one(ctx, m, image, &ev[i]) < 0 ||
		    plan_collective(ctx, m, image, &ev[i]))
			return -1;
	return 0;
}

/* Whether pass 1 refined a clock it was not given. */
static int refined(const struct chrome *c)
{
	for (size_t i = 0; c->fix && !c->given_fix && i < c->plan.sources.n; i++)
		if (c->fix[i])
			return 1;
	return 0;
}

/* The clocks' refinement pass 1 found, for pass 2 to read with. */
static int plan_clocks(struct chrome *c)
{
	struct model *m = c->pm;
	if (!c->clock_ranks || m->sources.n < 2 || m == c->om)
		return 0;
	if (ranks_finish(c->clock_ranks))
		return -1;
	c->fix = calloc(m->sources.n, sizeof *c->fix);
	if (!c->fix)
		return -1;
	for (uint32_t i = 0; i < m->sources.n; i++)
		c->fix[i] = m->src[i].fix_ns;
	c->out.given_fix = c->fix;
	c->out.ngiven_fix = m->sources.n;
	return 0;
}

static void plan_rule(struct chrome *c)
{
	uint64_t fixed = c->always + c->heap.n + alloc_view_points(&c->alloc), i;

	for (i = 0; i < c->pm->nimg; i++) { /* the peak markers */
		fixed += c->pm->img[i].mem.peak != 0;
		for (int d = 0; d < MODEL_DEVICES; d++)
			fixed += c->pm->img[i].gpu[d].peak != 0;
	}
	uint64_t budget = c->max_events > fixed ? c->max_events - fixed : 0;

	dur_rule_pick(&c->rule, c->hist, c->droppable, budget);
	c->tie_left = c->rule.tie_keep;
}

int chrome_plan_done(struct chrome *c)
{
	c->origin = model_origin(c->pm);
	/* The heap track gets at most a quarter of the budget, whatever the rest needs. */
	if (heap_track_build(&c->heap, c->pm, c->max_events / 4) || plan_clocks(c))
		return -1;
	plan_rule(c);
	return 0;
}

static int pass1(struct chrome *c, const char *path, char *damage, size_t len)
{
	int rc;

	c->plan.track_memory = 1;
	c->plan.keep_curves = 1;
	c->several = cap_is_parts(path); /* a file is one session: no clocks to line up */
	c->plan.on_events = chrome_plan_events;
	c->plan.ctx = c;
	rc = c->all_processes ? model_read(&c->plan, path, damage, len)
			      : model_read_folded(&c->plan, &c->fold, path, damage, len);
	if (rc != CAP_READ_OK && rc != CAP_READ_DAMAGED)
		return rc;
	if (chrome_plan_done(c)) {
		snprintf(damage, len, "%s: out of memory", path);
		return CAP_READ_UNUSABLE;
	}
	return rc;
}

int chrome_write_begin(struct chrome *c, FILE *f)
{
	if (jw_init(&c->w, f, 4u << 20))
		return -1;
	c->first = 1;
	if (c->is_kineto)
		kineto_head(c);
	else
		jw_lit(&c->w, "{\"traceEvents\":[");
	chrome_write_meta(c);
	return 0;
}

int chrome_write_end(struct chrome *c)
{
	chrome_write_heap(c);
	chrome_write_alloc_rate(c);
	if (c->is_kineto)
		kineto_events_end(c);
	jw_lit(&c->w, "\n]");
	if (c->is_kineto)
		kineto_tail(c);
	/* no displayTimeUnit "ns": some Perfetto versions then read ts in the wrong unit */
	jw_lit(&c->w, ",\n\"otherData\":");
	chrome_write_other(c);
	jw_lit(&c->w, "}\n");
	return jw_finish(&c->w) ? -1 : 0;
}

static int pass2(struct chrome *c, const char *path, FILE *f, char *err, size_t errlen)
{
	char damage[512];
	int rc;

	if (chrome_write_begin(c, f)) {
		snprintf(err, errlen, "%s: out of memory", path);
		return CAP_READ_UNUSABLE;
	}
	c->out.on_events = chrome_write_events;
	c->out.ctx = c;
	c->out.fold = c->all_processes ? NULL : &c->fold;
	rc = model_read(&c->out, path, damage, sizeof(damage));
	if (c->w.err) {
		jw_finish(&c->w);
		return -1;
	}
	if (rc != CAP_READ_OK && rc != CAP_READ_DAMAGED) {
		snprintf(err, errlen, "%s", damage);
		jw_finish(&c->w);
		return rc;
	}
	return chrome_write_end(c) ? -1 : rc;
}

void chrome_summarize(const struct chrome *c, struct output_summary *sum)
{
	sum->events = c->pm->events;
	sum->lost = model_lost(c->pm);
	sum->names_lost = model_names_lost(c->pm);
	sum->stacks_lost = model_stacks_lost(c->pm);
	sum->lost_startup = model_lost_startup(c->pm);
	sum->processes = model_npids(c->pm);
	sum->processes_shown = model_shown_pids(c->pm);
	sum->json_events = c->written;
	sum->json_dropped = c->dropped;
	sum->json_alloc_hidden = c->alloc.hidden;
	if (c->damage) {
		sum->damaged = 1;
		snprintf(sum->damage, sizeof(sum->damage), "%s", c->damage);
	}
}

struct chrome *chrome_new(const struct chrome_options *o)
{
	struct chrome *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->max_events = o->max_events ? o->max_events : CHROME_DEFAULT_MAX_EVENTS;
	c->all_processes = o->all_processes;
	alloc_view_init(&c->alloc, o->alloc == CHROME_ALLOC_ALL);
	c->alloc_as_captured = o->alloc == CHROME_ALLOC_AS_CAPTURED;
	model_init(&c->plan);
	model_init(&c->out);
	c->pm = &c->plan;
	c->om = &c->out;
	u64map_init(&c->flows);
	c->kernel_cat = STR_NONE;
	c->is_kineto = o->kineto;
	c->clock_ranks = malloc(sizeof *c->clock_ranks);
	if (!c->clock_ranks) {
		chrome_free(c);
		return NULL;
	}
	ranks_init(c->clock_ranks);
	return c;
}

void chrome_free(struct chrome *c)
{
	if (!c)
		return;
	model_free(&c->plan);
	model_free(&c->out);
	model_fold_free(&c->fold);
	heap_track_free(&c->heap);
	u64map_free(&c->flows);
	u64map_free(&c->kineto.step_start);
	u64map_free(&c->kineto.blocks);
	u64map_free(&c->kineto.gpu_rows);
	alloc_view_free(&c->alloc);
	if (c->clock_ranks)
		ranks_free(c->clock_ranks);
	free(c->clock_ranks);
	free(c->fix);
	free(c->given_fix);
	free(c->esc.off);
	free(c->esc.len);
	free(c->esc.bytes);
	free(c);
}

static int write_trace(struct chrome *c, const char *capture_path, const char *json_path,
		       FILE *f, char *err, size_t errlen)
{
	int rc;

	if (!f)
		f = fopen(json_path, "w");
	if (!f) {
		snprintf(err, errlen, "%s: %s", json_path, strerror(errno));
		return 2;
	}
	rc = pass2(c, capture_path, f, err, errlen);
	if (fclose(f) && rc >= 0)
		rc = -1;
	if (rc < 0) {
		snprintf(err, errlen, "writing %s: %s", json_path,
			 strerror(c->w.err ? c->w.err : errno ? errno : EIO));
		return 2;
	}
	return rc == CAP_READ_UNUSABLE ? 2 : 0;
}

int chrome_export(const char *capture_path, const char *json_path, uint64_t max_events,
		  struct output_summary *sum, char *err, size_t errlen)
{
	return chrome_export_to(capture_path, json_path, NULL, max_events, sum, err, errlen);
}

int chrome_export_to(const char *capture_path, const char *json_path, FILE *out,
		     uint64_t max_events, struct output_summary *sum, char *err, size_t errlen)
{
	struct chrome_options o = {.max_events = max_events};
	return chrome_export_opts(capture_path, json_path, out, &o, sum, err, errlen);
}

int chrome_export_opts(const char *capture_path, const char *json_path, FILE *out,
		       const struct chrome_options *o, struct output_summary *sum, char *err,
		       size_t errlen)
{
	struct chrome *c = chrome_new(o);
	char damage[512];
	int rc;

	if (errlen)
		err[0] = '\0';
	if (sum)
		memset(sum, 0, sizeof(*sum));
	if (!c) {
		if (out)
			fclose(out);
		snprintf(err, errlen, "%s: out of memory", capture_path);
		return 2;
	}
	rc = pass1(c, capture_path, damage, sizeof(damage));
	if ((rc == CAP_READ_OK || rc == CAP_READ_DAMAGED) && refined(c)) {
		/* another host's clock was refined from the collectives: pass 1 again on the
		 * refined clock, so that the origin, the memory tracks and markers and the
		 * events all agree (a third read, for jobs of several hosts only) */
		int64_t *fix = c->fix;
		size_t nfix = c->plan.sources.n;
		c->fix = NULL;
		chrome_free(c);
		if (!(c = chrome_new(o))) {
			free(fix);
			if (out)
				fclose(out);
			snprintf(err, errlen, "%s: out of memory", capture_path);
			return 2;
		}
		c->given_fix = fix;
		c->plan.given_fix = fix;
		c->plan.ngiven_fix = nfix;
		rc = pass1(c, capture_path, damage, sizeof(damage));
	}
	if (rc != CAP_READ_OK && rc != CAP_READ_DAMAGED) {
		snprintf(err, errlen, "%s", damage);
		chrome_free(c);
		if (out)
			fclose(out);
		return 2;
	}
	c->damage = rc == CAP_READ_DAMAGED ? damage : NULL;
	rc = write_trace(c, capture_path, json_path, out, err, errlen);
	if (!rc && c->damage) {
		snprintf(err, errlen, "%s", damage);
		rc = 1;
	}
	if (sum)
		chrome_summarize(c, sum);
	chrome_free(c);
	return rc;
}
