/* Rows by call stack: the calls gathered per (thread, stack, category, name) while the
 * capture streams (stack_agg), then, once every stack can be named, merged by
 * (category, name, names of the innermost N frames), so that one place in the code gives
 * one row whatever process, thread or return address within a line it came from. */
#define _GNU_SOURCE /* qsort_r */
#include "formats/tables/table_stacks.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "formats/util/json_writer.h"
#include "formats/model/stack_agg.h"
#include "formats/symbols/stack_names.h"
#include "formats/tables/textfmt.h"
#include "formats/util/vec.h"

#define NAME_MIN 16
#define NAME_MAX_COLS 48
#define FRAME_MAX_COLS 200

struct gs_row {
	uint32_t cat, name; /* gids */
	uint32_t frames;    /* id in grouper.keys: frame names joined by '\n', "" for none */
	uint64_t count, total, self, max, bytes;
};

struct gs_cat {
	uint32_t cat;
	unsigned rank;
	struct gs_row **rows;
	size_t nrows, all_rows;
	int untimed; /* the allocator's calls without durations: counts only, by count */
};

struct grouper {
	struct model *m;
	struct stack_agg a;
	struct stack_names sn;
	const struct table_options *opt;
	unsigned nframes;
	struct strtab keys;
	uint32_t *stack_key; /* per stack index: its id in keys + 1; 0 until named */
	uint32_t no_stack;   /* id of "" in keys */
	struct gs_row *rows;
	size_t nrows, rows_cap;
	struct u64map leaf_ix, row_ix; /* cat << 32 | name -> leaf; leaf << 32 | key -> row */
	uint32_t nleaves;
	struct gs_cat *cats;
	size_t ncats;
	char *buf; /* one key being built */
	size_t buf_len, buf_cap;
};

/* The id of the names of the innermost frames of stack (index + 1); UINT32_MAX when out
 * of memory. Frames are joined by '\n', so a newline inside a name becomes '?'. */
static uint32_t key_of(struct grouper *g, uint32_t stack)
{
	const struct model *m = g->m;
	uint32_t id;

	if (!stack)
		return g->no_stack;
	if (g->a.by_detail) { /* the shapes' string is the key */
		size_t len;
		const char *s = model_str(g->m, stack - 1, &len);
		return strtab_intern(&g->keys, s, len, &id) ? UINT32_MAX : id;
	}
	if (g->stack_key[stack - 1])
		return g->stack_key[stack - 1] - 1;
	const struct model_stack *st = &m->stacks[stack - 1];
	const uint64_t *f = m->frames + st->at;
	/* A stack with Python frames is keyed by those alone, as torch's
	 * group_by_stack_n keys by the script's lines (v0.py(30): forward), not by the
	 * interpreter and bindings between them. */
	int python = 0;
	for (uint32_t k = 0; k < st->nframes && !python; k++)
		python = (f[k] & PROF_STACK_FRAME_PYTHON) != 0;
	g->buf_len = 0;
	for (uint32_t k = 0, n = 0; k < st->nframes && n < g->nframes; k++) {
		if (python && !(f[k] & PROF_STACK_FRAME_PYTHON))
			continue;
		const char *s = stack_frame_name(&g->sn, st->image, f[k]);
		size_t len = strlen(s);
		if (VEC_RESERVE(g->buf, g->buf_cap, g->buf_len + len + 1))
			return UINT32_MAX;
		if (n++)
			g->buf[g->buf_len++] = '\n';
		for (size_t i = 0; i < len; i++)
			g->buf[g->buf_len++] = s[i] == '\n' ? '?' : s[i];
	}
	if (strtab_intern(&g->keys, g->buf ? g->buf : "", g->buf_len, &id))
		return UINT32_MAX;
	g->stack_key[stack - 1] = id + 1;
	return id;
}

static struct gs_row *row_for(struct grouper *g, uint32_t cat, uint32_t name, uint32_t key)
{
	int created;
	uint64_t *leaf = u64map_upsert(&g->leaf_ix, (uint64_t)cat << 32 | name, &created);

	if (!leaf)
		return NULL;
	if (created)
		*leaf = g->nleaves++;
	uint64_t k = *leaf << 32 | key;
	uint64_t *v = u64map_upsert(&g->row_ix, k, &created);
	if (!v)
		return NULL;
	if (!created)
		return &g->rows[*v];
	if (VEC_RESERVE(g->rows, g->rows_cap, g->nrows + 1)) {
		u64map_remove(&g->row_ix, k, NULL);
		return NULL;
	}
	*v = g->nrows;
	g->rows[g->nrows] = (struct gs_row){ .cat = cat, .name = name, .frames = key };
	return &g->rows[g->nrows++];
}

static int merge(struct grouper *g)
{
	g->stack_key = calloc(g->m->nstacks + 1, sizeof(*g->stack_key));
	if (!g->stack_key || strtab_intern(&g->keys, "", 0, &g->no_stack))
		return -1;
	for (size_t i = 0; i < g->a.n; i++) {
		const struct stack_entry *x = &g->a.e[i];
		uint32_t key = key_of(g, x->stack);
		struct gs_row *r = key == UINT32_MAX ? NULL : row_for(g, x->cat, x->name, key);
		if (!r)
			return -1;
		r->count += x->count;
		r->total += x->total;
		r->self += x->self;
		r->bytes += x->bytes;
		if (x->max > r->max)
			r->max = x->max;
	}
	return 0;
}

/* ---- categories: fixed ones first in their enum order, the others as they came ---- */

static unsigned cat_rank(const struct model *m, uint32_t cat, unsigned first_seen)
{
	const char *name = model_str(m, cat, NULL), *f;

	for (unsigned i = 0; (f = prof_fixed_category_name(i)); i++)
		if (!strcmp(f, name))
			return i;
	return 1000 + first_seen;
}

static int by_rank(const void *a, const void *b)
{
	const struct gs_cat *x = a, *y = b;

	return (x->rank > y->rank) - (x->rank < y->rank);
}

static struct gs_cat *cat_of(struct grouper *g, uint32_t cat)
{
	for (size_t i = 0; i < g->ncats; i++)
		if (g->cats[i].cat == cat)
			return &g->cats[i];
	return NULL;
}

static int group_cats(struct grouper *g)
{
	size_t i;

	for (i = 0; i < g->nrows; i++) {
		struct gs_cat *c = cat_of(g, g->rows[i].cat);
		if (!c) {
			c = realloc(g->cats, (g->ncats + 1) * sizeof(*c));
			if (!c)
				return -1;
			g->cats = c;
			c = &g->cats[g->ncats];
			*c = (struct gs_cat){ .cat = g->rows[i].cat,
					      .rank = cat_rank(g->m, g->rows[i].cat,
							       (unsigned)g->ncats) };
			/* the allocator's calls without durations (PROFILER_ALLOC_TIMING) */
			c->untimed = !model_alloc_timed(g->m) &&
				     !strcmp(model_str(g->m, c->cat, NULL), PROF_CATNAME_MEMORY);
			g->ncats++;
		}
		c->all_rows++;
	}
	if (g->ncats)
		qsort(g->cats, g->ncats, sizeof(*g->cats), by_rank);
	for (i = 0; i < g->ncats; i++)
		if (!(g->cats[i].rows = malloc(g->cats[i].all_rows * sizeof(struct gs_row *))))
			return -1;
	for (i = 0; i < g->nrows; i++) {
		struct gs_cat *c = cat_of(g, g->rows[i].cat);
		c->rows[c->nrows++] = &g->rows[i];
	}
	return 0;
}

/* Keeps only the category the options name; -1 when it names none the capture has (a
 * fixed category is always accepted: it may just have no calls). */
static int filter(struct grouper *g, const char *path, char *err, size_t errlen)
{
	const char *want = g->opt->category, *f;
	size_t i, k = 0, used;
	unsigned j;

	if (!want)
		return 0;
	for (j = 0; (f = prof_fixed_category_name(j)); j++)
		if (!strcmp(f, want))
			break;
	for (i = 0; i < g->ncats; i++)
		k += !strcmp(model_str(g->m, g->cats[i].cat, NULL), want);
	if (!k && !f) {
		used = (size_t)snprintf(err, errlen, "no category \"%s\" in %s (it has:", want, path);
		for (i = 0; i < g->ncats && used < errlen; i++)
			used += (size_t)snprintf(err + used, errlen - used, "%s %s", i ? "," : "",
						 model_str(g->m, g->cats[i].cat, NULL));
		if (used < errlen)
			snprintf(err + used, errlen - used, "%s)", g->ncats ? "" : " none");
		return -1;
	}
	for (i = k = 0; i < g->ncats; i++) {
		if (!strcmp(model_str(g->m, g->cats[i].cat, NULL), want))
			g->cats[k++] = g->cats[i];
		else
			free(g->cats[i].rows);
	}
	g->ncats = k;
	return 0;
}

static uint64_t avg_of(const struct gs_row *r)
{
	return r->count ? r->total / r->count : 0;
}

static uint64_t sort_key(const struct gs_row *r, enum table_sort key)
{
	switch (key) {
	case SORT_SELF:
		return r->self;
	case SORT_COUNT:
		return r->count;
	case SORT_AVG:
		return avg_of(r);
	case SORT_MAX:
		return r->max;
	default:
		return r->total;
	}
}

static int cmp_gid(const struct strtab *t, uint32_t a, uint32_t b)
{
	size_t la, lb;
	const char *x = strtab_get(t, a, &la), *y = strtab_get(t, b, &lb);
	int c = memcmp(x, y, la < lb ? la : lb);

	return c ? c : (la > lb) - (la < lb);
}

struct sort_by {
	const struct grouper *g;
	enum table_sort key;
};

/* Largest first; equal keys by name, then frames, so the output does not depend on the
 * order of the capture. */
static int by_key(const void *a, const void *b, void *arg)
{
	const struct sort_by *sb = arg;
	const struct grouper *g = sb->g;
	const struct gs_row *x = *(struct gs_row *const *)a, *y = *(struct gs_row *const *)b;
	uint64_t kx = sort_key(x, sb->key), ky = sort_key(y, sb->key);
	int c;

	if (kx != ky)
		return kx > ky ? -1 : 1;
	if ((c = cmp_gid(&g->m->str, x->name, y->name)))
		return c;
	return cmp_gid(&g->keys, x->frames, y->frames);
}

static void sort_and_cut(struct grouper *g)
{
	for (size_t i = 0; i < g->ncats; i++) {
		struct gs_cat *c = &g->cats[i];
		/* calls without durations: by count */
		struct sort_by sb = { g, c->untimed ? SORT_COUNT : g->opt->sort };
		if (c->nrows)
			qsort_r(c->rows, c->nrows, sizeof(*c->rows), by_key, &sb);
		if (g->opt->top > 0 && c->nrows > (size_t)g->opt->top)
			c->nrows = (size_t)g->opt->top;
	}
}

/* The next frame of a key from *s (frames end at '\n' or at the end); 0 when none is
 * left. */
static int next_frame(const char **s, const char *end, const char **f, size_t *n)
{
	const char *nl;

	if (*s >= end)
		return 0;
	nl = memchr(*s, '\n', (size_t)(end - *s));
	*f = *s;
	*n = (size_t)((nl ? nl : end) - *s);
	*s = nl ? nl + 1 : end;
	return 1;
}

/* ---- text ---- */

static void text_header(const struct grouper *g, const struct output_summary *sum,
			FILE *out)
{
	char a[TEXTFMT_LEN], b[TEXTFMT_LEN], cmd[4 * 100 + 4];
	const char *c = model_command(g->m);
	size_t np = model_npids(g->m);

	fmt_name(cmd, c, strlen(c), 100);
	fprintf(out, "libprof profile: %s   (%zu process%s)\n", cmd, np, np == 1 ? "" : "es");
	fprintf(out, "Events: %s captured, %s lost\n", fmt_count(a, g->m->events),
		fmt_count(b, model_lost(g->m)));
	if (sum->damaged)
		fprintf(out, "WARNING: damaged capture, the rows cover what came before: %s\n",
			sum->damage);
	if (g->a.by_detail) {
		fprintf(out, "Rows by input shapes: each row's calls share category, name and "
			     "input shapes (listed below the row; recorded with "
			     "PROFILER_RECORD_SHAPES=1)\n");
		return;
	}
	fprintf(out, "Rows by call stack: each row's calls share category, name and the "
		     "innermost %u frame%s of their stack (listed below the row)\n",
		g->nframes, g->nframes == 1 ? "" : "s");
	if (!g->a.stacked)
		fprintf(out, "Note: the capture has no call stacks (record with "
			     "PROFILER_STACK=alloc or all)\n");
}

static void text_cat(const struct grouper *g, const struct gs_cat *c, FILE *out)
{
	char name[4 * NAME_MAX_COLS + 4], frame[4 * FRAME_MAX_COLS + 4], t[6][TEXTFMT_LEN];
	size_t w = NAME_MIN, i, len, cols;

	for (i = 0; i < c->nrows; i++) {
		const char *s = model_str(g->m, c->rows[i]->name, &len);
		if ((cols = fmt_name(name, s, len, NAME_MAX_COLS)) > w)
			w = cols;
	}
	fprintf(out, "\n%s", model_str(g->m, c->cat, NULL));
	if (c->nrows < c->all_rows)
		fprintf(out, "   (top %zu of %zu)", c->nrows, c->all_rows);
	if (c->untimed)
		fprintf(out, "   (calls not timed: PROFILER_ALLOC_TIMING=1 times them)");
	/* Two spaces at least after the name: scripts split rows on runs of 2+ spaces. */
	fprintf(out, "\n%-*s  %10s %10s %10s %10s %10s %12s\n", (int)w, "Name", "Count", "Total",
		"Self", "Avg", "Max", "Bytes");
	for (i = 0; i < c->nrows; i++) {
		const struct gs_row *r = c->rows[i];
		const char *s = model_str(g->m, r->name, &len), *f, *end;
		size_t n;
		cols = fmt_name(name, s, len, w);
		int timed = !c->untimed;
		fprintf(out, "%s%*s  %10s %10s %10s %10s %10s %12s\n", name, (int)(w - cols), "",
			fmt_count(t[0], r->count), timed ? fmt_dur(t[1], r->total) : "-",
			timed ? fmt_dur(t[2], r->self) : "-", timed ? fmt_dur(t[3], avg_of(r)) : "-",
			timed ? fmt_dur(t[4], r->max) : "-", r->bytes ? fmt_bytes(t[5], r->bytes) : "-");
		s = strtab_get(&g->keys, r->frames, &len);
		end = s + len;
		if (!len)
			fprintf(out, "    %s\n", g->a.by_detail ? "(no shapes)" : "(no stack)");
		while (next_frame(&s, end, &f, &n)) {
			fmt_name(frame, f, n, FRAME_MAX_COLS);
			fprintf(out, "    %s\n", frame);
		}
	}
}

static int write_text(const struct grouper *g, const struct output_summary *sum, FILE *out)
{
	text_header(g, sum, out);
	for (size_t i = 0; i < g->ncats; i++)
		text_cat(g, &g->cats[i], out);
	return ferror(out) ? -1 : 0;
}

/* ---- CSV: the frames in one field, innermost first, separated by ';' ---- */

static void quoted(FILE *out, const char *s, size_t n, int frames)
{
	fputc('"', out);
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '"')
			fputc('"', out);
		fputc(frames && s[i] == '\n' ? ';' : s[i], out);
	}
	fputc('"', out);
}

static int write_csv(const struct grouper *g, FILE *out)
{
	size_t len, clen;

	fprintf(out, "category,name,count,total_ns,self_ns,avg_ns,max_ns,bytes,%s\n",
		g->a.by_detail ? "input_shapes" : "stack");
	for (size_t i = 0; i < g->ncats; i++) {
		const struct gs_cat *c = &g->cats[i];
		const char *cat = model_str(g->m, c->cat, &clen);
		for (size_t j = 0; j < c->nrows; j++) {
			const struct gs_row *r = c->rows[j];
			const char *s = model_str(g->m, r->name, &len);
			quoted(out, cat, clen, 0);
			fputc(',', out);
			quoted(out, s, len, 0);
			if (c->untimed) /* not measured: empty, not 0 */
				fprintf(out, ",%" PRIu64 ",,,,,%" PRIu64 ",", r->count, r->bytes);
			else
				fprintf(out, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
					",%" PRIu64 ",%" PRIu64 ",", r->count, r->total, r->self,
					avg_of(r), r->max, r->bytes);
			s = strtab_get(&g->keys, r->frames, &len);
			quoted(out, s, len, 1);
			fputc('\n', out);
		}
	}
	return ferror(out) ? -1 : 0;
}

/* ---- JSON ---- */

static void json_gid(struct jw *w, const struct strtab *t, uint32_t id)
{
	size_t len;
	const char *s = strtab_get(t, id, &len);

	jw_str(w, s, len);
}

static void json_row(struct jw *w, const struct grouper *g, const struct gs_cat *c,
		     const struct gs_row *r)
{
	size_t len, n;
	const char *s, *end, *f;

	jw_lit(w, "{\"category\":");
	json_gid(w, &g->m->str, c->cat);
	jw_lit(w, ",\"name\":");
	json_gid(w, &g->m->str, r->name);
	jw_lit(w, ",\"count\":");
	jw_u64(w, r->count);
	jw_lit(w, ",\"total_ns\":");
	jw_u64(w, r->total);
	jw_lit(w, ",\"self_ns\":");
	jw_u64(w, r->self);
	jw_lit(w, ",\"avg_ns\":");
	jw_u64(w, avg_of(r));
	jw_lit(w, ",\"max_ns\":");
	jw_u64(w, r->max);
	jw_lit(w, ",\"bytes\":");
	jw_u64(w, r->bytes);
	if (c->untimed) /* its times are 0: the calls were not timed */
		jw_lit(w, ",\"timed\":false");
	s = strtab_get(&g->keys, r->frames, &len);
	if (g->a.by_detail) {
		jw_lit(w, ",\"input_shapes\":");
		if (len)
			jw_str(w, s, len);
		else
			jw_lit(w, "null");
		jw_lit(w, "}");
		return;
	}
	jw_lit(w, ",\"stack\":[");
	end = s + len;
	for (int k = 0; next_frame(&s, end, &f, &n); k++) {
		if (k)
			jw_lit(w, ",");
		jw_str(w, f, n);
	}
	jw_lit(w, "]}");
}

static int write_json(const struct grouper *g, const struct output_summary *sum, FILE *out)
{
	struct jw w;
	int k = 0;

	if (jw_init(&w, out, 1 << 16))
		return -1;
	jw_lit(&w, "{\"command\":");
	jw_cstr(&w, model_command(g->m));
	jw_lit(&w, ",\"events\":");
	jw_u64(&w, g->m->events);
	jw_lit(&w, ",\"lost_events\":");
	jw_u64(&w, model_lost(g->m));
	jw_lit(&w, ",\"damage\":");
	jw_cstr_or_null(&w, sum->damaged ? sum->damage : NULL);
	if (g->a.by_detail) {
		jw_lit(&w, ",\"group_by\":\"shape\"");
	} else {
		jw_lit(&w, ",\"group_by\":\"stack\",\"stack_frames\":");
		jw_u64(&w, g->nframes);
	}
	jw_lit(&w, ",\"has_stacks\":");
	jw_text(&w, g->a.stacked ? "true" : "false");
	jw_lit(&w, ",\n\"rows\":[");
	for (size_t i = 0; i < g->ncats; i++) {
		for (size_t j = 0; j < g->cats[i].nrows; j++) {
			jw_text(&w, k++ ? ",\n" : "\n");
			json_row(&w, g, &g->cats[i], g->cats[i].rows[j]);
		}
	}
	jw_lit(&w, "]}\n");
	return jw_finish(&w);
}

/* ---- the whole ---- */

static int build_and_write(struct grouper *g, const char *path, FILE *out,
			   const struct output_summary *sum, char *err, size_t errlen)
{
	int rc;

	if (stack_names_init(&g->sn, g->m) || merge(g) || group_cats(g)) {
		snprintf(err, errlen, "%s: out of memory", path);
		return 2;
	}
	if (filter(g, path, err, errlen))
		return 2;
	sort_and_cut(g);
	switch (g->opt->format) {
	case FORMAT_CSV:
		rc = write_csv(g, out);
		break;
	case FORMAT_JSON:
		rc = write_json(g, sum, out);
		break;
	default:
		rc = write_text(g, sum, out);
	}
	if (rc || fflush(out) || ferror(out)) {
		snprintf(err, errlen, "writing the tables: %s", strerror(errno ? errno : EIO));
		return 2;
	}
	return 0;
}

int table_stacks_write(const char *capture_path, FILE *out, const struct table_options *opt,
		       unsigned nframes, struct output_summary *sum, char *err, size_t errlen)
{
	struct model m;
	struct grouper g = { .m = &m, .opt = opt, .nframes = nframes };
	struct output_summary own;
	struct model_fold fold = {0};
	char damage[512];
	int rc;

	if (!sum)
		sum = &own;
	if (errlen)
		err[0] = '\0';
	memset(sum, 0, sizeof(*sum));
	model_init(&m);
	stack_agg_init(&g.a);
	g.a.by_detail = nframes == TABLE_STACKS_BY_SHAPE;
	strtab_init(&g.keys);
	u64map_init(&g.leaf_ix);
	u64map_init(&g.row_ix);
	m.on_events = stack_agg_on_events;
	m.ctx = &g.a;
	rc = opt->all_processes ? model_read(&m, capture_path, damage, sizeof(damage))
				: model_read_folded(&m, &fold, capture_path, damage, sizeof(damage));
	if (rc != CAP_READ_OK && rc != CAP_READ_DAMAGED) {
		snprintf(err, errlen, "%s", damage);
		rc = 2;
	} else {
		sum->events = m.events;
		sum->lost = model_lost(&m);
		sum->lost_startup = model_lost_startup(&m);
		sum->processes = model_npids(&m);
		sum->processes_shown = model_shown_pids(&m);
		if (rc == CAP_READ_DAMAGED) {
			sum->damaged = 1;
			snprintf(sum->damage, sizeof(sum->damage), "%.*s", (int)sizeof(sum->damage) - 1,
				 damage);
		}
		rc = build_and_write(&g, capture_path, out, sum, err, errlen);
		if (!rc && sum->damaged) {
			snprintf(err, errlen, "%s", damage);
			rc = 1;
		}
	}
	for (size_t i = 0; i < g.ncats; i++)
		free(g.cats[i].rows);
	free(g.cats);
	free(g.rows);
	free(g.stack_key);
	free(g.buf);
	u64map_free(&g.leaf_ix);
	u64map_free(&g.row_ix);
	strtab_free(&g.keys);
	stack_names_free(&g.sn);
	stack_agg_free(&g.a);
	model_free(&m);
	model_fold_free(&fold);
	return rc;
}
