/* Events as CSV rows (events_csv.h): streamed from the model's reading, one buffered
 * writer, numbers formatted by hand (the rows of a 100 M-event capture). */
#include "formats/export/events_csv.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "formats/model/model.h"
#include "formats/util/json_writer.h"
#include "formats/util/utf8.h"
#include "preload/common/event.h"

struct csv {
	struct jw w;
	uint64_t rows;
};

/* A quoted CSV field: quotes doubled; line breaks (none in real names) made spaces, so
 * that the reader need not allow them inside values; bytes that are not UTF-8 (Arrow's
 * strings must be) made U+FFFD, as the JSON tables make them. */
static void quoted(struct jw *w, const char *s, size_t n)
{
	char *p = jw_space(w, 3 * n + 2);
	if (!p)
		return;
	const unsigned char *u = (const unsigned char *)s;
	size_t k = 0;
	p[k++] = '"';
	for (size_t i = 0; i < n;) {
		size_t len = u[i] < 0x80 ? 1 : utf8_seq_len(u + i, n - i);
		if (!len) {
			memcpy(p + k, "\xef\xbf\xbd", 3);
			k += 3;
			i++;
			continue;
		}
		if (len > 1) {
			memcpy(p + k, s + i, len);
			k += len;
			i += len;
			continue;
		}
		char ch = s[i] == '\n' || s[i] == '\r' ? ' ' : s[i];
		if (ch == '"')
			p[k++] = '"';
		p[k++] = ch;
		i++;
	}
	p[k++] = '"';
	w->len += k;
}

static void gid(struct jw *w, const struct model *m, uint32_t g)
{
	size_t n = 0;
	const char *s = g == STR_NONE ? "" : model_str(m, g, &n);
	quoted(w, s ? s : "", s ? n : 0);
}

static int rows(void *ctx, struct model *m, uint32_t image, uint32_t thread,
		const struct prof_event *ev, uint32_t n)
{
	struct csv *c = ctx;
	struct jw *w = &c->w;
	const struct image *im = &m->img[image];
	for (uint32_t i = 0; i < n; i++) {
		const struct prof_event *e = &ev[i];
		char type = e->type == PROF_EV_COMPLETE ? 'X'
			  : e->type == PROF_EV_INSTANT  ? 'i'
			  : e->type == PROF_EV_COUNTER  ? 'C' : 0;
		if (!type)
			continue;
		jw_u64(w, im->source);
		jw_lit(w, ",");
		if (im->rank >= 0)
			jw_u64(w, (uint64_t)im->rank);
		jw_lit(w, ",");
		jw_u64(w, im->pid);
		jw_lit(w, ",");
		jw_u64(w, m->thr[thread].tid);
		jw_raw(w, type == 'X' ? ",X," : type == 'i' ? ",i," : ",C,", 3);
		gid(w, m, model_category(m, image, e->cat));
		jw_lit(w, ",");
		if (e->type == PROF_EV_INSTANT && e->cat == PROF_CAT_STEP)
			quoted(w, "step", 4); /* steps are named by number */
		else
			gid(w, m, model_name(m, image, e->name));
		jw_lit(w, ",");
		jw_u64(w, e->t0);
		jw_lit(w, ",");
		jw_u64(w, e->type == PROF_EV_COMPLETE && e->t1 > e->t0 ? e->t1 - e->t0 : 0);
		jw_lit(w, ",");
		jw_u64(w, e->depth);
		jw_lit(w, ",");
		if (e->cat == PROF_CAT_MEMORY && (e->flags & PROF_EVF_ALLOCS))
			jw_u64(w, e->b);
		else if ((e->flags & PROF_EVF_COMM) && e->b != PROF_COMM_UNKNOWN)
			jw_u64(w, e->b);
		jw_lit(w, ",");
		if (e->type == PROF_EV_COUNTER) {
			double v;
			memcpy(&v, &e->a, sizeof v);
			if (e->flags & PROF_EVF_DOUBLE) {
				if (isfinite(v))
					jw_double(w, v);
				else /* Arrow reads these, not JSON's null */
					jw_text(w, isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
			}
			else
				jw_i64(w, (int64_t)e->a);
		}
		jw_lit(w, ",");
		if (e->flags & PROF_EVF_COMM) {
			if (prof_comm_size(e->c))
				jw_u64(w, prof_comm_size(e->c));
			jw_lit(w, ",");
			if (prof_comm_peer(e->c) >= 0)
				jw_i64(w, prof_comm_peer(e->c));
		} else {
			jw_lit(w, ",");
		}
		jw_lit(w, "\n");
		c->rows++;
	}
	return w->err ? -1 : 0;
}

int events_csv_write(const char *capture_path, FILE *out, int all_processes,
		     const int64_t *fix, size_t nfix, uint64_t *events, char *err,
		     size_t errlen)
{
	struct csv c = {.rows = 0};
	struct model m;
	struct model_fold fold = {0};
	*events = 0;
	if (jw_init(&c.w, out, 1u << 20)) {
		snprintf(err, errlen, "%s: out of memory", capture_path);
		return CAP_READ_UNUSABLE;
	}
	jw_lit(&c.w, "capture,rank,pid,tid,type,category,name,start_ns,dur_ns,depth,bytes,value,"
		     "comm_size,peer\n");
	model_init(&m);
	m.on_events = rows;
	m.ctx = &c;
	m.given_fix = fix;
	m.ngiven_fix = nfix;
	int rc = all_processes ? model_read(&m, capture_path, err, errlen)
			       : model_read_folded(&m, &fold, capture_path, err, errlen);
	int werr = c.w.err;
	if (jw_finish(&c.w) || werr) {
		snprintf(err, errlen, "%s: cannot write the events (%s)", capture_path,
			 strerror(werr ? werr : errno));
		rc = CAP_READ_UNUSABLE;
	}
	*events = c.rows;
	model_free(&m);
	model_fold_free(&fold);
	return rc;
}
