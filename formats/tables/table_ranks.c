/* Ranks and the straggler table. A step's "compute" on a rank is its time out of
 * collectives; the slowest rank of a step is the one with the most, and the others
 * wait for it in the collectives. */
#include <stdlib.h>
#include <string.h>

#include "formats/model/ranks.h"
#include "formats/tables/report.h"
#include "formats/tables/table_ranks.h"
#include "formats/tables/textfmt.h"
#include "formats/util/json_writer.h"

#define TEXT_STEPS 20 /* steps the text table lists; the JSON has them all */

static uint64_t compute_ns(const struct rank_step *s)
{
	uint64_t len = s->t1 - s->t0;
	return s->coll_ns < len ? len - s->coll_ns : 0;
}

struct step_verdict {
	size_t slowest, most_waiting;  /* indexes into ranks.p */
	uint64_t median_compute;       /* over all ranks */
};

static struct step_verdict verdict(const struct ranks *k, size_t j, uint64_t *scratch)
{
	struct step_verdict v = {0, 0, 0};
	for (size_t i = 0; i < k->nranks; i++) {
		const struct rank_step *s = &k->p[i].steps[j];
		scratch[i] = compute_ns(s);
		if (scratch[i] > compute_ns(&k->p[v.slowest].steps[j]))
			v.slowest = i;
		if (s->wait_ns > k->p[v.most_waiting].steps[j].wait_ns)
			v.most_waiting = i;
	}
	v.median_compute = median_u64(scratch, k->nranks);
	return v;
}

static uint64_t others_median_wait(const struct ranks *k, size_t except, uint64_t *scratch)
{
	size_t n = 0;
	for (size_t i = 0; i < k->nranks; i++)
		if (i != except)
			scratch[n++] = ranks_waited(k, i);
	return median_u64(scratch, n);
}

/* Per name, its time over the ranks: where one rank spends more than the others. */
static void across_text(const struct report *r, FILE *out)
{
	const struct ranks *k = &r->s->ranks;
	char t[4][TEXTFMT_LEN], name[4 * 32 + 4], cat[4 * 12 + 4];

	fprintf(out, "\nAcross ranks (each name's total time on each of the %zu ranks; a rank "
		     "without calls: 0)\n%-32s %-12s %6s %11s %11s %11s %8s\n", k->nranks, "Name",
		"Category", "Ranks", "Min", "Median", "Max", "Slowest");
	for (size_t i = 0; i < k->nnames && i < TEXT_STEPS; i++) {
		const struct rank_name *x = &k->names[i];
		size_t len;
		const char *s = model_str(r->m, x->name, &len);
		size_t cols = fmt_name(name, s, len, 32);
		fputs(name, out);
		fprintf(out, "%*s ", (int)(32 - cols), "");
		s = model_str(r->m, x->cat, &len);
		cols = fmt_name(cat, s, len, 12);
		fputs(cat, out);
		fprintf(out, "%*s %6zu %11s %11s %11s %8d\n", (int)(12 - cols), "", x->ranks,
			fmt_dur(t[0], x->min), fmt_dur(t[1], x->median), fmt_dur(t[2], x->max),
			(int)x->slowest);
	}
	if (k->nnames > TEXT_STEPS)
		fprintf(out, "(%zu more names in --format json)\n", k->nnames - TEXT_STEPS);
}

/* A duration, or "-" when not known (0). */
static const char *dur_or_dash(char *buf, uint64_t ns)
{
	return ns ? fmt_dur(buf, ns) : "-";
}

static void slowest_line(const struct ranks *k, uint64_t *scratch, FILE *out)
{
	char a[TEXTFMT_LEN], b[TEXTFMT_LEN];
	size_t slow = k->slowest;
	const char *what = k->slow_by == RANK_SLOW_CPU ? "CPU time" : "wall time";
	if (k->slow_by == RANK_SLOW_WAITING)
		fprintf(out, "Slowest: rank %d (waited %s in collectives%s; the other ranks %s, "
			     "median)\n",
			(int)k->p[slow].rank, fmt_dur(a, ranks_waited(k, slow)),
			k->nsteps ? " of the steps below" : "",
			fmt_dur(b, others_median_wait(k, slow, scratch)));
	else if (k->stands_out)
		fprintf(out, "Slowest: rank %d (%s %s, %.2fx the other ranks' median %s; no "
			     "collectives: nothing waits for it, but the job ends when it does)\n",
			(int)k->p[slow].rank, what, fmt_dur(a, k->slow_value),
			(double)k->slow_value / (double)k->others_median,
			fmt_dur(b, k->others_median));
	else
		fprintf(out, "Slowest: none stands out (the most %s, rank %d's %s, is within %d%% "
			     "of the other ranks' median %s)\n",
			what, (int)k->p[slow].rank, dur_or_dash(a, k->slow_value),
			RANKS_STANDS_OUT_PCT - 100, dur_or_dash(b, k->others_median));
}

void table_ranks_text(const struct report *r, FILE *out)
{
	const struct ranks *k = &r->s->ranks;
	char a[TEXTFMT_LEN], b[TEXTFMT_LEN], c[TEXTFMT_LEN], d[3][TEXTFMT_LEN], name[4 * 34 + 4];
	uint64_t *scratch;

	if (k->nnames)
		across_text(r, out);
	if (!k->nranks || !(scratch = malloc(k->nranks * sizeof *scratch)))
		return;
	if (k->collectives)
		fprintf(out, "\nRanks: %zu (collectives matched across ranks by name and order; "
			     "waiting: in a collective before its last rank arrived)\n", k->nranks);
	else
		fprintf(out, "\nRanks: %zu (no collectives between them: compared by their %s)\n",
			k->nranks, k->slow_by == RANK_SLOW_CPU ? "CPU time" : "wall time");
	fprintf(out, "%-5s %-8s %-34s %10s %10s %10s", "Rank", "PID", "Process", "Wall", "CPU",
		"Active");
	if (k->collectives)
		fprintf(out, " %11s %15s %12s", "Collectives", "In collectives", "Waiting");
	fputc('\n', out);
	for (size_t i = 0; i < k->nranks; i++) {
		const struct rank_proc *p = &k->p[i];
		const struct image *im = &r->m->img[p->image];
		size_t len = 1;
		const char *s = im->label != STR_NONE ? model_str(r->m, im->label, &len) : NULL;
		size_t cols = s ? fmt_name(name, s, len, 34) : fmt_name(name, "?", 1, 34);
		fprintf(out, "%-5d %-8u %s%*s %10s %10s %10s", (int)p->rank, im->pid, name,
			(int)(34 - cols), "", dur_or_dash(d[0], p->wall_ns),
			dur_or_dash(d[1], p->cpu_ns), fmt_dur(d[2], p->active_ns));
		if (k->collectives)
			fprintf(out, " %11s %15s %12s", fmt_count(a, p->ncoll),
				fmt_dur(b, p->coll_ns), fmt_dur(c, p->wait_ns));
		fputc('\n', out);
	}
	slowest_line(k, scratch, out);
	fprintf(out, "(wall: the process's start to its end; CPU: user + system of all its "
		     "threads, '-' where it was killed; active: in its recorded top-level calls, "
		     "threads summed)\n");
	if (k->unmatched || k->dropped)
		fprintf(out, "(%s collective calls not made on every rank, %s beyond the %u kept "
			     "per rank: not matched)\n",
			fmt_count(a, k->unmatched), fmt_count(b, k->dropped),
			RANKS_MAX_COLLECTIVES);
	if (k->nsteps) {
		fprintf(out, "\nSteps across ranks (each rank's %s to its next): %zu\n",
			k->step_kind == RANK_STEPS_OPTIMIZER ? "Optimizer.step end"
			: k->step_kind == RANK_STEPS_PROFILER ? "ProfilerStep start"
							      : "step mark",
			k->nsteps);
		fprintf(out, "%-6s %-13s %15s %15s %20s\n", "Step", "Slowest rank", "Its compute",
			"Median compute", "Most waiting (rank)");
		for (size_t j = 0; j < k->nsteps && j < TEXT_STEPS; j++) {
			struct step_verdict v = verdict(k, j, scratch);
			char w[TEXTFMT_LEN + 16];
			snprintf(w, sizeof w, "%s (%d)",
				 fmt_dur(c, k->p[v.most_waiting].steps[j].wait_ns),
				 (int)k->p[v.most_waiting].rank);
			fprintf(out, "%-6zu %-13d %15s %15s %20s\n", j + 1,
				(int)k->p[v.slowest].rank,
				fmt_dur(a, compute_ns(&k->p[v.slowest].steps[j])),
				fmt_dur(b, v.median_compute), w);
		}
		if (k->nsteps > TEXT_STEPS)
			fprintf(out, "(%zu more steps in --format json)\n", k->nsteps - TEXT_STEPS);
		fprintf(out, "(compute: the step's time out of collectives)\n");
	}
	free(scratch);
}

void table_ranks_json(const struct report *r, struct jw *w)
{
	const struct ranks *k = &r->s->ranks;
	uint64_t *scratch;

	jw_lit(w, ",\n\"across_ranks\":[");
	for (size_t i = 0; i < k->nnames; i++) {
		const struct rank_name *x = &k->names[i];
		if (i)
			jw_lit(w, ",");
		jw_lit(w, "\n{\"category\":");
		jw_cstr(w, model_str(r->m, x->cat, NULL));
		jw_lit(w, ",\"name\":");
		jw_cstr(w, model_str(r->m, x->name, NULL));
		jw_lit(w, ",\"ranks\":");
		jw_u64(w, x->ranks);
		jw_lit(w, ",\"min_ns\":");
		jw_u64(w, x->min);
		jw_lit(w, ",\"median_ns\":");
		jw_u64(w, x->median);
		jw_lit(w, ",\"max_ns\":");
		jw_u64(w, x->max);
		jw_lit(w, ",\"slowest_rank\":");
		jw_i64(w, x->slowest);
		jw_lit(w, ",\"calls_min\":");
		jw_u64(w, x->calls_min);
		jw_lit(w, ",\"calls_max\":");
		jw_u64(w, x->calls_max);
		jw_lit(w, "}");
	}
	jw_lit(w, "]");
	jw_lit(w, ",\n\"ranks\":");
	if (!k->nranks || !(scratch = malloc(k->nranks * sizeof *scratch))) {
		jw_lit(w, "null");
		return;
	}
	jw_lit(w, "{\"count\":");
	jw_u64(w, k->nranks);
	jw_lit(w, ",\"collectives\":");
	jw_text(w, k->collectives ? "true" : "false");
	jw_lit(w, ",\"slowest_rank\":");
	jw_i64(w, k->p[k->slowest].rank);
	jw_lit(w, ",\"slowest_by\":");
	jw_cstr(w, ranks_slow_by_name(k->slow_by));
	if (k->slow_by != RANK_SLOW_WAITING) {
		jw_lit(w, ",\"slowest_ns\":");
		jw_u64(w, k->slow_value);
		jw_lit(w, ",\"others_median_ns\":");
		jw_u64(w, k->others_median);
		jw_lit(w, ",\"stands_out\":");
		jw_text(w, k->stands_out ? "true" : "false");
	}
	jw_lit(w, ",\"unmatched\":");
	jw_u64(w, k->unmatched);
	jw_lit(w, ",\"dropped\":");
	jw_u64(w, k->dropped);
	jw_lit(w, ",\"steps_from\":");
	jw_cstr(w, ranks_step_kind_name(k->step_kind));
	jw_lit(w, ",\"ranks\":[");
	for (size_t i = 0; i < k->nranks; i++) {
		const struct rank_proc *p = &k->p[i];
		const struct image *im = &r->m->img[p->image];
		if (i)
			jw_lit(w, ",");
		jw_lit(w, "\n{\"rank\":");
		jw_i64(w, p->rank);
		jw_lit(w, ",\"pid\":");
		jw_u64(w, im->pid);
		jw_lit(w, ",\"collectives\":");
		jw_u64(w, p->ncoll);
		jw_lit(w, ",\"matched\":");
		jw_u64(w, p->matched);
		jw_lit(w, ",\"collective_ns\":");
		jw_u64(w, p->coll_ns);
		jw_lit(w, ",\"wait_ns\":");
		jw_u64(w, p->wait_ns);
		jw_lit(w, ",\"wall_ns\":");
		jw_u64_or_null(w, p->wall_ns);
		jw_lit(w, ",\"cpu_ns\":");
		jw_u64_or_null(w, p->cpu_ns);
		jw_lit(w, ",\"active_ns\":");
		jw_u64(w, p->active_ns);
		jw_lit(w, ",\"steps\":[");
		for (size_t j = 0; j < k->nsteps; j++) {
			const struct rank_step *s = &p->steps[j];
			if (j)
				jw_lit(w, ",");
			jw_lit(w, "{\"start_ns\":");
			jw_u64(w, s->t0);
			jw_lit(w, ",\"end_ns\":");
			jw_u64(w, s->t1);
			jw_lit(w, ",\"collective_ns\":");
			jw_u64(w, s->coll_ns);
			jw_lit(w, ",\"wait_ns\":");
			jw_u64(w, s->wait_ns);
			jw_lit(w, ",\"compute_ns\":");
			jw_u64(w, compute_ns(s));
			jw_lit(w, "}");
		}
		jw_lit(w, "]}");
	}
	jw_lit(w, "],\n\"steps\":[");
	for (size_t j = 0; j < k->nsteps; j++) {
		struct step_verdict v = verdict(k, j, scratch);
		if (j)
			jw_lit(w, ",");
		jw_lit(w, "\n{\"step\":");
		jw_u64(w, j + 1);
		jw_lit(w, ",\"slowest_rank\":");
		jw_i64(w, k->p[v.slowest].rank);
		jw_lit(w, ",\"slowest_compute_ns\":");
		jw_u64(w, compute_ns(&k->p[v.slowest].steps[j]));
		jw_lit(w, ",\"median_compute_ns\":");
		jw_u64(w, v.median_compute);
		jw_lit(w, ",\"most_waiting_rank\":");
		jw_i64(w, k->p[v.most_waiting].rank);
		jw_lit(w, ",\"most_wait_ns\":");
		jw_u64(w, k->p[v.most_waiting].steps[j].wait_ns);
		jw_lit(w, "}");
	}
	jw_lit(w, "]}");
	free(scratch);
}
