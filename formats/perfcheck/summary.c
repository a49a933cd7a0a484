/* The summary's runs and rows, and reading one input of `prof summary` / `prof diff`
 * (a capture, a summary, or a directory of either). */
#define _GNU_SOURCE /* strdup */
#include "formats/perfcheck/summary.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/util/vec.h"

void summary_init(struct summary *s)
{
	memset(s, 0, sizeof(*s));
}

void sum_run_free(struct sum_run *r)
{
	size_t i;

	for (i = 0; i < r->nrows; i++) {
		free(r->rows[i].cat);
		free(r->rows[i].name);
		sketch_free(&r->rows[i].durs);
	}
	for (i = 0; i < r->nfacts; i++) {
		free(r->facts[i].key);
		free(r->facts[i].val);
	}
	free(r->rows);
	free(r->facts);
	free(r->source);
	memset(r, 0, sizeof(*r));
}

void summary_free(struct summary *s)
{
	const char *tool = s->tool;
	size_t i;

	for (i = 0; i < s->nruns; i++)
		sum_run_free(&s->runs[i]);
	free(s->runs);
	summary_init(s);
	s->tool = tool;
}

const char *sum_kind_name(enum sum_kind k)
{
	static const char *const names[] = { "calls", "instants", "program", "process" };

	return (unsigned)k < SUM_NKINDS ? names[k] : "?";
}

const char *sum_fact(const struct sum_run *r, const char *key)
{
	size_t i;

	for (i = 0; i < r->nfacts; i++)
		if (!strcmp(r->facts[i].key, key))
			return r->facts[i].val;
	return NULL;
}

int sum_set_fact(struct sum_run *r, const char *key, const char *val)
{
	struct sum_fact *f;
	char *v = strdup(val), *k;
	size_t i;

	if (!v)
		return -1;
	for (i = 0; i < r->nfacts; i++) {
		if (!strcmp(r->facts[i].key, key)) {
			free(r->facts[i].val);
			r->facts[i].val = v;
			return 0;
		}
	}
	k = strdup(key);
	f = k ? realloc(r->facts, (r->nfacts + 1) * sizeof(*f)) : NULL;
	if (!f) {
		free(k);
		free(v);
		return -1;
	}
	r->facts = f;
	f[r->nfacts].key = k;
	f[r->nfacts++].val = v;
	return 0;
}

struct sum_row *sum_add_row(struct sum_run *r, const char *cat, const char *name,
			    enum sum_kind kind)
{
	struct sum_row *w;

	if (VEC_RESERVE(r->rows, r->rows_cap, r->nrows + 1))
		return NULL;
	w = &r->rows[r->nrows];
	memset(w, 0, sizeof(*w));
	w->cat = strdup(cat);
	w->name = strdup(name);
	if (!w->cat || !w->name) {
		free(w->cat);
		free(w->name);
		return NULL;
	}
	w->kind = kind;
	w->min = UINT64_MAX;
	r->nrows++;
	return w;
}

static int by_key(const void *a, const void *b)
{
	const struct sum_row *x = a, *y = b;
	int c;

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	c = strcmp(x->cat, y->cat);
	return c ? c : strcmp(x->name, y->name);
}

void sum_sort_rows(struct sum_run *r)
{
	if (r->nrows > 1)
		qsort(r->rows, r->nrows, sizeof(*r->rows), by_key);
}

static int same_run(const struct sum_run *a, const struct sum_run *b)
{
	const char *ha = sum_fact(a, "host"), *hb = sum_fact(b, "host");

	return a->start_ns && a->start_ns == b->start_ns && a->root_pid == b->root_pid &&
	       !strcmp(ha ? ha : "", hb ? hb : "");
}

int summary_take_run(struct summary *s, struct sum_run *r)
{
	size_t i;

	/* a capture and the summary made from it, side by side in one directory */
	for (i = 0; i < s->nruns; i++) {
		if (same_run(&s->runs[i], r)) {
			sum_run_free(r);
			s->duplicates++;
			return 0;
		}
	}
	if (VEC_RESERVE(s->runs, s->runs_cap, s->nruns + 1))
		return -1;
	s->runs[s->nruns++] = *r;
	memset(r, 0, sizeof(*r));
	return 0;
}

/* What a file is, from its first bytes: 'c' capture, 's' summary, 0 neither, -1 cannot
 * be read (errno). */
static int sniff(const char *path)
{
	char buf[64];
	size_t n, i = 0;
	FILE *f = fopen(path, "rb");

	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	if (n >= 8 && !memcmp(buf, "LIBPROF", 8))
		return 'c';
	while (i < n && buf[i] && strchr(" \n\r\t", buf[i]))
		i++;
	if (buf[i] == '{') {
		i++;
		while (i < n && buf[i] && strchr(" \n\r\t", buf[i]))
			i++;
		if (!strncmp(buf + i, "\"libprof_summary\"", 17))
			return 's';
	}
	return 0;
}

static int load_file(struct summary *s, const char *path, int kind, char *err, size_t errlen)
{
	if (kind == 'c')
		return summary_add_capture(s, path, err, errlen);
	return summary_read_json(s, path, err, errlen);
}

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), k = strlen(tail);

	return n >= k && !strcmp(s + n - k, tail);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The captures and summaries of a directory, in name order. */
static int load_dir(struct summary *s, const char *dir, char *err, size_t errlen)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL, first_err[512] = "";
	size_t n = 0, cap = 0, i, before = s->nruns + s->duplicates;
	int rc = 0;

	if (!d) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return 2;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' ||
		    !(ends_with(e->d_name, ".prof") || ends_with(e->d_name, ".json")))
			continue;
		char *p = malloc(strlen(dir) + strlen(e->d_name) + 2);
		if (!p || VEC_RESERVE(names, cap, n + 1)) {
			free(p);
			rc = 2;
			snprintf(err, errlen, "%s: out of memory", dir);
			break;
		}
		sprintf(p, "%s/%s", dir, e->d_name);
		names[n++] = p;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), by_name);
	for (i = 0; i < n && rc != 2; i++) {
		struct stat st;
		int kind = stat(names[i], &st) || !S_ISREG(st.st_mode) ? 0 : sniff(names[i]);
		int r;

		/* a Chrome trace or another JSON file beside the captures is not an input */
		if (kind <= 0)
			continue;
		r = load_file(s, names[i], kind, err, errlen);
		if (r == 1 && !first_err[0])
			snprintf(first_err, sizeof(first_err), "%s", err);
		if (r > rc)
			rc = r;
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (rc == 1)
		snprintf(err, errlen, "%s", first_err);
	if (rc != 2 && s->nruns + s->duplicates == before) {
		snprintf(err, errlen,
			 "%s: no captures (*.prof) or summaries (*.json) in this directory", dir);
		return 2;
	}
	return rc;
}

int summary_load(struct summary *s, const char *path, char *err, size_t errlen)
{
	struct stat st;
	int kind;

	if (stat(path, &st)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return 2;
	}
	if (S_ISDIR(st.st_mode))
		return load_dir(s, path, err, errlen);
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		return 2;
	}
	kind = sniff(path);
	if (kind < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return 2;
	}
	if (!kind) {
		snprintf(err, errlen, "%s: neither a libprof capture nor a libprof summary", path);
		return 2;
	}
	return load_file(s, path, kind, err, errlen);
}
