/* The tick-to-nanosecond mapping the collector uses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "preload/common/clock.h"

static void mono_is_identity_and_has_a_start(void **state)
{
	(void)state;
	struct prof_clock_map m;
	uint64_t before = prof_mono_ns();
	prof_clock_map_init(&m, PROF_CLOCK_MONO, 0, 0);
	assert_true(m.first_ns >= before && m.first_ns <= prof_mono_ns());
	assert_int_equal(prof_clock_to_ns(&m, 123456789), 123456789);
	prof_clock_map_init(&m, PROF_CLOCK_MONO, 0, 42);
	assert_int_equal(m.first_ns, 42);
}

static void tsc_lands_on_monotonic(void **state)
{
	(void)state;
	if (prof_clock_detect(0) != PROF_CLOCK_TSC)
		skip(); /* no invariant TSC here: the mono path is what runs */
	uint64_t tsc0, ns0;
	prof_clock_pair(&tsc0, &ns0);
	usleep(20000);
	struct prof_clock_map m;
	prof_clock_map_init(&m, PROF_CLOCK_TSC, tsc0, ns0);
	assert_int_equal(m.first_ns, ns0);
	for (int i = 0; i < 5; i++) {
		usleep(3000);
		uint64_t a = prof_mono_ns();
		uint64_t t = __rdtsc();
		uint64_t b = prof_mono_ns();
		uint64_t ns = prof_clock_to_ns(&m, t);
		/* within a few microseconds of the window it was read in */
		assert_true(ns + 5000 >= a);
		assert_true(ns <= b + 5000);
	}
	/* before the anchor too (events older than the collector's last pair) */
	uint64_t ns = prof_clock_to_ns(&m, tsc0);
	assert_true(ns + 5000 >= ns0 && ns <= ns0 + 5000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(mono_is_identity_and_has_a_start),
		cmocka_unit_test(tsc_lands_on_monotonic),
	};
	return cmocka_run_group_tests(tests, 0, 0);
}
