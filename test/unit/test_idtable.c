/* The growing hash index of libprof.so (preload/core/idtable.c, compiled in here): every
 * entry found after many growths, also when threads add while it grows (their adds
 * once failed when the newest table filled before another thread's growth ended). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "preload/core/idtable.c"

static int same_value(uint32_t val, const void *key)
{
	return val == *(const uint32_t *)key;
}

/* Many values share a hash: lookups must tell them apart by the callback. */
static uint32_t hash_of(uint32_t v)
{
	return (v * 2654435761u) >> 3 | 1;
}

static uint32_t find(struct idtable *t, uint32_t v)
{
	return idt_find(t, hash_of(v), same_value, &v);
}

static void every_entry_found_after_growths(void **state)
{
	(void)state;
	static struct idtable t = IDT_INIT(4);
	idt_reset(&t);
	const uint32_t n = 1u << 20;
	for (uint32_t v = 1; v <= n; v++)
		assert_int_equal(idt_add(&t, hash_of(v), v), 0);
	assert_true(atomic_load(&t.ntables) > 10);
	for (uint32_t v = 1; v <= n; v++)
		assert_int_equal(find(&t, v), v);
	assert_int_equal(find(&t, n + 1), 0);
	idt_reset(&t);
	assert_int_equal(find(&t, 1), 0);
}

struct adder {
	struct idtable *t;
	uint32_t first, count;
};

static void *add_range(void *arg)
{
	struct adder *a = arg;
	for (uint32_t v = a->first; v < a->first + a->count; v++)
		if (idt_add(a->t, hash_of(v), v))
			return (void *)1;
	return 0;
}

/* Threads adding while one of them grows the index: an entry placed in a table a growth
 * had already copied is still found there, and no add fails while memory allows. */
static void concurrent_adds_all_found(void **state)
{
	(void)state;
	static struct idtable t = IDT_INIT(4);
	for (int round = 0; round < 8; round++) {
		idt_reset(&t);
		enum { THREADS = 4, EACH = 1 << 17 };
		pthread_t th[THREADS];
		struct adder a[THREADS];
		for (int i = 0; i < THREADS; i++) {
			a[i] = (struct adder){&t, 1 + (uint32_t)i * EACH, EACH};
			assert_int_equal(pthread_create(&th[i], 0, add_range, &a[i]), 0);
		}
		for (int i = 0; i < THREADS; i++) {
			void *r;
			pthread_join(th[i], &r);
			assert_null(r);
		}
		for (uint32_t v = 1; v <= THREADS * EACH; v++)
			if (find(&t, v) != v)
				fail_msg("round %d: %u not found", round, v);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_entry_found_after_growths),
		cmocka_unit_test(concurrent_adds_all_found),
	};
	return cmocka_run_group_tests(tests, 0, 0);
}
