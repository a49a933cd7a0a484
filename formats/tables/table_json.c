/* The tables as one JSON document for machines; the schema is in docs/FORMATS.md. All
 * *_ns instants are on the session clock (subtract start_ns for times into the run). */
#include <math.h>
#include <string.h>

#include "formats/util/json_writer.h"
#include "formats/tables/report.h"
#include "formats/tables/table_ranks.h"
#include "formats/symbols/stack_names.h"

static void str_gid(struct jw *w, const struct model *m, uint32_t gid)
{
	size_t len;
	const char *s;

	if (gid == STR_NONE) {
		jw_lit(w, "null");
		return;
	}
	s = model_str(m, gid, &len);
	jw_str(w, s, len);
}

static void int_or_null(struct jw *w, int32_t v)
{
	if (v < 0)
		jw_lit(w, "null");
	else
		jw_u64(w, (uint64_t)v);
}

/* the launcher's facts (null: not set; launcher "": variables of none known) */
static void job_fields(struct jw *w, const struct model *m, const struct image *im)
{
	jw_lit(w, ",\"rank\":");
	int_or_null(w, im->rank);
	jw_lit(w, ",\"local_rank\":");
	int_or_null(w, im->local_rank);
	jw_lit(w, ",\"world_size\":");
	int_or_null(w, im->world_size);
	jw_lit(w, ",\"launcher\":");
	str_gid(w, m, im->launcher);
	jw_lit(w, ",\"job\":");
	str_gid(w, m, im->job);
	jw_lit(w, ",\"host\":");
	str_gid(w, m, im->host);
}

static void fact(struct jw *w, const struct model *m, const char *key)
{
	jw_cstr_or_null(w, model_fact(m, key));
}

static void header(struct jw *w, const struct report *r)
{
	jw_lit(w, "{\"command\":");
	jw_cstr(w, model_command(r->m));
	jw_lit(w, ",\"host\":");
	fact(w, r->m, "host");
	jw_lit(w, ",\"clock\":");
	fact(w, r->m, "clock");
	jw_lit(w, ",\"clock_anchor\":");
	const char *mono = model_fact(r->m, "anchor_monotonic_ns");
	const char *real = model_fact(r->m, "anchor_realtime_ns");
	if (mono && real && mono[strspn(mono, "0123456789")] == 0 &&
	    real[strspn(real, "0123456789")] == 0 && *mono && *real) {
		jw_lit(w, "{\"monotonic_ns\":");
		jw_text(w, mono);
		jw_lit(w, ",\"realtime_ns\":");
		jw_text(w, real);
		jw_lit(w, "}");
	} else {
		jw_lit(w, "null");
	}
	jw_lit(w, ",\"captures\":");
	model_sources_json(w, r->m);
	jw_lit(w, ",\"start_ns\":");
	jw_u64(w, r->origin);
	jw_lit(w, ",\"duration_ns\":");
	jw_u64(w, r->duration);
	jw_lit(w, ",\"session_end\":");
	jw_cstr(w, r->m->have_session_end ? "present" : "missing");
	jw_lit(w, ",\"events\":");
	jw_u64(w, r->m->events);
	jw_lit(w, ",\"lost_events\":");
	jw_u64(w, r->lost);
	jw_lit(w, ",\"lost_startup_events\":");
	jw_u64(w, model_lost_startup(r->m));
	jw_lit(w, ",\"drain_waited_max_ns\":");
	jw_u64(w, model_drain_waited_max(r->m));
	jw_lit(w, ",\"unnamed_events\":");
	jw_u64(w, model_names_lost(r->m));
	jw_lit(w, ",\"unstacked_events\":");
	jw_u64(w, model_stacks_lost(r->m));
	jw_lit(w, ",\"corrupt_lost_events\":");
	jw_u64(w, model_corrupt_lost(r->m));
	jw_lit(w, ",\"window\":");
	model_window_json(w, r->m);
	jw_lit(w, ",\"schedule\":");
	fact(w, r->m, "schedule");
	jw_lit(w, ",\"parts\":");
	model_parts_json(w, r->m);
}

static void gaps(struct jw *w, const struct model *m)
{
	size_t i;

	jw_lit(w, ",\n\"lost_gaps\":[");
	for (i = 0; i < m->ngaps; i++) {
		const struct lost_gap *g = &m->gaps[i];
		jw_text(w, i ? ",\n{\"pid\":" : "\n{\"pid\":");
		jw_u64(w, g->pid);
		jw_lit(w, ",\"tid\":");
		jw_u64(w, g->tid);
		jw_lit(w, ",\"count\":");
		jw_u64(w, g->count);
		jw_lit(w, ",\"start_ns\":");
		jw_u64(w, g->t0);
		jw_lit(w, ",\"end_ns\":");
		jw_u64(w, g->t1);
		jw_lit(w, ",\"cause\":");
		jw_cstr(w, g->startup ? "startup" : "ring");
		jw_lit(w, "}");
	}
	jw_lit(w, "]");
}

static void threads(struct jw *w, const struct model *m, size_t image)
{
	size_t i, k = 0;

	jw_lit(w, ",\"threads\":[");
	for (i = 0; i < m->nthr; i++) {
		if (m->thr[i].image != image)
			continue;
		jw_text(w, k++ ? ",{\"tid\":" : "{\"tid\":");
		jw_u64(w, m->thr[i].tid);
		jw_lit(w, ",\"name\":");
		str_gid(w, m, m->thr[i].name);
		jw_lit(w, "}");
	}
	jw_lit(w, "]");
}

/* Every allocation site with its exact counts (sites exist when stacks were captured). */
static void sites(struct jw *w, struct stack_names *sn, const struct mem_image *mi)
{
	size_t n;
	struct site_row *rows = site_rows(sn, mi, &n);

	if (!rows)
		return;
	jw_lit(w, ",\"allocation_sites\":[");
	for (size_t k = 0; k < n; k++) {
		const struct site_row *s = &rows[k];
		jw_text(w, k ? ",{\"site\":" : "{\"site\":");
		jw_str(w, s->name, strlen(s->name));
		jw_lit(w, ",\"allocations\":");
		jw_u64(w, s->allocs);
		jw_lit(w, ",\"bytes\":");
		jw_u64(w, s->bytes);
		jw_lit(w, ",\"bytes_at_peak\":");
		jw_u64(w, s->peak_bytes);
		jw_lit(w, ",\"live_blocks_at_end\":");
		jw_u64(w, s->live_count);
		jw_lit(w, ",\"live_bytes_at_end\":");
		jw_u64(w, s->live_bytes);
		jw_lit(w, "}");
	}
	jw_lit(w, "]");
	site_rows_free(rows, n);
}

/* The figures of one memory domain, a process's heap or one of its devices. */
static void mem_fields(struct jw *w, const struct mem_image *mi)
{
	jw_lit(w, ",\"allocations\":");
	jw_u64(w, mi->allocs);
	jw_lit(w, ",\"frees\":");
	jw_u64(w, mi->frees);
	jw_lit(w, ",\"frees_unmatched\":");
	jw_u64(w, mi->frees_unmatched);
	jw_lit(w, ",\"bytes_allocated\":");
	jw_u64(w, mi->bytes);
	jw_lit(w, ",\"peak_live_bytes\":");
	jw_u64(w, mi->peak);
	jw_lit(w, ",\"peak_at_ns\":");
	if (mi->peak)
		jw_u64(w, mi->peak_t);
	else
		jw_lit(w, "null");
	jw_lit(w, ",\"live_bytes_at_end\":");
	jw_u64(w, mi->live_end);
	/* applied out of time order (formats/model/memtrack.h): the peak and live figures
	 * are then approximate */
	jw_lit(w, ",\"ops_out_of_order\":");
	jw_u64(w, mi->late);
}

static void process(struct jw *w, const struct report *r, struct stack_names *sn, size_t i)
{
	const struct image *im = &r->m->img[i];
	const struct mem_image *mi = &im->mem;

	jw_lit(w, "{\"pid\":");
	jw_u64(w, im->pid);
	jw_lit(w, ",\"capture\":");
	jw_u64(w, im->source);
	jw_lit(w, ",\"ppid\":");
	jw_u64(w, im->ppid);
	jw_lit(w, ",\"exec_seq\":");
	jw_u64(w, im->exec_seq);
	jw_lit(w, ",\"command\":");
	str_gid(w, r->m, im->command);
	jw_lit(w, ",\"label\":");
	str_gid(w, r->m, im->label);
	job_fields(w, r->m, im);
	jw_lit(w, ",\"exit_status\":");
	if (im->ended && im->status != INT32_MIN)
		jw_i64(w, im->status);
	else
		jw_lit(w, "null");
	mem_fields(w, mi);
	jw_lit(w, ",\"gpu_memory\":[");
	for (size_t d = 0, n = 0; d < MODEL_DEVICES; d++) {
		const struct mem_image *g = &im->gpu[d];
		char name[32];
		if (!g->allocs && !g->frees)
			continue;
		jw_text(w, n++ ? ",{\"memory\":" : "{\"memory\":");
		jw_cstr(w, model_device_name((int)d, name, sizeof(name)));
		jw_lit(w, ",\"device\":");
		if (!MODEL_IS_GPU((int)d))
			jw_lit(w, "null");
		else
			jw_u64(w, d);
		mem_fields(w, g);
		jw_lit(w, ",\"source\":");
		jw_cstr(w, d >= MODEL_MXNET_CPU ? "mxnet" : im->gpu_from_cupti ? "cupti" : "cuda_api");
		if (d < MODEL_MXNET_CPU && im->gpu_from_cupti) {
			/* the wrapped calls' allocations and releases, fewer than CUPTI's */
			jw_lit(w, ",\"wrapped_calls\":");
			jw_u64(w, im->gpu_wrapped_calls);
		}
		if (sn && g->nsites)
			sites(w, sn, g);
		jw_lit(w, "}");
	}
	jw_lit(w, "]");
	jw_lit(w, ",\"size_histogram\":[");
	for (size_t k = 0, n = 0; k < MEM_SIZE_BUCKETS; k++) {
		if (!mi->size_count[k])
			continue;
		jw_text(w, n++ ? ",{\"max_bytes\":" : "{\"max_bytes\":");
		jw_u64(w, k ? 1ull << (k - 1) : 0);
		jw_lit(w, ",\"allocations\":");
		jw_u64(w, mi->size_count[k]);
		jw_lit(w, ",\"bytes\":");
		jw_u64(w, mi->size_bytes[k]);
		jw_lit(w, "}");
	}
	jw_lit(w, "]");
	if (sn && mi->nsites)
		sites(w, sn, mi);
	threads(w, r->m, i);
	jw_lit(w, "}");
}

static void processes(struct jw *w, const struct report *r)
{
	struct stack_names sn;
	size_t i, shown = 0;
	int named = 0;

	for (i = 0; i < r->m->nimg && !named; i++)
		for (int d = -1; d < MODEL_DEVICES && !named; d++)
			named = MODEL_DOMAIN(&r->m->img[i], d)->nsites > 0;
	if (named && stack_names_init(&sn, r->m)) {
		stack_names_free(&sn);
		named = 0;
	}
	jw_lit(w, ",\n\"processes\":[");
	for (i = 0; i < r->m->nimg; i++) {
		if (r->m->img[i].folded) /* a launcher: counted in "folded" */
			continue;
		jw_text(w, shown++ ? ",\n" : "\n");
		process(w, r, named ? &sn : NULL, i);
	}
	jw_lit(w, "]");
	jw_lit(w, ",\n\"folded\":{\"images\":");
	jw_u64(w, r->fold ? r->fold->images : 0);
	jw_lit(w, ",\"helper_processes\":");
	jw_u64(w, r->fold ? r->fold->helpers : 0);
	jw_lit(w, ",\"events\":");
	jw_u64(w, r->m->folded_events);
	jw_lit(w, "}");
	if (named)
		stack_names_free(&sn);
}

static void row(struct jw *w, const struct report *r, const struct report_cat *c,
		const struct row *x)
{
	jw_lit(w, "{\"category\":");
	str_gid(w, r->m, c->cat);
	jw_lit(w, ",\"name\":");
	str_gid(w, r->m, x->name);
	jw_lit(w, ",\"count\":");
	jw_u64(w, x->count);
	jw_lit(w, ",\"total_ns\":");
	jw_u64(w, x->total);
	jw_lit(w, ",\"self_ns\":");
	jw_u64(w, x->self);
	jw_lit(w, ",\"min_ns\":");
	jw_u64(w, x->min);
	jw_lit(w, ",\"max_ns\":");
	jw_u64(w, x->max);
	jw_lit(w, ",\"avg_ns\":");
	jw_u64(w, row_avg(x));
	jw_lit(w, ",\"median_ns\":");
	jw_u64(w, x->median);
	jw_lit(w, ",\"percent\":");
	jw_double(w, round(row_percent(c, x) * 100) / 100);
	jw_lit(w, ",\"cpu_mem_bytes\":");
	jw_i64(w, x->mem);
	jw_lit(w, ",\"self_cpu_mem_bytes\":");
	jw_i64(w, x->self_mem);
	if (c->untimed) /* its times are 0: the calls were not timed */
		jw_lit(w, ",\"timed\":false");
	jw_lit(w, "}");
}

static void rows(struct jw *w, const struct report *r)
{
	size_t i, j, k = 0;

	jw_lit(w, ",\n\"rows\":[");
	for (i = 0; i < r->ncats; i++) {
		for (j = 0; j < r->cats[i].nrows; j++) {
			jw_text(w, k++ ? ",\n" : "\n");
			row(w, r, &r->cats[i], r->cats[i].rows[j]);
		}
	}
	jw_lit(w, "]");
}

static void marks_counters(struct jw *w, const struct report *r)
{
	size_t i;

	jw_lit(w, ",\n\"marks\":[");
	for (i = 0; r->show_marks && i < r->s->nmarks; i++) {
		jw_text(w, i ? ",{\"name\":" : "{\"name\":");
		str_gid(w, r->m, r->s->marks[i].name);
		jw_lit(w, ",\"count\":");
		jw_u64(w, r->s->marks[i].count);
		jw_lit(w, "}");
	}
	jw_lit(w, "],\n\"counters\":[");
	for (i = 0; r->show_counters && i < r->s->nctrs; i++) {
		const struct counter *c = &r->s->ctrs[i];
		jw_text(w, i ? ",{\"name\":" : "{\"name\":");
		str_gid(w, r->m, c->name);
		jw_lit(w, ",\"count\":");
		jw_u64(w, c->count);
		jw_lit(w, ",\"min\":");
		jw_double(w, c->min);
		jw_lit(w, ",\"max\":");
		jw_double(w, c->max);
		jw_lit(w, ",\"last\":");
		jw_double(w, c->last);
		jw_lit(w, "}");
	}
	jw_lit(w, "]");
}

/* One entry of copies or messages, its first key named as each calls it; the entry is
 * left open for what only copies add. */
static void copy_row_fields(struct jw *w, const struct report *r, const struct copy_row *x,
			    int first, int kind)
{
	if (!first)
		jw_lit(w, ",");
	if (kind)
		jw_lit(w, "{\"kind\":");
	else
		jw_lit(w, "{\"name\":");
	str_gid(w, r->m, x->name);
	jw_lit(w, ",\"category\":");
	str_gid(w, r->m, x->cat);
	jw_lit(w, ",\"count\":");
	jw_u64(w, x->count);
	jw_lit(w, ",\"bytes\":");
	jw_u64(w, x->bytes);
	jw_lit(w, ",\"total_ns\":");
	jw_u64(w, x->total);
}

static void messages(struct jw *w, const struct report *r)
{
	jw_lit(w, ",\n\"messages\":[");
	for (size_t i = 0; r->show_messages && i < r->s->nmsgs; i++) {
		copy_row_fields(w, r, &r->s->msgs[i], i == 0, 0);
		jw_lit(w, "}");
	}
	jw_lit(w, "]");
}

static void copies(struct jw *w, const struct report *r)
{
	jw_lit(w, ",\n\"copies\":[");
	for (size_t i = 0; r->show_copies && i < r->s->ncopies; i++) {
		const struct copy_row *x = &r->s->copies[i];
		copy_row_fields(w, r, x, i == 0, 1);
		jw_lit(w, ",\"bandwidth_gbps\":");
		jw_double(w, round(copy_bandwidth(x) * 1000) / 1000);
		jw_lit(w, "}");
	}
	jw_lit(w, "]");
}

static void steps(struct jw *w, const struct report *r)
{
	const struct step_summary *s = &r->s->step;

	jw_lit(w, ",\n\"steps\":");
	if (!r->show_steps) {
		jw_lit(w, "null");
		return;
	}
	jw_lit(w, "{\"count\":");
	jw_u64(w, s->count);
	jw_lit(w, ",\"intervals\":");
	jw_u64(w, s->intervals);
	jw_lit(w, ",\"mean_interval_ns\":");
	jw_u64(w, s->mean_ns);
	jw_lit(w, ",\"median_interval_ns\":");
	jw_u64(w, s->median_ns);
	jw_lit(w, "}");
}

int table_json(const struct report *r, FILE *out)
{
	struct jw w;

	if (jw_init(&w, out, 1 << 16))
		return -1;
	header(&w, r);
	gaps(&w, r->m);
	processes(&w, r);
	rows(&w, r);
	marks_counters(&w, r);
	copies(&w, r);
	messages(&w, r);
	steps(&w, r);
	table_ranks_json(r, &w);
	jw_lit(&w, ",\n\"damaged\":");
	jw_text(&w, r->damage ? "true" : "false");
	if (r->damage) {
		jw_lit(&w, ",\"damage\":");
		jw_cstr(&w, r->damage);
	}
	jw_lit(&w, "}\n");
	return jw_finish(&w);
}
