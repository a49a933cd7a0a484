/* The summary file: writing it (one row per line, so a committed baseline diffs well)
 * and reading it back. The layout is in docs/PERFCHECK.md. */
#define _GNU_SOURCE /* strdup */
#include "formats/perfcheck/summary.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/util/json_read.h"
#include "formats/util/json_writer.h"

/* Non-empty buckets as runs [first index, count, count, ...]; a run goes on over up to
 * two empty buckets (cheaper than starting another). */
static void write_sketch(struct jw *w, const struct sketch *s)
{
	uint32_t i = 0, j;
	int first = 1;

	jw_lit(w, "[");
	while (i < s->n) {
		if (!s->c[i]) {
			i++;
			continue;
		}
		j = i;
		while (j + 1 < s->n && (s->c[j + 1] || (j + 2 < s->n && s->c[j + 2]) ||
					(j + 3 < s->n && s->c[j + 3])))
			j++;
		jw_raw(w, first ? "[" : ",[", first ? 1 : 2);
		first = 0;
		jw_i64(w, s->lo + (int32_t)i);
		for (; i <= j; i++) {
			jw_lit(w, ",");
			jw_u64(w, s->c[i]);
		}
		jw_lit(w, "]");
	}
	jw_lit(w, "]");
}

static void field(struct jw *w, const char *key, uint64_t v)
{
	jw_lit(w, ",");
	jw_cstr(w, key);
	jw_lit(w, ":");
	jw_u64(w, v);
}

static void write_row(struct jw *w, const struct sum_row *r)
{
	jw_lit(w, "{\"kind\":");
	jw_cstr(w, sum_kind_name(r->kind));
	jw_lit(w, ",\"category\":");
	jw_cstr(w, r->cat);
	jw_lit(w, ",\"name\":");
	jw_cstr(w, r->name);
	switch (r->kind) {
	case SUM_CALLS:
		field(w, "count", r->count);
		field(w, "total_ns", r->total);
		field(w, "self_ns", r->self);
		field(w, "min_ns", r->min);
		field(w, "max_ns", r->max);
		field(w, "allocs", r->allocs);
		field(w, "bytes", r->bytes);
		jw_lit(w, ",\"durations\":");
		write_sketch(w, &r->durs);
		break;
	case SUM_INSTANTS:
		field(w, "count", r->count);
		break;
	case SUM_PROGRAM:
		field(w, "wall_ns", r->wall);
		/* fall through */
	default:
		field(w, "allocs", r->allocs);
		field(w, "bytes", r->bytes);
		field(w, "peak_bytes", r->peak);
		break;
	}
	jw_lit(w, "}");
}

static void write_run(struct jw *w, const struct sum_run *r)
{
	size_t i;

	jw_lit(w, "{\"source\":");
	jw_cstr_or_null(w, r->source);
	jw_lit(w, ",\"facts\":{");
	for (i = 0; i < r->nfacts; i++) {
		if (i)
			jw_lit(w, ",");
		jw_cstr(w, r->facts[i].key);
		jw_lit(w, ":");
		jw_cstr(w, r->facts[i].val);
	}
	jw_lit(w, "}");
	field(w, "start_ns", r->start_ns);
	field(w, "root_pid", r->root_pid);
	field(w, "duration_ns", r->duration);
	field(w, "events", r->events);
	field(w, "lost_events", r->lost);
	jw_lit(w, ",\"damaged\":");
	if (r->damaged)
		jw_lit(w, "true");
	else
		jw_lit(w, "false");
	jw_lit(w, ",\"rows\":[\n");
	for (i = 0; i < r->nrows; i++) {
		write_row(w, &r->rows[i]);
		jw_raw(w, i + 1 < r->nrows ? ",\n" : "\n", i + 1 < r->nrows ? 2 : 1);
	}
	jw_lit(w, "]}");
}

int summary_write_json(const struct summary *s, FILE *f)
{
	struct jw w;
	size_t i;

	if (jw_init(&w, f, 1 << 16))
		return -1;
	jw_lit(&w, "{\"libprof_summary\":1,\"sketch_gamma\":");
	jw_double(&w, SKETCH_GAMMA);
	jw_lit(&w, ",\"runs\":[\n");
	for (i = 0; i < s->nruns; i++) {
		write_run(&w, &s->runs[i]);
		jw_raw(&w, i + 1 < s->nruns ? ",\n" : "\n", i + 1 < s->nruns ? 2 : 1);
	}
	jw_lit(&w, "]}\n");
	if (jw_finish(&w))
		return -1;
	return fflush(f) || ferror(f) ? -1 : 0;
}

/* reading */

struct rd {
	const char *path;
	char *err;
	size_t errlen;
	size_t run, row;
};

static int bad(struct rd *d, const char *what)
{
	if (d->row != (size_t)-1)
		snprintf(d->err, d->errlen, "%s: not a usable summary: runs[%zu].rows[%zu]: %s",
			 d->path, d->run, d->row, what);
	else if (d->run != (size_t)-1)
		snprintf(d->err, d->errlen, "%s: not a usable summary: runs[%zu]: %s", d->path,
			 d->run, what);
	else
		snprintf(d->err, d->errlen, "%s: not a usable summary: %s", d->path, what);
	return -1;
}

/* A whole number field; absent reads as 0. */
static int num(struct rd *d, const struct jnode *o, const char *key, uint64_t *out)
{
	const struct jnode *v = json_get(o, key);
	char what[96];

	*out = 0;
	if (!v)
		return 0;
	if (!json_u64(v, out))
		return 0;
	snprintf(what, sizeof(what), "\"%s\" is not a whole number", key);
	return bad(d, what);
}

static int read_sketch(struct rd *d, const struct jnode *a, struct sketch *s)
{
	size_t i, j;

	if (!a)
		return 0;
	if (a->type != J_ARR)
		return bad(d, "\"durations\" is not an array");
	for (i = 0; i < a->n; i++) {
		const struct jnode *run = &a->items[i];
		uint64_t first, c;

		if (run->type != J_ARR || !run->n || json_u64(&run->items[0], &first) ||
		    first > SKETCH_MAX_INDEX)
			return bad(d, "bad \"durations\" bucket run");
		for (j = 1; j < run->n; j++) {
			if (json_u64(&run->items[j], &c) || first + j - 1 > SKETCH_MAX_INDEX)
				return bad(d, "bad \"durations\" bucket count");
			if (sketch_add_bucket(s, (int32_t)(first + j - 1), c))
				return bad(d, "out of memory");
		}
	}
	return 0;
}

static int read_row(struct rd *d, const struct jnode *o, struct sum_run *run)
{
	const char *kind = json_str(json_get(o, "kind")), *cat = json_str(json_get(o, "category"));
	const char *name = json_str(json_get(o, "name"));
	struct sum_row *r;
	int k;

	if (o->type != J_OBJ || !kind || !cat || !name)
		return bad(d, "a row needs \"kind\", \"category\" and \"name\"");
	for (k = 0; k < SUM_NKINDS; k++)
		if (!strcmp(kind, sum_kind_name((enum sum_kind)k)))
			break;
	if (k == SUM_NKINDS)
		return 0; /* a kind from a later version: not compared */
	r = sum_add_row(run, cat, name, (enum sum_kind)k);
	if (!r)
		return bad(d, "out of memory");
	if (num(d, o, "count", &r->count) || num(d, o, "total_ns", &r->total) ||
	    num(d, o, "self_ns", &r->self) || num(d, o, "min_ns", &r->min) ||
	    num(d, o, "max_ns", &r->max) || num(d, o, "allocs", &r->allocs) ||
	    num(d, o, "bytes", &r->bytes) || num(d, o, "peak_bytes", &r->peak) ||
	    num(d, o, "wall_ns", &r->wall))
		return -1;
	return read_sketch(d, json_get(o, "durations"), &r->durs);
}

static int read_run(struct rd *d, const struct jnode *o, struct summary *s)
{
	const struct jnode *facts = json_get(o, "facts"), *rows = json_get(o, "rows");
	const struct jnode *dmg = json_get(o, "damaged");
	const char *src = json_str(json_get(o, "source"));
	struct sum_run run;
	size_t i;
	int rc = -1;

	memset(&run, 0, sizeof(run));
	d->row = (size_t)-1;
	if (o->type != J_OBJ || !rows || rows->type != J_ARR)
		return bad(d, "a run needs \"rows\"");
	/* runs keep the file they were first made from */
	run.source = strdup(src ? src : d->path);
	if (!run.source)
		return bad(d, "out of memory");
	for (i = 0; facts && facts->type == J_OBJ && i < facts->n; i++) {
		const char *v = json_str(&facts->items[i]);
		if (v && sum_set_fact(&run, facts->keys[i], v)) {
			bad(d, "out of memory");
			goto out;
		}
	}
	if (num(d, o, "start_ns", &run.start_ns) || num(d, o, "root_pid", &run.root_pid) ||
	    num(d, o, "duration_ns", &run.duration) || num(d, o, "events", &run.events) ||
	    num(d, o, "lost_events", &run.lost))
		goto out;
	run.damaged = dmg && dmg->type == J_BOOL && dmg->b;
	for (i = 0; i < rows->n; i++) {
		d->row = i;
		if (read_row(d, &rows->items[i], &run))
			goto out;
	}
	d->row = (size_t)-1;
	sum_sort_rows(&run);
	rc = summary_take_run(s, &run) ? bad(d, "out of memory") : 0;
out:
	sum_run_free(&run);
	return rc;
}

static int read_text(const char *path, char **text, size_t *len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	char *buf;

	if (!f || fstat(fileno(f), &st)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		if (f)
			fclose(f);
		return -1;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf || fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
		snprintf(err, errlen, "%s: %s", path, buf ? "cannot be read" : "out of memory");
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	*text = buf;
	*len = (size_t)st.st_size;
	return 0;
}

int summary_read_json(struct summary *s, const char *path, char *err, size_t errlen)
{
	struct rd d = { path, err, errlen, (size_t)-1, (size_t)-1 };
	struct jnode root;
	const struct jnode *runs, *g;
	char *text, perr[128];
	size_t len, i;
	uint64_t version;
	int rc = 2;

	if (read_text(path, &text, &len, err, errlen))
		return 2;
	if (json_parse(text, len, &root, perr, sizeof(perr))) {
		free(text);
		snprintf(err, errlen, "%s: not a usable summary: not JSON (%s)", path, perr);
		return 2;
	}
	free(text);
	runs = json_get(&root, "runs");
	g = json_get(&root, "sketch_gamma");
	if (json_u64(json_get(&root, "libprof_summary"), &version)) {
		bad(&d, "no \"libprof_summary\" version");
	} else if (version != SUMMARY_VERSION) {
		snprintf(err, errlen,
			 "%s: summary version %llu is not supported (this prof reads %d)", path,
			 (unsigned long long)version, SUMMARY_VERSION);
	} else if (!g || g->type != J_NUM || fabs(g->d - SKETCH_GAMMA) > 1e-12) {
		bad(&d, "its duration sketches are not the ones this prof reads (sketch_gamma)");
	} else if (!runs || runs->type != J_ARR) {
		bad(&d, "no \"runs\"");
	} else {
		rc = 0;
		for (i = 0; i < runs->n && !rc; i++) {
			d.run = i;
			if (read_run(&d, &runs->items[i], s))
				rc = 2;
		}
	}
	json_free(&root);
	return rc;
}
