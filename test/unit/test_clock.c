/* The tick-to-nanosecond mapping the collector uses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <x86intrin.h>
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

/* Updates re-read the pair every period; a tick converts to the same nanoseconds
 * before and after them, and later ticks never to earlier nanoseconds. */
static void updates_keep_the_map_a_function_of_the_tick(void **state)
{
	(void)state;
	if (prof_clock_detect(0) != PROF_CLOCK_TSC)
		skip();
	struct prof_clock_map *m = calloc(1, sizeof *m);
	assert_non_null(m);
	prof_clock_map_init(m, PROF_CLOCK_TSC, 0, 0);
	enum { N = 40 };
	uint64_t ticks[N], first[N];
	for (int i = 0; i < N; i++) {
		usleep(500);
		ticks[i] = __rdtsc();
		first[i] = prof_clock_to_ns(m, ticks[i]);
		prof_clock_map_update(m);
	}
	assert_int_equal(m->nseg, N + 1);
	for (int i = 0; i < N; i++) {
		assert_int_equal(prof_clock_to_ns(m, ticks[i]), first[i]);
		if (i)
			assert_true(first[i] > first[i - 1]);
	}
	/* across each segment's start: 26 ticks apart (10 ns here) never go backwards */
	for (uint32_t k = 1; k < m->nseg; k++) {
		uint64_t at = m->seg[k].tsc;
		for (uint64_t t = at - 260; t < at + 260; t += 26)
			assert_true(prof_clock_to_ns(m, t + 26) > prof_clock_to_ns(m, t));
	}
	/* still on CLOCK_MONOTONIC, within a few microseconds */
	uint64_t a = prof_mono_ns(), t = __rdtsc(), b = prof_mono_ns();
	uint64_t ns = prof_clock_to_ns(m, t);
	assert_true(ns + 5000 >= a && ns <= b + 5000);
	/* a tick before every segment kept: the oldest, extended back */
	assert_true(prof_clock_to_ns(m, m->first_tsc - 2600) < m->first_ns);
	free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(mono_is_identity_and_has_a_start),
		cmocka_unit_test(tsc_lands_on_monotonic),
		cmocka_unit_test(updates_keep_the_map_a_function_of_the_tick),
	};
	return cmocka_run_group_tests(tests, 0, 0);
}
