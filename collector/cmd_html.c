/* prof html: one self-contained HTML report of a capture (overview, step trace, memory,
 * flame graphs, timeline, advice). The page (formats/html/report.html, built into prof)
 * carries its data as a JSON island: prof report's JSON, the folded stacks, and what
 * formats/html/html_data.c computes. */
#define _GNU_SOURCE /* fopencookie */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/commands.h"
#include "collector/options.h"
#include "collector/output/cmd_save.h"
#include "collector/progress.h"
#include "formats/export/folded.h"
#include "formats/html/html_data.h"
#include "formats/model/outputs.h"
#include "formats/util/json_writer.h"

#define bad(...) opt_error("html", __VA_ARGS__)

static const char page[] =
#include "report_html.h"
	;

#define DATA_MARK "<!--LIBPROF-DATA-->"
#define FLAME_LINES 3000 /* the heaviest stacks kept per flame graph */

/* "1.5", "1.5s", "200ms", "30us", "100ns" -> ns; -1 when it is none of these. */
static int64_t parse_time(const char *s, const char *end)
{
	char buf[64], *rest;
	size_t n = (size_t)(end - s);
	if (!n || n >= sizeof buf)
		return -1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	errno = 0;
	double v = strtod(buf, &rest);
	double unit = !*rest || !strcmp(rest, "s") ? 1e9 : !strcmp(rest, "ms") ? 1e6
		    : !strcmp(rest, "us") ? 1e3 : !strcmp(rest, "ns") ? 1 : -1;
	if (rest == buf || errno || unit < 0 || !(v >= 0) || v * unit > 9.2e18)
		return -1;
	return (int64_t)(v * unit);
}

/* The folded stacks as they are written, keeping the heaviest FLAME_LINES lines (a
 * min-heap by value): the whole text of a capture with deep stacks runs to hundreds of
 * MB, the page needs a few. */
struct folded_line {
	char *s;
	size_t len;
	uint64_t value;
};

struct flame_sink {
	char *partial; /* a line not ended yet */
	size_t plen, pcap;
	struct folded_line heap[FLAME_LINES];
	size_t n;
	uint64_t left_out, left_value;
	int failed;
};

static void heap_down(struct folded_line *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < n && h[l].value < h[m].value)
			m = l;
		if (r < n && h[r].value < h[m].value)
			m = r;
		if (m == i)
			return;
		struct folded_line t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

static void heap_up(struct folded_line *h, size_t i)
{
	while (i && h[(i - 1) / 2].value > h[i].value) {
		struct folded_line t = h[i];
		h[i] = h[(i - 1) / 2];
		h[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

static void sink_line(struct flame_sink *k, const char *line, size_t len)
{
	const char *sp = line + len;
	while (sp > line && sp[-1] != ' ')
		sp--;
	if (sp == line)
		return;
	uint64_t value = 0; /* the line is not NUL-terminated: its digits only */
	for (const char *d = sp; d < line + len && *d >= '0' && *d <= '9'; d++)
		value = value * 10 + (uint64_t)(*d - '0');
	if (k->n == FLAME_LINES && value <= k->heap[0].value) {
		k->left_out++;
		k->left_value += value;
		return;
	}
	char *copy = malloc(len);
	if (!copy) {
		k->failed = 1;
		return;
	}
	memcpy(copy, line, len);
	if (k->n == FLAME_LINES) {
		k->left_out++;
		k->left_value += k->heap[0].value;
		free(k->heap[0].s);
		k->heap[0] = (struct folded_line){copy, len, value};
		heap_down(k->heap, k->n, 0);
	} else {
		k->heap[k->n] = (struct folded_line){copy, len, value};
		heap_up(k->heap, k->n++);
	}
}

static ssize_t sink_write(void *cookie, const char *buf, size_t size)
{
	struct flame_sink *k = cookie;
	for (size_t i = 0; i < size; i++) {
		if (buf[i] == '\n') {
			sink_line(k, k->partial, k->plen);
			k->plen = 0;
			continue;
		}
		if (k->plen == k->pcap) {
			size_t cap = k->pcap ? 2 * k->pcap : 4096;
			char *p = realloc(k->partial, cap);
			if (!p) {
				k->failed = 1;
				return -1;
			}
			k->partial = p;
			k->pcap = cap;
		}
		k->partial[k->plen++] = buf[i];
	}
	return (ssize_t)size;
}

static int by_value(const void *a, const void *b)
{
	const struct folded_line *x = a, *y = b;
	return (x->value < y->value) - (x->value > y->value);
}

/* The folded stacks of capture by weight (when it comes out as want), the heaviest
 * FLAME_LINES of them, as {"lines": "...", "left_out": N, "left_out_value": V}; null
 * when there are none. */
static void flame_json(struct jw *w, const char *capture, enum folded_weight weight,
		       enum folded_weight want, int all_processes)
{
	char err[256];
	struct flame_sink *k = calloc(1, sizeof *k);
	FILE *f = k ? fopencookie(k, "w", (cookie_io_functions_t){.write = sink_write}) : NULL;
	struct folded_options o = {.weight = weight, .all_processes = all_processes};
	struct folded_summary sum = {0};
	int rc = f ? folded_write(capture, f, &o, &sum, err, sizeof err) : 2;
	if (f && fclose(f))
		rc = 2;
	if (k && k->plen)
		sink_line(k, k->partial, k->plen);
	if (!k || k->failed || rc >= 2 || !k->n || sum.weight != want) {
		jw_lit(w, "null");
	} else {
		qsort(k->heap, k->n, sizeof *k->heap, by_value);
		size_t total = 0;
		for (size_t i = 0; i < k->n; i++)
			total += k->heap[i].len + 1;
		char *joined = malloc(total + 1), *q = joined;
		for (size_t i = 0; joined && i < k->n; i++) {
			memcpy(q, k->heap[i].s, k->heap[i].len);
			q += k->heap[i].len;
			*q++ = '\n';
		}
		jw_lit(w, "{\"lines\":");
		if (joined)
			jw_str(w, joined, (size_t)(q - joined));
		else
			jw_lit(w, "\"\"");
		jw_lit(w, ",\"left_out\":");
		jw_u64(w, k->left_out);
		jw_lit(w, ",\"left_out_value\":");
		jw_u64(w, k->left_value);
		jw_lit(w, "}");
		free(joined);
	}
	if (k) {
		for (size_t i = 0; i < k->n; i++)
			free(k->heap[i].s);
		free(k->partial);
		free(k);
	}
}

/* The island's JSON into *out: '<' written as \u003c, so no "</script>" or "<!--" can end
 * or bend the script element (the JSON has '<' only inside strings). */
static char *escaped(const char *s, size_t n, size_t *out_len)
{
	size_t lt = 0;
	for (size_t i = 0; i < n; i++)
		lt += s[i] == '<';
	char *e = malloc(n + 5 * lt + 1), *q = e;
	if (!e)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '<') {
			memcpy(q, "\\u003c", 6);
			q += 6;
		} else {
			*q++ = s[i];
		}
	}
	*out_len = (size_t)(q - e);
	return e;
}

struct html_args {
	const char *capture, *out, *window;
	int force_overwrite;
	struct html_options o;
};

static int parse(int argc, char **argv, struct html_args *a)
{
	char **pos;
	int npos, rc;
	const struct opt opts[] = {
		{ .name = "output", .letter = 'o', .kind = OPT_TEXT, .value = "FILE", .dest = &a->out,
		  .help = "the page (default: the capture's name with .prof replaced by\n.html)" },
		{ .name = "force-overwrite", .kind = OPT_FLAG, .dest = &a->force_overwrite,
		  .help = "replace an existing FILE" },
		{ .name = "fp-point", .kind = OPT_TEXT, .value = "NAME", .dest = &a->o.fp_point,
		  .help = "the operator each step's forward starts with (MindInsight's\n"
			  "FP_POINT; default: the first operator after the data wait)" },
		{ .name = "bp-point", .kind = OPT_TEXT, .value = "NAME", .dest = &a->o.bp_point,
		  .help = "the operator each step's backward ends with (BP_POINT;\n"
			  "default: the last autograd node, *Backward*)" },
		{ .name = "data-point", .kind = OPT_TEXT, .value = "PREFIX", .dest = &a->o.data_point,
		  .help = "ranges whose names start with PREFIX are the data wait\n"
			  "(default: PyTorch's enumerate(DataLoader)#... ranges)" },
		{ .name = "window", .kind = OPT_TEXT, .value = "START:END", .dest = &a->window,
		  .help = "the timeline's window, in seconds from the start (1.5:2,\n"
			  "or with ms, us, ns: 200ms:350ms; END empty: to the end;\n"
			  "default: three steps in the middle of the run)" },
		{ .name = "all-processes", .kind = OPT_FLAG, .dest = &a->o.all_processes,
		  .help = "the launchers too (see prof report --help)" },
	};
	const struct opt_command c = {
		.name = "html",
		.usage = "prof html [CAPTURE...] [-o FILE.html] [--fp-point NAME] [--bp-point NAME]\n"
			 "                 [--data-point PREFIX] [--window START:END] [--all-processes]",
		.about = "Writes one self-contained HTML page about a capture, for any browser, offline\n"
			 "(no script, font or request outside the file):\n"
			 "  Overview     the run's facts, time by category, the top 20 by self time,\n"
			 "               operator types, lost events;\n"
			 "  Step trace   each step (libprof.step()/prof_step() marks, else PyTorch's\n"
			 "               ProfilerStep#N ranges, else the ends of optimizer.step()) split\n"
			 "               into data wait, forward, backward, optimizer and the rest, with\n"
			 "               collectives and GPU busy time beside it; slow steps flagged;\n"
			 "  Memory       live bytes over time per process and device, the peak, and the\n"
			 "               allocation sites that held it (PROFILER_STACK=alloc);\n"
			 "  Flame graphs allocations by bytes and time by call stack, where stacks\n"
			 "               were recorded;\n"
			 "  Timeline     a window of the run on a canvas (zoom, pan), ranks side by side;\n"
			 "  Advice       rules that fired on what the capture shows, each with its\n"
			 "               evidence and what to do.\n"
			 "CAPTURE is as for prof report (default: the newest capture here); several\n"
			 "captures (the ranks of a job) make one page.\n",
		.after = "Exit status: 0 ok; 1 the capture is damaged (the page shows what came before);\n"
			 "2 bad arguments or an unusable file.\n",
		.opts = opts,
		.nopts = ARRAY_LEN(opts),
	};
	if ((rc = opt_parse(&c, argc, argv, &pos, &npos)))
		return rc;
	a->o.window_start_ns = a->o.window_end_ns = -1;
	if (a->window) {
		const char *colon = strchr(a->window, ':');
		const char *end = a->window + strlen(a->window);
		int has_end = colon && colon + 1 < end;
		a->o.window_start_ns = colon ? parse_time(a->window, colon) : -1;
		a->o.window_end_ns = has_end ? parse_time(colon + 1, end) : 0;
		if (a->o.window_start_ns < 0 || a->o.window_end_ns < 0 ||
		    (has_end && a->o.window_end_ns <= a->o.window_start_ns))
			return bad("--window wants START:END in seconds (or ms, us, ns) with END "
				   "after START, got '%s'", a->window);
	}
	if (npos > 1 && !a->out)
		return bad("several captures or parts: name the page with -o FILE.html");
	if ((rc = opt_capture_parts(&c, pos, npos, &a->capture)))
		return rc;
	if (!a->out) {
		static char out[4096];
		size_t n = strlen(a->capture);
		while (n > 1 && a->capture[n - 1] == '/')
			n--;
		if (n > 5 && !memcmp(a->capture + n - 5, ".prof", 5))
			n -= 5;
		if (n + 6 > sizeof out)
			return bad("%s: name too long", a->capture);
		memcpy(out, a->capture, n);
		memcpy(out + n, ".html", 6);
		a->out = out;
	}
	return cmd_output_ok("html", a->out, a->force_overwrite);
}

/* The island: {"version", "capture", "report", "flame", then html_data's fields}. */
static int island(const struct html_args *a, char **json, size_t *json_len, char *err,
		  size_t errlen)
{
	char *rep = NULL, *buf = NULL;
	size_t rep_len = 0, len = 0;
	struct output_summary sum;
	struct table_options t = {.sort = SORT_TOTAL, .format = FORMAT_JSON,
				  .all_processes = a->o.all_processes};
	FILE *f = open_memstream(&rep, &rep_len);
	if (!f) {
		snprintf(err, errlen, "out of memory");
		return 2;
	}
	int rc = tables_write(a->capture, f, &t, &sum, err, errlen);
	if (fclose(f) && rc < 2) {
		snprintf(err, errlen, "out of memory");
		rc = 2;
	}
	struct jw w;
	FILE *o = rc < 2 ? open_memstream(&buf, &len) : NULL;
	if (rc < 2 && (!o || jw_init(&w, o, 1 << 16))) {
		snprintf(err, errlen, "out of memory");
		rc = 2;
	}
	if (rc < 2) {
		char derr[512];
		/* trailing newline and spaces of the report's JSON do not matter inside */
		jw_lit(&w, "{\"version\":");
		jw_cstr(&w, PROF_VERSION);
		jw_lit(&w, ",\"capture\":");
		jw_cstr(&w, opt_capture_shown && *opt_capture_shown ? opt_capture_shown : a->capture);
		jw_lit(&w, ",\n\"report\":");
		jw_raw(&w, rep, rep_len);
		/* stacks exist where prof report found allocation sites */
		int stacks = rep && strstr(rep, "\"allocation_sites\":") != NULL;
		jw_lit(&w, ",\n\"flame\":{\"bytes\":");
		if (stacks)
			flame_json(&w, a->capture, FOLDED_BYTES, FOLDED_BYTES, a->o.all_processes);
		else
			jw_lit(&w, "null");
		jw_lit(&w, ",\"time\":");
		if (stacks)
			flame_json(&w, a->capture, FOLDED_AUTO, FOLDED_TIME, a->o.all_processes);
		else
			jw_lit(&w, "null");
		jw_lit(&w, "},\n");
		int drc = html_data_write(&w, a->capture, &a->o, rep, rep_len, derr, sizeof derr);
		jw_lit(&w, "}");
		int unfinished = jw_finish(&w);
		int unclosed = fclose(o);
		o = NULL;
		if (unfinished || unclosed) {
			snprintf(err, errlen, "out of memory");
			rc = 2;
		}
		if (drc == 2 && rc < 2) {
			snprintf(err, errlen, "%s", derr);
			rc = 2;
		}
	}
	if (o)
		fclose(o);
	free(rep);
	if (rc == 2) {
		free(buf);
		return 2;
	}
	*json = escaped(buf, len, json_len);
	free(buf);
	if (!*json) {
		snprintf(err, errlen, "out of memory");
		return 2;
	}
	return rc;
}

int cmd_html(int argc, char **argv)
{
	struct html_args a = {0};
	char err[1024], *json = NULL;
	size_t json_len = 0;
	int rc = parse(argc, argv, &a);
	if (rc)
		return rc < 0 ? 0 : rc;
	progress_start("prof html");
	rc = island(&a, &json, &json_len, err, sizeof err);
	progress_end();
	if (rc == 2)
		return bad("%s", err);
	const char *mark = strstr(page, DATA_MARK);
	static const char open_tag[] = "<script type=\"application/json\" id=\"libprof-data\">";
	static const char close_tag[] = "</script>";
	size_t head = (size_t)(mark - page), tail = strlen(mark + strlen(DATA_MARK));
	size_t total = head + strlen(open_tag) + json_len + strlen(close_tag) + tail;
	char *doc = malloc(total), *q = doc;
	if (!doc) {
		free(json);
		return bad("out of memory");
	}
	memcpy(q, page, head);
	q += head;
	memcpy(q, open_tag, strlen(open_tag));
	q += strlen(open_tag);
	memcpy(q, json, json_len);
	q += json_len;
	memcpy(q, close_tag, strlen(close_tag));
	q += strlen(close_tag);
	memcpy(q, mark + strlen(DATA_MARK), tail);
	free(json);
	int saved = cmd_save("html", a.out, doc, total, a.force_overwrite);
	free(doc);
	if (saved)
		return saved;
	if (rc == 1)
		bad("%s", err);
	return rc;
}
