/* CAP_DRAINED (formats/capture/capture.h), as the collector's real drain writes it
 * (collector/drain/drain.c through drain_fuzz.h): after a pass, how far every thread's
 * events are in. A pass that leaves events in a ring (it reads 65,536 of a ring at most)
 * or finds a ring full (its writer may wait with an event stamped) says no more than
 * that ring's next event; a pass that read everything, its start less the margin. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "collector/drain/drain_fuzz.h"
#include "preload/common/clock.h"
#include "segment_fixture.h"

#define T_BASE 1000000000ull /* 1 s: past the first mark's minimum step (5 ms) */

struct marks {
	uint64_t events;   /* events read so far */
	uint64_t before[8], events_then[8];
	unsigned n;
};

static int visit(void *ctx, uint32_t type, const void *payload, uint32_t len)
{
	struct marks *m = ctx;
	if (type == CAP_EVENTS) {
		struct cap_events ce;
		memcpy(&ce, payload, sizeof ce);
		m->events += ce.count;
	} else if (type == CAP_DRAINED && m->n < 8) {
		struct cap_drained d;
		assert_true(len >= sizeof d);
		memcpy(&d, payload, sizeof d);
		m->before[m->n] = d.before_ns;
		m->events_then[m->n++] = m->events;
	}
	return 0;
}

/* Drains a segment of one ring of shape sh twice, then reads the capture's marks. */
static void drain_twice(const struct seg_shape *sh, struct marks *m)
{
	char path[] = "/tmp/libprof-test-drained-XXXXXX", err[256];
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	struct cap_writer *w = cap_writer_open_workers(path, 0, err, sizeof err);
	assert_non_null(w);
	static struct prof_session_shm session;
	session.magic = PROF_SHM_MAGIC;
	session.version = PROF_SHM_VERSION;
	session.clock_kind = PROF_CLOCK_MONO;
	struct collector_options o = {.sid = "test0000drained0", .session = &session};
	size_t size = 0;
	struct prof_proc_shm *p = seg_build(sh, &size);
	assert_non_null(p);
	struct collector *c = collector_fuzz_new(&o, w);
	assert_non_null(c);
	collector_fuzz_add(c, p, size);
	collector_fuzz_drain(c);
	collector_fuzz_drain(c);
	collector_fuzz_end(c);
	assert_int_equal(cap_writer_close(w), 0);
	memset(m, 0, sizeof *m);
	assert_int_equal(cap_read(path, visit, m, err, sizeof err), CAP_READ_OK);
	unlink(path);
}

static void test_partial_pass_says_its_next_event(void **state)
{
	(void)state;
	struct seg_shape sh = {.nslots = 1, .cap = 1u << 17, .events = 100000, .t_base = T_BASE,
			       .stack_depth = 2};
	struct marks m;
	drain_twice(&sh, &m);
	assert_int_equal(m.events, 100000);
	assert_int_equal(m.n, 2);
	/* the first pass read 65,536 events: the next one is stamped T_BASE + 1000 + 65536 */
	assert_int_equal(m.events_then[0], 65536);
	assert_int_equal(m.before[0], T_BASE + 1000 + 65536);
	/* the second read the rest: its start less the margin */
	assert_int_equal(m.events_then[1], 100000);
	uint64_t now = prof_mono_ns();
	assert_true(m.before[1] <= now - CAP_DRAINED_MARGIN_NS);
	assert_true(m.before[1] + CAP_DRAINED_MARGIN_NS + 10000000000ull > now);
}

static void test_full_ring_says_its_last_event(void **state)
{
	(void)state;
	/* a full ring read whole in one pass: its writer may be waiting for room with its
	 * next event stamped, no earlier than the last one read */
	struct seg_shape sh = {.nslots = 1, .cap = 1024, .events = 1024, .t_base = T_BASE,
			       .stack_depth = 2};
	struct marks m;
	drain_twice(&sh, &m);
	assert_int_equal(m.events, 1024);
	assert_true(m.n >= 1);
	assert_int_equal(m.events_then[0], 1024);
	assert_int_equal(m.before[0], T_BASE + 1000 + 1023);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_partial_pass_says_its_next_event),
		cmocka_unit_test(test_full_ring_says_its_last_event),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
