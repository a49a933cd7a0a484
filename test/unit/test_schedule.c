/* PROFILER_SCHEDULE (preload/common/schedule.c): torch.profiler.schedule's steps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "preload/common/schedule.h"

static void test_rule_like_torch(void **state)
{
	(void)state;
	struct prof_schedule s;
	/* torch.profiler.schedule(skip_first=1, wait=1, warmup=1, active=2, repeat=2) */
	assert_int_equal(prof_schedule_parse("skip_first=1,wait=1,warmup=1,active=2,repeat=2", &s),
			 0);
	static const int want[12] = {0, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 0};
	for (int i = 0; i < 12; i++)
		assert_int_equal(prof_schedule_records(&s, (uint64_t)i), want[i]);
	/* repeat 0: forever; any order */
	assert_int_equal(prof_schedule_parse("active=1,wait=2", &s), 0);
	for (int i = 0; i < 30; i++)
		assert_int_equal(prof_schedule_records(&s, (uint64_t)i), i % 3 == 2);
	/* none: every step */
	assert_int_equal(prof_schedule_parse("", &s), 0);
	assert_int_equal(s.set, 0);
	assert_int_equal(prof_schedule_records(&s, 5), 1);
}

static void test_bad_specs(void **state)
{
	(void)state;
	static const char *const bad[] = {"active=0", "wait=1", "active=2,", "active=1,x=2",
					  "active", "active=-1", "active=1,active=2", "active=1x",
					  "active=99999999999", ",active=1", "active= 1"};
	struct prof_schedule s = {.wait = 7};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		assert_int_equal(prof_schedule_parse(bad[i], &s), -1);
		assert_non_null(prof_schedule_check(bad[i]));
	}
	assert_int_equal(s.wait, 7); /* unchanged */
	assert_null(prof_schedule_check("warmup=0,active=3"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rule_like_torch),
		cmocka_unit_test(test_bad_specs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
