/* The tables for people: a header with the session's facts and losses, one table per
 * category, then memory per process, steps, marks and counters. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "formats/tables/report.h"
#include "formats/tables/table_ranks.h"
#include "preload/common/event.h"
#include "formats/symbols/stack_names.h"
#include "formats/tables/textfmt.h"

#define NAME_MIN 16
#define NAME_MAX_COLS 48

/* A signed duration: "+1.50s", "-3.00ms". */
static char *fmt_signed(char buf[TEXTFMT_LEN + 1], int64_t ns)
{
	buf[0] = ns < 0 ? '-' : '+';
	fmt_dur(buf + 1, ns < 0 ? (uint64_t)-ns : (uint64_t)ns);
	return buf;
}

/* Several captures read as one: how many, from which hosts, and how each host's clock
 * was put on the first's. */
static void captures(const struct model *m, FILE *out)
{
	size_t n = model_nsources(m), hosts = 0;
	if (n < 2)
		return;
	for (size_t i = 0; i < n; i++)
		hosts += m->src[i].domain == i;
	const char *h0 = m->src[0].host != STR_NONE ? model_str(m, m->src[0].host, NULL) : "?";
	char name[4 * 64 + 4], a[TEXTFMT_LEN + 1], b[TEXTFMT_LEN + 1], c[TEXTFMT_LEN],
		e[TEXTFMT_LEN];
	fmt_name(name, h0, strlen(h0), 64);
	fprintf(out, "Captures: %zu read as one, %zu clock%s (host and boot)%s%s%s\n", n, hosts,
		hosts == 1 ? "" : "s", hosts > 1 ? "; times on " : "", hosts > 1 ? name : "",
		hosts > 1 ? "'s clock:" : "");
	for (size_t i = 1; i < n; i++) {
		const struct model_source *s = &m->src[i];
		if (s->domain != i)
			continue;
		size_t count = 0;
		for (size_t j = i; j < n; j++)
			count += m->src[j].domain == i;
		const char *h = s->host != STR_NONE ? model_str(m, s->host, NULL) : "?";
		fmt_name(name, h, strlen(h), 64);
		if (s->method == MODEL_CLOCK_NONE)
			fprintf(out, "  %s (%zu capture%s): left on its own clock (no clock anchors "
				"recorded)\n", name, count, count == 1 ? "" : "s");
		else if (s->method == MODEL_CLOCK_ANCHORS)
			fprintf(out, "  %s (%zu capture%s): %s from the realtime anchors (as good as "
				"the hosts' time sync; no collectives to refine it)\n", name, count,
				count == 1 ? "" : "s", fmt_signed(a, s->offset_ns));
		else if (!s->anchor_real || !m->src[0].anchor_real)
			fprintf(out, "  %s (%zu capture%s): %s from %s collectives' end times (no "
				"clock anchors; error about %s)\n", name, count,
				count == 1 ? "" : "s", fmt_signed(b, s->fix_ns),
				fmt_count(c, s->fix_pairs), fmt_dur(e, s->fix_err_ns));
		else
			fprintf(out, "  %s (%zu capture%s): %s from the realtime anchors, %s from %s "
				"collectives' end times (error about %s)\n", name, count,
				count == 1 ? "" : "s", fmt_signed(a, s->offset_ns),
				fmt_signed(b, s->fix_ns), fmt_count(c, s->fix_pairs),
				fmt_dur(e, s->fix_err_ns));
	}
}

static void header(const struct report *r, FILE *out)
{
	char a[TEXTFMT_LEN], b[TEXTFMT_LEN], cmd[4 * 100 + 4], host[4 * 64 + 4];
	const char *h = model_fact(r->m, "host"), *c = model_command(r->m);
	size_t np = model_shown_pids(r->m);

	/* Both come from the profiled side: keep terminal controls out. */
	fmt_name(cmd, c, strlen(c), 100);
	fmt_name(host, h ? h : "unknown host", strlen(h ? h : "unknown host"), 64);
	fprintf(out, "libprof profile: %s   (%s, %zu process%s, duration %s)\n", cmd, host, np,
		np == 1 ? "" : "es", fmt_dur(a, r->duration));
	fprintf(out, "Events: %s captured, %s lost\n", fmt_count(a, r->m->events),
		fmt_count(b, r->lost));
	captures(r->m, out);
	const char *sched = model_fact(r->m, "schedule");
	if (sched) {
		char spec[4 * 96 + 4];
		fmt_name(spec, sched, strlen(sched), 96);
		fprintf(out, "Schedule: only the active steps of PROFILER_SCHEDULE=%s were "
			"recorded (live bytes at end: of what they allocated and did not free "
			"in them)\n", spec);
	}
	uint64_t ws, we, left_out;
	if (model_window(r->m, &ws, &we, &left_out)) {
		char c1[TEXTFMT_LEN], c2[TEXTFMT_LEN];
		fmt_dur(c1, ws > r->origin ? ws - r->origin : 0);
		fmt_dur(c2, we > r->origin ? we - r->origin : 0);
		fprintf(out, "Window: the events from +%s to %s%s of the session (PROFILER_DELAY, "
			"PROFILER_DURATION); %s outside it left out (live bytes at end: of what "
			"it allocated and did not free in it)\n", c1, we ? "+" : "",
			we ? c2 : "its end", fmt_count(a, left_out));
	}
	struct model_parts pt;
	if (model_parts(r->m, &pt)) {
		char c1[TEXTFMT_LEN], c2[TEXTFMT_LEN], range[48];
		snprintf(range, sizeof range, pt.first == pt.last ? "part %u" : "parts %u-%u",
			 pt.first, pt.last);
		if (pt.flight_ns || pt.flight_bytes) {
			if (pt.flight_ns)
				fprintf(out, "Flight recorder: the last %s kept (PROFILER_FLIGHT), from "
					"+%s; %s older events left out (%s on disk)\n",
					fmt_dur(c1, pt.flight_ns),
					fmt_dur(c2, pt.kept_from > r->origin ? pt.kept_from - r->origin : 0),
					fmt_count(a, pt.left_out), range);
			else
				fprintf(out, "Flight recorder: the last %s of capture kept "
					"(PROFILER_FLIGHT): %s; older parts dropped\n",
					fmt_bytes(c1, pt.flight_bytes), range);
		} else {
			fprintf(out, "Parts: %s (%u read) of a capture rotated every %s (PROFILER_ROTATE)\n",
				range, pt.parts,
				pt.rotate_ns ? fmt_dur(c1, pt.rotate_ns) : fmt_bytes(c1, pt.rotate_bytes));
		}
	}
	if (r->fold && (r->fold->images || r->fold->helpers))
		fprintf(out, "Folded: %zu exec'd image%s and %zu helper process%s of the launch, into "
			"the image they became (%s events not shown); --all-processes shows them\n",
			r->fold->images, r->fold->images == 1 ? "" : "s", r->fold->helpers,
			r->fold->helpers == 1 ? "" : "es", fmt_count(a, r->m->folded_events));
	/* events made before libprof's constructor that never reached a ring are no full
	 * ring's: a bigger ring or PROFILER_BLOCK would not have kept them */
	uint64_t startup = model_lost_startup(r->m), ring_lost = r->lost - startup;
	if (startup)
		fprintf(out, "WARNING: %s events lost at start-up, before libprof's constructor ran "
			"(allocations of other libraries' constructors; not a full ring); the "
			"figures below undercount\n",
			fmt_count(a, startup));
	const struct lost_gap *g = 0;
	size_t ring_gaps = 0;
	for (size_t i = 0; i < r->m->ngaps; i++)
		if (!r->m->gaps[i].startup && !ring_gaps++)
			g = &r->m->gaps[i];
	if (ring_lost && g) {
		char at[TEXTFMT_LEN];
		fprintf(out, "WARNING: %s events lost in %s gap%s (full ring); first gap at +%s "
			"(pid %" PRIu32 ", tid %" PRIu32 "); the figures below undercount\n",
			fmt_count(a, ring_lost), fmt_count(b, ring_gaps), ring_gaps == 1 ? "" : "s",
			fmt_dur(at, g->t0 > r->origin ? g->t0 - r->origin : 0), g->pid, g->tid);
	} else if (ring_lost) {
		fprintf(out, "WARNING: %s events lost (full ring); the figures below undercount\n",
			fmt_count(a, ring_lost));
	}
	uint64_t waited = model_drain_waited_max(r->m);
	if (ring_lost && waited >= MODEL_DRAIN_WAIT_SAID_NS)
		fprintf(out, "         (the collector waited up to %s between two drains of the "
			"rings: a busy machine's cores, or its compressing, held it; a bigger "
			"PROFILER_RING_SIZE or PROFILER_BLOCK=1 keeps such events)\n",
			fmt_dur(a, waited));
	uint64_t late = 0;
	for (size_t i = 0; i < r->m->nimg; i++)
		for (int d = -1; d < MODEL_DEVICES; d++)
			late += MODEL_DOMAIN(&r->m->img[i], d)->late;
	if (late)
		fprintf(out, "WARNING: %s allocator operations reached the live-heap analysis out of "
			"time order (docs/FORMATS.md, Memory): peak and live bytes are approximate\n",
			fmt_count(a, late));
	uint64_t corrupt = model_corrupt_lost(r->m);
	if (corrupt)
		fprintf(out, "WARNING: %s of the lost events were written after a process's shared "
			"memory was found corrupt (a stray write into it): they were not read\n",
			fmt_count(a, corrupt));
	uint64_t unnamed = model_names_lost(r->m), unstacked = model_stacks_lost(r->m);
	if (unnamed)
		fprintf(out, "WARNING: %s events have no name (<unnamed>): a process's names reached "
			"PROFILER_AREA_MAX or filled /dev/shm\n", fmt_count(a, unnamed));
	if (unstacked)
		fprintf(out, "WARNING: %s events have no call stack ((no stack)): a process's stacks "
			"reached PROFILER_AREA_MAX or filled /dev/shm\n", fmt_count(a, unstacked));
	if (r->damage)
		fprintf(out, "WARNING: damaged capture, the tables cover what came before: %s\n",
			r->damage);
	if (!r->m->have_session_end && r->m->parts)
		fprintf(out, "Note: no session end in the parts read (a later part has it, or the "
			     "session was still running)\n");
	else if (!r->m->have_session_end)
		fprintf(out, "Note: the capture has no session end (the session was still running, or its "
			     "collector stopped early)\n");
}

static size_t name_width(const struct report *r, const struct report_cat *c)
{
	char buf[4 * NAME_MAX_COLS + 4];
	size_t i, w = NAME_MIN, len;

	for (i = 0; i < c->nrows; i++) {
		const char *s = model_str(r->m, c->rows[i]->name, &len);
		size_t cols = fmt_name(buf, s, len, NAME_MAX_COLS);
		if (cols > w)
			w = cols;
	}
	return w;
}

static void pad_name(FILE *out, const struct model *m, uint32_t gid, size_t width)
{
	char buf[4 * NAME_MAX_COLS + 4];
	size_t len;
	const char *s = model_str(m, gid, &len);
	size_t cols = fmt_name(buf, s, len, width);

	fputs(buf, out);
	for (; cols < width; cols++)
		fputc(' ', out);
}

static char *fmt_net_bytes(char buf[TEXTFMT_LEN], int64_t v)
{
	char tmp[TEXTFMT_LEN];
	if (v >= 0)
		return fmt_bytes(buf, (uint64_t)v);
	snprintf(buf, TEXTFMT_LEN, "-%s", fmt_bytes(tmp, (uint64_t)-v));
	return buf;
}

static void category(const struct report *r, const struct report_cat *c, FILE *out)
{
	size_t w = name_width(r, c), i;
	char t[9][TEXTFMT_LEN];
	const char *cat = model_str(r->m, c->cat, NULL);
	/* where allocations happened inside calls: PyTorch's memory columns */
	int mem = r->s->has_mem && strcmp(cat, PROF_CATNAME_MEMORY);

	fprintf(out, "\n%s", cat);
	if (c->nrows < c->all_rows)
		fprintf(out, "   (top %zu of %zu)", c->nrows, c->all_rows);
	if (c->untimed)
		fprintf(out, "   (calls not timed: PROFILER_ALLOC_TIMING=1 times them)");
	/* Two spaces at least after the name: scripts split rows on runs of 2+ spaces. */
	fprintf(out, "\n%-*s  %10s %10s %10s %10s %10s %10s %10s %10s", (int)w, "Name", "Count",
		"Total", "Self", "Min", "Max", "Avg", "Median", "% of cat");
	if (mem)
		fprintf(out, " %13s %13s", "CPU Mem", "Self CPU Mem");
	fputc('\n', out);
	for (i = 0; i < c->nrows; i++) {
		const struct row *x = c->rows[i];
		pad_name(out, r->m, x->name, w);
		if (c->untimed) {
			fprintf(out, "  %10s %10s %10s %10s %10s %10s %10s %10s\n",
				fmt_count(t[0], x->count), "-", "-", "-", "-", "-", "-", "-");
			continue;
		}
		fprintf(out, "  %10s %10s %10s %10s %10s %10s %10s %10.1f", fmt_count(t[0], x->count),
			fmt_dur(t[1], x->total), fmt_dur(t[2], x->self), fmt_dur(t[3], x->min),
			fmt_dur(t[4], x->max), fmt_dur(t[5], row_avg(x)), fmt_dur(t[6], x->median),
			row_percent(c, x));
		if (mem)
			fprintf(out, " %13s %13s", fmt_net_bytes(t[7], x->mem),
				fmt_net_bytes(t[8], x->self_mem));
		fputc('\n', out);
	}
}

/* Bytes moved per kind of GPU copy or set, and the bandwidth they ran at. */
static void copies(const struct report *r, FILE *out)
{
	char t[3][TEXTFMT_LEN];
	size_t i;

	fprintf(out, "\nGPU copies and sets\n%-16s  %10s %14s %10s %10s\n", "Kind", "Count",
		"Bytes", "Total", "GB/s");
	for (i = 0; i < r->s->ncopies; i++) {
		const struct copy_row *x = &r->s->copies[i];
		pad_name(out, r->m, x->name, 16);
		fprintf(out, "  %10s %14s %10s %10.2f\n", fmt_count(t[0], x->count),
			fmt_bytes(t[1], x->bytes), fmt_dur(t[2], x->total), copy_bandwidth(x));
	}
}

/* MPI calls with their bytes: per call, what one rank sent or contributed. */
static void messages(const struct report *r, FILE *out)
{
	char t[4][TEXTFMT_LEN];

	fprintf(out, "\nMessages (bytes each call sent or contributed)\n%-24s %-10s  %10s %14s "
		     "%12s %10s\n", "Name", "Category", "Calls", "Bytes", "Per call", "Total");
	for (size_t i = 0; i < r->s->nmsgs; i++) {
		const struct copy_row *x = &r->s->msgs[i];
		pad_name(out, r->m, x->name, 24);
		fputc(' ', out);
		pad_name(out, r->m, x->cat, 10);
		fprintf(out, "  %10s %14s %12s %10s\n", fmt_count(t[0], x->count),
			fmt_bytes(t[1], x->bytes), fmt_bytes(t[2], x->count ? x->bytes / x->count : 0),
			fmt_dur(t[3], x->total));
	}
}

/* One line per process image with allocator activity on a device (NULL: the CPU). */
static void memory_device(const struct report *r, FILE *out, int gpu)
{
	char t[5][TEXTFMT_LEN];
	size_t i;
	int any = 0, from_cupti = 0, cw = 18; /* the command's columns */
	uint64_t unmatched = 0, wrapped = 0, recorded = 0;

	for (i = 0; i < r->m->nimg; i++)
		if (r->m->img[i].rank >= 0)
			cw = 34; /* "rank 12 (host) python train.py" */
	for (i = 0; i < r->m->nimg; i++) {
		const struct image *im = &r->m->img[i];
		const struct mem_image *mi = MODEL_DOMAIN(im, gpu);
		char at[TEXTFMT_LEN];

		if (gpu < 0 ? !image_has_memory(r, i) : !(mi->allocs || mi->frees))
			continue;
		if (MODEL_IS_GPU(gpu) && im->gpu_from_cupti) {
			from_cupti = 1;
			wrapped += im->gpu_wrapped_calls;
			for (int d = 0; d < MODEL_MXNET_CPU; d++)
				recorded += im->gpu[d].allocs + im->gpu[d].frees;
		}
		unmatched += mi->frees_unmatched;
		if (!any++) {
			char name[32];
			fprintf(out, "\nMemory: %s, per process\n",
				gpu < 0 ? "cpu/0" : model_device_name(gpu, name, sizeof(name)));
			fprintf(out, "%-8s %-*s %10s %10s %17s %11s %9s %13s\n", "PID", cw, "Command",
				"Allocs", "Frees", "Bytes allocated", "Peak live", "At (ms)",
				"Live at end");
		}
		if (mi->peak && mi->peak_t >= r->origin)
			snprintf(at, sizeof(at), "%.3f", (double)(mi->peak_t - r->origin) / 1e6);
		else
			snprintf(at, sizeof(at), "-");
		fprintf(out, "%-8" PRIu32 " ", im->pid);
		if (im->label != STR_NONE)
			pad_name(out, r->m, im->label, (size_t)cw);
		else
			fprintf(out, "%-*s", cw, "?");
		fprintf(out, " %10s %10s %17s %11s %9s %13s\n", fmt_count(t[0], mi->allocs),
			fmt_count(t[1], mi->frees), fmt_bytes(t[2], mi->bytes),
			fmt_bytes(t[3], mi->peak), at, fmt_bytes(t[4], mi->live_end));
	}
	if (from_cupti && !wrapped)
		fprintf(out, "(from CUPTI's memory records: no wrapped CUDA call allocated)\n");
	else if (from_cupti)
		fprintf(out, "(from CUPTI's memory records, which saw more than the wrapped CUDA "
			     "calls: %s allocations and releases against %s)\n",
			fmt_count(t[0], recorded), fmt_count(t[1], wrapped));
	if (unmatched)
		fprintf(out, "(%s more releases of blocks never seen allocated: not in Frees)\n",
			fmt_count(t[0], unmatched));
}

static void memory(const struct report *r, FILE *out)
{
	memory_device(r, out, -1);
	for (int d = 0; d < MODEL_DEVICES; d++)
		memory_device(r, out, d);
}

static int by_bytes(const void *a, const void *b)
{
	const struct site_row *x = a, *y = b;
	return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : strcmp(x->name, y->name);
}

static int by_live(const void *a, const void *b)
{
	const struct site_row *x = a, *y = b;
	return x->live_bytes < y->live_bytes ? 1 : x->live_bytes > y->live_bytes ? -1
										 : strcmp(x->name, y->name);
}

/* Top allocation sites of one image's heap (gpu < 0) or device memory by bytes, then
 * the ones still live at the end. */
static void sites(const struct report *r, struct stack_names *sn, size_t i, int gpu, FILE *out)
{
	const struct image *im = &r->m->img[i];
	const struct mem_image *mi = MODEL_DOMAIN(im, gpu);
	char t[5][TEXTFMT_LEN], what[48], name[32];
	size_t k, n, leaks, top = r->opt->top > 0 ? (size_t)r->opt->top : 20;
	struct site_row *v = site_rows(sn, mi, &n);

	if (!v)
		return;
	if (gpu < 0)
		snprintf(what, sizeof(what), "pid %" PRIu32, im->pid);
	else
		snprintf(what, sizeof(what), "%s, pid %" PRIu32,
			 model_device_name(gpu, name, sizeof(name)), im->pid);
	qsort(v, n, sizeof(*v), by_bytes);
	fprintf(out, "\nAllocation sites, %s (by bytes; At peak: live when the "
		"peak of %s was reached)\n%-60s %10s %14s %12s %12s\n", what,
		fmt_bytes(t[0], mi->peak), "Site", "Allocs", "Bytes", "At peak", "Leaked");
	for (k = 0; k < n && k < top; k++)
		fprintf(out, "%-60.200s %10s %14s %12s %12s\n", v[k].name,
			fmt_count(t[0], v[k].allocs), fmt_bytes(t[1], v[k].bytes),
			fmt_bytes(t[2], v[k].peak_bytes), fmt_bytes(t[3], v[k].live_bytes));
	qsort(v, n, sizeof(*v), by_live);
	for (k = leaks = 0; k < n; k++)
		leaks += v[k].live_count != 0;
	if (leaks) {
		fprintf(out, "\nLive at exit (leaks), %s: %s\n%-60s %10s %14s\n", what,
			fmt_bytes(t[0], mi->live_end), "Site", "Blocks", "Bytes");
		for (k = 0; k < leaks && k < top; k++)
			fprintf(out, "%-60.200s %10s %14s\n", v[k].name,
				fmt_count(t[0], v[k].live_count), fmt_bytes(t[1], v[k].live_bytes));
	}
	site_rows_free(v, n);
}

/* Sizes asked for, over every process: which sizes the allocations are made of. */
static void size_histogram(const struct report *r, FILE *out)
{
	uint64_t count[MEM_SIZE_BUCKETS] = {0}, bytes[MEM_SIZE_BUCKETS] = {0}, total = 0;
	char t[3][TEXTFMT_LEN];
	size_t i, k;

	for (i = 0; i < r->m->nimg; i++)
		for (k = 0; k < MEM_SIZE_BUCKETS; k++) {
			count[k] += r->m->img[i].mem.size_count[k];
			bytes[k] += r->m->img[i].mem.size_bytes[k];
			total += r->m->img[i].mem.size_count[k];
		}
	if (!total)
		return;
	fprintf(out, "\nAllocation sizes (every process)\n%-14s %12s %8s %14s\n", "Size up to",
		"Allocs", "%", "Bytes");
	for (k = 0; k < MEM_SIZE_BUCKETS; k++)
		if (count[k])
			fprintf(out, "%-14s %12s %8.1f %14s\n",
				k ? fmt_bytes(t[0], 1ull << (k - 1)) : "0 B", fmt_count(t[1], count[k]),
				100.0 * (double)count[k] / (double)total, fmt_bytes(t[2], bytes[k]));
}

static void memory_sites(const struct report *r, FILE *out)
{
	struct stack_names sn;
	size_t i;
	int any = 0;

	for (i = 0; i < r->m->nimg; i++)
		for (int d = -1; d < MODEL_DEVICES; d++)
			any |= MODEL_DOMAIN(&r->m->img[i], d)->nsites > 0;
	if (!any)
		return;
	if (stack_names_init(&sn, r->m) == 0)
		for (i = 0; i < r->m->nimg; i++)
			for (int d = -1; d < MODEL_DEVICES; d++)
				if (MODEL_DOMAIN(&r->m->img[i], d)->nsites)
					sites(r, &sn, i, d, out);
	stack_names_free(&sn);
}

static void steps(const struct report *r, FILE *out)
{
	const struct step_summary *s = &r->s->step;
	char a[TEXTFMT_LEN], b[TEXTFMT_LEN], c[TEXTFMT_LEN];

	fprintf(out, "\nSteps: %s", fmt_count(a, s->count));
	if (s->intervals)
		fprintf(out, ", one every %s on average (median %s)", fmt_dur(b, s->mean_ns),
			fmt_dur(c, s->median_ns));
	fputc('\n', out);
}

static void marks(const struct report *r, FILE *out)
{
	char a[TEXTFMT_LEN];
	size_t i;

	fprintf(out, "\nMarks\n%-32s  %10s\n", "Name", "Count");
	for (i = 0; i < r->s->nmarks; i++) {
		pad_name(out, r->m, r->s->marks[i].name, 32);
		fprintf(out, "  %10s\n", fmt_count(a, r->s->marks[i].count));
	}
}

static void counters(const struct report *r, FILE *out)
{
	size_t i;

	fprintf(out, "\nCounters\n%-32s  %10s %14s %14s %14s\n", "Name", "Count", "Min", "Max",
		"Last");
	for (i = 0; i < r->s->nctrs; i++) {
		const struct counter *c = &r->s->ctrs[i];
		char a[TEXTFMT_LEN];
		pad_name(out, r->m, c->name, 32);
		/* Integer counters exactly (doubles hold them up to 2^53). */
		fprintf(out, c->is_double ? "  %10s %14.6g %14.6g %14.6g\n" : "  %10s %14.0f %14.0f %14.0f\n",
			fmt_count(a, c->count), c->min, c->max, c->last);
	}
}

int table_text(const struct report *r, FILE *out)
{
	size_t i;

	header(r, out);
	for (i = 0; i < r->ncats; i++)
		category(r, &r->cats[i], out);
	if (r->show_copies)
		copies(r, out);
	if (r->show_messages)
		messages(r, out);
	if (r->show_memory) {
		memory(r, out);
		size_histogram(r, out);
		memory_sites(r, out);
	}
	if (r->show_steps)
		steps(r, out);
	table_ranks_text(r, out);
	if (r->show_marks)
		marks(r, out);
	if (r->show_counters)
		counters(r, out);
	return ferror(out) ? -1 : 0;
}
