/* Pass 2 of the Chrome trace: one JSON object per kept event. This is the hot loop of
 * `prof export`: names are escaped once per string and cached, numbers are formatted by
 * hand, and everything goes through one large buffer. */
#include <string.h>

#include "formats/export/chrome.h"
#include "formats/util/vec.h"

/* Makes sure the escaped, quoted form of string gid of the pass-2 model is cached.
 * -1 when out of memory. */
static int escape_once(struct chrome *c, uint32_t gid)
{
	struct esc_cache *e = &c->esc;
	const char *s;
	size_t len;

	if (gid == STR_NONE)
		return -1;
	if (gid >= e->n) {
		if (VEC_RESERVE(e->off, e->cap_off, (size_t)gid + 1) ||
		    VEC_RESERVE(e->len, e->cap_len, (size_t)gid + 1))
			return -1;
		memset(e->off + e->n, 0, ((size_t)gid + 1 - e->n) * sizeof(*e->off));
		e->n = (size_t)gid + 1;
	}
	if (!e->off[gid]) {
		s = model_str(c->om, gid, &len);
		if (VEC_RESERVE(e->bytes, e->cap, e->used + json_escaped_max(len)))
			return -1;
		e->len[gid] = (uint32_t)json_escape(e->bytes + e->used, s, len);
		e->off[gid] = e->used + 1;
		e->used += e->len[gid];
	}
	return 0;
}

/* The cached form: valid until the next escape_once, which may move the cache. */
static const char *escaped(const struct chrome *c, uint32_t gid, size_t *n)
{
	*n = c->esc.len[gid];
	return c->esc.bytes + c->esc.off[gid] - 1;
}

static int put_str(struct chrome *c, uint32_t gid)
{
	const char *p;
	size_t n;

	if (escape_once(c, gid))
		return -1;
	p = escaped(c, gid, &n);
	jw_raw(&c->w, p, n);
	return 0;
}

struct rec {
	char pidtid[64]; /* ,"pid":P,"tid":T */
	size_t pidtid_len;
	uint32_t image, thread;
	const struct prof_event *ev; /* the events given, for c->ev_place */
};

static void ts(struct chrome *c, uint64_t t)
{
	jw_us(&c->w, (int64_t)(t - c->origin));
}

static char *memory_args(char *p, const struct prof_event *e)
{
	int alloc = (e->flags & PROF_EVF_ALLOCS) != 0, frees = (e->flags & PROF_EVF_FREES) != 0;

	if (alloc) {
		p = jp_lit(p, ",\"args\":{\"bytes\":");
		p = jp_u64(p, e->b);
		p = jp_lit(p, ",\"ptr\":");
		p = jp_hex(p, e->a);
		if (frees) {
			p = jp_lit(p, ",\"old_ptr\":");
			p = jp_hex(p, e->c);
		}
		return jp_lit(p, "}");
	}
	if (frees || !e->b) {
		/* A release; free(NULL) has no flag and no size and shows "ptr":"0x0". */
		p = jp_lit(p, ",\"args\":{\"ptr\":");
		p = jp_hex(p, e->c);
		return jp_lit(p, "}");
	}
	/* An allocation that failed: the size asked for, and the NULL it returned. */
	p = jp_lit(p, ",\"args\":{\"bytes\":");
	p = jp_u64(p, e->b);
	p = jp_lit(p, ",\"ptr\":\"0x0\"}");
	return p;
}

/* Whether the size rule keeps this complete event. */
static int keep_complete(struct chrome *c, const struct rec *r, const struct prof_event *e,
			 uint64_t dur)
{
	unsigned b;

	if (e->cat == PROF_CAT_USER || !c->rule.dropping)
		return 1;
	b = dur_bucket(dur);
	if (b > c->rule.bucket)
		return 1;
	/* given out of capture order (chrome_live.c): the first by place in the capture */
	if (b == c->rule.bucket && c->ev_place) {
		if (c->ev_place[e - r->ev] < c->tie_place_end)
			return 1;
	} else if (b == c->rule.bucket && c->tie_left > 0) {
		c->tie_left--;
		return 1;
	}
	c->dropped++;
	return 0;
}

/* Room for an X event beyond its strings: literals, four numbers, three pointers, or
 * the args of GPU work. */
/* An MPI call's message (PROF_EVF_COMM): bytes (null: not known), datatype, communicator
 * size, peer (null: none or not known). At most 16 + 3 * 20 bytes besides the datatype. */
static char *comm_args(char *p, const struct prof_event *e, const char *type, size_t tlen)
{
	p = jp_lit(p, ",\"args\":{\"bytes\":");
	p = e->b == PROF_COMM_UNKNOWN ? jp_lit(p, "null") : jp_u64(p, e->b);
	if (type) {
		p = jp_lit(p, ",\"datatype\":");
		p = jp_mem(p, type, tlen);
	}
	if (prof_comm_size(e->c)) {
		p = jp_lit(p, ",\"comm_size\":");
		p = jp_u64(p, prof_comm_size(e->c));
	}
	if (prof_comm_peer(e->c) >= 0) {
		p = jp_lit(p, ",\"peer\":");
		p = jp_i64(p, prof_comm_peer(e->c));
	}
	return jp_lit(p, "}");
}

#define X_EVENT_FIXED (256 + CHROME_GPU_ARGS_MAX)

static int complete(struct chrome *c, const struct rec *r, const struct prof_event *e)
{
	uint64_t dur = e->t1 > e->t0 ? e->t1 - e->t0 : 0;
	uint32_t name_id, cat_id;
	const char *name, *cat;
	size_t nlen, clen;
	char *p;

	/* given from chrome_live.c's spool: only the calls pass 1 showed are there (and the
	 * view would miss the large blocks the size rule left out of it) */
	if (e->cat == PROF_CAT_MEMORY && !c->ev_place) {
		int shown = alloc_view_shown(&c->alloc, 1, r->image, e, c->origin);
		if (shown <= 0) {
			c->alloc.hidden += !shown;
			return shown;
		}
	}
	if (!keep_complete(c, r, e, dur))
		return 0;
	if (c->is_kineto && e->cat == PROF_CAT_MEMORY)
		return kineto_memory(c, r->pidtid, r->pidtid_len, r->image, e, -1);
	c->written++;
	name_id = model_name(c->om, r->image, e->name);
	cat_id = model_category(c->om, r->image, e->cat);
	/* a PyTorch operator's input shapes (PROFILER_RECORD_SHAPES), an MPI call's datatype */
	int has_detail = (e->flags & PROF_EVF_DETAIL) && e->a && e->a <= UINT32_MAX;
	uint32_t detail_id = has_detail ? model_name(c->om, r->image, (uint32_t)(e->a - 1)) : 0;
	const char *detail = NULL;
	size_t dlen = 0;
	/* All cached before any pointer is taken: caching may move the cache. */
	if (escape_once(c, name_id) || escape_once(c, cat_id) ||
	    (has_detail && escape_once(c, detail_id)))
		return -1;
	name = escaped(c, name_id, &nlen);
	cat = escaped(c, cat_id, &clen);
	if (e->cat == PROF_CAT_MEMORY) {
		/* not "memory": TensorBoard's PyTorch plugin takes an X event of that category
		 * for one of PyTorch's memory instants and fails on the whole trace */
		cat = "\"" CHROME_CAT_ALLOCATOR "\"";
		clen = sizeof CHROME_CAT_ALLOCATOR + 1;
	}
	/* the PyTorch profiler's flavor: its categories, GPU work on its device and stream */
	const char *pidtid = r->pidtid;
	size_t pidtid_len = r->pidtid_len;
	char gpu_row[64];
	int cpu_op = 0;
	if (c->is_kineto) {
		const char *k = kineto_cat(cat, clen, name, nlen);
		if (k) {
			cat = k;
			clen = strlen(k);
			cpu_op = !strcmp(k, "\"cpu_op\"");
		}
		if (e->flags & PROF_EVF_GPU) {
			pidtid_len = kineto_gpu_row(gpu_row, e->c);
			pidtid = gpu_row;
			if (kineto_note_gpu_row(c, e->c))
				return -1;
		}
	}
	if (has_detail)
		detail = escaped(c, detail_id, &dlen);
	/* One reservation per event, then unchecked writes: the export's hot path. */
	p = jw_space(&c->w, nlen + clen + dlen + r->pidtid_len + X_EVENT_FIXED);
	if (!p)
		return -1;
	if (!c->first)
		*p++ = ',';
	c->first = 0;
	p = jp_lit(p, "\n{\"ph\":\"X\",\"name\":");
	p = jp_mem(p, name, nlen);
	p = jp_lit(p, ",\"cat\":");
	p = jp_mem(p, cat, clen);
	p = jp_mem(p, pidtid, pidtid_len);
	p = jp_lit(p, ",\"ts\":");
	p = jp_us(p, (int64_t)(e->t0 - c->origin));
	p = jp_lit(p, ",\"dur\":");
	p = jp_us(p, (int64_t)dur);
	if (e->cat == PROF_CAT_MEMORY)
		p = memory_args(p, e);
	else if (e->flags & (PROF_EVF_GPU | PROF_EVF_TID))
		p = chrome_gpu_args(c, p, cat_id, e);
	else if (e->flags & PROF_EVF_COMM)
		p = comm_args(p, e, detail, dlen);
	else if (cpu_op) {
		/* Kineto's: an id per operator, its shapes as JSON */
		p = jp_lit(p, ",\"args\":{\"External id\":");
		p = jp_u64(p, ++c->kineto.next_id);
		size_t raw_len = 0;
		const char *raw = has_detail ? model_str(c->om, detail_id, &raw_len) : NULL;
		if (raw && kineto_dims(raw, raw_len) && raw_len + 16 <= dlen + X_EVENT_FIXED / 2) {
			p = jp_lit(p, ",\"Input Dims\":");
			p = jp_mem(p, raw, raw_len);
		} else if (detail) {
			p = jp_lit(p, ",\"Input Shapes\":");
			p = jp_mem(p, detail, dlen);
		}
		p = jp_lit(p, "}");
	} else if (detail) {
		p = jp_lit(p, ",\"args\":{\"Input Shapes\":");
		p = jp_mem(p, detail, dlen);
		p = jp_lit(p, "}");
	}
	p = jp_lit(p, "}");
	c->w.len = (size_t)(p - c->w.buf);
	if (e->flags & (PROF_EVF_GPU | PROF_EVF_TID))
		return chrome_gpu_flow(c, r->image, pidtid, pidtid_len, e);
	return 0;
}

static int instant(struct chrome *c, const struct rec *r, const struct prof_event *e)
{
	chrome_sep(c);
	jw_lit(&c->w, "{\"ph\":\"i\",\"s\":\"t\",\"name\":");
	if (put_str(c, model_name(c->om, r->image, e->name)))
		return -1;
	jw_lit(&c->w, ",\"cat\":");
	if (put_str(c, model_category(c->om, r->image, e->cat)))
		return -1;
	jw_raw(&c->w, r->pidtid, r->pidtid_len);
	jw_lit(&c->w, ",\"ts\":");
	ts(c, e->t0);
	if (e->cat == PROF_CAT_STEP) {
		jw_lit(&c->w, ",\"args\":{\"step\":");
		jw_u64(&c->w, e->a);
		jw_lit(&c->w, "}");
	}
	jw_lit(&c->w, "}");
	if (c->is_kineto && e->cat == PROF_CAT_STEP)
		return kineto_step(c, r->pidtid, r->pidtid_len, r->image, r->thread, e);
	return 0;
}

static int counter(struct chrome *c, const struct rec *r, const struct prof_event *e)
{
	uint32_t name = model_name(c->om, r->image, e->name);
	double v;

	chrome_sep(c);
	jw_lit(&c->w, "{\"ph\":\"C\",\"name\":");
	if (put_str(c, name))
		return -1;
	jw_lit(&c->w, ",\"cat\":\"" PROF_CATNAME_COUNTER "\"");
	jw_raw(&c->w, r->pidtid, r->pidtid_len);
	jw_lit(&c->w, ",\"ts\":");
	ts(c, e->t0);
	jw_lit(&c->w, ",\"args\":{");
	put_str(c, name);
	jw_lit(&c->w, ":");
	if (e->flags & PROF_EVF_DOUBLE) {
		memcpy(&v, &e->a, sizeof(v));
		jw_double(&c->w, v);
	} else {
		jw_i64(&c->w, (int64_t)e->a);
	}
	jw_lit(&c->w, "}}");
	return 0;
}

static void lost(struct chrome *c, const struct rec *r, const struct prof_event *e)
{
	chrome_sep(c);
	jw_lit(&c->w, "{\"ph\":\"i\",\"s\":\"p\",\"name\":\"lost ");
	jw_u64(&c->w, e->a);
	/* the early buffer's loss happened before libprof ran, not at a full ring */
	if (e->b == PROF_LOST_STARTUP)
		jw_lit(&c->w, " events at start-up, before libprof started\",\"cat\":\"lost\"");
	else
		jw_lit(&c->w, " events\",\"cat\":\"lost\"");
	jw_raw(&c->w, r->pidtid, r->pidtid_len);
	jw_lit(&c->w, ",\"ts\":");
	ts(c, e->t0);
	jw_lit(&c->w, ",\"args\":{\"count\":");
	jw_u64(&c->w, e->a);
	jw_lit(&c->w, ",\"gap_us\":");
	jw_us(&c->w, (int64_t)(e->t1 > e->t0 ? e->t1 - e->t0 : 0));
	jw_lit(&c->w, "}}");
}

static int one(struct chrome *c, const struct rec *r, const struct prof_event *e)
{
	switch (e->type) {
	case PROF_EV_COMPLETE:
		return complete(c, r, e);
	case PROF_EV_INSTANT:
		c->written++;
		return instant(c, r, e);
	case PROF_EV_COUNTER:
		c->written++;
		return counter(c, r, e);
	case PROF_EV_LOST:
		c->written++;
		lost(c, r, e);
		return 0;
	default:
		return 0;
	}
}

int chrome_write_events(void *ctx, struct model *m, uint32_t image, uint32_t thread,
			const struct prof_event *ev, uint32_t n)
{
	struct chrome *c = ctx;
	struct rec r = { .image = image, .thread = thread, .ev = ev };
	uint32_t i;
	size_t k;

	memcpy(r.pidtid, ",\"pid\":", 7);
	k = 7 + fmt_u64(r.pidtid + 7, m->img[image].tpid);
	memcpy(r.pidtid + k, ",\"tid\":", 7);
	k += 7;
	k += fmt_u64(r.pidtid + k, m->thr[thread].tid);
	r.pidtid_len = k;
	if (c->is_kineto && n && kineto_note_thread(c, image, thread, ev[0].t0))
		return -1;
	for (i = 0; i < n; i++)
		if (one(c, &r, &ev[i]))
			return -1;
	/* A failed write (disk full) stops the read; pass2 reports it as such. */
	return c->w.err ? -1 : 0;
}
