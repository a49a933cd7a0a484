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
