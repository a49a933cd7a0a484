/* The launchers the outputs fold away (formats/model/fold.c): an image that exec'd; a
 * helper its launcher forked and waited for (ended, its events over before the exec, its
 * end seen within 100 ms); never a child of the program, nor a job still working after
 * the exec, nor a quiet one that ends late; helpers of helpers; nothing without an exec. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "capture_fixture.h"
#include "formats/model/model.h"

#define MS 1000000ull

/* when set, every record written is also given to the collector's fold (fold_live) */
static struct fold_live *live;

static void proc(struct fx *f, uint32_t pid, uint32_t ppid, uint32_t seq, uint64_t start,
		 const char *cmd)
{
	struct cap_process p = { .pid = pid, .ppid = ppid, .start_ns = start, .exec_seq = seq };

	cap_write2(f->w, CAP_PROCESS, &p, sizeof(p), cmd, strlen(cmd));
	if (live)
		fold_live_record(live, CAP_PROCESS, &p, sizeof(p), cmd);
}

static void proc_end(struct fx *f, uint32_t pid, uint64_t end)
{
	struct cap_process_end e = { .pid = pid, .status = INT32_MIN, .end_ns = end };

	cap_write(f->w, CAP_PROCESS_END, &e, sizeof(e));
	if (live)
		fold_live_record(live, CAP_PROCESS_END, &e, sizeof(e), NULL);
}

/* One malloc of pid's main thread over [t0, t1]. */
static void work(struct fx *f, uint32_t pid, uint64_t t0, uint64_t t1)
{
	struct prof_event e = fx_range(t0, t1, 1, PROF_CAT_MEMORY, 0);

	fx_events(f, pid, pid, &e, 1);
	if (live) {
		struct cap_events h = { pid, pid, 1, 0 };
		fold_live_record(live, CAP_EVENTS, &h, sizeof(h), &e);
	}
}

/* The CAP_PROCESS records in order:
 *  0 sh (pid 10)          exec'd          -> folded
 *  1 helper 11 of 0       waited for      -> folded (helper)
 *  2 helper 12 of 0, exec'd into 3 (readlink), waited for -> 2 and 3 folded
 *  4 grandchild 14 of helper 12's image 2, over before 12 exec'd -> folded
 *  5 job 15 of 0          works after the exec          -> shown
 *  6 job 16 of 0          quiet, ends 5 s after the exec -> shown
 *  7 python (pid 10, exec_seq 1): the program           -> shown
 *  8 worker 17 of 7       forked by the program          -> shown */
static void write_rule(struct fx *f);
static void check_rule(const struct fx *f);

static void test_rule(void **state)
{
	struct fx f;

	(void)state;
	fx_open(&f, "fold");
	write_rule(&f);
	fx_close(&f);
	check_rule(&f);
	unlink(f.path);
}

static void write_rule(struct fx *fx)
{
	struct fx f = *fx;
	proc(&f, 10, 1, 0, 0, "sh\0shim");
	work(&f, 10, 1 * MS, 2 * MS);
	proc(&f, 11, 10, 0, 3 * MS, "sh\0shim");
	work(&f, 11, 4 * MS, 5 * MS);
	proc_end(&f, 11, 12 * MS);
	proc(&f, 12, 10, 0, 6 * MS, "sh\0shim");
	proc(&f, 14, 12, 0, 7 * MS, "sh\0shim");
	work(&f, 14, 7 * MS, 8 * MS);
	proc_end(&f, 14, 15 * MS);
	proc(&f, 12, 10, 1, 9 * MS, "readlink\0x");
	work(&f, 12, 9 * MS, 10 * MS);
	proc_end(&f, 12, 20 * MS);
	proc(&f, 15, 10, 0, 11 * MS, "sh\0shim");
	work(&f, 15, 11 * MS, 12 * MS);
	proc(&f, 16, 10, 0, 13 * MS, "sleep\0100");
	work(&f, 16, 13 * MS, 14 * MS);
	/* the exec at 30 ms */
	proc(&f, 10, 1, 1, 30 * MS, "python3");
	work(&f, 10, 31 * MS, 32 * MS);
	work(&f, 15, 40 * MS, 41 * MS); /* the job works after the exec */
	proc_end(&f, 15, 45 * MS);
	proc(&f, 17, 10, 0, 50 * MS, "python3");
	work(&f, 17, 51 * MS, 52 * MS);
	proc_end(&f, 17, 55 * MS);
	proc_end(&f, 10, 60 * MS);
	proc_end(&f, 16, 5030 * MS);
}

static void check_rule(const struct fx *fx)
{
	struct model_fold fold;
	struct fx f = *fx;
	char err[256];

	assert_int_equal(model_fold_read(&fold, f.path, err, sizeof(err)), CAP_READ_OK);
	assert_int_equal(fold.n, 9);
	static const uint8_t want[9] = { 1, 1, 1, 1, 1, 0, 0, 0, 0 };
	/* records: 0 sh, 1 helper 11, 2 helper 12, 3 grandchild 14, 4 readlink (12), 5 job
	 * 15, 6 job 16, 7 python, 8 worker 17 */
	for (size_t i = 0; i < 9; i++)
		assert_int_equal(fold.folded[i], want[i]);
	assert_int_equal(fold.images, 1);  /* sh, into python3 */
	assert_int_equal(fold.helpers, 3); /* 11, 12 (two images), 14 */
	model_fold_free(&fold);

	/* the model skips the folded images' events and makes no thread row for them */
	struct model m;
	model_init(&m);
	assert_int_equal(model_read_folded(&m, &fold, f.path, err, sizeof(err)), CAP_READ_OK);
	assert_int_equal(m.events, 9);
	assert_int_equal(m.folded_events, 4); /* sh's, 11's, 14's, readlink's */
	assert_int_equal(model_npids(&m), 7);
	assert_int_equal(model_shown_pids(&m), 4); /* 10 (python3), 15, 16, 17 */
	for (size_t i = 0; i < m.nthr; i++)
		assert_false(m.img[m.thr[i].image].folded);
	model_free(&m);
	model_fold_free(&fold);
}

/* The collector decides the fold as it writes and puts it alone in the last frame:
 * readers take it from there (no pass), the same fold as the pass's. A last frame that
 * is not a whole CAP_FOLD frame (cut, or none) sends them back to the pass. */
static void test_fold_at_the_end(void **state)
{
	struct model_fold fold;
	struct fx f;
	void *payload;
	size_t len;
	(void)state;
	live = fold_live_new();
	fx_open(&f, "foldend");
	write_rule(&f);
	assert_int_equal(fold_live_payload(live, &payload, &len), 0);
	fold_live_free(live);
	live = NULL;
	assert_int_equal(cap_flush(f.w), 0);
	cap_write(f.w, CAP_FOLD, payload, len);
	fx_close(&f);
	assert_int_equal(model_fold_from_end(&fold, f.path), 0);
	assert_int_equal(fold.n, 9);
	model_fold_free(&fold);
	check_rule(&f); /* the same fold, the same model */
	/* two captures joined (cat a.prof a.prof): the last frame is a whole CAP_FOLD, but
	 * not of the records before it: not taken */
	{
		size_t n;
		char *buf = fx_slurp(f.path, &n), joined[96];
		snprintf(joined, sizeof joined, "%s.joined", f.path);
		FILE *out = fopen(joined, "wb");
		assert_non_null(buf);
		assert_non_null(out);
		assert_int_equal(fwrite(buf, 1, n, out), n);
		assert_int_equal(fwrite(buf, 1, n, out), n);
		assert_int_equal(fclose(out), 0);
		assert_int_equal(model_fold_from_end(&fold, joined), -1);
		free(buf);
		unlink(joined);
	}
	/* the record is what readers take: one saying nothing is folded is believed */
	memset((char *)payload + sizeof(struct cap_fold), 0, 9);
	fx_open(&f, "foldend");
	write_rule(&f);
	assert_int_equal(cap_flush(f.w), 0);
	cap_write(f.w, CAP_FOLD, payload, len);
	fx_close(&f);
	char err[256];
	assert_int_equal(model_fold_read(&fold, f.path, err, sizeof(err)), CAP_READ_OK);
	for (size_t i = 0; i < 9; i++)
		assert_int_equal(fold.folded[i], 0);
	model_fold_free(&fold);
	/* cut inside that frame: the pass decides */
	struct stat st;
	assert_int_equal(stat(f.path, &st), 0);
	assert_int_equal(truncate(f.path, st.st_size - 3), 0);
	assert_int_equal(model_fold_from_end(&fold, f.path), -1);
	assert_int_equal(model_fold_read(&fold, f.path, err, sizeof(err)), CAP_READ_OK);
	static const uint8_t want[9] = { 1, 1, 1, 1, 1, 0, 0, 0, 0 };
	assert_memory_equal(fold.folded, want, 9);
	model_fold_free(&fold);
	free(payload);
	unlink(f.path);
}

/* Nothing is folded in a capture without exec (make's compilers are its own children). */
static void test_no_exec_no_fold(void **state)
{
	struct model_fold fold;
	struct fx f;
	char err[256];

	(void)state;
	fx_open(&f, "fold2");
	proc(&f, 20, 1, 0, 0, "make");
	proc(&f, 21, 20, 0, 1 * MS, "cc");
	work(&f, 21, 2 * MS, 3 * MS);
	proc_end(&f, 21, 4 * MS);
	proc_end(&f, 20, 5 * MS);
	fx_close(&f);
	assert_int_equal(model_fold_read(&fold, f.path, err, sizeof(err)), CAP_READ_OK);
	assert_int_equal(fold.n, 2);
	assert_int_equal(fold.folded[0] | fold.folded[1], 0);
	assert_int_equal(fold.images + fold.helpers, 0);
	model_fold_free(&fold);
	unlink(f.path);
	assert_int_equal(model_fold_read(&fold, "/tmp/libprof-no-such.prof", err, sizeof(err)),
			 CAP_READ_UNUSABLE);
	model_fold_free(&fold);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rule),
		cmocka_unit_test(test_fold_at_the_end),
		cmocka_unit_test(test_no_exec_no_fold),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
