/* The live Chrome trace (formats/export/chrome_live.c): events planned as they come, the
 * ones the size rule may keep spooled under a cut that rises as the run goes, the spool
 * compacted, the trace written from it at the end — the same events and otherData as
 * chrome_export_opts makes of the finished capture, ties of the cut's bucket included. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture_fixture.h"
#include "formats/export/chrome_live.h"
#include "formats/model/model_live.h"
#include "formats/model/outputs.h"

#define OPS PROF_CAT_FIRST_DYNAMIC

/* 60,000 events on two threads of two processes: operators of 16 distinct durations
 * (many ties in every bucket; with growth, longer ones later so the cut keeps rising;
 * without, the cut settles early where the end's will be), user ranges the trace always
 * keeps, instants, calls recorded for another thread (CUPTI's API records), and (with
 * memory) large and small allocations and their releases:
 * without them no heap or rate tracks take room, and the end's cut is the last one the
 * run saw, its ties split by place. */
static void write_run(struct fx *f, uint64_t growth, int memory)
{
	fx_text(f, CAP_SESSION, "command=run\nstart_ns=1000\n");
	for (uint32_t pid = 10; pid <= 11; pid++) {
		struct cap_process p = {.pid = pid, .ppid = 1, .start_ns = 1000};
		cap_write2(f->w, CAP_PROCESS, &p, sizeof p, "run", 4);
		fx_string(f, CAP_CATEGORY, pid, OPS, "operator", 8);
		fx_name(f, pid, 1, "conv");
		fx_name(f, pid, 2, "relu");
		fx_name(f, pid, 3, "step");
		fx_name(f, pid, 4, "tick");
	}
	uint64_t t = 2000, seed = 7;
	for (int batch = 0; batch < 300; batch++) {
		for (uint32_t k = 0; k < 4; k++) {
			uint32_t pid = 10 + (k & 1), tid = pid * 10 + (k >> 1);
			struct prof_event ev[50];
			for (int i = 0; i < 50; i++) {
				seed = seed * 6364136223846793005ull + 1442695040888963407ull;
				uint64_t dur = 100 + (seed >> 60) * 50 + (uint64_t)batch * growth;
				int kind = (int)(seed >> 40) % 16;
				if (kind == 0) {
					ev[i] = fx_range(t, t + dur, 3, PROF_CAT_USER, 0);
				} else if (kind == 1) {
					ev[i] = fx_ev(t, t, 4, PROF_CAT_MARK, PROF_EV_INSTANT, 0);
				} else if (memory && kind <= 3) { /* an allocation, large one time in four */
					ev[i] = fx_range(t, t + dur / 4, 0, PROF_CAT_MEMORY, 0);
					ev[i].flags = PROF_EVF_ALLOCS;
					ev[i].a = 0x100000 + (uint64_t)(batch * 1000 + i) * 64;
					ev[i].b = (seed >> 32) % 4 ? 64 : 2u << 20;
				} else if (memory && kind == 4) { /* a release of one made a batch ago */
					/* longer than most allocations: kept where the large block it
					 * releases was left out */
					ev[i] = fx_range(t, t + 900, 0, PROF_CAT_MEMORY, 0);
					ev[i].flags = PROF_EVF_FREES;
					ev[i].c = 0x100000 + (uint64_t)((batch ? batch - 1 : 0) * 1000 + i) * 64;
				} else {
					ev[i] = fx_range(t, t + dur, 1 + (kind & 1), OPS, 0);
					if (kind >= 12) { /* a call CUPTI saw on another thread: a
							     * record given in runs, one per row */
						ev[i].flags = PROF_EVF_TID;
						ev[i].c = tid + 1000;
					}
				}
				t += dur + 10;
			}
			fx_events(f, pid, tid, ev, 50);
		}
	}
	fx_text(f, CAP_SESSION_END, "end_ns=999999999\nevents=60000\nlost=0\n");
}

static int by_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The trace's lines, the separators (before or after) left out, sorted: one event or
 * otherData key each. */
static char **lines_of(char *text, size_t *n)
{
	size_t cap = 1024;
	char **v = malloc(cap * sizeof *v);
	*n = 0;
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (*n == cap)
			v = realloc(v, (cap *= 2) * sizeof *v);
		size_t k = strlen(l);
		if (k && l[k - 1] == ',')
			l[k - 1] = 0;
		v[(*n)++] = l[0] == ',' ? l + 1 : l;
	}
	qsort(v, *n, sizeof *v, by_str);
	return v;
}

static char *export_of(const char *path, uint64_t max, struct output_summary *sum)
{
	char *text = NULL, err[512];
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	struct chrome_options o = {.max_events = max};
	assert_int_equal(chrome_export_opts(path, "x.json", out, &o, sum, err, sizeof err), 0);
	return text;
}

static char *live_of(const char *path, uint64_t max, struct output_summary *sum)
{
	char *text = NULL, err[512], damage[512] = "";
	size_t len = 0;
	struct model m;
	struct model_fold fold;
	int read_rc = -1;
	char spool[64];
	snprintf(spool, sizeof spool, "/tmp/libprof-spool-%d", (int)getpid());
	int fd = open(spool, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	unlink(spool);
	model_init(&m);
	m.track_memory = 1;
	m.keep_curves = 1;
	struct chrome_options o = {.max_events = max};
	struct chrome_live *c = chrome_live_new(&o, &m, fd);
	assert_non_null(c);
	m.on_events = chrome_live_events;
	m.ctx = c;
	struct model_live *l = model_live_new(&m);
	int rc = cap_read(path, model_live_visit, l, damage, sizeof damage);
	assert_int_equal(model_live_finish(l, rc, path, &fold, &read_rc, damage, sizeof damage), 0);
	model_live_free(l);
	FILE *out = open_memstream(&text, &len);
	assert_int_equal(chrome_live_write(c, &fold, NULL, "x.json", out, sum, err, sizeof err), 0);
	chrome_live_free(c);
	model_free(&m);
	model_fold_free(&fold);
	return text;
}

/* The events left out. */
static uint64_t same_trace(const char *path, uint64_t max)
{
	struct output_summary a, b;
	char *whole = export_of(path, max, &a), *live = live_of(path, max, &b);
	size_t na, nb;
	char **la = lines_of(whole, &na), **lb = lines_of(live, &nb);
	assert_int_equal(na, nb);
	for (size_t i = 0; i < na; i++)
		assert_string_equal(la[i], lb[i]);
	assert_int_equal(a.json_events, b.json_events);
	assert_int_equal(a.json_dropped, b.json_dropped);
	assert_int_equal(a.json_alloc_hidden, b.json_alloc_hidden);
	assert_int_equal(a.events, b.events);
	free(la);
	free(lb);
	free(whole);
	free(live);
	return a.json_dropped;
}

/* Room for all, and for less and less: the spool compacted many times over (its
 * floor and the cut's period made small), the same trace each time. */
static void test_same_trace_as_export(void **state)
{
	struct fx f;
	(void)state;
	chrome_live_spool_min = 500;
	chrome_live_recut_every = 97;
	for (int run = 0; run < 3; run++) {
		fx_open(&f, "chrome-live");
		write_run(&f, run == 1 ? 3 : 0, run < 2);
		fx_close(&f);
		/* about 7,500 events always kept, 40,000 that may be left out */
		assert_int_equal(same_trace(f.path, 0), 0);
		assert_true(same_trace(f.path, 40000) > 1000);
		assert_true(same_trace(f.path, 20000) > 20000);
		assert_true(same_trace(f.path, 9000) > 35000);
		unlink(f.path);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_trace_as_export),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
