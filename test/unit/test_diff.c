/* prof summary and prof diff: the duration sketch's accuracy, the rank test's exact
 * p-values, the JSON reader, a summary made from a capture (self time, allocations during
 * calls, the program row) and read back, and the verdicts of diff_compare on made-up runs:
 * a slower name, the same runs, a common-mode shift, exact metrics, new, gone and renamed
 * names, and the config file. */
#define _GNU_SOURCE /* open_memstream */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture_fixture.h"
#include "formats/perfcheck/diff.h"
#include "formats/util/json_read.h"
#include "formats/perfcheck/summary.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static void test_sketch_quantiles(void **state)
{
	static uint64_t v[20001];
	struct sketch s, t;
	uint64_t x = 88172645463325252ull;
	double q[] = { 0, 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 1 };
	size_t i, n = 20001;

	(void)state;
	sketch_init(&s);
	sketch_init(&t);
	for (i = 0; i < n; i++) {
		/* log-uniform from 10 ns to 10 ms, so every scale is covered */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		v[i] = (uint64_t)(10 * pow(1e6, (double)(x % 1000000) / 1e6));
		assert_int_equal(sketch_add(i % 2 ? &s : &t, v[i]), 0);
	}
	assert_int_equal(sketch_merge(&s, &t), 0);
	assert_int_equal(s.count, n);
	qsort(v, n, sizeof(*v), cmp_u64);
	for (i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
		double exact = (double)v[(size_t)(q[i] * (double)(n - 1))];
		double got = sketch_quantile(&s, q[i]);
		if (fabs(got - exact) > 0.006 * exact + 1)
			fail_msg("q %.2f: sketch %.1f, exact %.1f", q[i], got, exact);
	}
	assert_int_equal(sketch_index(0), 0);
	assert_int_equal(sketch_index(1), 0);
	assert_true(sketch_index(UINT64_MAX) <= SKETCH_MAX_INDEX);
	assert_int_equal(sketch_add_bucket(&s, SKETCH_MAX_INDEX + 1, 1), -1);
	sketch_free(&s);
	sketch_free(&t);
}

/* sketch_add (inline for a bucket held, and for 0 and 1 ns) fills the same buckets as
 * sketch_add_bucket at sketch_index, in whatever order the durations come: below the
 * buckets held, inside, above, and at 0. */
static void test_sketch_add_same_buckets(void **state)
{
	static const uint64_t v[] = {0, 1, 1000, 999, 1001, 5, 0, 2, 1, 10000000, 1000,
				     3, UINT64_MAX, 1, 0, 64, 63, 65, 2000000000ull, 1};
	struct sketch fast, ref;
	(void)state;
	sketch_init(&fast);
	sketch_init(&ref);
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
		assert_int_equal(sketch_add(&fast, v[i]), 0);
		assert_int_equal(sketch_add_bucket(&ref, sketch_index(v[i]), 1), 0);
	}
	assert_int_equal(fast.count, ref.count);
	for (int32_t k = 0; k <= SKETCH_MAX_INDEX; k++) {
		uint64_t a = k >= fast.lo && k - fast.lo < (int32_t)fast.n ? fast.c[k - fast.lo] : 0;
		uint64_t b = k >= ref.lo && k - ref.lo < (int32_t)ref.n ? ref.c[k - ref.lo] : 0;
		if (a != b)
			fail_msg("bucket %d: %llu by sketch_add, %llu by sketch_add_bucket", k,
				 (unsigned long long)a, (unsigned long long)b);
	}
	assert_int_equal(fast.c[0 - fast.lo], 7); /* the 0s and 1s */
	sketch_free(&fast);
	sketch_free(&ref);
}

static void test_rank_test(void **state)
{
	double a[] = { 1, 2, 3, 4, 5 }, b[] = { 6, 7, 8, 9, 10 }, c[] = { 1, 2, 3 };
	double d[] = { 4, 5, 6 }, tie[] = { 3, 4, 5 }, same[] = { 1.5, 2.5, 3.5, 4.5, 5.5 };
	double big_x[40], big_y[40], bins_p;
	struct call_bin bins[4];
	int i;

	(void)state;
	/* every current run above every base run: 1 / C(n+m, n) */
	assert_true(fabs(mwu_p_greater(a, 5, b, 5) - 1.0 / 252) < 1e-12);
	assert_true(fabs(mwu_p_greater(c, 3, d, 3) - 0.05) < 1e-12);
	assert_true(fabs(mwu_p_min(3, 3) - 0.05) < 1e-12);
	assert_true(fabs(mwu_p_min(5, 5) - 1.0 / 252) < 1e-12);
	/* a tie's half is not rounded up: U = 8.5 reads as P(U >= 8) = 2/20 */
	assert_true(fabs(mwu_p_greater(c, 3, tie, 3) - 0.1) < 1e-12);
	assert_true(mwu_p_greater(b, 5, a, 5) > 0.99);
	assert_true(mwu_p_greater(a, 5, same, 5) > 0.2);
	/* past the exact sizes, the normal approximation */
	for (i = 0; i < 40; i++) {
		big_x[i] = i;
		big_y[i] = i + 20;
	}
	assert_true(mwu_p_greater(big_x, 40, big_y, 40) < 1e-4);
	assert_true(mwu_p_greater(big_y, 40, big_x, 40) > 0.99);
	/* calls: the current side's all above the pooled median */
	bins[0] = (struct call_bin){ 1.0, 100, 0 };
	bins[1] = (struct call_bin){ 1.1, 100, 1 };
	bins_p = quantile_test(bins, 2, 0.5, 1);
	assert_true(bins_p < 1e-6);
	bins[0] = (struct call_bin){ 1.0, 100, 0 };
	bins[1] = (struct call_bin){ 1.0, 100, 1 };
	assert_true(quantile_test(bins, 2, 0.5, 1) > 0.4);
	assert_true(isnan(quantile_test(bins, 1, 0.5, 1)));
}

static void test_json_reader(void **state)
{
	const char *doc = " {\"a\": [1, 18446744073709551615, -2, 2.5e3, true, null],"
			  " \"s\": \"x\\\"\\u00e9\\ud83d\\ude00\\n\", \"o\": {}, \"a\": \"last\"} ";
	const char *bad[] = { "{", "[1,]", "{\"a\" 1}", "\"\\q\"", "01x", "[1] 2", "\"a\nb\"" };
	struct jnode root;
	const struct jnode *a;
	char err[128];
	uint64_t u;
	size_t i;

	(void)state;
	assert_int_equal(json_parse(doc, strlen(doc), &root, err, sizeof(err)), 0);
	assert_string_equal(json_str(json_get(&root, "a")), "last"); /* the last one wins */
	a = &root.items[0];
	assert_int_equal(a->type, J_ARR);
	assert_int_equal(a->n, 6);
	assert_int_equal(json_u64(&a->items[1], &u), 0);
	assert_true(u == UINT64_MAX);
	assert_int_equal(json_u64(&a->items[2], &u), -1);
	assert_true(a->items[2].d == -2);
	assert_int_equal(json_u64(&a->items[3], &u), -1); /* not written as a whole number */
	assert_int_equal(a->items[4].type, J_BOOL);
	assert_int_equal(a->items[5].type, J_NULL);
	assert_string_equal(json_str(json_get(&root, "s")), "x\"\xc3\xa9\xf0\x9f\x98\x80\n");
	assert_int_equal(json_get(&root, "o")->type, J_OBJ);
	json_free(&root);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (!json_parse(bad[i], strlen(bad[i]), &root, err, sizeof(err)))
			fail_msg("'%s' parsed", bad[i]);
		assert_non_null(strstr(err, "byte "));
	}
}

/* A capture: thread 1 runs "step" (0..1000) holding "load" (100..400) that allocates 100
 * bytes (a malloc inside it) and "save" (500..600); a LOST gap on thread 2 cuts its
 * child from its parent; two marks. */
static void write_capture(struct fx *f)
{
	struct prof_event e[8];

	fx_open(f, "summary");
	fx_text(f, CAP_SESSION, "command=./train\nhost=nowhere\nclock=tsc\nstart_ns=5\n"
				"root_pid=1\nring_bytes=4194304\nblock=0\nversion=1\n");
	fx_process(f, 1, 0, "/bin/train\0-x", 13);
	fx_name(f, 1, 1, "step");
	fx_name(f, 1, 2, "load");
	fx_name(f, 1, 3, "save");
	fx_name(f, 1, 4, "malloc");
	fx_name(f, 1, 5, "tick");
	e[0] = fx_range(150, 160, 4, PROF_CAT_MEMORY, 2);
	e[0].flags = PROF_EVF_ALLOCS;
	e[0].a = 0x1000;
	e[0].b = 100;
	e[1] = fx_range(100, 400, 2, PROF_CAT_USER, 1);
	e[2] = fx_range(500, 600, 3, PROF_CAT_USER, 1);
	e[3] = fx_range(0, 1000, 1, PROF_CAT_USER, 0);
	e[4] = fx_ev(1100, 1100, 5, PROF_CAT_MARK, PROF_EV_INSTANT, 0);
	e[5] = fx_ev(1200, 1200, 5, PROF_CAT_MARK, PROF_EV_INSTANT, 0);
	fx_events(f, 1, 1, e, 6);
	e[0] = fx_range(10, 20, 2, PROF_CAT_USER, 1);
	e[1] = fx_ev(30, 40, 0, PROF_CAT_LOST, PROF_EV_LOST, 0);
	e[1].a = 3;
	e[2] = fx_range(0, 100, 1, PROF_CAT_USER, 0);
	fx_events(f, 1, 2, e, 3);
	fx_text(f, CAP_SESSION_END, "end_ns=2000\nevents=9\nlost=3\nprocesses=1\n");
	fx_close(f);
}

static const struct sum_row *row(const struct sum_run *r, const char *cat, const char *name)
{
	size_t i;

	for (i = 0; i < r->nrows; i++)
		if (!strcmp(r->rows[i].cat, cat) && !strcmp(r->rows[i].name, name))
			return &r->rows[i];
	fail_msg("no row %s/%s", cat, name);
	return NULL;
}

static char *write_summary(const struct summary *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(summary_write_json(s, f), 0);
	fclose(f);
	return buf;
}

static void test_summary_of_capture(void **state)
{
	struct summary s, back;
	const struct sum_row *w;
	char err[256], path[96], *text, *again;
	struct fx f;
	FILE *out;

	(void)state;
	write_capture(&f);
	summary_init(&s);
	s.tool = "9.9";
	assert_int_equal(summary_load(&s, f.path, err, sizeof(err)), 0);
	assert_int_equal(s.nruns, 1);
	assert_string_equal(sum_fact(&s.runs[0], "command"), "./train");
	assert_string_equal(sum_fact(&s.runs[0], "clock"), "tsc");
	assert_string_equal(sum_fact(&s.runs[0], "prof"), "9.9");
	assert_null(sum_fact(&s.runs[0], "cpu")); /* made elsewhere: no machine facts */
	assert_int_equal(s.runs[0].lost, 3);
	w = row(&s.runs[0], "user", "step");
	assert_int_equal(w->count, 2);
	assert_int_equal(w->total, 1100);
	assert_int_equal(w->self, 1000 - 300 - 100 + 100); /* thread 2's child lost to the gap */
	assert_int_equal(w->allocs, 1);
	assert_int_equal(w->bytes, 100);
	assert_int_equal(w->durs.count, 2);
	w = row(&s.runs[0], "user", "load");
	assert_int_equal(w->self, 300 + 10); /* its malloc is in its Self (stats.c) */
	assert_int_equal(w->allocs, 1);
	w = row(&s.runs[0], "memory", "malloc");
	assert_int_equal((int)w->allocs * 1000 + (int)w->bytes, 1100);
	w = row(&s.runs[0], "mark", "tick");
	assert_int_equal(w->kind, SUM_INSTANTS);
	assert_int_equal(w->count, 2);
	w = row(&s.runs[0], "program", "run");
	assert_int_equal(w->kind, SUM_PROGRAM);
	assert_int_equal(w->wall, 2000 - 5);
	assert_int_equal(w->peak, 100);
	/* written, read back, written again: the same bytes */
	text = write_summary(&s);
	snprintf(path, sizeof(path), "/tmp/libprof-summary-%d.json", (int)getpid());
	out = fopen(path, "w");
	assert_non_null(out);
	fputs(text, out);
	fclose(out);
	summary_init(&back);
	assert_int_equal(summary_load(&back, path, err, sizeof(err)), 0);
	again = write_summary(&back);
	assert_string_equal(text, again);
	/* the same run twice (a capture and its summary) is kept once */
	assert_int_equal(summary_load(&back, f.path, err, sizeof(err)), 0);
	assert_int_equal(back.nruns, 1);
	assert_int_equal(back.duplicates, 1);
	free(text);
	free(again);
	summary_free(&back);
	summary_free(&s);
	unlink(path);
	unlink(f.path);
}

/* made-up runs: names n00..n19 with calls around ns (ns * factor for one name) */

static void add_run(struct summary *s, uint64_t start, double speed, int slow, double factor,
		    int extra_allocs, const char *rename)
{
	struct sum_run r;
	char name[32];
	int i, k;

	memset(&r, 0, sizeof(r));
	r.source = strdup("made-up");
	assert_int_equal(sum_set_fact(&r, "host", "h"), 0);
	r.start_ns = start;
	for (i = 0; i < 20; i++) {
		struct sum_row *w;
		snprintf(name, sizeof(name), "n%02d", i);
		w = sum_add_row(&r, "user", i == 3 && rename ? rename : name, SUM_CALLS);
		assert_non_null(w);
		w->count = 200;
		w->allocs = i == 5 ? (uint64_t)extra_allocs * 200 : 0;
		for (k = 0; k < 200; k++) {
			/* a spread of +-2% around 1000 + 100 i ns, the machine's speed, and
			 * a little noise of the run */
			double noise = 1 + 0.002 * (double)((start * 7 + (uint64_t)i) % 5);
			double ns = (1000 + 100 * i) * (0.98 + 0.04 * k / 199.0) * speed *
				    (i == slow ? factor : 1) * noise;
			assert_int_equal(sketch_add(&w->durs, (uint64_t)ns), 0);
			w->total += (uint64_t)ns;
		}
		w->self = w->total;
	}
	sum_add_row(&r, "program", "run", SUM_PROGRAM)->wall = (uint64_t)(1e8 * speed);
	sum_sort_rows(&r);
	assert_int_equal(summary_take_run(s, &r), 0);
}

static int regressions(const struct diff_result *r, const char *name, int metric)
{
	size_t i;

	for (i = 0; i < r->nnames; i++)
		if (!strcmp(r->names[i].name, name))
			return r->names[i].m[metric].checked &&
			       r->names[i].m[metric].status == DS_REGRESSION;
	return -1;
}

static void test_diff_verdicts(void **state)
{
	struct summary base, cur, aa, fast, alloc, ren;
	struct diff_config cfg;
	struct diff_result r;
	char err[128];
	int i;

	(void)state;
	summary_init(&base);
	summary_init(&cur);
	summary_init(&aa);
	summary_init(&fast);
	summary_init(&alloc);
	summary_init(&ren);
	for (i = 0; i < 5; i++) {
		/* interleaved; the machine 10% slower in some runs, whichever side */
		double speed = i % 2 ? 1.1 : 1.0;
		add_run(&base, 10 * (uint64_t)i + 1, speed, -1, 1, 0, NULL);
		add_run(&cur, 10 * (uint64_t)i + 2, 1.1 - (speed - 1), 7, 1.10, 0, NULL);
		add_run(&aa, 10 * (uint64_t)i + 3, speed, -1, 1, 0, NULL);
		add_run(&fast, 10 * (uint64_t)i + 4, speed * 1.3, -1, 1, 0, NULL);
		add_run(&alloc, 10 * (uint64_t)i + 5, speed, -1, 1, 1, NULL);
		add_run(&ren, 10 * (uint64_t)i + 6, speed, -1, 1, 0, "n03_new");
	}
	diff_config_init(&cfg);
	assert_int_equal(diff_compare(&base, &cur, &cfg, &r), 0);
	assert_int_equal(r.regression, 1);
	assert_int_equal(r.regressions, 1);
	assert_int_equal(regressions(&r, "n07", M_MEDIAN), 1);
	assert_true(r.together);
	diff_result_free(&r);

	assert_int_equal(diff_compare(&base, &aa, &cfg, &r), 0);
	assert_int_equal(r.regression, 0);
	diff_result_free(&r);

	/* everything 30% slower: no name, but the common-mode change when judged */
	assert_int_equal(diff_compare(&base, &fast, &cfg, &r), 0);
	assert_int_equal(r.regression, 0);
	assert_true(fabs(r.common_change - 0.3) < 0.02);
	diff_result_free(&r);
	assert_int_equal(diff_config_metrics(&cfg, "median,common", err, sizeof(err)), 0);
	assert_int_equal(diff_compare(&base, &fast, &cfg, &r), 0);
	assert_int_equal(regressions(&r, "run", M_COMMON), 1);
	assert_int_equal(r.regressions, 1);
	diff_result_free(&r);
	diff_config_free(&cfg);

	/* allocations: judged only with a threshold for them, then exactly */
	diff_config_init(&cfg);
	assert_int_equal(diff_compare(&base, &alloc, &cfg, &r), 0);
	assert_int_equal(r.regression, 0);
	diff_result_free(&r);
	assert_int_equal(diff_config_threshold(&cfg, "allocs=0", err, sizeof(err)), 0);
	assert_int_equal(diff_compare(&base, &alloc, &cfg, &r), 0);
	assert_int_equal(regressions(&r, "n05", M_ALLOCS), 1);
	assert_int_equal(r.regressions, 1);
	for (i = 0; i < (int)r.nnames; i++)
		if (!strcmp(r.names[i].name, "n05"))
			assert_true(r.names[i].m[M_ALLOCS].per_call == 1);
	diff_result_free(&r);
	diff_config_free(&cfg);

	/* a rename: gone and new, paired, no regression unless asked */
	diff_config_init(&cfg);
	assert_int_equal(diff_compare(&base, &ren, &cfg, &r), 0);
	assert_int_equal(r.regression, 0);
	assert_int_equal(r.new_names, 1);
	assert_int_equal(r.gone_names, 1);
	for (i = 0; i < (int)r.nnames; i++)
		if (!strcmp(r.names[i].name, "n03"))
			assert_string_equal(r.names[r.names[i].renamed].name, "n03_new");
	diff_result_free(&r);
	cfg.flag_gone = 1;
	assert_int_equal(diff_compare(&base, &ren, &cfg, &r), 0);
	assert_int_equal(r.regression, 1);
	diff_result_free(&r);
	diff_config_free(&cfg);

	/* one run a side: time cannot be confirmed */
	summary_free(&aa);
	summary_init(&aa);
	add_run(&aa, 99, 1, 7, 1.5, 0, NULL);
	diff_config_init(&cfg);
	summary_free(&fast);
	summary_init(&fast);
	add_run(&fast, 98, 1, -1, 1, 0, NULL);
	assert_int_equal(diff_compare(&fast, &aa, &cfg, &r), 0);
	assert_int_equal(r.regression, 0);
	assert_int_equal(r.unconfirmed, 1);
	assert_true(r.nwarnings >= 1);
	diff_result_free(&r);
	diff_config_free(&cfg);

	summary_free(&base);
	summary_free(&cur);
	summary_free(&aa);
	summary_free(&fast);
	summary_free(&alloc);
	summary_free(&ren);
}

/* Runs far off their side's usual speed are left out, but never more than a third of a
 * side: with 3 of 6 left, one pair of runs out of order hid a 10% change (CI, trial 8). */
static void test_disturbed_runs_capped(void **state)
{
	/* (machine speed, factor of n07): one ordinary base run where n07 was slow, three
	 * runs a side in a spell of the machine 9-10% off */
	static const double base_runs[6][2] = {{1.0, 1.0},  {1.0, 1.12},  {1.0, 1.0},
					       {1.10, 1.0}, {0.91, 1.0}, {1.09, 1.0}};
	static const double cur_runs[6][2] = {{1.0, 1.10},  {1.0, 1.14},  {1.0, 1.15},
					      {1.10, 1.16}, {0.91, 1.16}, {1.09, 1.16}};
	struct summary base, cur;
	struct diff_config cfg;
	struct diff_result r;
	size_t i;

	(void)state;
	summary_init(&base);
	summary_init(&cur);
	for (i = 0; i < 6; i++) {
		add_run(&base, 10 * i + 1, base_runs[i][0], 7, base_runs[i][1], 0, NULL);
		add_run(&cur, 10 * i + 2, cur_runs[i][0], 7, cur_runs[i][1], 0, NULL);
	}
	diff_config_init(&cfg);
	assert_int_equal(diff_compare(&base, &cur, &cfg, &r), 0);
	for (i = 0; i < r.nnames && strcmp(r.names[i].name, "n07"); i++)
		;
	assert_true(i < r.nnames);
	const struct diff_cell *cell = &r.names[i].m[M_MEDIAN];
	assert_int_equal(cell->nb, 4); /* the farthest two of each side left out */
	assert_int_equal(cell->nc, 4);
	assert_true(cell->p_runs < 0.03); /* 1 of 16 pairs out of order */
	assert_int_equal(regressions(&r, "n07", M_MEDIAN), 1);
	assert_int_equal(r.regressions, 1);
	diff_result_free(&r);
	diff_config_free(&cfg);
	summary_free(&base);
	summary_free(&cur);
}

static void test_config(void **state)
{
	struct diff_config cfg;
	char err[256], path[96];
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/libprof-perf-%d.conf", (int)getpid());
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("# thresholds\nthreshold time 10%\nthreshold median \"aten::*\" 20%  # ops\n"
	      "threshold bytes 64K\nignore \"memory=*\"\nflag new\nalpha 0.01\n"
	      "metric p95\ndrift off\n", f);
	fclose(f);
	diff_config_init(&cfg);
	assert_int_equal(diff_config_read(&cfg, path, err, sizeof(err)), 0);
	assert_int_equal(cfg.nrules, 3);
	assert_true(cfg.rules[0].metrics == METRICS_TIME && cfg.rules[0].relative);
	assert_string_equal(cfg.rules[1].pattern, "aten::*");
	assert_true(!cfg.rules[2].relative && cfg.rules[2].value == 65536);
	assert_int_equal(cfg.checked, METRIC_BIT(M_P95));
	assert_true(cfg.flag_new && !cfg.flag_gone && cfg.no_drift && cfg.alpha == 0.01);
	assert_true(diff_pattern_match(cfg.ignore[0], "memory", "malloc"));
	assert_false(diff_pattern_match(cfg.ignore[0], "user", "malloc"));
	assert_true(diff_pattern_match("aten::*", "operator", "aten::conv2d"));
	diff_config_free(&cfg);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("threshold median 5%\n\nthreshold median fast\n", f);
	fclose(f);
	diff_config_init(&cfg);
	assert_int_equal(diff_config_read(&cfg, path, err, sizeof(err)), -1);
	assert_non_null(strstr(err, ":3: bad value 'fast'"));
	diff_config_free(&cfg);
	diff_config_init(&cfg);
	assert_int_equal(diff_config_threshold(&cfg, "12.5", err, sizeof(err)), 0);
	assert_true(cfg.has_global && cfg.global_pct == 12.5);
	assert_int_equal(diff_config_threshold(&cfg, "median=2us", err, sizeof(err)), 0);
	assert_true(cfg.rules[0].value == 2000 && !cfg.rules[0].relative);
	assert_int_equal(diff_config_threshold(&cfg, "speed=2", err, sizeof(err)), -1);
	assert_int_equal(diff_config_metrics(&cfg, "median,bogus", err, sizeof(err)), -1);
	diff_config_free(&cfg);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sketch_quantiles),
		cmocka_unit_test(test_sketch_add_same_buckets),
		cmocka_unit_test(test_rank_test),
		cmocka_unit_test(test_json_reader),
		cmocka_unit_test(test_summary_of_capture),
		cmocka_unit_test(test_diff_verdicts),
		cmocka_unit_test(test_disturbed_runs_capped),
		cmocka_unit_test(test_config),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
