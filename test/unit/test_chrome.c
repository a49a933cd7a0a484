/* The Chrome trace: escaping of odd names (quotes, backslashes, control characters,
 * invalid UTF-8) always gives valid JSON; the events, metadata and otherData of a small
 * capture; the size rule (shortest slices dropped first, ties in file order, user
 * ranges and instants always kept) and the thinned live-heap counter; damaged and
 * unusable captures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture_fixture.h"
#include "json_check.h"
#include "formats/util/json_writer.h"
#include "formats/export/chrome_alloc.h"
#include "formats/model/outputs.h"

static void escapes_to(const char *in, size_t n, const char *want)
{
	char out[256];
	size_t len = json_escape(out, in, n);

	assert_true(len <= json_escaped_max(n));
	out[len] = '\0';
	assert_string_equal(out, want);
	assert_true(json_valid(out, len));
}

static void test_escape(void **state)
{
	(void)state;
	escapes_to("plain", 5, "\"plain\"");
	escapes_to("a\"b\\c/", 6, "\"a\\\"b\\\\c/\"");
	escapes_to("\x01\n\x1f\x7f", 4, "\"\\u0001\\u000a\\u001f\x7f\"");
	escapes_to("a\0b", 3, "\"a\\u0000b\"");
	escapes_to("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9, "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
	escapes_to("\xff", 1, "\"\xef\xbf\xbd\"");
	escapes_to("x\xe2\x82", 3, "\"x\xef\xbf\xbd\xef\xbf\xbd\"");           /* cut sequence */
	escapes_to("\xc0\xaf", 2, "\"\xef\xbf\xbd\xef\xbf\xbd\"");             /* overlong */
	escapes_to("\xed\xa0\x80", 3, "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""); /* surrogate */
	escapes_to("\xf4\x90\x80\x80", 4,
		   "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");      /* > U+10FFFF */
	escapes_to("\x80q", 2, "\"\xef\xbf\xbdq\"");                            /* stray */
}

static void test_escape_every_byte(void **state)
{
	char in[512], out[4096];
	size_t i, len;

	(void)state;
	/* Every byte value, alone and after a lead byte, must give valid JSON. */
	for (i = 0; i < 256; i++) {
		in[2 * i] = (char)i;
		in[2 * i + 1] = (char)(0xe0 + i % 16);
	}
	len = json_escape(out, in, sizeof(in));
	assert_true(json_valid(out, len));
}

/* The tests of the writer and the size rule see every allocator call (PROFILER_TRACE_ALLOC
 * =all); test_alloc_auto the default's choice. */
static int alloc_all = 1;

static char *export(const char *capture, const char *json, uint64_t max, int want_rc,
		    struct output_summary *sum)
{
	char err[256], cmd[256];
	char *s;
	size_t len = 0;
	struct chrome_options o = {.max_events = max,
				   .alloc = alloc_all ? CHROME_ALLOC_ALL : CHROME_ALLOC_AS_CAPTURED};

	assert_int_equal(chrome_export_opts(capture, json, NULL, &o, sum, err, sizeof(err)),
			 want_rc);
	s = fx_slurp(json, &len);
	assert_non_null(s);
	assert_true(json_valid(s, len));
	/* Also an outside parser, where there is one. */
	snprintf(cmd, sizeof(cmd), "command -v python3 >/dev/null || exit 0; "
		 "python3 -m json.tool %s >/dev/null", json);
	assert_int_equal(system(cmd), 0);
	return s;
}

static void write_small(struct fx *f)
{
	struct prof_event e[12];
	double half = 0.5;

	fx_open(f, "chrome");
	fx_text(f, CAP_SESSION, "command=train \"q\"\nhost=h\\1\nclock=CLOCK_MONOTONIC\n"
				"start_ns=1000000\n");
	fx_process(f, 1, 0, "/usr/bin/python3\0train.py\0\x01", 27);
	fx_thread(f, 1, 2, "old name");
	fx_thread(f, 1, 2, "tab\there \xff");
	fx_name(f, 1, 1, "in\"ner\\x");
	fx_name(f, 1, 2, "malloc");
	fx_name(f, 1, 3, "free");
	fx_name(f, 1, 4, "realloc");
	fx_name(f, 1, 5, "epoch");
	fx_name(f, 1, 6, "loss");
	fx_name(f, 1, 7, "step");
	fx_name(f, 1, 8, "bytes\n\x02");
	fx_string(f, CAP_CATEGORY, 1, 17, "op\"s", 4);
	e[0] = fx_range(1001600, 1001700, 2, PROF_CAT_MEMORY, 1);
	e[0].flags = PROF_EVF_ALLOCS;
	e[0].a = 0xabc;
	e[0].b = 64;
	e[1] = fx_range(1001500, 1001750, 1, PROF_CAT_USER, 0);
	e[2] = fx_range(1002000, 1002010, 3, PROF_CAT_MEMORY, 0);
	e[2].flags = PROF_EVF_FREES;
	e[2].c = 0xabc;
	e[3] = fx_range(1003000, 1003100, 4, PROF_CAT_MEMORY, 0);
	e[3].flags = PROF_EVF_ALLOCS | PROF_EVF_FREES;
	e[3].a = 0xdef0;
	e[3].b = 128;
	e[3].c = 0; /* realloc(NULL, 128) */
	e[4] = fx_ev(1004000, 1004000, 5, PROF_CAT_MARK, PROF_EV_INSTANT, 0);
	e[5] = fx_ev(1005000, 1005000, 7, PROF_CAT_STEP, PROF_EV_INSTANT, 0);
	e[5].a = 3;
	e[6] = fx_ev(1006000, 1006000, 6, PROF_CAT_COUNTER, PROF_EV_COUNTER, 0);
	e[6].flags = PROF_EVF_DOUBLE;
	memcpy(&e[6].a, &half, sizeof(half));
	e[7] = fx_ev(1007000, 1007000, 8, PROF_CAT_COUNTER, PROF_EV_COUNTER, 0);
	e[7].a = (uint64_t)-5;
	e[8] = fx_ev(1008000, 1009000, 0, PROF_CAT_LOST, PROF_EV_LOST, 0);
	e[8].a = 9;
	e[9] = fx_range(1010000, 1010500, 1, 17, 0);
	fx_events(f, 1, 2, e, 10);
	fx_text(f, CAP_SESSION_END, "end_ns=1020000\nevents=10\nlost=9\n");
	fx_close(f);
}

static void test_small_trace(void **state)
{
	struct output_summary sum;
	struct fx f;
	char json[96], *s;

	(void)state;
	write_small(&f);
	snprintf(json, sizeof(json), "%s.json", f.path);
	s = export(f.path, json, 0, 0, &sum);
	assert_non_null(strstr(s, "{\"ph\":\"X\",\"name\":\"in\\\"ner\\\\x\",\"cat\":\"user\","
				  "\"pid\":1,\"tid\":2,\"ts\":1.500,\"dur\":0.250}"));
	assert_non_null(strstr(s, "{\"ph\":\"X\",\"name\":\"malloc\",\"cat\":\"cpu_memory\",\"pid\":1,"
				  "\"tid\":2,\"ts\":1.600,\"dur\":0.100,\"args\":{\"bytes\":64,"
				  "\"ptr\":\"0xabc\"}}"));
	assert_non_null(strstr(s, "\"name\":\"free\",\"cat\":\"cpu_memory\",\"pid\":1,\"tid\":2,"
				  "\"ts\":2.000,\"dur\":0.010,\"args\":{\"ptr\":\"0xabc\"}}"));
	assert_non_null(strstr(s, "\"args\":{\"bytes\":128,\"ptr\":\"0xdef0\",\"old_ptr\":\"0x0\"}"));
	assert_non_null(strstr(s, "\"name\":\"in\\\"ner\\\\x\",\"cat\":\"op\\\"s\""));
	/* Metadata: the last thread name wins; the process is "basename args". */
	assert_non_null(strstr(s, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":2,"
				  "\"args\":{\"name\":\"tab\\u0009here \xef\xbf\xbd\"}}"));
	assert_null(strstr(s, "old name"));
	assert_non_null(strstr(s, "\"name\":\"process_name\",\"pid\":1,\"args\":{\"name\":"
				  "\"python3 train.py \\u0001\"}"));
	assert_non_null(strstr(s, "\"name\":\"process_sort_index\""));
	/* Instants, counters, the lost marker. */
	assert_non_null(strstr(s, "{\"ph\":\"i\",\"s\":\"t\",\"name\":\"epoch\",\"cat\":\"mark\","
				  "\"pid\":1,\"tid\":2,\"ts\":4.000}"));
	assert_non_null(strstr(s, "\"name\":\"step\",\"cat\":\"step\",\"pid\":1,\"tid\":2,"
				  "\"ts\":5.000,\"args\":{\"step\":3}}"));
	assert_non_null(strstr(s, "{\"ph\":\"C\",\"name\":\"loss\",\"cat\":\"counter\",\"pid\":1,\"tid\":2,"
				  "\"ts\":6.000,\"args\":{\"loss\":0.5}}"));
	assert_non_null(strstr(s, "\"args\":{\"bytes\\u000a\\u0002\":-5}"));
	assert_non_null(strstr(s, "{\"ph\":\"i\",\"s\":\"p\",\"name\":\"lost 9 events\","
				  "\"cat\":\"lost\",\"pid\":1,\"tid\":2,\"ts\":8.000"));
	/* Live heap: +64 at the malloc's end, -64 at the free's start, +128. */
	assert_non_null(strstr(s, "\"name\":\"live heap bytes\",\"cat\":\"memory\",\"pid\":1,\"ts\":1.700,"
				  "\"args\":{\"bytes\":64}}"));
	assert_non_null(strstr(s, "\"ts\":2.000,\"args\":{\"bytes\":0}}"));
	assert_non_null(strstr(s, "\"ts\":3.100,\"args\":{\"bytes\":128}}"));
	assert_int_equal(fx_count(s, "\"name\":\"live heap bytes\""), 3);
	/* otherData */
	/* no displayTimeUnit: "ns" made some Perfetto versions read ts in the wrong unit */
	assert_null(strstr(s, "displayTimeUnit"));
	assert_non_null(strstr(s, "\"otherData\":{\"command\":\"train \\\"q\\\"\",\"host\":"
				  "\"h\\\\1\",\"clock\":\"CLOCK_MONOTONIC\",\"start_ns\":1000000,"
				  "\"events\":9,\"lost_events\":9,"));
	assert_non_null(strstr(s, "\"lost_gaps\":[{\"pid\":1,\"tid\":2,\"count\":9,"
				  "\"start_ns\":1008000,\"end_ns\":1009000,\"cause\":\"ring\"}]"));
	/* the heap's peak: one process-wide marker */
	assert_int_equal(fx_count(s, "\"name\":\"peak live heap\""), 1);
	/* 2: the "allocator calls/s" track, one bucket and its end */
	assert_int_equal(fx_count(s, "\"name\":\"allocator calls/s\""), 2);
	assert_non_null(strstr(s, "\"json_events\":16,\"json_dropped\":0,"));
	assert_null(strstr(s, "capture_damaged"));
	assert_int_equal(fx_count(s, "{\"ph\":") - fx_count(s, "{\"ph\":\"M\""), 16);
	assert_int_equal(sum.events, 9);
	assert_int_equal(sum.lost, 9);
	assert_int_equal(sum.processes, 1);
	assert_int_equal(sum.json_events, 16);
	assert_int_equal(sum.json_dropped, 0);
	assert_int_equal(sum.damaged, 0);
	free(s);
	unlink(json);
	unlink(f.path);
}

#define NMEM 1000
#define NUSER 20

static uint64_t dur_of(int i)
{
	return 1 + (uint64_t)(i * 37 % 120); /* under 128 ns: the histogram is exact */
}

/* NMEM allocator calls (the first half allocate 10 bytes each, the second half free them
 * in order: the live heap peaks in the middle), NUSER long user ranges, 5 marks. */
static void write_big(struct fx *f)
{
	struct prof_event e[NMEM + NUSER + 5];
	int i, n = 0;

	fx_open(f, "rule");
	fx_text(f, CAP_SESSION, "command=big\nstart_ns=0\n");
	fx_process(f, 1, 0, "big", 3);
	fx_name(f, 1, 1, "malloc");
	fx_name(f, 1, 2, "free");
	fx_name(f, 1, 3, "range");
	fx_name(f, 1, 4, "mark");
	for (i = 0; i < NMEM; i++) {
		uint64_t t = 1000 * (uint64_t)i, p = 0x100000 + 16 * (uint64_t)(i % (NMEM / 2));
		e[n] = fx_range(t, t + dur_of(i), i < NMEM / 2 ? 1 : 2, PROF_CAT_MEMORY, 0);
		e[n].flags = i < NMEM / 2 ? PROF_EVF_ALLOCS : PROF_EVF_FREES;
		if (i < NMEM / 2) {
			e[n].a = p;
			e[n].b = 10;
		} else {
			e[n].c = p;
		}
		n++;
	}
	for (i = 0; i < NUSER; i++)
		e[n++] = fx_range(2000000 + 10 * (uint64_t)i, 2000000 + 10 * (uint64_t)i + 1, 3,
				  PROF_CAT_USER, 0);
	for (i = 0; i < 5; i++)
		e[n++] = fx_ev(3000000, 3000000, 4, PROF_CAT_MARK, PROF_EV_INSTANT, 0);
	fx_events(f, 1, 1, e, (uint32_t)n);
	fx_close(f);
}

/* Index i of the allocator call at ts = i us in the trace, from its "ts" field. */
static void kept_calls(const char *s, int kept[NMEM])
{
	const char *p = s;

	memset(kept, 0, NMEM * sizeof(*kept));
	while ((p = strstr(p, "\"cat\":\"cpu_memory\",\"pid\":1,\"tid\":1,\"ts\":"))) {
		p += strlen("\"cat\":\"cpu_memory\",\"pid\":1,\"tid\":1,\"ts\":");
		kept[atoi(p)] = 1;
	}
}

static void test_size_rule(void **state)
{
	struct output_summary sum;
	struct fx f;
	char json[96], rule[160], *s, *p;
	int kept[NMEM], i, nkept = 0, threshold = 1000, ties_seen = 0, tie_gap = 0;
	uint64_t max = 400, heap, peak = 0, v;

	(void)state;
	write_big(&f);
	snprintf(json, sizeof(json), "%s.json", f.path);
	s = export(f.path, json, max, 0, &sum);
	heap = fx_count(s, "\"name\":\"live heap bytes\"");
	/* The heap track takes at most a quarter, and keeps the peak and the end. */
	assert_true(heap <= max / 4 + 2);
	assert_true(heap >= 10);
	for (p = s; (p = strstr(p, "\"live heap bytes\"")); p++) {
		v = strtoull(strstr(p, "\"bytes\":") + 8, NULL, 10);
		if (v > peak)
			peak = v;
	}
	assert_int_equal(peak, 10 * NMEM / 2);
	/* Every user range and mark is kept; the budget is used to the last event. */
	assert_int_equal(fx_count(s, "\"cat\":\"user\""), NUSER);
	assert_int_equal(fx_count(s, "\"cat\":\"mark\""), 5);
	assert_int_equal(sum.json_events, max);
	assert_int_equal(fx_count(s, "{\"ph\":") - fx_count(s, "{\"ph\":\"M\""), max);
	kept_calls(s, kept);
	for (i = 0; i < NMEM; i++) {
		nkept += kept[i];
		if (kept[i] && dur_of(i) < (uint64_t)threshold)
			threshold = (int)dur_of(i);
	}
	uint64_t rate = fx_count(s, "\"name\":\"allocator calls/s\"");
	assert_true(rate >= 2);
	/* 1: the peak marker */
	assert_int_equal(nkept, max - NUSER - 5 - heap - rate - 1);
	assert_int_equal(sum.json_dropped, NMEM - nkept);
	/* Longer than the threshold: all kept; shorter: none; equal: the first ones. */
	for (i = 0; i < NMEM; i++) {
		if (dur_of(i) > (uint64_t)threshold)
			assert_true(kept[i]);
		else if (dur_of(i) < (uint64_t)threshold)
			assert_false(kept[i]);
		else if (kept[i] && tie_gap)
			fail_msg("tie %d kept after an earlier tie was left out", i);
		else if (!kept[i])
			tie_gap = 1;
		ties_seen += dur_of(i) == (uint64_t)threshold;
	}
	assert_true(ties_seen > 0);
	snprintf(rule, sizeof(rule), "\"json_rule\":\"events shorter than %d ns left out to stay "
		 "under 400 events", threshold);
	assert_non_null(strstr(s, rule));
	snprintf(rule, sizeof(rule), "\"json_dropped\":%d,", NMEM - nkept);
	assert_non_null(strstr(s, rule));
	free(s);
	/* A budget the always-kept events fill: every allocator call goes. */
	s = export(f.path, json, 10, 0, &sum);
	assert_int_equal(fx_count(s, "\"cat\":\"cpu_memory\""), 0);
	assert_int_equal(fx_count(s, "\"cat\":\"user\""), NUSER);
	assert_int_equal(sum.json_dropped, NMEM);
	free(s);
	/* A budget above the event count: all kept. */
	s = export(f.path, json, 100000, 0, &sum);
	assert_int_equal(fx_count(s, "\"cat\":\"cpu_memory\""), NMEM);
	assert_int_equal(fx_count(s, "\"name\":\"live heap bytes\""), NMEM);
	assert_non_null(strstr(s, "\"json_rule\":\"all events kept"));
	free(s);
	unlink(json);
	unlink(f.path);
}

static void test_damaged_and_unusable(void **state)
{
	struct output_summary sum;
	struct fx f;
	char json[96], cut[96], err[256], *buf, *s;
	size_t len = 0;
	FILE *o;

	(void)state;
	write_small(&f);
	buf = fx_slurp(f.path, &len);
	snprintf(cut, sizeof(cut), "%s.cut", f.path);
	snprintf(json, sizeof(json), "%s.json", f.path);
	o = fopen(cut, "wb");
	fwrite(buf, 1, len - 5, o);
	fclose(o);
	s = export(cut, json, 0, 1, &sum);
	assert_non_null(strstr(s, "\"capture_damaged\":\""));
	assert_int_equal(sum.damaged, 1);
	assert_non_null(strstr(sum.damage, "is truncated"));
	assert_non_null(strstr(sum.damage, "0 complete frames read"));
	free(s);
	unlink(json);
	assert_int_equal(chrome_export("/tmp/libprof-none.prof", json, 0, &sum, err, sizeof(err)), 2);
	assert_string_equal(err, "/tmp/libprof-none.prof: No such file or directory");
	assert_int_equal(access(json, F_OK), -1); /* nothing written for an unusable capture */
	assert_int_equal(chrome_export(f.path, "/tmp/no-such-dir-lp/x.json", 0, &sum, err,
				       sizeof(err)), 2);
	assert_non_null(strstr(err, "No such file or directory"));
	free(buf);
	unlink(cut);
	unlink(f.path);
}

/* PROFILER_TRACE_ALLOC=auto: the calls that matter are in the timeline (a 2 MiB block
 * and its release through realloc, a failed allocation, a slow call), the others only in
 * the counter tracks; the live heap track still follows every call. */
static void test_alloc_auto(void **state)
{
	struct prof_event e[8];
	struct output_summary sum;
	struct fx f;
	char json[96], *s;

	(void)state;
	fx_open(&f, "allocauto");
	fx_text(&f, CAP_SESSION, "command=x\nhost=h\nclock=CLOCK_MONOTONIC\nstart_ns=1000000\n");
	fx_process(&f, 1, 0, "/bin/x", 7);
	fx_name(&f, 1, 1, "malloc");
	fx_name(&f, 1, 2, "free");
	fx_name(&f, 1, 3, "realloc");
	e[0] = fx_range(1001000, 1001050, 1, PROF_CAT_MEMORY, 0); /* small, fast: hidden */
	e[0].flags = PROF_EVF_ALLOCS;
	e[0].a = 0x100;
	e[0].b = 64;
	e[1] = fx_range(1002000, 1002100, 1, PROF_CAT_MEMORY, 0); /* 2 MiB: shown */
	e[1].flags = PROF_EVF_ALLOCS;
	e[1].a = 0x200000;
	e[1].b = 2 << 20;
	e[2] = fx_range(1003000, 1003040, 2, PROF_CAT_MEMORY, 0); /* small release: hidden */
	e[2].flags = PROF_EVF_FREES;
	e[2].c = 0x100;
	e[3] = fx_range(1004000, 1004090, 3, PROF_CAT_MEMORY, 0); /* shrinks the big one */
	e[3].flags = PROF_EVF_ALLOCS | PROF_EVF_FREES;
	e[3].a = 0x300;
	e[3].b = 32;
	e[3].c = 0x200000;
	e[4] = fx_range(1005000, 1005000 + CHROME_ALLOC_SLOW_NS, 1, PROF_CAT_MEMORY, 0); /* slow */
	e[4].flags = PROF_EVF_ALLOCS;
	e[4].a = 0x400;
	e[4].b = 16;
	e[5] = fx_range(1006000, 1006010, 1, PROF_CAT_MEMORY, 0); /* failed */
	e[5].flags = PROF_EVF_ALLOCS;
	e[5].b = 1 << 30;
	e[6] = fx_range(1007000, 1007010, 2, PROF_CAT_MEMORY, 0); /* the realloc's 32: hidden */
	e[6].flags = PROF_EVF_FREES;
	e[6].c = 0x300;
	fx_events(&f, 1, 1, e, 7);
	fx_close(&f);
	snprintf(json, sizeof(json), "%s.json", f.path);
	alloc_all = 0;
	s = export(f.path, json, 0, 0, &sum);
	alloc_all = 1;
	assert_int_equal(fx_count(s, "{\"ph\":\"X\""), 4);
	assert_non_null(strstr(s, "\"args\":{\"bytes\":2097152,\"ptr\":\"0x200000\"}"));
	assert_non_null(strstr(s, "\"args\":{\"bytes\":32,\"ptr\":\"0x300\",\"old_ptr\":"
				  "\"0x200000\"}"));
	assert_non_null(strstr(s, "\"args\":{\"bytes\":16,\"ptr\":\"0x400\"}"));
	assert_non_null(strstr(s, "\"args\":{\"bytes\":1073741824,\"ptr\":\"0x0\"}"));
	assert_int_equal(sum.json_alloc_hidden, 3);
	assert_non_null(strstr(s, "\"json_alloc_hidden\":3"));
	/* the live heap follows every call: 64, 64 + 2 MiB, 2 MiB, 0 and 32 (the realloc),
	 * 48, 16 */
	assert_int_equal(fx_count(s, "\"name\":\"live heap bytes\""), 7);
	/* seven calls within 6 us: one 1 ms bucket from the origin (7,000 calls/s), then 0 */
	assert_int_equal(fx_count(s, "\"name\":\"allocator calls/s\""), 2);
	assert_non_null(strstr(s, "\"name\":\"allocator calls/s\",\"cat\":\"memory\",\"pid\":1,\"ts\":0.000,"
				  "\"args\":{\"calls/s\":7000}}"));
	free(s);
	unlink(json);
	unlink(f.path);
}

/* Two processes of one command are told apart by their pids; a third of another command
 * keeps its plain name. */
static void test_process_names_unique(void **state)
{
	struct output_summary sum;
	struct fx f;
	char json[96], *s;

	(void)state;
	fx_open(&f, "names");
	fx_text(&f, CAP_SESSION, "command=x\nstart_ns=1000000\n");
	fx_process(&f, 11, 0, "/usr/bin/python3\0w.py\0", 23);
	fx_process(&f, 12, 0, "/usr/bin/python3\0w.py\0", 23);
	fx_process(&f, 13, 0, "/bin/sh\0", 8);
	for (uint32_t pid = 11; pid <= 13; pid++) {
		struct prof_event e = fx_range(1001000, 1002000, 1, PROF_CAT_USER, 0);
		fx_name(&f, pid, 1, "work");
		fx_events(&f, pid, pid, &e, 1);
	}
	fx_close(&f);
	snprintf(json, sizeof(json), "%s.json", f.path);
	s = export(f.path, json, 0, 0, &sum);
	assert_non_null(strstr(s, "\"pid\":11,\"args\":{\"name\":\"python3 w.py [pid 11]\"}"));
	assert_non_null(strstr(s, "\"pid\":12,\"args\":{\"name\":\"python3 w.py [pid 12]\"}"));
	assert_non_null(strstr(s, "\"pid\":13,\"args\":{\"name\":\"sh\"}"));
	free(s);
	unlink(json);
	unlink(f.path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_process_names_unique),
		cmocka_unit_test(test_escape_every_byte),
		cmocka_unit_test(test_small_trace),
		cmocka_unit_test(test_alloc_auto),
		cmocka_unit_test(test_size_rule),
		cmocka_unit_test(test_damaged_and_unusable),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
