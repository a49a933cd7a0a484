/* A capture in parts (formats/capture/capture_parts.c, formats/model): the parts of a
 * directory read in order as one capture, a repeated process continued (not a new one),
 * repeated names, stacks and modules taken once, an exec between parts still a new
 * image, each part readable alone, a damaged part not stopping the next ones, a list
 * ordered by part number, and the flight recorder's window from the last part. */
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

struct dir {
	char path[32];
};

static void dir_make(struct dir *d)
{
	snprintf(d->path, sizeof d->path, "/tmp/libprof-parts-XXXXXX");
	assert_non_null(mkdtemp(d->path));
}

static void dir_remove(struct dir *d)
{
	char **parts;
	size_t n;
	if (!cap_parts(d->path, &parts, &n)) {
		for (size_t i = 0; i < n; i++)
			unlink(parts[i]);
		cap_parts_free(parts, n);
	}
	assert_int_equal(rmdir(d->path), 0);
}

/* Opens part n of d (the fixture's writer on a path of our choosing). */
static void part_open(struct fx *f, const struct dir *d, unsigned n, const char *session)
{
	char err[256];
	snprintf(f->path, sizeof f->path, "%s/part-%06u.prof", d->path, n);
	f->w = cap_writer_open(f->path, err, sizeof err);
	assert_non_null(f->w);
	char part[64];
	fx_text(f, CAP_SESSION, session);
	snprintf(part, sizeof part, "part=%u\nstart_ns=%u\n", n, n * 10);
	fx_text(f, CAP_PART, part);
}

static void process(struct fx *f, uint32_t pid, uint32_t exec_seq, uint32_t flags)
{
	struct cap_process p = {.pid = pid, .ppid = 1, .start_ns = 10, .exec_seq = exec_seq,
				.flags = flags};
	cap_write2(f->w, CAP_PROCESS, &p, sizeof p, "prog\0arg", 8);
}

static void stack_and_module(struct fx *f, uint32_t pid)
{
	struct cap_module m = {.pid = pid, .start = 0x400000, .end = 0x500000};
	cap_write2(f->w, CAP_MODULE, &m, sizeof m, "/bin/prog", 9);
	uint64_t frames[2] = {0x400100, 0x400200};
	struct cap_stack s = {.pid = pid, .id = 1, .nframes = 2};
	cap_write2(f->w, CAP_STACK, &s, sizeof s, frames, sizeof frames);
}

/* n ranges named id 4 on pid's main thread from t, 10 ns apart */
static void ranges(struct fx *f, uint32_t pid, uint64_t t, unsigned n, uint32_t name)
{
	struct prof_event e[8];
	for (unsigned i = 0; i < n; i++)
		e[i] = fx_range(t + 10 * i, t + 10 * i + 5, name, PROF_CAT_USER, 0);
	fx_events(f, pid, pid, e, n);
}

static const char *SESSION = "command=prog arg\nstart_ns=10\nrotate_ns=1000\nrotate_bytes=0\n";

/* Three parts of one process; part 2 repeats what part 1 gave and adds a name. */
static void three_parts(const struct dir *d)
{
	struct fx f;
	part_open(&f, d, 1, SESSION);
	process(&f, 7, 0, 0);
	fx_thread(&f, 7, 7, "main");
	fx_name(&f, 7, 4, "work");
	stack_and_module(&f, 7);
	ranges(&f, 7, 100, 3, 4);
	fx_close(&f);
	part_open(&f, d, 2, SESSION);
	process(&f, 7, 0, CAP_PROCESS_CONTINUED);
	fx_name(&f, 7, 4, "work");
	stack_and_module(&f, 7);
	fx_thread(&f, 7, 7, "main");
	fx_name(&f, 7, 12, "late");
	ranges(&f, 7, 200, 2, 4);
	ranges(&f, 7, 230, 1, 12);
	fx_close(&f);
	part_open(&f, d, 3, SESSION);
	process(&f, 7, 0, CAP_PROCESS_CONTINUED);
	fx_name(&f, 7, 4, "work");
	fx_name(&f, 7, 12, "late");
	fx_thread(&f, 7, 7, "main");
	ranges(&f, 7, 300, 1, 12);
	struct cap_process_end pe = {.pid = 7, .status = 0, .end_ns = 400};
	cap_write(f.w, CAP_PROCESS_END, &pe, sizeof pe);
	fx_text(&f, CAP_SESSION_END, "end_ns=400\nevents=7\nlost=0\n");
	fx_close(&f);
}

static void read_ok(struct model *m, const char *path)
{
	char err[512];
	model_init(m);
	int rc = model_read(m, path, err, sizeof err);
	if (rc)
		print_message("%s\n", err);
	assert_int_equal(rc, CAP_READ_OK);
}

static void test_parts_read_as_one(void **state)
{
	(void)state;
	struct dir d;
	struct model m;
	dir_make(&d);
	three_parts(&d);
	read_ok(&m, d.path);
	assert_int_equal(m.nimg, 1);
	assert_int_equal(m.nthr, 1);
	assert_int_equal(m.events, 7);
	assert_int_equal(m.nstacks, 1);
	assert_int_equal(m.nmods, 1);
	assert_int_equal(m.nsession, 4); /* the first part's session only */
	assert_int_equal(m.parts, 3);
	assert_int_equal(m.part_first, 1);
	assert_int_equal(m.part_last, 3);
	assert_true(m.img[0].ended && m.have_session_end);
	assert_string_equal(model_str(&m, model_name(&m, 0, 12), NULL), "late");
	model_free(&m);
	/* the middle part alone: its process, thread and names */
	char part[128];
	snprintf(part, sizeof part, "%s/part-000002.prof", d.path);
	read_ok(&m, part);
	assert_int_equal(m.nimg, 1);
	assert_int_equal(m.events, 3);
	assert_true(m.img[0].announced && !m.img[0].ended && !m.have_session_end);
	assert_string_equal(model_str(&m, model_name(&m, 0, 4), NULL), "work");
	assert_int_equal(m.parts, 1);
	assert_int_equal(m.part_first, 2);
	model_free(&m);
	dir_remove(&d);
}

/* A repeat that differs (the program wrote over its strings since) does not rename what
 * the earlier part's events were called. */
static void test_repeat_not_believed(void **state)
{
	(void)state;
	struct dir d;
	struct fx f;
	struct model m;
	dir_make(&d);
	part_open(&f, &d, 1, SESSION);
	process(&f, 7, 0, 0);
	fx_name(&f, 7, 4, "work");
	ranges(&f, 7, 100, 1, 4);
	fx_close(&f);
	part_open(&f, &d, 2, SESSION);
	process(&f, 7, 0, CAP_PROCESS_CONTINUED);
	fx_name(&f, 7, 4, "scribbled");
	ranges(&f, 7, 200, 1, 4);
	fx_close(&f);
	read_ok(&m, d.path);
	assert_string_equal(model_str(&m, model_name(&m, 0, 4), NULL), "work");
	model_free(&m);
	dir_remove(&d);
}

static void test_exec_between_parts(void **state)
{
	(void)state;
	struct dir d;
	struct fx f;
	struct model m;
	dir_make(&d);
	part_open(&f, &d, 1, SESSION);
	process(&f, 7, 0, 0);
	fx_name(&f, 7, 4, "before");
	ranges(&f, 7, 100, 1, 4);
	fx_close(&f);
	part_open(&f, &d, 2, SESSION);
	process(&f, 7, 1, 0); /* exec'd: a new image, its own names */
	fx_name(&f, 7, 4, "after");
	ranges(&f, 7, 200, 1, 4);
	fx_close(&f);
	part_open(&f, &d, 3, SESSION);
	process(&f, 7, 1, CAP_PROCESS_CONTINUED);
	fx_name(&f, 7, 4, "after");
	ranges(&f, 7, 300, 1, 4);
	fx_close(&f);
	read_ok(&m, d.path);
	assert_int_equal(m.nimg, 2);
	assert_int_equal(m.img[1].exec_seq, 1);
	assert_string_equal(model_str(&m, model_name(&m, 1, 4), NULL), "after");
	assert_string_equal(model_str(&m, model_name(&m, 0, 4), NULL), "before");
	model_free(&m);
	dir_remove(&d);
}

static void test_damaged_part_then_more(void **state)
{
	(void)state;
	struct dir d;
	struct model m;
	char err[512], part[128];
	dir_make(&d);
	three_parts(&d);
	snprintf(part, sizeof part, "%s/part-000002.prof", d.path);
	struct stat st;
	assert_int_equal(stat(part, &st), 0);
	assert_int_equal(truncate(part, st.st_size - 5), 0);
	model_init(&m);
	assert_int_equal(model_read(&m, d.path, err, sizeof err), CAP_READ_DAMAGED);
	assert_non_null(strstr(err, "part-000002.prof: frame 1"));
	assert_int_equal(m.events, 4); /* parts 1 and 3 */
	assert_int_equal(m.nimg, 1);
	model_free(&m);
	dir_remove(&d);
}

static void test_parts_order_and_empty(void **state)
{
	(void)state;
	struct dir d;
	struct fx f;
	char **names, err[512];
	size_t n;
	dir_make(&d);
	/* nothing yet: one line saying so */
	struct model m;
	model_init(&m);
	assert_int_equal(model_read(&m, d.path, err, sizeof err), CAP_READ_UNUSABLE);
	assert_non_null(strstr(err, "a directory with no capture parts"));
	model_free(&m);
	for (unsigned k = 0; k < 3; k++) {
		static const unsigned num[3] = {1000000, 999999, 2};
		snprintf(f.path, sizeof f.path, "%s/part-%06u.prof", d.path, num[k]);
		f.w = cap_writer_open(f.path, err, sizeof err);
		fx_close(&f);
	}
	char other[128];
	snprintf(other, sizeof other, "%s/part-x.prof", d.path);
	fclose(fopen(other, "w")); /* not a part's name: left alone */
	assert_int_equal(cap_parts(d.path, &names, &n), 0);
	assert_int_equal(n, 3);
	assert_non_null(strstr(names[0], "part-000002.prof"));
	assert_non_null(strstr(names[1], "part-999999.prof"));
	assert_non_null(strstr(names[2], "part-1000000.prof"));
	cap_parts_free(names, n);
	unlink(other);
	dir_remove(&d);
}

static void test_flight_window(void **state)
{
	(void)state;
	struct dir d;
	struct fx f;
	struct model m;
	const char *session = "command=prog\nstart_ns=10\nflight_ns=100\nflight_bytes=0\n";
	dir_make(&d);
	part_open(&f, &d, 4, session);
	process(&f, 7, 0, CAP_PROCESS_CONTINUED);
	fx_name(&f, 7, 4, "work");
	ranges(&f, 7, 150, 6, 4); /* 150 .. 200 */
	fx_close(&f);
	part_open(&f, &d, 5, session);
	process(&f, 7, 0, CAP_PROCESS_CONTINUED);
	fx_name(&f, 7, 4, "work");
	ranges(&f, 7, 260, 3, 4); /* 260 .. 285 */
	fx_close(&f);
	/* no session end yet (a dump): from the last event, 285 - 100 */
	read_ok(&m, d.path);
	assert_int_equal(m.keep_from, 185);
	assert_int_equal(m.events, 5);   /* 190, 200, 260, 270, 280 */
	assert_int_equal(m.kept_out, 4); /* 150 .. 180 */
	struct model_parts p;
	assert_true(model_parts(&m, &p));
	assert_int_equal(p.flight_ns, 100);
	assert_int_equal(p.left_out, 4);
	model_free(&m);
	/* a part just begun (no events) is not the end */
	part_open(&f, &d, 6, session);
	process(&f, 7, 0, CAP_PROCESS_CONTINUED);
	fx_text(&f, CAP_SESSION_END, "end_ns=320\nevents=9\nlost=0\n");
	fx_close(&f);
	read_ok(&m, d.path);
	assert_int_equal(m.keep_from, 220);
	assert_int_equal(m.events, 3);
	model_free(&m);
	dir_remove(&d);
	/* an idle program (a dump): the last part began after its last event, and the
	 * parts before were dropped by the collector's time: the span ends at that start */
	dir_make(&d);
	part_open(&f, &d, 40, session); /* starts at 400 */
	process(&f, 7, 0, CAP_PROCESS_CONTINUED);
	fx_name(&f, 7, 4, "work");
	ranges(&f, 7, 250, 6, 4); /* 250 .. 300 */
	fx_close(&f);
	part_open(&f, &d, 41, session); /* starts at 410, nothing since */
	process(&f, 7, 0, CAP_PROCESS_CONTINUED);
	fx_close(&f);
	read_ok(&m, d.path);
	assert_int_equal(m.keep_from, 310);
	assert_int_equal(m.events, 0);
	model_free(&m);
	dir_remove(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parts_read_as_one),
		cmocka_unit_test(test_repeat_not_believed),
		cmocka_unit_test(test_exec_between_parts),
		cmocka_unit_test(test_damaged_part_then_more),
		cmocka_unit_test(test_parts_order_and_empty),
		cmocka_unit_test(test_flight_window),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
