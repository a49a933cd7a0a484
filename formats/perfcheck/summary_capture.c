/* One summary run from a raw capture: the rows per (category, name), with self time and
 * the allocations made during each call gathered by the streaming rule of the tables
 * (docs/FORMATS.md, "Self time"), the per-call durations in a sketch, and the program and
 * process rows from the live-heap analysis. */
#define _GNU_SOURCE /* strdup */
#include "formats/perfcheck/summary.h"
#include "preload/common/event.h"

#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "formats/model/memtrack.h"
#include "formats/model/model.h"
#include "formats/model/ranks.h"
#include "formats/model/stats.h"
#include "formats/util/vec.h"

/* What a level of a thread's nesting gathered from the calls that ended inside it. */
struct level {
	uint64_t child, allocs, bytes;
};

struct tstate {
	struct level *l;
	uint32_t cap;
};

struct ctx {
	struct sum_run *run;
	struct u64map calls, instants; /* cat gid << 32 | name gid -> row index */
	struct tstate *thr;
	size_t nthr;
};

static struct sum_row *row_for(struct ctx *c, struct model *m, struct u64map *ix,
			       uint32_t cat, uint32_t name, enum sum_kind kind)
{
	int created;
	uint64_t *v = u64map_upsert(ix, (uint64_t)cat << 32 | name, &created);

	if (!v)
		return NULL;
	if (created) {
		if (!sum_add_row(c->run, model_str(m, cat, NULL), model_str(m, name, NULL), kind)) {
			u64map_remove(ix, (uint64_t)cat << 32 | name, NULL);
			return NULL;
		}
		*v = c->run->nrows - 1;
	}
	return &c->run->rows[*v];
}

static struct tstate *thread_state(struct ctx *c, uint32_t thread, unsigned depth)
{
	struct tstate *t;

	if (thread >= c->nthr) {
		size_t n = thread + 16;
		t = realloc(c->thr, n * sizeof(*t));
		if (!t)
			return NULL;
		memset(t + c->nthr, 0, (n - c->nthr) * sizeof(*t));
		c->thr = t;
		c->nthr = n;
	}
	t = &c->thr[thread];
	if (depth + 2 > t->cap) {
		uint32_t cap = depth + 2 > 2 * t->cap ? depth + 2 : 2 * t->cap;
		struct level *l = realloc(t->l, cap * sizeof(*l));
		if (!l)
			return NULL;
		memset(l + t->cap, 0, (cap - t->cap) * sizeof(*l));
		t->l = l;
		t->cap = cap;
	}
	return t;
}

static int complete(struct ctx *c, struct model *m, uint32_t image, uint32_t thread,
		    const struct prof_event *e)
{
	uint32_t cat = model_category(m, image, e->cat), name = model_name(m, image, e->name);
	struct tstate *t = thread_state(c, thread, e->depth);
	uint64_t dur = e->t1 > e->t0 ? e->t1 - e->t0 : 0, own = 0, own_bytes = 0;
	struct level *here, *below;
	struct sum_row *r;

	if (cat == STR_NONE || name == STR_NONE || !t)
		return -1;
	r = row_for(c, m, &c->calls, cat, name, SUM_CALLS);
	if (!r)
		return -1;
	here = &t->l[e->depth];
	below = &t->l[e->depth + 1];
	if (e->cat == PROF_CAT_MEMORY && (e->flags & PROF_EVF_ALLOCS) && e->a) {
		own = 1;
		own_bytes = e->b;
	}
	/* callees end first: what the level below gathered belongs to this call */
	r->self += dur > below->child ? dur - below->child : 0;
	r->allocs += own + below->allocs;
	r->bytes += own_bytes + below->bytes;
	if (e->cat != PROF_CAT_MEMORY) /* the tables' Self rule (formats/model/stats.c) */
		here->child += dur;
	here->allocs += own + below->allocs;
	here->bytes += own_bytes + below->bytes;
	memset(below, 0, sizeof(*below));
	r->count++;
	r->total += dur;
	if (dur < r->min)
		r->min = dur;
	if (dur > r->max)
		r->max = dur;
	return sketch_add(&r->durs, dur);
}

static int on_events(void *arg, struct model *m, uint32_t image, uint32_t thread,
		     const struct prof_event *ev, uint32_t n)
{
	struct ctx *c = arg;
	uint32_t i;

	for (i = 0; i < n; i++) {
		const struct prof_event *e = &ev[i];
		struct sum_row *r;

		switch (e->type) {
		case PROF_EV_COMPLETE:
			/* device memory has its gpu/N rows; these events have no time */
			if ((int)e->cat == m->img[image].gpu_cat ||
			    (int)e->cat == m->img[image].mxnet_cat)
				break;
			if (complete(c, m, image, thread, e))
				return -1;
			break;
		case PROF_EV_INSTANT:
			r = row_for(c, m, &c->instants, model_category(m, image, e->cat),
				    model_name(m, image, e->name), SUM_INSTANTS);
			if (!r)
				return -1;
			r->count++;
			break;
		case PROF_EV_LOST:
			/* calls that ended in the gap never reported to their parents */
			if (thread < c->nthr && c->thr[thread].l)
				memset(c->thr[thread].l, 0,
				       c->thr[thread].cap * sizeof(struct level));
			break;
		default:
			break;
		}
	}
	return 0;
}

/* "basename" of an image's command's first word, "#k" added for the k-th alike. */
static int process_rows(struct sum_run *run, struct model *m)
{
	size_t i, j;

	for (i = 0; i < m->nimg; i++) {
		const struct mem_image *mi = &m->img[i].mem;
		const char *cmd = m->img[i].command == STR_NONE ? "?" :
				  model_str(m, m->img[i].command, NULL);
		char base[96], name[112];
		const char *sp = strchr(cmd, ' '), *slash;
		size_t len = sp ? (size_t)(sp - cmd) : strlen(cmd);
		unsigned k = 1;
		struct sum_row *r;

		slash = memrchr(cmd, '/', len);
		if (slash) {
			len -= (size_t)(slash + 1 - cmd);
			cmd = slash + 1;
		}
		snprintf(base, sizeof(base), "%.*s", (int)len, cmd);
		snprintf(name, sizeof(name), "%s", base);
		for (j = 0; j < run->nrows; j++) {
			const char *seen = run->rows[j].name;
			size_t n = strlen(base);
			if (run->rows[j].kind == SUM_PROCESS && !strncmp(seen, base, n) &&
			    (!seen[n] || seen[n] == ' '))
				k++;
		}
		if (k > 1)
			snprintf(name, sizeof(name), "%s #%u", base, k);
		r = sum_add_row(run, "process", name, SUM_PROCESS);
		if (!r)
			return -1;
		r->allocs = mi->allocs;
		r->bytes = mi->bytes;
		r->peak = mi->peak;
	}
	return 0;
}

static int program_row(struct sum_run *run, struct model *m)
{
	struct sum_row *r = sum_add_row(run, "program", "run", SUM_PROGRAM);
	size_t i;

	if (!r)
		return -1;
	r->wall = model_end(m) - model_origin(m);
	for (i = 0; i < m->nimg; i++) {
		r->allocs += m->img[i].mem.allocs;
		r->bytes += m->img[i].mem.bytes;
		/* processes run apart or side by side: the largest is the one figure that is
		 * right for one process and never overstated */
		if (m->img[i].mem.peak > r->peak)
			r->peak = m->img[i].mem.peak;
	}
	return 0;
}

/* The CPU model, from /proc/cpuinfo. */
static void cpu_model(char *out, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];

	out[0] = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');
		if (strncmp(line, "model name", 10) || !colon)
			continue;
		colon += 1 + (colon[1] == ' ');
		colon[strcspn(colon, "\n")] = 0;
		snprintf(out, len, "%s", colon);
		break;
	}
	fclose(f);
}

static uint64_t number(const char *v)
{
	return v ? strtoull(v, NULL, 10) : 0;
}

/* The capture's own facts, and this machine's when the capture was made on it. */
static int facts(struct summary *s, struct sum_run *run, struct model *m)
{
	static const char *const copied[][2] = {
		{ "host", "host" },		{ "clock", "clock" },
		{ "ring_bytes", "ring_bytes" }, { "block", "block" },
		{ "version", "session_version" },
		{ "alloc_timing", "alloc_timing" }, /* 0: the allocator's calls have no times */
	};
	char host[256] = "", buf[512];
	const char *h = model_fact(m, "host");
	size_t i;
	int rc = sum_set_fact(run, "command", model_command(m));

	for (i = 0; i < sizeof(copied) / sizeof(copied[0]); i++) {
		const char *v = model_fact(m, copied[i][0]);
		if (v)
			rc |= sum_set_fact(run, copied[i][1], v);
	}
	rc |= sum_set_fact(run, "stacks", m->nstacks ? "yes" : "no");
	if (s->tool)
		rc |= sum_set_fact(run, "prof", s->tool);
	if (h && !gethostname(host, sizeof(host) - 1) && !strcmp(host, h)) {
		struct utsname u;
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		cpu_model(buf, sizeof(buf));
		if (buf[0])
			rc |= sum_set_fact(run, "cpu", buf);
		if (n > 0) {
			snprintf(buf, sizeof(buf), "%ld", n);
			rc |= sum_set_fact(run, "cpus", buf);
		}
		if (!uname(&u))
			rc |= sum_set_fact(run, "kernel", u.release);
	}
	run->start_ns = number(model_fact(m, "start_ns"));
	run->root_pid = number(model_fact(m, "root_pid"));
	return rc ? -1 : 0;
}

/* Per GPU a row like a process's, "gpu_memory" / "gpu/N" (and "cpu_pinned/0" for the
 * page-locked host memory CUDA allocated): allocations and bytes of every
 * process on it, and the largest peak of one process (the program row's rule), so a
 * diff judges device memory as it judges the heap. Only devices that were used. */
static int gpu_rows(struct sum_run *run, struct model *m)
{
	for (int d = 0; d < MODEL_DEVICES; d++) {
		uint64_t allocs = 0, frees = 0, bytes = 0, peak = 0;
		for (size_t i = 0; i < m->nimg; i++) {
			struct mem_image *g = &m->img[i].gpu[d];
			allocs += g->allocs;
			frees += g->frees;
			bytes += g->bytes;
			if (g->peak > peak)
				peak = g->peak;
		}
		if (!allocs && !frees)
			continue;
		char name[32];
		struct sum_row *r = sum_add_row(run,
						d >= MODEL_MXNET_CPU ? PROF_CATNAME_MXNET_MEMORY
								     : PROF_CATNAME_GPU_MEMORY,
						model_device_name(d, name, sizeof(name)), SUM_PROCESS);
		if (!r)
			return -1;
		r->allocs = allocs;
		r->bytes = bytes;
		r->peak = peak;
	}
	return 0;
}

static int build(struct summary *s, struct sum_run *run, struct model *m, const char *path)
{
	size_t i;

	run->source = strdup(path);
	if (!run->source || facts(s, run, m) || program_row(run, m) ||
	    (m->nimg > 1 && process_rows(run, m)) || gpu_rows(run, m))
		return -1;
	run->duration = model_end(m) - model_origin(m);
	run->events = m->events;
	run->lost = model_lost(m);
	for (i = 0; i < run->nrows; i++)
		if (run->rows[i].min == UINT64_MAX)
			run->rows[i].min = 0;
	sum_sort_rows(run);
	return 0;
}

int summary_add_capture(struct summary *s, const char *path, char *err, size_t errlen)
{
	struct sum_run run;
	struct model m;
	struct ctx c;
	char damage[512] = "";
	size_t i;
	int rc;

	memset(&run, 0, sizeof(run));
	memset(&c, 0, sizeof(c));
	c.run = &run;
	u64map_init(&c.calls);
	u64map_init(&c.instants);
	model_init(&m);
	m.track_memory = 1;
	m.on_events = on_events;
	m.ctx = &c;
	rc = model_read(&m, path, damage, sizeof(damage));
	if (rc != CAP_READ_OK && rc != CAP_READ_DAMAGED) {
		snprintf(err, errlen, "%s", damage);
		rc = 2;
	} else {
		run.damaged = rc == CAP_READ_DAMAGED;
		if (build(s, &run, &m, path) || summary_take_run(s, &run)) {
			snprintf(err, errlen, "%s: out of memory", path);
			rc = 2;
		} else if (rc == CAP_READ_DAMAGED) {
			snprintf(err, errlen, "%s", damage);
		}
	}
	sum_run_free(&run);
	for (i = 0; i < c.nthr; i++)
		free(c.thr[i].l);
	free(c.thr);
	u64map_free(&c.calls);
	u64map_free(&c.instants);
	model_free(&m);
	return rc;
}

/* ---- prof diff --rank: a job's ranks compared step by step ---- */

#define RANK_RUNS_MAX 400 /* step runs a side: the others' steps are sampled evenly */

struct rank_pick {
	uint32_t image;
	int side;            /* 0 base, 1 current */
	size_t first;        /* its runs: ctx[first ..] */
	size_t nsteps;       /* steps kept */
	uint64_t *t0, *t1;   /* their bounds */
};

struct step_read {
	struct rank_pick *pick;
	size_t npick;
	struct u64map by_image; /* image -> pick + 1 */
	struct ctx *runs;       /* one per (pick, kept step) */
	size_t nruns;
};

static int step_events(void *arg, struct model *m, uint32_t image, uint32_t thread,
		       const struct prof_event *ev, uint32_t n)
{
	struct step_read *sr = arg;
	const uint64_t *v = u64map_find(&sr->by_image, image);
	if (!v)
		return 0;
	const struct rank_pick *p = &sr->pick[*v - 1];
	for (uint32_t i = 0; i < n; i++) {
		/* the step its start lies in (a call that began in one step belongs to it) */
		size_t lo = 0, hi = p->nsteps;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (p->t1[mid] <= ev[i].t0)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < p->nsteps && ev[i].t0 >= p->t0[lo] &&
		    on_events(&sr->runs[p->first + lo], m, image, thread, &ev[i], 1))
			return -1;
	}
	return 0;
}

/* The steps of compared rank i to keep: every one, or `want` spread evenly. */
static size_t keep_steps(const struct rank_proc *p, size_t nsteps, size_t want,
			 struct rank_pick *out)
{
	size_t n = want < nsteps ? want : nsteps;
	out->t0 = malloc((n ? n : 1) * sizeof *out->t0);
	out->t1 = malloc((n ? n : 1) * sizeof *out->t1);
	if (!out->t0 || !out->t1)
		return SIZE_MAX;
	for (size_t k = 0; k < n; k++) {
		size_t j = n == nsteps ? k : k * nsteps / n;
		out->t0[k] = p->steps[j].t0;
		out->t1[k] = p->steps[j].t1;
	}
	out->image = p->image;
	out->nsteps = n;
	return n;
}

static int step_run(struct summary *s, struct ctx *c, struct model *m, const char *path,
		    const struct rank_pick *p, size_t k, int32_t rank)
{
	struct sum_run *run = c->run;
	char src[4352];
	snprintf(src, sizeof src, "%s rank %d step %zu", path, (int)rank, k + 1);
	run->source = strdup(src);
	if (!run->source || facts(s, run, m))
		return -1;
	struct sum_row *r = sum_add_row(run, "program", "run", SUM_PROGRAM);
	if (!r)
		return -1;
	r->wall = p->t1[k] - p->t0[k];
	for (size_t i = 0; i + 1 < run->nrows; i++)
		if (run->rows[i].kind == SUM_CALLS && !strcmp(run->rows[i].cat, "memory")) {
			r = &run->rows[run->nrows - 1];
			r->allocs += run->rows[i].allocs;
			r->bytes += run->rows[i].bytes;
		}
	run->duration = p->t1[k] - p->t0[k];
	run->start_ns = p->t0[k]; /* with the rank's pid: no two runs alike */
	run->root_pid = m->img[p->image].pid;
	for (size_t i = 0; i < run->nrows; i++)
		if (run->rows[i].min == UINT64_MAX)
			run->rows[i].min = 0;
	sum_sort_rows(run);
	return 0;
}

/* A read of path into m with on_events: 0, 1 (damaged: damage says so) or 2 (err). */
static int read_pass(struct model *m, const char *path, model_events_fn on, void *ctx,
		     char damage[512], char *err, size_t errlen)
{
	m->on_events = on;
	m->ctx = ctx;
	int rc = model_read(m, path, damage, 512);
	if (rc == CAP_READ_OK || rc == CAP_READ_DAMAGED)
		return rc == CAP_READ_DAMAGED;
	snprintf(err, errlen, "%s", damage);
	return 2;
}

int summary_add_rank_steps(struct summary *base, struct summary *cur, const char *path,
			   const char *shown, int32_t rank, int32_t base_rank, char *err,
			   size_t errlen)
{
	struct model m1, m2;
	struct stats st;
	struct step_read sr;
	char damage[512] = "";
	int64_t *fix = NULL;
	int rc;

	memset(&sr, 0, sizeof sr);
	u64map_init(&sr.by_image);
	model_init(&m1);
	model_init(&m2);
	stats_init(&st);
	/* pass 1: the ranks and their steps, as the tables find them */
	if ((rc = read_pass(&m1, path, stats_on_events, &st, damage, err, errlen)) == 2)
		goto out;
	if (stats_finish(&st)) {
		snprintf(err, errlen, "%s: out of memory", shown);
		rc = 2;
		goto out;
	}
	const struct ranks *k = &st.ranks;
	size_t me = SIZE_MAX, other = SIZE_MAX, others = 0;
	for (size_t i = 0; i < k->nranks; i++) {
		if (k->p[i].rank == rank)
			me = i;
		else if (k->p[i].rank == base_rank)
			other = i;
		others += k->p[i].rank != rank;
	}
	if (me == SIZE_MAX || (base_rank >= 0 && other == SIZE_MAX)) {
		snprintf(err, errlen, "%s: no rank %d among the ranks compared (%zu: %s)", shown,
			 (int)(me == SIZE_MAX ? rank : base_rank), k->nranks,
			 k->nranks ? "see prof report's Ranks" : "no launcher's ranks");
		rc = 2;
		goto out;
	}
	if (k->nsteps < 3) {
		snprintf(err, errlen, "%s: %zu steps across ranks: comparing ranks needs 3 or more "
			 "(step marks, ProfilerStep#N or Optimizer.step)", shown, k->nsteps);
		rc = 2;
		goto out;
	}
	sr.pick = calloc(k->nranks, sizeof *sr.pick);
	fix = calloc(m1.sources.n ? m1.sources.n : 1, sizeof *fix);
	if (!sr.pick || !fix)
		goto oom;
	for (size_t i = 0; i < m1.sources.n; i++)
		fix[i] = m1.src[i].fix_ns;
	size_t per_other = base_rank >= 0 ? RANK_RUNS_MAX : RANK_RUNS_MAX / others;
	for (size_t i = 0; i < k->nranks; i++) {
		int side = i == me ? 1 : (base_rank < 0 || i == other) ? 0 : -1;
		if (side < 0)
			continue;
		struct rank_pick *p = &sr.pick[sr.npick++];
		p->side = side;
		p->first = sr.nruns;
		size_t n = keep_steps(&k->p[i], k->nsteps,
				      side ? RANK_RUNS_MAX : (per_other ? per_other : 1), p);
		int created;
		uint64_t *v = n == SIZE_MAX ? NULL : u64map_upsert(&sr.by_image, p->image, &created);
		if (!v)
			goto oom;
		*v = sr.npick;
		sr.nruns += n;
	}
	sr.runs = calloc(sr.nruns, sizeof *sr.runs);
	struct sum_run *runs = calloc(sr.nruns, sizeof *runs);
	if (!sr.runs || !runs) {
		free(runs);
		goto oom;
	}
	for (size_t i = 0; i < sr.nruns; i++) {
		sr.runs[i].run = &runs[i];
		u64map_init(&sr.runs[i].calls);
		u64map_init(&sr.runs[i].instants);
	}
	/* pass 2: each rank's events into the run of their step, on the clocks pass 1
	 * refined (the steps' bounds are on them) */
	m2.given_fix = fix;
	m2.ngiven_fix = m1.sources.n;
	if ((rc = read_pass(&m2, path, step_events, &sr, damage, err, errlen)) != 2) {
		int bad = 0;
		for (size_t i = 0; i < sr.npick && !bad; i++) {
			const struct rank_pick *p = &sr.pick[i];
			int32_t r = m2.img[p->image].rank;
			for (size_t j = 0; j < p->nsteps && !bad; j++)
				bad = step_run(p->side ? cur : base, &sr.runs[p->first + j], &m2, shown,
					       p, j, r) ||
				      summary_take_run(p->side ? cur : base, &runs[p->first + j]);
		}
		if (bad) {
			snprintf(err, errlen, "%s: out of memory", shown);
			rc = 2;
		} else if (rc == 1) {
			snprintf(err, errlen, "%s", damage);
		}
	}
	for (size_t i = 0; i < sr.nruns; i++) {
		sum_run_free(&runs[i]);
		for (size_t t = 0; t < sr.runs[i].nthr; t++)
			free(sr.runs[i].thr[t].l);
		free(sr.runs[i].thr);
		u64map_free(&sr.runs[i].calls);
		u64map_free(&sr.runs[i].instants);
	}
	free(runs);
	goto out;
oom:
	snprintf(err, errlen, "%s: out of memory", shown);
	rc = 2;
out:
	for (size_t i = 0; sr.pick && i < sr.npick; i++) {
		free(sr.pick[i].t0);
		free(sr.pick[i].t1);
	}
	free(sr.pick);
	free(sr.runs);
	free(fix);
	u64map_free(&sr.by_image);
	stats_free(&st);
	model_free(&m1);
	model_free(&m2);
	return rc;
}
