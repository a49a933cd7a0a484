/* Session-level facts derived from the model, robust to missing session records (a
 * collector that crashed mid-write leaves no CAP_SESSION_END). */
#include "formats/model/model.h"
#include "formats/util/json_writer.h"

#include <stdlib.h>
#include <string.h>

static const char *find(const struct model *m, const struct session_kv *kv, size_t n,
			const char *key)
{
	size_t i, klen = strlen(key), len;
	const char *v = NULL;

	/* The last value of a key wins, as for thread names. */
	for (i = 0; i < n; i++) {
		const char *k = model_str(m, kv[i].key, &len);
		if (len == klen && !memcmp(k, key, klen))
			v = model_str(m, kv[i].val, NULL);
	}
	return v;
}

const char *model_fact(const struct model *m, const char *key)
{
	const char *v = find(m, m->session, m->nsession, key);

	return v ? v : find(m, m->session_end, m->nsession_end, key);
}

int model_alloc_timed(const struct model *m)
{
	const char *v = model_fact(m, "alloc_timing");

	return !v || strcmp(v, "0");
}

/* The command line the session was started with, unless its process was a launcher the
 * fold hid: then the one it became (through pyenv, the Python the user ran, not
 * `/usr/bin/env bash ~/.pyenv/shims/python3 ...`). */
const char *model_command(const struct model *m)
{
	const char *c = model_fact(m, "command");
	size_t i;

	if (m->nimg && m->img[0].folded && !m->img[0].exec_seq) {
		const uint64_t *cur = u64map_find(&m->pid_image, model_pid_key(&m->img[0]));
		if (cur && *cur < m->nimg && !m->img[*cur].folded &&
		    m->img[*cur].command != STR_NONE)
			return model_str(m, m->img[*cur].command, NULL);
	}
	if (c && *c)
		return c;
	for (i = 0; i < m->nimg; i++)
		if (m->img[i].command != STR_NONE)
			return model_str(m, m->img[i].command, NULL);
	return "?";
}

uint64_t model_origin(const struct model *m)
{
	if (m->have_start)
		return m->start_ns;
	return m->first_t == UINT64_MAX ? 0 : m->first_t;
}

uint64_t model_end(const struct model *m)
{
	uint64_t o = model_origin(m);
	uint64_t e = m->have_end ? m->end_ns : m->last_t;

	return e < o ? o : e;
}

uint64_t model_lost(const struct model *m)
{
	uint64_t lost = m->lost, procs = 0;
	size_t i;

	/* parts: the session's and processes' totals cover parts that may not be read (or
	 * were dropped by a flight recorder); the LOST records read are the parts' own */
	if (m->parts)
		return m->lost;
	for (i = 0; i < m->nimg; i++)
		procs += m->img[i].lost_reported;
	if (m->end_lost > lost)
		lost = m->end_lost;
	return procs > lost ? procs : lost;
}

uint64_t model_lost_startup(const struct model *m)
{
	uint64_t lost = model_lost(m);
	return m->lost_startup < lost ? m->lost_startup : lost;
}

size_t model_shown_pids(const struct model *m)
{
	size_t n = 0;

	for (size_t i = 0; i < m->nimg; i++) {
		const uint64_t *cur = u64map_find(&m->pid_image, model_pid_key(&m->img[i]));
		n += cur && *cur == i && !m->img[i].folded;
	}
	return n;
}

int model_window(const struct model *m, uint64_t *start, uint64_t *end, uint64_t *left_out)
{
	const char *ws = model_fact(m, "window_start_ns"), *we = model_fact(m, "window_end_ns");
	const char *lo = model_fact(m, "left_out");
	if (!ws)
		return 0;
	*start = strtoull(ws, NULL, 10);
	*end = we ? strtoull(we, NULL, 10) : 0;
	*left_out = lo ? strtoull(lo, NULL, 10) : 0;
	return 1;
}

void model_window_json(struct jw *w, const struct model *m)
{
	uint64_t start, end, left_out;
	if (!model_window(m, &start, &end, &left_out)) {
		jw_lit(w, "null");
		return;
	}
	jw_lit(w, "{\"start_ns\":");
	jw_u64(w, start);
	jw_lit(w, ",\"end_ns\":");
	if (end)
		jw_u64(w, end);
	else
		jw_lit(w, "null");
	jw_lit(w, ",\"left_out\":");
	jw_u64(w, left_out);
	jw_lit(w, "}");
}

static uint64_t fact_u64(const struct model *m, const char *key)
{
	const char *v = model_fact(m, key);
	return v ? strtoull(v, NULL, 10) : 0;
}

int model_parts(const struct model *m, struct model_parts *p)
{
	if (!m->parts)
		return 0;
	*p = (struct model_parts){.rotate_ns = fact_u64(m, "rotate_ns"),
				  .rotate_bytes = fact_u64(m, "rotate_bytes"),
				  .flight_ns = fact_u64(m, "flight_ns"),
				  .flight_bytes = fact_u64(m, "flight_bytes"),
				  .parts = m->parts, .first = m->part_first, .last = m->part_last,
				  .kept_from = m->keep_from, .left_out = m->kept_out};
	return 1;
}

void model_parts_json(struct jw *w, const struct model *m)
{
	struct model_parts p;
	if (!model_parts(m, &p)) {
		jw_lit(w, "null");
		return;
	}
	const char *keys[] = {"parts", "first", "last", "rotate_ns", "rotate_bytes", "flight_ns",
			      "flight_bytes", "kept_from_ns", "left_out"};
	uint64_t vals[] = {p.parts, p.first, p.last, p.rotate_ns, p.rotate_bytes, p.flight_ns,
			   p.flight_bytes, p.kept_from, p.left_out};
	for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
		jw_raw(w, i ? "," : "{", 1);
		jw_cstr(w, keys[i]);
		jw_lit(w, ":");
		jw_u64(w, vals[i]);
	}
	jw_lit(w, "}");
}

uint64_t model_names_lost(const struct model *m)
{
	return fact_u64(m, "names_lost");
}

uint64_t model_stacks_lost(const struct model *m)
{
	return fact_u64(m, "stacks_lost");
}

uint64_t model_corrupt_lost(const struct model *m)
{
	return fact_u64(m, "corrupt_lost");
}

uint64_t model_drain_waited_max(const struct model *m)
{
	return fact_u64(m, "drain_waited_max_ns");
}
