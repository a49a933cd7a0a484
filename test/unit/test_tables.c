/* The tables: self vs total with nesting (per thread, reset by a LOST gap), exact
 * medians, the sort keys, --top, --category, CSV quoting and fields, the JSON document,
 * live heap bytes ordered by time across threads, names per exec image, and the header
 * facts with losses, a missing session end and a damaged capture. */
#define _GNU_SOURCE /* open_memstream */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture_fixture.h"
#include "json_check.h"
#include "formats/model/outputs.h"
#include "formats/model/stats.h"

/* --all-processes for the tables() below (the exec test's images, folded by default). */
static int tables_all;

/* The tables of path in the given form; *rc gets tables_write's result. */
static char *tables(const char *path, enum table_format fmt, enum table_sort sort, long top,
		    const char *category, int *rc, char *err)
{
	struct table_options o = { sort, top, category, fmt, tables_all };
	struct output_summary sum;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	*rc = tables_write(path, f, &o, &sum, err, 256);
	fclose(f);
	return buf;
}

static char *csv(const char *path, enum table_sort sort, long top, const char *category)
{
	char err[256];
	int rc;
	char *s = tables(path, FORMAT_CSV, sort, top, category, &rc, err);

	assert_int_equal(rc, 0);
	return s;
}

/* The CSV line of name (a quoted field), or fails. */
static const char *csv_row(const char *s, const char *cat, const char *name)
{
	char want[128];
	const char *p;

	snprintf(want, sizeof(want), "\n\"%s\",\"%s\",", cat, name);
	p = strstr(s, want);
	if (!p)
		fail_msg("no row %s/%s in:\n%s", cat, name, s);
	return p + 1;
}

/* The numeric fields of a row: count,total,self,min,max,avg,median. */
static void csv_nums(const char *s, const char *cat, const char *name, uint64_t v[7])
{
	const char *p = csv_row(s, cat, name) + strlen(cat) + strlen(name) + 6;
	int i;

	for (i = 0; i < 7; i++) {
		char *end;
		v[i] = strtoull(p, &end, 10);
		assert_int_equal(*end, ',');
		p = end + 1;
	}
}

/* The "percent" field, after the seven numbers. */
static double csv_percent(const char *s, const char *cat, const char *name)
{
	const char *p = csv_row(s, cat, name) + strlen(cat) + strlen(name) + 6;
	for (int i = 0; i < 7; i++)
		p = strchr(p, ',') + 1;
	return strtod(p, NULL);
}

static void header(struct fx *f)
{
	fx_text(f, CAP_SESSION, "command=./train --fast\nhost=node7\nclock=monotonic\n"
				"start_ns=0\n");
	fx_process(f, 1, 0, "./train\0--fast", 14);
}

static void test_self_total_nesting(void **state)
{
	struct prof_event e[8];
	struct fx f;
	uint64_t v[7];
	char *s;

	(void)state;
	fx_open(&f, "nest");
	header(&f);
	fx_name(&f, 1, 1, "root");
	fx_name(&f, 1, 2, "child");
	fx_name(&f, 1, 3, "leaf");
	fx_name(&f, 1, 4, "t2root");
	fx_name(&f, 1, 5, "t2child");
	fx_name(&f, 1, 6, "t3root");
	fx_name(&f, 1, 7, "t3child");
	/* Thread 2's child comes in one record, its parent in a later one. */
	e[0] = fx_range(100, 200, 5, PROF_CAT_USER, 1);
	fx_events(&f, 1, 2, e, 1);
	/* Thread 1, end order: leaf, child A, child B, root, then a childless root. */
	e[0] = fx_range(110, 120, 3, PROF_CAT_USER, 2);
	e[1] = fx_range(100, 150, 2, PROF_CAT_USER, 1);
	e[2] = fx_range(160, 180, 2, PROF_CAT_USER, 1);
	e[3] = fx_range(50, 250, 1, PROF_CAT_USER, 0);
	e[4] = fx_range(300, 400, 1, PROF_CAT_USER, 0);
	fx_events(&f, 1, 1, e, 5);
	e[0] = fx_range(0, 1000, 4, PROF_CAT_USER, 0);
	fx_events(&f, 1, 2, e, 1);
	/* Thread 3: a LOST gap between a child and its parent drops the child's time. */
	e[0] = fx_range(10, 20, 7, PROF_CAT_USER, 1);
	e[1] = fx_ev(30, 40, 0, PROF_CAT_LOST, PROF_EV_LOST, 0);
	e[1].a = 5;
	e[2] = fx_range(0, 100, 6, PROF_CAT_USER, 0);
	fx_events(&f, 1, 3, e, 3);
	fx_close(&f);
	s = csv(f.path, SORT_TOTAL, 0, NULL);
	csv_nums(s, "user", "root", v);
	assert_int_equal(v[0], 2);
	assert_int_equal(v[1], 300);
	assert_int_equal(v[2], 130 + 100); /* 200 - (50 + 20) children, + 100 */
	assert_int_equal(v[3], 100);
	assert_int_equal(v[4], 200);
	csv_nums(s, "user", "child", v);
	assert_int_equal(v[1], 70);
	assert_int_equal(v[2], 40 + 20); /* child A minus its leaf */
	csv_nums(s, "user", "leaf", v);
	assert_int_equal(v[2], 10);
	csv_nums(s, "user", "t2root", v);
	assert_int_equal(v[2], 900);
	csv_nums(s, "user", "t3root", v);
	assert_int_equal(v[2], 100);
	free(s);
	unlink(f.path);
}

/* torch's rule: a call whose only child has its name is one call (aten::mean calling
 * aten::mean.dim); a same-name child with a sibling, allocator calls beside it, or in
 * another category, stays a call of its own. */
static void test_same_name_only_child(void **state)
{
	struct prof_event e[12];
	struct fx f;
	uint64_t v[7];
	char *s;

	(void)state;
	fx_open(&f, "same");
	header(&f);
	fx_name(&f, 1, 1, "aten::mean");
	fx_name(&f, 1, 2, "aten::sum");
	fx_name(&f, 1, 3, "aten::div_");
	fx_name(&f, 1, 4, "malloc");
	fx_name(&f, 1, 5, "f");
	uint8_t op = PROF_CAT_FIRST_DYNAMIC;
	fx_string(&f, CAP_CATEGORY, 1, op, "operator", 8);
	/* mean [0,100] > mean [10,90] > sum [20,30]: one call of 100, self 90 */
	e[0] = fx_range(20, 30, 2, op, 2);
	e[1] = fx_range(10, 90, 1, op, 1);
	e[2] = fx_ev(92, 93, 4, PROF_CAT_MEMORY, PROF_EV_COMPLETE, 1); /* not a child, not
									* out of Self */
	e[3] = fx_range(0, 100, 1, op, 0);
	/* div_ [200,300] > div_ [210,240], div_ [250,260]: three calls */
	e[4] = fx_range(210, 240, 3, op, 1);
	e[5] = fx_range(250, 260, 3, op, 1);
	e[6] = fx_range(200, 300, 3, op, 0);
	/* user f [400,500] > f [410,420]: one call too (torch's labels) */
	e[7] = fx_range(410, 420, 5, PROF_CAT_USER, 1);
	e[8] = fx_range(400, 500, 5, PROF_CAT_USER, 0);
	/* a same-name call at depth 1 that ended before its depth-0 namesake began */
	e[9] = fx_range(600, 610, 2, op, 1);
	e[10] = fx_range(700, 800, 2, op, 0);
	fx_events(&f, 1, 1, e, 11);
	fx_close(&f);
	s = csv(f.path, SORT_TOTAL, 0, NULL);
	csv_nums(s, "operator", "aten::mean", v);
	assert_int_equal(v[0], 1);
	assert_int_equal(v[1], 100);
	assert_int_equal(v[2], 90); /* 100 - sum's 10 */
	assert_int_equal(v[3], 100);
	assert_int_equal(v[4], 100);
	assert_int_equal(v[6], 100);
	csv_nums(s, "operator", "aten::div_", v);
	assert_int_equal(v[0], 3);
	assert_int_equal(v[1], 140);
	csv_nums(s, "user", "f", v);
	assert_int_equal(v[0], 1);
	assert_int_equal(v[1], 100);
	assert_int_equal(v[2], 100);
	csv_nums(s, "operator", "aten::sum", v);
	assert_int_equal(v[0], 3);
	free(s);
	unlink(f.path);
}

/* "% of cat": a call inside another of its category (MXSetProfilerConfig calling
 * MXSetProcessProfilerConfig), even through a call of another category, is in that one's
 * time already; the category's time counts it once. */
static void test_percent_counts_nested_once(void **state)
{
	struct prof_event e[8];
	struct fx f;
	char *s;

	(void)state;
	fx_open(&f, "nestpct");
	header(&f);
	fx_name(&f, 1, 1, "MXSetProfilerConfig");
	fx_name(&f, 1, 2, "MXSetProcessProfilerConfig");
	fx_name(&f, 1, 3, "MXNDArrayFree");
	fx_name(&f, 1, 4, "Op");
	fx_name(&f, 1, 5, "MXInner");
	uint8_t api = PROF_CAT_FIRST_DYNAMIC, op = PROF_CAT_FIRST_DYNAMIC + 1;
	fx_string(&f, CAP_CATEGORY, 1, api, "MXNET_C_API", 11);
	fx_string(&f, CAP_CATEGORY, 1, op, "operator", 8);
	/* Config [0,100] > Process [10,60]; Free [200,300] > Op [210,290] > Inner [220,240] */
	e[0] = fx_range(10, 60, 2, api, 1);
	e[1] = fx_range(0, 100, 1, api, 0);
	e[2] = fx_range(220, 240, 5, api, 2);
	e[3] = fx_range(210, 290, 4, op, 1);
	e[4] = fx_range(200, 300, 3, api, 0);
	fx_events(&f, 1, 1, e, 5);
	fx_close(&f);
	s = csv(f.path, SORT_TOTAL, 0, NULL);
	/* the category's time is 200 (100 + 100), not 270 */
	assert_true(csv_percent(s, "MXNET_C_API", "MXSetProfilerConfig") == 50.0);
	assert_true(csv_percent(s, "MXNET_C_API", "MXSetProcessProfilerConfig") == 25.0);
	assert_true(csv_percent(s, "MXNET_C_API", "MXNDArrayFree") == 50.0);
	assert_true(csv_percent(s, "MXNET_C_API", "MXInner") == 10.0);
	assert_true(csv_percent(s, "operator", "Op") == 100.0);
	free(s);
	unlink(f.path);
}

static void test_median(void **state)
{
	static const uint64_t odd[] = { 5, 1, 100, 3, 2 }, even[] = { 4, 1, 3, 2 };
	struct prof_event e[8];
	uint64_t v[7], big[1001], sorted[1001];
	struct fx f;
	char *s;
	size_t i, j;

	(void)state;
	fx_open(&f, "median");
	header(&f);
	fx_name(&f, 1, 1, "odd");
	fx_name(&f, 1, 2, "even");
	for (i = 0; i < 5; i++)
		e[i] = fx_range(1000 * i, 1000 * i + odd[i], 1, PROF_CAT_MEMORY, 0);
	fx_events(&f, 1, 1, e, 5);
	for (i = 0; i < 4; i++)
		e[i] = fx_range(1000 * i, 1000 * i + even[i], 2, PROF_CAT_MEMORY, 0);
	fx_events(&f, 1, 1, e, 4);
	fx_close(&f);
	s = csv(f.path, SORT_TOTAL, 0, NULL);
	csv_nums(s, "memory", "odd", v);
	assert_int_equal(v[6], 3);
	assert_int_equal(v[5], 111 / 5);
	csv_nums(s, "memory", "even", v);
	assert_int_equal(v[6], 2); /* (2 + 3) / 2, rounded down */
	free(s);
	unlink(f.path);
	/* Quickselect against a full sort, with many duplicates. */
	for (i = 0; i < 1001; i++)
		big[i] = sorted[i] = (i * 7919) % 101;
	for (i = 1; i < 1001; i++)
		for (j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
			uint64_t t = sorted[j];
			sorted[j] = sorted[j - 1];
			sorted[j - 1] = t;
		}
	assert_int_equal(median_u64(big, 1001), sorted[500]);
	assert_int_equal(median_u64(big, 1), big[0]);
}

/* Past STATS_EXACT_DURS calls a row's durations go into a sketch: its memory stops
 * growing, the median stays within 1%; count, total, min and max stay exact. */
static void test_median_sketched(void **state)
{
	enum { N = 10000 };
	static struct prof_event e[N];
	uint64_t v[7];
	struct fx f;

	(void)state;
	fx_open(&f, "sketched");
	header(&f);
	fx_name(&f, 1, 1, "many");
	for (size_t i = 0; i < N; i++) { /* 1000 + 10 k ns, k in a shuffled order */
		uint64_t k = (i * 7919) % N;
		e[i] = fx_range(100000 * i, 100000 * i + 1000 + 10 * k, 1, PROF_CAT_MEMORY, 0);
	}
	fx_events(&f, 1, 1, e, N);
	fx_close(&f);
	char *s = csv(f.path, SORT_TOTAL, 0, NULL);
	csv_nums(s, "memory", "many", v);
	assert_int_equal(v[0], N);
	assert_int_equal(v[3], 1000);
	assert_int_equal(v[4], 1000 + 10 * (N - 1));
	double exact = 1000 + 10 * (N - 1) / 2.0;
	assert_true(v[6] > exact * 0.99 && v[6] < exact * 1.01);
	assert_true(v[6] != (uint64_t)exact); /* read from the sketch, not the durations */
	free(s);
	unlink(f.path);
}

static void write_sortable(struct fx *f)
{
	struct prof_event e[16];
	int i;

	fx_open(f, "sort");
	header(f);
	fx_name(f, 1, 1, "a");
	fx_name(f, 1, 2, "b");
	fx_name(f, 1, 3, "c");
	fx_name(f, 1, 4, "p");
	fx_name(f, 1, 5, "q");
	for (i = 0; i < 10; i++)
		e[i] = fx_range(100 * i, 100 * i + 10, 1, PROF_CAT_MEMORY, 0); /* a: 10 x 10 */
	e[10] = fx_range(2000, 2400, 2, PROF_CAT_MEMORY, 0);               /* b: 400 */
	e[11] = fx_range(3000, 3100, 3, PROF_CAT_MEMORY, 0);               /* c: 100 + 500 */
	e[12] = fx_range(4000, 4500, 3, PROF_CAT_MEMORY, 0);
	e[13] = fx_range(5000, 5900, 5, PROF_CAT_USER, 1);                 /* q inside p */
	e[14] = fx_range(5000, 6000, 4, PROF_CAT_USER, 0);
	fx_events(f, 1, 1, e, 15);
	fx_close(f);
}

/* Names of the rows of cat in output order, joined. */
static void order(const char *s, const char *cat, char *out)
{
	char want[64];
	const char *p = s;

	out[0] = '\0';
	snprintf(want, sizeof(want), "\n\"%s\",\"", cat);
	while ((p = strstr(p, want))) {
		p += strlen(want);
		strncat(out, p, (size_t)(strchr(p, '"') - p));
	}
}

static void test_sort_and_top(void **state)
{
	struct fx f;
	char got[64], *s;

	(void)state;
	write_sortable(&f);
	s = csv(f.path, SORT_TOTAL, 0, NULL);
	order(s, "memory", got);
	assert_string_equal(got, "cba");
	order(s, "user", got);
	assert_string_equal(got, "pq");
	free(s);
	s = csv(f.path, SORT_COUNT, 0, NULL);
	order(s, "memory", got);
	assert_string_equal(got, "acb");
	free(s);
	s = csv(f.path, SORT_MAX, 0, NULL);
	order(s, "memory", got);
	assert_string_equal(got, "cba");
	free(s);
	s = csv(f.path, SORT_AVG, 0, NULL);
	order(s, "memory", got);
	assert_string_equal(got, "bca");
	free(s);
	s = csv(f.path, SORT_SELF, 0, NULL);
	order(s, "user", got);
	assert_string_equal(got, "qp");
	free(s);
	s = csv(f.path, SORT_COUNT, 2, NULL);
	order(s, "memory", got);
	assert_string_equal(got, "ac");
	order(s, "user", got);
	assert_string_equal(got, "pq");
	free(s);
	s = csv(f.path, SORT_TOTAL, 1, NULL);
	assert_int_equal(fx_count(s, "\n"), 3); /* header + one row per category */
	free(s);
	unlink(f.path);
}

static void test_category_filter(void **state)
{
	struct fx f;
	char err[256], got[64], *s;
	int rc;

	(void)state;
	write_sortable(&f);
	s = csv(f.path, SORT_TOTAL, 0, "user");
	order(s, "user", got);
	assert_string_equal(got, "pq");
	assert_null(strstr(s, "\"memory\""));
	free(s);
	s = tables(f.path, FORMAT_TEXT, SORT_TOTAL, 0, "memory", &rc, err);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(s, "\nmemory\n"));
	assert_null(strstr(s, "\nuser\n"));
	free(s);
	/* A fixed category without events: an empty table, not an error. */
	s = csv(f.path, SORT_TOTAL, 0, "step");
	assert_int_equal(fx_count(s, "\n"), 1);
	free(s);
	s = tables(f.path, FORMAT_TEXT, SORT_TOTAL, 0, "nope", &rc, err);
	assert_int_equal(rc, 2);
	assert_non_null(strstr(err, "no category \"nope\""));
	assert_non_null(strstr(err, "memory, user"));
	free(s);
	unlink(f.path);
}

static void test_csv_fields(void **state)
{
	struct prof_event e[2];
	struct fx f;
	char *s;

	(void)state;
	fx_open(&f, "csv");
	header(&f);
	fx_name(&f, 1, 1, "we,ird \"x\"");
	fx_string(&f, CAP_CATEGORY, 1, 20, "my,cat", 6);
	e[0] = fx_range(0, 30, 1, 20, 0);
	e[1] = fx_range(100, 110, 1, 20, 0);
	fx_events(&f, 1, 1, e, 2);
	fx_close(&f);
	s = csv(f.path, SORT_TOTAL, 0, NULL);
	assert_string_equal(s, "category,name,count,total_ns,self_ns,min_ns,max_ns,avg_ns,"
			       "median_ns,percent,cpu_mem_bytes,self_cpu_mem_bytes\n"
			       "\"my,cat\",\"we,ird \"\"x\"\"\",2,40,40,10,30,20,20,100.00,0,0\n");
	free(s);
	unlink(f.path);
}

/* pid 5: thread 20's record (a free and a reuse of the same address) is written before
 * thread 10's (the first allocation of that address): only time order gives the right
 * live bytes. */
static void write_memory(struct fx *f)
{
	struct prof_event e[4];

	fx_open(f, "mem");
	header(f);
	fx_process(f, 5, 0, "/bin/worker\0-j\0002", 17);
	fx_thread(f, 5, 10, "main");
	fx_thread(f, 5, 20, "helper");
	fx_name(f, 5, 1, "malloc");
	fx_name(f, 5, 2, "free");
	e[0] = fx_range(30, 40, 2, PROF_CAT_MEMORY, 0);
	e[0].flags = PROF_EVF_FREES;
	e[0].c = 0x1000;
	e[1] = fx_range(50, 60, 1, PROF_CAT_MEMORY, 0);
	e[1].flags = PROF_EVF_ALLOCS;
	e[1].a = 0x1000;
	e[1].b = 50;
	/* A release of a block never seen allocated: a free call, no live-bytes change. */
	e[2] = fx_range(61, 62, 2, PROF_CAT_MEMORY, 0);
	e[2].flags = PROF_EVF_FREES;
	e[2].c = 0xdead;
	e[3] = fx_range(63, 64, 2, PROF_CAT_MEMORY, 0); /* free(NULL) */
	e[3].flags = PROF_EVF_FREES;
	fx_events(f, 5, 20, e, 4);
	e[0] = fx_range(10, 20, 1, PROF_CAT_MEMORY, 0);
	e[0].flags = PROF_EVF_ALLOCS;
	e[0].a = 0x1000;
	e[0].b = 100;
	e[1] = fx_range(70, 80, 1, PROF_CAT_MEMORY, 0);
	e[1].flags = PROF_EVF_ALLOCS;
	e[1].a = 0x2000;
	e[1].b = 200;
	fx_events(f, 5, 10, e, 2);
	fx_text(f, CAP_SESSION_END, "end_ns=1000\nevents=9\nlost=0\n");
	fx_close(f);
}

/* PyTorch's CPU Mem / Self CPU Mem: an outer range (depth 0) allocates 100 bytes
 * itself and holds an inner range (depth 1) that allocates 50 and releases the outer's
 * 100-byte block: outer net 50, self 100; inner net -50, self -50. */
static void test_memory_columns(void **state)
{
	struct fx f;
	struct prof_event e[5];
	int rc;
	char err[256];

	(void)state;
	fx_open(&f, "memcols");
	header(&f);
	fx_process(&f, 7, 0, "/bin/op", 8);
	fx_thread(&f, 7, 7, "main");
	fx_name(&f, 7, 1, "malloc");
	fx_name(&f, 7, 2, "free");
	fx_name(&f, 7, 3, "outer");
	fx_name(&f, 7, 4, "inner");
	fx_string(&f, CAP_CATEGORY, 7, 20, "operator", 8);
	e[0] = fx_range(10, 20, 1, PROF_CAT_MEMORY, 1);
	e[0].flags = PROF_EVF_ALLOCS;
	e[0].a = 0x1000;
	e[0].b = 100;
	e[1] = fx_range(30, 40, 1, PROF_CAT_MEMORY, 2);
	e[1].flags = PROF_EVF_ALLOCS;
	e[1].a = 0x2000;
	e[1].b = 50;
	e[2] = fx_range(41, 42, 2, PROF_CAT_MEMORY, 2);
	e[2].flags = PROF_EVF_FREES;
	e[2].c = 0x1000;
	e[3] = fx_range(25, 50, 4, 20, 1);
	e[4] = fx_range(5, 60, 3, 20, 0);
	fx_events(&f, 7, 7, e, 5);
	fx_close(&f);
	char *s = tables(f.path, FORMAT_CSV, SORT_TOTAL, 0, "operator", &rc, err);
	assert_int_equal(rc, 0);
	/* Self keeps the allocator's time (as torch's Self CPU does): outer 55 - inner 25;
	 * % of the category's 55 (inner is inside outer) */
	assert_non_null(strstr(s, "\"operator\",\"outer\",1,55,30,55,55,55,55,100.00,50,100\n"));
	assert_non_null(strstr(s, "\"operator\",\"inner\",1,25,25,25,25,25,25,45.45,-50,-50\n"));
	free(s);
	s = tables(f.path, FORMAT_TEXT, SORT_TOTAL, 0, NULL, &rc, err);
	assert_non_null(strstr(s, "CPU Mem  Self CPU Mem"));
	free(s);
	unlink(f.path);
}

static void test_memory_and_json(void **state)
{
	struct fx f;
	uint64_t v[7];
	char err[256], *s;
	int rc;

	(void)state;
	write_memory(&f);
	s = tables(f.path, FORMAT_JSON, SORT_TOTAL, 0, NULL, &rc, err);
	assert_int_equal(rc, 0);
	assert_true(json_valid(s, strlen(s)));
	assert_non_null(strstr(s, "{\"pid\":5,\"capture\":0,\"ppid\":1,\"exec_seq\":0,\"command\":\"/bin/worker "
				  "-j 2\",\"label\":\"worker -j 2\",\"rank\":null,\"local_rank\":null,"
				  "\"world_size\":null,\"launcher\":null,\"job\":null,\"host\":null,"
				  "\"exit_status\":null,\"allocations\":3,\"frees\":1,"
				  "\"frees_unmatched\":1,"
				  "\"bytes_allocated\":350,\"peak_live_bytes\":250,\"peak_at_ns\":80,"
				  "\"live_bytes_at_end\":250,\"ops_out_of_order\":0,\"gpu_memory\":[],\"size_histogram\":[{\"max_bytes\":64,"
				  "\"allocations\":1,\"bytes\":50},{\"max_bytes\":128,\"allocations\":1,"
				  "\"bytes\":100},{\"max_bytes\":256,\"allocations\":1,\"bytes\":200}],"
				  "\"threads\":[{\"tid\":10,\"name\":\"main\"},"
				  "{\"tid\":20,\"name\":\"helper\"}]}"));
	assert_non_null(strstr(s, "{\"category\":\"memory\",\"name\":\"free\",\"count\":3,"));
	assert_non_null(strstr(s, "\"command\":\"./train --fast\",\"host\":\"node7\""));
	assert_non_null(strstr(s, "\"events\":6,\"lost_events\":0"));
	assert_non_null(strstr(s, "\"damaged\":false"));
	assert_non_null(strstr(s, "\"steps\":null"));
	free(s);
	s = tables(f.path, FORMAT_JSON, SORT_TOTAL, 1, NULL, &rc, err);
	assert_int_equal(fx_count(s, "\"category\":"), 1); /* --top applies to JSON rows */
	free(s);
	s = tables(f.path, FORMAT_TEXT, SORT_TOTAL, 0, NULL, &rc, err);
	assert_non_null(strstr(s, "Memory: cpu/0, per process"));
	assert_non_null(strstr(s, "worker -j 2"));
	assert_non_null(strstr(s, "       250 B"));
	assert_null(strstr(s, "no session end"));
	free(s);
	s = csv(f.path, SORT_TOTAL, 0, NULL);
	csv_nums(s, "memory", "free", v); /* free(NULL) is a call, not a release */
	assert_int_equal(v[0], 3);
	free(s);
	unlink(f.path);
}

static void test_exec_replaces_names(void **state)
{
	struct prof_event e[3];
	struct fx f;
	uint64_t v[7];
	char err[256], *s;
	int rc;

	(void)state;
	fx_open(&f, "exec");
	header(&f);
	fx_process(&f, 7, 0, "sh", 2);
	fx_name(&f, 7, 1, "alpha");
	fx_name(&f, 7, 2, "gamma");
	fx_string(&f, CAP_CATEGORY, 7, 16, "opsA", 4);
	e[0] = fx_range(0, 10, 1, 16, 0);
	e[1] = fx_range(10, 12, 2, 16, 0);
	fx_events(&f, 7, 7, e, 2);
	/* The exec: ids 1 and 16 are defined again, id 2 is not and must not keep "gamma". */
	fx_process(&f, 7, 1, "python3", 7);
	fx_name(&f, 7, 1, "beta");
	fx_string(&f, CAP_CATEGORY, 7, 16, "opsB", 4);
	e[0] = fx_range(20, 50, 1, 16, 0);
	e[1] = fx_range(60, 65, 9, 16, 0);
	e[2] = fx_range(70, 77, 2, 16, 0);
	fx_events(&f, 7, 7, e, 3);
	fx_close(&f);
	/* sh exec'd but ran operators of its own: real work, shown by default too (only a
	 * light launcher is folded; test_fold.c has the rule). */
	s = csv(f.path, SORT_TOTAL, 0, NULL);
	assert_non_null(strstr(s, "\"opsA\""));
	free(s);
	tables_all = 1;
	s = csv(f.path, SORT_TOTAL, 0, NULL);
	csv_nums(s, "opsA", "alpha", v);
	assert_int_equal(v[1], 10);
	csv_nums(s, "opsA", "gamma", v);
	assert_int_equal(v[0], 1);
	csv_nums(s, "opsB", "beta", v);
	assert_int_equal(v[1], 30);
	csv_nums(s, "opsB", "<unknown:9>", v);
	assert_int_equal(v[1], 5);
	csv_nums(s, "opsB", "<unknown:2>", v);
	assert_int_equal(v[1], 7);
	assert_null(strstr(s, "\"opsA\",\"beta\""));
	assert_null(strstr(s, "\"opsB\",\"gamma\""));
	free(s);
	/* One process entry per image. */
	s = tables(f.path, FORMAT_JSON, SORT_TOTAL, 0, NULL, &rc, err);
	assert_non_null(strstr(s, "{\"pid\":7,\"capture\":0,\"ppid\":1,\"exec_seq\":0,\"command\":\"sh\""));
	assert_non_null(strstr(s, "{\"pid\":7,\"capture\":0,\"ppid\":1,\"exec_seq\":1,\"command\":\"python3\""));
	free(s);
	tables_all = 0;
	unlink(f.path);
}

static void fx_job(struct fx *f, uint32_t pid, const char *lines)
{
	struct cap_job j = {pid, 0};
	cap_write2(f->w, CAP_JOB, &j, sizeof(j), lines, strlen(lines));
}

/* Three ranks: each step, ranks 0 and 1 reach the all_reduce at +10, rank 2 at +60; all
 * leave at +70. A broadcast made by ranks 0 and 1 only is not matched. Rank 1 has a
 * worker process of its own rank, with no collectives: not the rank's image. */
static void test_ranks_straggler(void **state)
{
	struct prof_event e[8];
	struct fx f;
	char err[256], *s, lines[128];
	int rc;

	(void)state;
	fx_open(&f, "ranks");
	header(&f);
	for (uint32_t pid = 10; pid <= 13; pid++) {
		int rank = pid == 13 ? 1 : (int)pid - 10;
		fx_process(&f, pid, 0, "python\0train.py", 15);
		/* rank 2 on another host (its capture read with this one): its own host */
		snprintf(lines, sizeof lines,
			 "launcher=torchrun\nrank=%d\nlocal_rank=%d\nworld_size=3\njob=j1\n%s", rank,
			 rank, pid == 12 ? "host=nodeB\n" : "");
		fx_job(&f, pid, lines);
		fx_job(&f, pid, "launcher=x\nrank=9\n"); /* a later part's repeat: ignored */
		fx_name(&f, pid, 1, "gloo:all_reduce");
		fx_name(&f, pid, 2, "Optimizer.step#SGD.step");
		fx_name(&f, pid, 3, "gloo:broadcast");
		fx_name(&f, pid, 4, "Optimizer.step#Adam.step");
		fx_string(&f, CAP_CATEGORY, pid, 16, "collective", 10);
		uint32_t n = 0;
		if (pid == 13) {
			/* a worker of rank 1 with one collective: rank 1 is still pid 11 */
			e[n++] = fx_range(400, 410, 1, 16, 0);
			e[n++] = fx_range(420, 430, 2, PROF_CAT_USER, 0);
			e[n++] = fx_range(440, 450, 2, PROF_CAT_USER, 0);
			fx_events(&f, pid, pid, e, n);
			continue;
		}
		if (pid != 12)
			e[n++] = fx_range(1, 5, 3, 16, 0);
		/* rank 0 has a second optimizer: its steps are not steps */
		if (pid == 10)
			e[n++] = fx_range(150, 155, 4, PROF_CAT_USER, 0);
		/* rank 1's all_reduce before the others' first: theirs were cut (a window) */
		if (pid == 11)
			e[n++] = fx_range(6, 8, 1, 16, 0);
		for (uint64_t t = 0; t < 300; t += 100) {
			e[n++] = fx_range(t + (pid == 12 ? 60 : 10), t + 70, 1, 16, 0);
			e[n++] = fx_range(t + 80, t + 90, 2, PROF_CAT_USER, 0);
		}
		fx_events(&f, pid, pid, e, n);
	}
	fx_close(&f);
	s = tables(f.path, FORMAT_JSON, SORT_TOTAL, 0, NULL, &rc, err);
	assert_int_equal(rc, 0);
	assert_true(json_valid(s, strlen(s)));
	assert_non_null(strstr(s, "\"label\":\"rank 2 (nodeB) python train.py\",\"rank\":2,"
				  "\"local_rank\":2,\"world_size\":3,\"launcher\":\"torchrun\","
				  "\"job\":\"j1\",\"host\":\"nodeB\""));
	assert_non_null(strstr(s, "\"label\":\"rank 0 (node7) python train.py\""));
	assert_non_null(strstr(s, "\"ranks\":{\"count\":3,\"collectives\":true,\"slowest_rank\":2,"
				  "\"slowest_by\":\"waiting\",\"unmatched\":3,\"dropped\":0,"
				  "\"steps_from\":\"Optimizer.step\""));
	/* rank 0: 3 all_reduces waiting 50 each, the broadcast not matched; active: its
	 * top-level calls (broadcast 4, all_reduces 180, optimizer steps 30 + 5); no end
	 * record, no CPU time: null */
	assert_non_null(strstr(s, "{\"rank\":0,\"pid\":10,\"collectives\":4,\"matched\":3,"
				  "\"collective_ns\":184,\"wait_ns\":150,\"wall_ns\":null,"
				  "\"cpu_ns\":null,\"active_ns\":219,\"steps\":[{\"start_ns\":90,"
				  "\"end_ns\":190,\"collective_ns\":60,\"wait_ns\":50,\"compute_ns\":40}"));
	/* its extra call left out, the rest matched as rank 0's */
	assert_non_null(strstr(s, "{\"rank\":1,\"pid\":11,\"collectives\":5,\"matched\":3,"
				  "\"collective_ns\":186,\"wait_ns\":150,"));
	assert_null(strstr(s, "\"pid\":13,\"collectives\""));
	assert_non_null(strstr(s, "{\"rank\":2,\"pid\":12,\"collectives\":3,\"matched\":3,"
				  "\"collective_ns\":30,\"wait_ns\":0,"));
	/* each name's time over the ranks: rank 1's extra call makes it the slowest */
	assert_non_null(strstr(s, "{\"category\":\"collective\",\"name\":\"gloo:all_reduce\","
				  "\"ranks\":3,\"min_ns\":30,\"median_ns\":180,\"max_ns\":182,"
				  "\"slowest_rank\":1,\"calls_min\":3,\"calls_max\":4}"));
	assert_non_null(strstr(s, "{\"category\":\"user\",\"name\":\"Optimizer.step#SGD.step\","
				  "\"ranks\":3,\"min_ns\":30,\"median_ns\":30,\"max_ns\":30,"
				  "\"slowest_rank\":0,"));
	assert_non_null(strstr(s, "{\"step\":2,\"slowest_rank\":2,\"slowest_compute_ns\":90,"
				  "\"median_compute_ns\":40,\"most_waiting_rank\":0,\"most_wait_ns\":50}"));
	free(s);
	s = tables(f.path, FORMAT_TEXT, SORT_TOTAL, 0, NULL, &rc, err);
	assert_non_null(strstr(s, "\nRanks: 3 "));
	assert_non_null(strstr(s, "\nSlowest: rank 2 (waited 0ns in collectives of the steps "
				  "below; the other ranks 100ns, median)\n"));
	assert_non_null(strstr(s, "\nSteps across ranks (each rank's Optimizer.step end to its "
				  "next): 2\n"));
	free(s);
	unlink(f.path);
}

/* A loss of the early buffer (b = PROF_LOST_STARTUP: made before libprof's constructor)
 * is named as such, apart from a full ring's, in the text and in the JSON. */
static void test_startup_loss_named(void **state)
{
	struct prof_event e[3];
	struct fx f;
	char err[256], *s;
	int rc;

	(void)state;
	fx_open(&f, "startup");
	fx_process(&f, 3, 0, "/bin/prog\0", 10);
	fx_name(&f, 3, 1, "malloc");
	e[0] = fx_ev(100, 900, 0, PROF_CAT_LOST, PROF_EV_LOST, 0);
	e[0].a = 64337;
	e[0].b = PROF_LOST_STARTUP;
	e[1] = fx_ev(1000, 1000, 1, PROF_CAT_MEMORY, PROF_EV_COMPLETE, PROF_EVF_ALLOCS);
	e[1].a = 0x1000;
	e[1].b = 16;
	e[2] = fx_ev(40000, 52000, 0, PROF_CAT_LOST, PROF_EV_LOST, 0);
	e[2].a = 10;
	fx_events(&f, 3, 4, e, 3);
	fx_close(&f);
	s = tables(f.path, FORMAT_TEXT, SORT_TOTAL, 0, NULL, &rc, err);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(s, "Events: 1 captured, 64,347 lost\n"));
	assert_non_null(strstr(s, "WARNING: 64,337 events lost at start-up, before libprof's "
				  "constructor ran"));
	assert_non_null(strstr(s, "WARNING: 10 events lost in 1 gap (full ring)"));
	free(s);
	s = tables(f.path, FORMAT_JSON, SORT_TOTAL, 0, NULL, &rc, err);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(s, "\"lost_events\":64347,\"lost_startup_events\":64337"));
	assert_non_null(strstr(s, "\"cause\":\"startup\""));
	assert_non_null(strstr(s, "\"cause\":\"ring\""));
	free(s);
	unlink(f.path);
}

/* A loss to a full ring is said with the collector's longest hold from 2 ms on (a
 * quiet machine's is tens of us): 8.8 ms held once under a busy loop per core, and a
 * 10 ms threshold left that loss unexplained. Below 2 ms, no hold is claimed. */
static void lost_with_wait(uint64_t waited_ns, const char *want, int said)
{
	struct prof_event e[2];
	struct fx f;
	char err[256], end[128], *s;
	int rc;

	fx_open(&f, "waited");
	fx_process(&f, 3, 0, "/bin/prog\0", 10);
	fx_name(&f, 3, 1, "malloc");
	e[0] = fx_ev(1000, 1000, 1, PROF_CAT_MEMORY, PROF_EV_COMPLETE, PROF_EVF_ALLOCS);
	e[0].a = 0x1000;
	e[0].b = 16;
	e[1] = fx_ev(40000, 52000, 0, PROF_CAT_LOST, PROF_EV_LOST, 0);
	e[1].a = 9063;
	fx_events(&f, 3, 4, e, 2);
	snprintf(end, sizeof end, "end_ns=60000\nevents=1\nlost=9063\ndrain_waited_max_ns=%llu\n",
		 (unsigned long long)waited_ns);
	fx_text(&f, CAP_SESSION_END, end);
	fx_close(&f);
	s = tables(f.path, FORMAT_TEXT, SORT_TOTAL, 0, NULL, &rc, err);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(s, "WARNING: 9,063 events lost in 1 gap (full ring)"));
	if (said)
		assert_non_null(strstr(s, want));
	else
		assert_null(strstr(s, "the collector waited up to"));
	free(s);
	unlink(f.path);
}

static void test_ring_loss_said_with_wait(void **state)
{
	(void)state;
	lost_with_wait(8837403, "(the collector waited up to 8.84ms between two drains", 1);
	lost_with_wait(2000000, "(the collector waited up to 2.00ms between two drains", 1);
	lost_with_wait(1500000, NULL, 0);
}

static void test_header_sections_and_damage(void **state)
{
	struct prof_event e[8];
	struct fx f;
	char err[256], cut[80], *s, *buf;
	size_t len = 0;
	int rc;

	(void)state;
	fx_open(&f, "hdr");
	/* No CAP_SESSION and no CAP_SESSION_END: the command comes from the process. */
	fx_process(&f, 3, 0, "/usr/bin/python3\0train.py", 25);
	fx_name(&f, 3, 1, "epoch");
	fx_name(&f, 3, 2, "loss");
	fx_name(&f, 3, 3, "step");
	e[0] = fx_ev(1000, 1000, 1, PROF_CAT_MARK, PROF_EV_INSTANT, 0);
	e[1] = fx_ev(2000, 2000, 2, PROF_CAT_COUNTER, PROF_EV_COUNTER, 0);
	e[1].a = 7;
	e[2] = fx_ev(3000, 3000, 2, PROF_CAT_COUNTER, PROF_EV_COUNTER, 0);
	e[2].a = (uint64_t)-3;
	e[3] = fx_ev(1000, 1000, 3, PROF_CAT_STEP, PROF_EV_INSTANT, 0);
	e[4] = fx_ev(11000, 11000, 3, PROF_CAT_STEP, PROF_EV_INSTANT, 0);
	e[5] = fx_ev(31000, 31000, 3, PROF_CAT_STEP, PROF_EV_INSTANT, 0);
	e[6] = fx_ev(40000, 52000, 0, PROF_CAT_LOST, PROF_EV_LOST, 0);
	e[6].a = 1234;
	fx_events(&f, 3, 4, e, 7);
	cap_flush(f.w);
	e[0] = fx_range(60000, 61000, 1, PROF_CAT_USER, 0);
	fx_events(&f, 3, 4, e, 1);
	fx_close(&f);
	s = tables(f.path, FORMAT_TEXT, SORT_TOTAL, 0, NULL, &rc, err);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(s, "libprof profile: /usr/bin/python3 train.py   (unknown host, "
				  "1 process, duration 60.00us)\n"));
	assert_non_null(strstr(s, "Events: 7 captured, 1,234 lost\n"));
	assert_non_null(strstr(s, "WARNING: 1,234 events lost in 1 gap (full ring); first gap at "
				  "+39.00us (pid 3, tid 4)"));
	assert_non_null(strstr(s, "no session end"));
	assert_non_null(strstr(s, "Steps: 3, one every 15.00us on average (median 15.00us)"));
	assert_non_null(strstr(s, "\nMarks\n"));
	assert_non_null(strstr(s, "\nCounters\n"));
	assert_non_null(strstr(s, "loss"));
	assert_non_null(strstr(s, "             -3              7             -3\n"));
	free(s);
	/* Cut into the second frame: the first frame's tables, exit 1, the damage named. */
	buf = fx_slurp(f.path, &len);
	snprintf(cut, sizeof(cut), "%s.cut", f.path);
	FILE *o = fopen(cut, "wb");
	fwrite(buf, 1, len - 3, o);
	fclose(o);
	s = tables(cut, FORMAT_TEXT, SORT_TOTAL, 0, NULL, &rc, err);
	assert_int_equal(rc, 1);
	assert_non_null(strstr(err, "frame 2 at byte"));
	assert_non_null(strstr(err, "1 complete frame read"));
	assert_non_null(strstr(s, "WARNING: damaged capture"));
	assert_non_null(strstr(s, "Steps: 3"));
	assert_null(strstr(s, "\nuser\n")); /* the range was in the lost frame */
	free(s);
	s = tables(cut, FORMAT_JSON, SORT_TOTAL, 0, NULL, &rc, err);
	assert_int_equal(rc, 1);
	assert_true(json_valid(s, strlen(s)));
	assert_non_null(strstr(s, "\"damaged\":true,\"damage\":\""));
	free(s);
	s = tables("/tmp/libprof-none.prof", FORMAT_TEXT, SORT_TOTAL, 0, NULL, &rc, err);
	assert_int_equal(rc, 2);
	assert_string_equal(err, "/tmp/libprof-none.prof: No such file or directory");
	free(s);
	free(buf);
	unlink(cut);
	unlink(f.path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self_total_nesting),
		cmocka_unit_test(test_same_name_only_child),
		cmocka_unit_test(test_percent_counts_nested_once),
		cmocka_unit_test(test_median),
		cmocka_unit_test(test_median_sketched),
		cmocka_unit_test(test_sort_and_top),
		cmocka_unit_test(test_category_filter),
		cmocka_unit_test(test_csv_fields),
		cmocka_unit_test(test_memory_and_json),
		cmocka_unit_test(test_memory_columns),
		cmocka_unit_test(test_exec_replaces_names),
		cmocka_unit_test(test_header_sections_and_damage),
		cmocka_unit_test(test_startup_loss_named),
		cmocka_unit_test(test_ring_loss_said_with_wait),
		cmocka_unit_test(test_ranks_straggler),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
