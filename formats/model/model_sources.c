/* Several captures read as one (prof report rank0.prof rank1.prof, a directory of them):
 * each session a source, its processes keyed by (source, pid), its times put on the first
 * capture's clock. Sessions on one host and boot share CLOCK_MONOTONIC: their times are
 * left as they are. Another host's are moved by the difference of the two sessions'
 * anchors (each a CLOCK_MONOTONIC / CLOCK_REALTIME pair read at its start), which is as
 * good as the hosts' time sync (NTP: about a millisecond; PTP: microseconds); the ranks'
 * analysis refines that from collectives (ranks.c) and says by how much. */
#include <stdlib.h>
#include <string.h>

#include "formats/model/model.h"
#include "formats/model/model_internal.h"
#include "formats/util/json_writer.h"
#include "formats/util/vec.h"

uint64_t model_decimal(const char *v, size_t n)
{
	uint64_t x = 0;
	for (; n > 0 && *v >= '0' && *v <= '9'; v++, n--)
		x = x * 10 + (uint64_t)(*v - '0');
	return x;
}

/* The value of key in "key=value\n" text, or NULL (its length in *vlen). */
static const char *text_value(const char *p, uint32_t len, const char *key, size_t *vlen)
{
	size_t kl = strlen(key);
	for (const char *q = p, *end = p + len; q < end;) {
		const char *nl = memchr(q, '\n', (size_t)(end - q));
		size_t n = nl ? (size_t)(nl - q) : (size_t)(end - q);
		if (n > kl && !memcmp(q, key, kl) && q[kl] == '=') {
			*vlen = n - kl - 1;
			return q + kl + 1;
		}
		q += n + 1;
	}
	return NULL;
}

static int intern_value(struct model *m, const char *p, uint32_t len, const char *key,
			uint32_t *gid)
{
	size_t n;
	const char *v = text_value(p, len, key, &n);
	*gid = STR_NONE;
	return v && n ? strtab_intern(&m->str, v, n, gid) : 0;
}

uint64_t model_text_number(const char *p, uint32_t len, const char *key)
{
	size_t n;
	const char *v = text_value(p, len, key, &n);
	return v ? model_decimal(v, n) : 0;
}

/* Whether sources a and b run on one clock: the same boot of one host (a capture made
 * before boot ids were recorded: the same host name). */
static int same_clock(const struct model_source *a, const struct model_source *b)
{
	if (a->boot != STR_NONE && b->boot != STR_NONE)
		return a->boot == b->boot;
	return a->host != STR_NONE && a->host == b->host;
}

static void place_on_clock(struct model *m, uint32_t ix)
{
	struct model_source *s = &m->src[ix];
	s->domain = ix;
	for (uint32_t j = 0; j < ix; j++)
		if (same_clock(&m->src[j], s)) {
			s->domain = m->src[j].domain;
			break;
		}
	const struct model_source *d = &m->src[s->domain], *first = &m->src[0];
	if (s->domain == 0) {
		s->method = MODEL_CLOCK_SAME;
	} else if (s->domain != ix) {
		s->method = d->method;
		s->offset_ns = d->offset_ns;
	} else if (s->anchor_real && first->anchor_real) {
		s->method = MODEL_CLOCK_ANCHORS;
		/* realtime - monotonic is when each clock's zero was, in wall time */
		s->offset_ns = (int64_t)((s->anchor_real - s->anchor_mono) -
					 (first->anchor_real - first->anchor_mono));
	} else {
		s->method = MODEL_CLOCK_NONE;
	}
	if (ix < m->ngiven_fix)
		s->fix_ns = m->given_fix[ix];
}

int model_source_session(struct model *m, const char *p, uint32_t len)
{
	int rc = cap_sources_session(&m->sources, p, len);
	if (rc <= 0)
		return rc; /* a part's repeat, or out of memory */
	uint32_t ix = m->sources.cur;
	if (VEC_RESERVE(m->src, m->src_cap, (size_t)ix + 1))
		return -1;
	struct model_source *s = &m->src[ix];
	memset(s, 0, sizeof *s);
	if (intern_value(m, p, len, "host", &s->host) ||
	    intern_value(m, p, len, "boot_id", &s->boot) ||
	    intern_value(m, p, len, "command", &s->command))
		return -1;
	s->start_ns = model_text_number(p, len, "start_ns");
	s->anchor_mono = model_text_number(p, len, "anchor_monotonic_ns");
	s->anchor_real = model_text_number(p, len, "anchor_realtime_ns");
	place_on_clock(m, ix);
	if (ix > 0) {
		/* the timeline starts with the earliest session */
		uint64_t start = model_source_time(m, s->start_ns);
		if (!m->have_start || start < m->start_ns)
			m->start_ns = start;
		m->have_start = 1;
	}
	return 1;
}

static int64_t shift_of(const struct model_source *s)
{
	return (int64_t)((uint64_t)s->offset_ns + (uint64_t)s->fix_ns); /* wraps, never UB */
}

int64_t model_source_shift(const struct model *m)
{
	return m->sources.n ? shift_of(&m->src[m->sources.cur]) : 0;
}

static uint64_t moved(uint64_t t, int64_t shift)
{
	if (!shift || !t)
		return t;
	uint64_t by = shift < 0 ? 0 - (uint64_t)shift : (uint64_t)shift;
	if (shift < 0)
		return by > t ? 0 : t - by;
	return t + by < t ? UINT64_MAX : t + by;
}

uint64_t model_source_time(const struct model *m, uint64_t t)
{
	return moved(t, model_source_shift(m));
}

void model_sources_refined(struct model *m)
{
	if (m->sources.n < 2)
		return;
	uint64_t start = m->src[0].start_ns;
	for (uint32_t i = 1; i < m->sources.n; i++) {
		uint64_t t = moved(m->src[i].start_ns, shift_of(&m->src[i]));
		if (t && t < start)
			start = t;
	}
	if (start)
		m->start_ns = start;
}

void model_source_end(struct model *m, const char *p, uint32_t len)
{
	uint64_t end = model_source_time(m, model_text_number(p, len, "end_ns"));
	if (end > m->end_ns || !m->have_end)
		m->end_ns = end;
	m->have_end = 1;
	m->end_events += model_text_number(p, len, "events");
	m->end_lost += model_text_number(p, len, "lost");
}

const char *model_clock_method_name(enum model_clock_method k)
{
	static const char *const names[] = {"same", "anchors", "collectives", "none"};
	return k <= MODEL_CLOCK_NONE ? names[k] : "none";
}

void model_sources_json(struct jw *w, const struct model *m)
{
	if (m->sources.n < 2) {
		jw_lit(w, "null");
		return;
	}
	jw_lit(w, "[");
	for (uint32_t i = 0; i < m->sources.n; i++) {
		const struct model_source *s = &m->src[i];
		jw_text(w, i ? ",{\"capture\":" : "{\"capture\":");
		jw_u64(w, i);
		jw_lit(w, ",\"host\":");
		if (s->host == STR_NONE)
			jw_lit(w, "null");
		else
			jw_cstr(w, model_str(m, s->host, NULL));
		jw_lit(w, ",\"command\":");
		if (s->command == STR_NONE)
			jw_lit(w, "null");
		else
			jw_cstr(w, model_str(m, s->command, NULL));
		jw_lit(w, ",\"clock\":");
		jw_cstr(w, model_clock_method_name(s->method));
		jw_lit(w, ",\"offset_ns\":");
		jw_i64(w, s->offset_ns + s->fix_ns);
		jw_lit(w, ",\"error_ns\":");
		if (s->method == MODEL_CLOCK_COLLECTIVES)
			jw_u64(w, s->fix_err_ns);
		else if (s->method == MODEL_CLOCK_SAME)
			jw_u64(w, 0);
		else
			jw_lit(w, "null"); /* as good as the hosts' time sync: not known here */
		jw_lit(w, ",\"collectives\":");
		jw_u64(w, s->fix_pairs);
		jw_lit(w, "}");
	}
	jw_lit(w, "]");
}
