/* Folded stacks from a raw capture: the calls gathered by stack (stack_agg), each stack's
 * frames named once, lines sorted so that stacks whose frames read the same (two return
 * addresses on one source line, two images of one pid) become one line. */
#define _GNU_SOURCE /* memrchr */
#include "formats/export/folded.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "formats/model/stack_agg.h"
#include "formats/symbols/stack_names.h"
#include "formats/util/vec.h"

const char *folded_weight_name(enum folded_weight w)
{
	switch (w) {
	case FOLDED_TIME:
		return "time";
	case FOLDED_BYTES:
		return "bytes";
	case FOLDED_COUNT:
		return "count";
	default:
		return "auto";
	}
}

struct sbuf {
	char *p;
	size_t n, cap;
};

/* Appends s[0..n) as one frame: ';' separates frames and a newline ends the line, so
 * both are replaced (';' by ':', as stackcollapse-perf.pl does; controls by '?'). */
static int put_frame(struct sbuf *b, const char *s, size_t n)
{
	if (VEC_RESERVE(b->p, b->cap, b->n + n + 2))
		return -1;
	if (b->n)
		b->p[b->n++] = ';';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		b->p[b->n++] = c == ';' ? ':' : c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	b->p[b->n] = '\0';
	return 0;
}

static int put_cstr(struct sbuf *b, const char *s)
{
	return put_frame(b, s, strlen(s));
}

/* "command (pid)": the program's base name, or a Python script's ("train.py") when the
 * program is a python interpreter. */
static int root_frame(struct sbuf *b, const struct model *m, const struct image *im)
{
	char text[512];
	const char *cmd = im->command == STR_NONE ? NULL : model_str(m, im->command, NULL);
	const char *w = cmd && *cmd ? cmd : "process", *end, *base;
	size_t n;

	for (int k = 0; k < 2; k++) {
		end = strchr(w, ' ');
		n = end ? (size_t)(end - w) : strlen(w);
		base = memrchr(w, '/', n);
		base = base ? base + 1 : w;
		n -= (size_t)(base - w);
		if (k || n < 6 || strncmp(base, "python", 6) || !end || end[1] == '-' || !end[1])
			break;
		w = end + 1; /* the script */
	}
	/* a rank by its rank: two hosts' ranks may have one pid */
	if (im->rank >= 0)
		snprintf(text, sizeof(text), "%.*s (rank %d, %u)", (int)(n > 400 ? 400 : n), base,
			 (int)im->rank, im->pid);
	else
		snprintf(text, sizeof(text), "%.*s (%u)", (int)(n > 400 ? 400 : n), base, im->pid);
	return put_cstr(b, text);
}

static int thread_frame(struct sbuf *b, const struct model *m, const struct thread *t)
{
	char text[512];
	const char *name = t->name == STR_NONE ? "thread" : model_str(m, t->name, NULL);

	snprintf(text, sizeof(text), "%.400s (%u)", name, t->tid);
	return put_cstr(b, text);
}

struct line {
	char *s;
	uint64_t v, calls;
};

struct folder {
	struct model *m;
	struct stack_agg *a;
	struct stack_names sn;
	const struct folded_options *opt;
	enum folded_weight weight;
	struct line *lines;
	size_t nlines, lines_cap;
	struct sbuf b;
};

static uint64_t value_of(const struct stack_entry *x, enum folded_weight w)
{
	switch (w) {
	case FOLDED_BYTES:
		return x->allocs ? x->bytes : 0;
	case FOLDED_COUNT:
		return x->count;
	default:
		return x->stacked_self;
	}
}

/* The line of one entry: root, thread, frames outermost first, the call's name. */
static int add_line(struct folder *f, const struct stack_entry *x)
{
	struct model *m = f->m;
	const struct thread *t = &m->thr[x->thread];
	const struct model_stack *st = &m->stacks[x->stack - 1];
	uint64_t v = value_of(x, f->weight);
	size_t len;
	const char *name;

	if (!v)
		return 0;
	f->b.n = 0;
	if (root_frame(&f->b, m, &m->img[t->image]) ||
	    (f->opt->threads && thread_frame(&f->b, m, t)))
		return -1;
	for (uint32_t k = st->nframes; k-- > 0;)
		if (put_cstr(&f->b, stack_frame_name(&f->sn, st->image, m->frames[st->at + k])))
			return -1;
	name = model_str(m, x->name, &len);
	if (put_frame(&f->b, name, len) || VEC_RESERVE(f->lines, f->lines_cap, f->nlines + 1))
		return -1;
	char *s = strdup(f->b.p);
	if (!s)
		return -1;
	f->lines[f->nlines++] = (struct line){ s, v, x->count };
	return 0;
}

static int by_text(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->s, ((const struct line *)b)->s);
}

static int write_lines(struct folder *f, FILE *out, struct folded_summary *sum)
{
	size_t i = 0, k;

	if (f->nlines)
		qsort(f->lines, f->nlines, sizeof(*f->lines), by_text);
	while (i < f->nlines) {
		uint64_t v = 0, calls = 0;
		for (k = i; k < f->nlines && !strcmp(f->lines[k].s, f->lines[i].s); k++) {
			v += f->lines[k].v;
			calls += f->lines[k].calls;
		}
		fprintf(out, "%s %llu\n", f->lines[i].s, (unsigned long long)v);
		sum->lines++;
		sum->calls += calls;
		sum->total += v;
		i = k;
	}
	return fflush(out) || ferror(out) ? -1 : 0;
}

static int fold(struct folder *f, const char *path, FILE *out, struct folded_summary *sum,
		char *err, size_t errlen)
{
	if (!f->a->stacked) {
		snprintf(err, errlen, "%s has no call stacks (record with PROFILER_STACK=alloc or all)",
			 path);
		return 2;
	}
	f->weight = f->opt->weight;
	if (f->weight == FOLDED_AUTO)
		f->weight = f->a->stacked_other ? FOLDED_TIME : FOLDED_BYTES;
	sum->weight = f->weight;
	if (stack_names_init(&f->sn, f->m)) {
		snprintf(err, errlen, "%s: out of memory", path);
		return 2;
	}
	for (size_t i = 0; i < f->a->n; i++) {
		if (f->a->e[i].stack && add_line(f, &f->a->e[i])) {
			snprintf(err, errlen, "%s: out of memory", path);
			return 2;
		}
	}
	if (!f->nlines) {
		const char *why = "";
		if (f->weight == FOLDED_BYTES)
			why = " (no allocation has a stack: try --weight time)";
		else if (!f->a->stacked_other && !model_alloc_timed(f->m))
			why = " (the stacks are on allocator calls, which carry no durations: "
			      "PROFILER_ALLOC_TIMING=1 times them, or try --weight bytes)";
		snprintf(err, errlen, "%s: no call with a call stack has any %s%s", path,
			 folded_weight_name(f->weight), why);
		return 2;
	}
	if (write_lines(f, out, sum)) {
		snprintf(err, errlen, "writing the folded stacks: %s", strerror(errno ? errno : EIO));
		return 2;
	}
	return 0;
}

int folded_write(const char *capture_path, FILE *out, const struct folded_options *opt,
		 struct folded_summary *sum, char *err, size_t errlen)
{
	struct model m;
	struct stack_agg a;
	struct folder f = { .m = &m, .a = &a, .opt = opt };
	struct model_fold mf = {0};
	char damage[512];
	int rc;

	if (errlen)
		err[0] = '\0';
	memset(sum, 0, sizeof(*sum));
	model_init(&m);
	stack_agg_init(&a);
	m.on_events = stack_agg_on_events;
	m.ctx = &a;
	rc = opt->all_processes ? model_read(&m, capture_path, damage, sizeof(damage))
				: model_read_folded(&m, &mf, capture_path, damage, sizeof(damage));
	if (rc != CAP_READ_OK && rc != CAP_READ_DAMAGED) {
		snprintf(err, errlen, "%s", damage);
		rc = 2;
	} else {
		int damaged = rc == CAP_READ_DAMAGED;
		rc = fold(&f, capture_path, out, sum, err, errlen);
		if (damaged && (!rc || !a.stacked)) {
			/* the damage may be why there is nothing to fold */
			snprintf(err, errlen, "%s%s", damage, rc ? " (no call stacks before it)" : "");
			rc = rc ? rc : 1;
		}
	}
	for (size_t i = 0; i < f.nlines; i++)
		free(f.lines[i].s);
	free(f.lines);
	free(f.b.p);
	stack_names_free(&f.sn);
	stack_agg_free(&a);
	model_free(&m);
	model_fold_free(&mf);
	return rc;
}
