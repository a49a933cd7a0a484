/* The live model (formats/model/model_live.c): read record by record as a capture is
 * written, it makes the same tables as a read of the finished capture — launchers that
 * exec within the hold folded, their helpers too, a pid reused by a new process named
 * apart, the program's images held then given in order — and says so when a launcher
 * exec'd after its events were given (the caller then reads the capture again). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture_fixture.h"
#include "formats/model/model_live.h"
#include "formats/model/outputs.h"
#include "formats/model/stats.h"

#define MS 1000000ull

static void proc(struct fx *f, uint32_t pid, uint32_t ppid, uint32_t seq, uint64_t start,
		 const char *cmd)
{
	struct cap_process p = { .pid = pid, .ppid = ppid, .start_ns = start, .exec_seq = seq };
	cap_write2(f->w, CAP_PROCESS, &p, sizeof(p), cmd, strlen(cmd) + 1);
}

static void proc_end(struct fx *f, uint32_t pid, uint64_t end)
{
	struct cap_process_end e = { .pid = pid, .status = 0, .end_ns = end };
	cap_write(f->w, CAP_PROCESS_END, &e, sizeof(e));
}

/* A user range named id, and an allocation inside it, on thread tid of pid. */
static void work(struct fx *f, uint32_t pid, uint32_t tid, uint32_t id, uint64_t t0,
		 uint64_t t1)
{
	struct prof_event e[2] = { fx_range(t0 + 1000, t0 + 2000, 0, PROF_CAT_MEMORY, 1),
				   fx_range(t0, t1, id, PROF_CAT_USER, 0) };
	e[0].a = 0x1000 + t0; /* the block's address */
	e[0].b = 64;
	fx_events(f, pid, tid, e, 2);
}

/* An allocation on thread tid of pid: all a launcher (a shim, env, a script's
 * helper) does. */
static void launcher_work(struct fx *f, uint32_t pid, uint32_t tid, uint64_t t0)
{
	struct prof_event e = fx_range(t0, t0 + 1000, 0, PROF_CAT_MEMORY, 1);
	e.a = 0x1000 + t0;
	e.b = 64;
	fx_events(f, pid, tid, &e, 1);
}

/* A model set up as the live tables' child sets up its own: memory tracked, rows into s. */
static void model_for_tables(struct model *m, struct stats *s)
{
	model_init(m);
	stats_init(s);
	m->track_memory = 1;
	m->on_events = stats_on_events;
	m->ctx = s;
}

/* The tables of path: read whole (live = 0), or by the live model (1: 0 or what
 * model_live_finish said, in *said). malloc'd text. */
static char *tables_of(const char *path, int live, int *said)
{
	char *text = NULL, err[512], damage[512] = "";
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	struct table_options opt = { .sort = SORT_TOTAL };
	struct output_summary sum;
	assert_non_null(out);
	if (!live) {
		assert_int_equal(tables_write(path, out, &opt, &sum, err, sizeof err), 0);
		fclose(out);
		return text;
	}
	struct model m;
	struct stats s;
	struct model_fold fold;
	int read_rc = -1;
	model_for_tables(&m, &s);
	struct model_live *l = model_live_new(&m);
	assert_non_null(l);
	int rc = cap_read(path, model_live_visit, l, damage, sizeof damage);
	*said = model_live_finish(l, rc, path, &fold, &read_rc, damage, sizeof damage);
	if (*said)
		print_message("model_live_finish: %s\n", damage);
	model_live_free(l);
	if (!*said)
		assert_int_equal(tables_write_model(&m, &s, &fold, read_rc, damage, path, out, &opt,
						    &sum, err, sizeof err),
				 0);
	fclose(out);
	stats_free(&s);
	model_free(&m);
	model_fold_free(&fold);
	return text;
}

static void expect_same_tables(const char *path)
{
	int said = -1;
	char *whole = tables_of(path, 0, NULL), *live = tables_of(path, 1, &said);
	assert_int_equal(said, 0);
	assert_string_equal(live, whole);
	free(whole);
	free(live);
}

/* A shim (pid 10) that forks a helper (11) and execs the program within the hold; the
 * program forks a worker (12) and works for 3 s; a helper's pid (11) reused later by a
 * process of the program with names of its own. */
static void test_launchers_folded(void **state)
{
	struct fx f;
	(void)state;
	fx_open(&f, "live-fold");
	proc(&f, 10, 1, 0, 0, "sh");
	fx_name(&f, 10, 1, "shim");
	launcher_work(&f, 10, 10, 1 * MS);
	proc(&f, 11, 10, 0, 3 * MS, "readlink");
	fx_name(&f, 11, 1, "helper");
	fx_thread(&f, 11, 11, "readlink");
	launcher_work(&f, 11, 11, 4 * MS);
	proc_end(&f, 11, 6 * MS);
	proc(&f, 10, 1, 1, 20 * MS, "python3");
	fx_name(&f, 10, 1, "step");
	fx_name(&f, 10, 2, "load");
	fx_thread(&f, 10, 10, "main");
	fx_name(&f, 10, 3, "mark_main");
	fx_name(&f, 10, 4, "ctr_main");
	fx_string(&f, CAP_CATEGORY, 10, 16, "cat_main", 8);
	proc(&f, 12, 10, 0, 30 * MS, "python3");
	fx_name(&f, 12, 1, "worker");
	fx_name(&f, 12, 3, "mark_worker");
	fx_name(&f, 12, 4, "ctr_worker");
	fx_string(&f, CAP_CATEGORY, 12, 16, "cat_worker", 10);
	for (uint64_t t = 40; t < 3000; t += 50) {
		work(&f, 10, 10, 1 + (t / 50) % 2, t * MS, (t + 20) * MS);
		work(&f, 12, 12, 1, (t + 5) * MS, (t + 30) * MS);
		/* marks, counters, a category of its own, losses: the worker's earlier in
		 * time, though the main image is given to the model first (it started first)
		 * — the tables' order must not follow the order they were given in */
		struct prof_event e[4] = {
			fx_ev((t + 40) * MS, (t + 40) * MS, 3, PROF_CAT_MARK, PROF_EV_INSTANT, 0),
			fx_ev((t + 41) * MS, (t + 41) * MS, 4, PROF_CAT_COUNTER, PROF_EV_COUNTER, 0),
			fx_range((t + 42) * MS, (t + 43) * MS, 1, 16, 0),
			fx_ev((t + 44) * MS, (t + 45) * MS, 0, PROF_CAT_LOST, PROF_EV_LOST, 0),
		};
		e[1].a = t;
		e[3].a = 3;
		if (t >= 140)
			fx_events(&f, 10, 10, e, t % 200 == 140 ? 4 : 3);
		for (int k = 0; k < 4; k++) {
			e[k].t0 -= 30 * MS;
			e[k].t1 -= 30 * MS;
		}
		if (t < 1000)
			fx_events(&f, 12, 12, e, t % 300 == 40 ? 4 : 3);
		if (t == 1490) { /* pid 11 again: a new process, whose id 1 is another name */
			proc(&f, 11, 10, 0, t * MS, "python3");
			fx_name(&f, 11, 1, "reused");
			fx_thread(&f, 11, 11, "again");
		}
		if (t > 1490 && t < 2000)
			work(&f, 11, 11, 1, (t + 2) * MS, (t + 3) * MS);
	}
	proc_end(&f, 11, 2100 * MS);
	proc_end(&f, 12, 3000 * MS);
	proc_end(&f, 10, 3010 * MS);
	fx_close(&f);
	expect_same_tables(f.path);
	char *t = tables_of(f.path, 0, NULL);
	/* the fold took place: the shim's and helper's rows are not there, the reused pid's
	 * are, under its own name */
	assert_null(strstr(t, "\nshim "));
	assert_null(strstr(t, "\nhelper "));
	assert_non_null(strstr(t, "\nreused "));
	assert_non_null(strstr(t, "\nworker "));
	/* the worker's mark and category came first in time: listed first */
	assert_true(strstr(t, "mark_worker") < strstr(t, "mark_main"));
	assert_true(strstr(t, "\ncat_worker") < strstr(t, "\ncat_main"));
	assert_non_null(strstr(t, "Folded: 1 exec'd image and 1 helper process"));
	/* the header names what the launcher became, not the launcher */
	assert_true(!strncmp(t, "libprof profile: python3 ", 25));
	free(t);
	unlink(f.path);
}

/* A launcher that works past the hold, its events given as shown, then execs: the live
 * model says it decided otherwise; the finished capture's tables fold it. */
static void test_late_exec_said(void **state)
{
	struct fx f;
	(void)state;
	fx_open(&f, "live-late");
	proc(&f, 10, 1, 0, 0, "sh");
	fx_name(&f, 10, 1, "shim");
	for (uint64_t t = 0; t < 1500; t += 100)
		launcher_work(&f, 10, 10, t * MS);
	proc(&f, 10, 1, 1, 1600 * MS, "python3");
	fx_name(&f, 10, 1, "step");
	work(&f, 10, 10, 1, 1700 * MS, 1800 * MS);
	proc_end(&f, 10, 1900 * MS);
	fx_close(&f);
	int said = -1;
	free(tables_of(f.path, 1, &said));
	assert_int_equal(said, 1);
	char *t = tables_of(f.path, 0, NULL);
	assert_null(strstr(t, "\nshim "));
	assert_non_null(strstr(t, "\nstep "));
	free(t);
	unlink(f.path);
}

/* Real work is never folded (issue 30: a program that worked, forked and exec'd itself
 * showed 1% of itself): an image with a range of its own that then exec'd, and a helper
 * that made more allocations than a launcher does, are shown; a light shim still folds. */
static void test_work_never_folded(void **state)
{
	struct fx f;
	(void)state;
	fx_open(&f, "live-work");
	proc(&f, 10, 1, 0, 0, "prepare");
	fx_name(&f, 10, 1, "prep");
	work(&f, 10, 10, 1, 1 * MS, 2 * MS);
	proc(&f, 11, 10, 0, 3 * MS, "convert");
	fx_name(&f, 11, 1, "conv");
	for (uint64_t k = 0; k <= 10000; k++)
		launcher_work(&f, 11, 11, 4 * MS + k * 100);
	proc_end(&f, 11, 6 * MS);
	proc(&f, 10, 1, 1, 20 * MS, "train");
	fx_name(&f, 10, 1, "step");
	work(&f, 10, 10, 1, 30 * MS, 40 * MS);
	proc(&f, 20, 1, 0, 50 * MS, "env");
	launcher_work(&f, 20, 20, 51 * MS);
	proc(&f, 20, 1, 1, 52 * MS, "python3");
	fx_name(&f, 20, 1, "after_env");
	work(&f, 20, 20, 1, 53 * MS, 54 * MS);
	proc_end(&f, 20, 60 * MS);
	proc_end(&f, 10, 100 * MS);
	fx_close(&f);
	expect_same_tables(f.path);
	char *t = tables_of(f.path, 0, NULL);
	assert_non_null(strstr(t, "\nprep "));
	assert_non_null(strstr(t, "\nstep "));
	assert_non_null(strstr(t, "\nafter_env "));
	/* the helper's 10,001 allocations with the program's 3; env's one not shown */
	assert_non_null(strstr(t, "10,004"));
	assert_non_null(strstr(t, "(1 events not shown)"));
	assert_non_null(strstr(t, "Folded: 1 exec'd image and 0 helper processes"));
	free(t);
	unlink(f.path);
}

struct held_seen {
	struct model_live *l;
	uint64_t records;
	size_t held_after[8]; /* held bytes after each of the first records */
};

static int visit_seeing_held(void *ctx, uint32_t type, const void *payload, uint32_t len)
{
	struct held_seen *h = ctx;
	int rc = model_live_visit(h->l, type, payload, len);
	if (h->records < 8)
		h->held_after[h->records] = model_live_held_bytes(h->l);
	h->records++;
	return rc;
}

/* A program's records are held only until it has worked: its first range (work no
 * launcher does) gives what was held and itself at once, long before the hold ends; a
 * launcher's stay held. */
static void test_working_image_not_held(void **state)
{
	struct fx f;
	(void)state;
	fx_open(&f, "live-worked");
	proc(&f, 10, 1, 0, 0, "python3");            /* record 0 */
	launcher_work(&f, 10, 10, 1 * MS);           /* 1: held, may be a launcher's */
	work(&f, 10, 10, 1, 2 * MS, 3 * MS);         /* 2: worked: nothing held */
	proc(&f, 20, 1, 0, 4 * MS, "env");           /* 3 */
	launcher_work(&f, 20, 20, 5 * MS);           /* 4: held */
	work(&f, 10, 10, 1, 6 * MS, 7 * MS);         /* 5: the program's, given */
	proc_end(&f, 20, 8 * MS);
	proc_end(&f, 10, 9 * MS);
	fx_close(&f);
	struct model m;
	struct stats s;
	struct model_fold fold;
	char damage[512] = "";
	int read_rc = -1;
	model_for_tables(&m, &s);
	struct held_seen h = {.l = model_live_new(&m)};
	assert_non_null(h.l);
	int rc = cap_read(f.path, visit_seeing_held, &h, damage, sizeof damage);
	assert_true(h.held_after[1] > 0);
	assert_int_equal(h.held_after[2], 0);
	size_t env_held = h.held_after[4];
	assert_true(env_held > 0);
	assert_int_equal(h.held_after[5], env_held);
	assert_int_equal(model_live_finish(h.l, rc, f.path, &fold, &read_rc, damage,
					   sizeof damage), 0);
	model_live_free(h.l);
	stats_free(&s);
	model_free(&m);
	model_fold_free(&fold);
	expect_same_tables(f.path);
	unlink(f.path);
}

/* Nothing decided early is contradicted by a launcher that stays quiet past the hold
 * (its events still held): it is given at the end as the final fold says. */
static void test_quiet_launcher_held(void **state)
{
	struct fx f;
	(void)state;
	fx_open(&f, "live-quiet");
	proc(&f, 10, 1, 0, 0, "sh");
	fx_name(&f, 10, 1, "shim");
	work(&f, 10, 10, 1, 1 * MS, 2 * MS);
	proc(&f, 10, 1, 1, 5000 * MS, "python3");
	fx_name(&f, 10, 1, "step");
	work(&f, 10, 10, 1, 5001 * MS, 5002 * MS);
	proc_end(&f, 10, 5003 * MS);
	fx_close(&f);
	expect_same_tables(f.path);
	unlink(f.path);
}

/* Held records past a hold's first chunks (1 MiB each): a helper's 40,000 allocations
 * held, then given; a shell's 40,000 held on the chunks the helper gave back (too busy
 * to be folded as a launcher), then given; the program's after it. The same tables as a
 * whole read. */
static void test_held_past_a_chunk(void **state)
{
	struct fx f;
	(void)state;
	fx_open(&f, "live-chunks");
	proc(&f, 10, 1, 0, 0, "sh");
	proc(&f, 11, 10, 0, 1 * MS, "helper");
	for (uint64_t k = 0; k < 40000; k++)
		launcher_work(&f, 11, 11, 2 * MS + k * 100);
	proc_end(&f, 11, 10 * MS);
	for (uint64_t k = 0; k < 40000; k++)
		launcher_work(&f, 10, 10, 11 * MS + k * 100);
	proc(&f, 10, 1, 1, 20 * MS, "train");
	fx_name(&f, 10, 1, "step");
	work(&f, 10, 10, 1, 30 * MS, 40 * MS);
	proc_end(&f, 10, 100 * MS);
	fx_close(&f);
	expect_same_tables(f.path);
	char *t = tables_of(f.path, 0, NULL);
	assert_non_null(strstr(t, "\nstep "));
	assert_non_null(strstr(t, "80,001"));
	free(t);
	unlink(f.path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_launchers_folded),
		cmocka_unit_test(test_late_exec_said),
		cmocka_unit_test(test_work_never_folded),
		cmocka_unit_test(test_working_image_not_held),
		cmocka_unit_test(test_quiet_launcher_held),
		cmocka_unit_test(test_held_past_a_chunk),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
