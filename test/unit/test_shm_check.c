/* The collector's checks of a process segment (collector/shm/shm_check.c) and the reader's
 * refusal of impossible ring spans (preload/common/ring.c): each bad value is refused with a
 * reason, a good layout passes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "preload/common/ring.h"
#include "collector/shm/shm_check.h"

#define SLOTS 4
#define CAP 64

/* a segment's header with the layout prof_proc_create gives, over size bytes */
static uint64_t layout(struct prof_proc_shm *p)
{
	memset(p, 0, sizeof *p);
	p->nslots = SLOTS;
	p->ring_cap = CAP;
	p->strings_off = (sizeof *p + 4095) & ~(uint64_t)4095; /* the header, in whole pages */
	p->strings_size = 4096;
	p->slots_off = p->strings_off + p->strings_size;
	p->rings_off = p->slots_off + SLOTS * sizeof(struct prof_slot);
	p->stacks_off = p->rings_off + SLOTS * CAP * sizeof(struct prof_event);
	p->stacks_size = 4096;
	p->segment_size = p->stacks_off + p->stacks_size;
	return p->segment_size;
}

static void good_layout_passes(void **state)
{
	(void)state;
	struct prof_proc_shm p;
	struct shm_geom g;
	char why[160] = "";
	uint64_t size = layout(&p);
	assert_int_equal(shm_geom_read(&p, size, &g, why, sizeof why), 0);
	assert_int_equal(g.nslots, SLOTS);
	assert_int_equal(shm_geom_same(&p, &g, why, sizeof why), 0);
	/* mapped shorter than the header says: the rings or stacks fall outside */
	assert_int_equal(shm_geom_read(&p, size - 1, &g, why, sizeof why), -1);
	assert_non_null(strstr(why, "segment_size"));
	/* mapped longer: the areas grew past it (shm_layout.h, prof_area_chunk) */
	assert_int_equal(shm_geom_read(&p, size + (1 << 20), &g, why, sizeof why), 0);
	assert_int_equal(shm_geom_same(&p, &g, why, sizeof why), 0);
	/* the areas' chunks double from a first one that is a power of two */
	p.stacks_size = 4096 - 8;
	assert_int_equal(shm_geom_read(&p, size, &g, why, sizeof why), -1);
	assert_non_null(strstr(why, "powers of two"));
}

static void bad_geometry_refused(void **state)
{
	(void)state;
	struct prof_proc_shm p;
	struct shm_geom g;
	char why[160];
	uint64_t size;
	struct {
		size_t off, width;
		uint64_t value;
		const char *says;
	} bad[] = {
		{offsetof(struct prof_proc_shm, nslots), 4, 0, "nslots 0"},
		{offsetof(struct prof_proc_shm, nslots), 4, 1000000, "nslots 1000000"},
		{offsetof(struct prof_proc_shm, ring_cap), 8, 0, "ring_cap 0"},
		{offsetof(struct prof_proc_shm, ring_cap), 8, 48, "ring_cap 48"},
		{offsetof(struct prof_proc_shm, ring_cap), 8, 1ull << 62, "ring_cap 4611686018427387904"},
		{offsetof(struct prof_proc_shm, strings_off), 8, 1ull << 62, "strings area"},
		{offsetof(struct prof_proc_shm, strings_size), 8, UINT64_MAX, "strings area"},
		{offsetof(struct prof_proc_shm, slots_off), 8, 8, "slots at 8"},
		{offsetof(struct prof_proc_shm, rings_off), 8, UINT64_MAX - 7, "rings of"},
		{offsetof(struct prof_proc_shm, stacks_off), 8, 12, "misaligned"},
		{offsetof(struct prof_proc_shm, cmdline_len), 4, 100000, "cmdline_len"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		size = layout(&p);
		memcpy((char *)&p + bad[i].off, &bad[i].value, bad[i].width);
		why[0] = 0;
		assert_int_equal(shm_geom_read(&p, size, &g, why, sizeof why), -1);
		if (!strstr(why, bad[i].says))
			fail_msg("case %zu: '%s' does not say '%s'", i, why, bad[i].says);
	}
	assert_int_equal(shm_geom_read(&p, 100, &g, why, sizeof why), -1); /* < header */
}

static void header_rewritten_later_refused(void **state)
{
	(void)state;
	struct prof_proc_shm p;
	struct shm_geom g;
	char why[160];
	shm_geom_read(&p, layout(&p), &g, why, sizeof why);
	p.ring_cap = 0;
	assert_int_equal(shm_geom_same(&p, &g, why, sizeof why), -1);
	assert_string_equal(why, "ring_cap changed from 64 to 0");
	p.ring_cap = CAP;
	p.stacks_off += 8;
	assert_int_equal(shm_geom_same(&p, &g, why, sizeof why), -1);
	assert_string_equal(why, "stacks_off changed");
}

static void spans_and_lost_counts(void **state)
{
	(void)state;
	char why[160];
	assert_int_equal(shm_check_span(10, 10, CAP, 0, why, sizeof why), 0);
	assert_int_equal(shm_check_span(10, 10 + CAP, CAP, 0, why, sizeof why), 0);
	assert_int_equal(shm_check_span(10, 11 + CAP, CAP, 3, why, sizeof why), -1);
	assert_string_equal(why, "slot 3: head 75 beyond tail+capacity");
	assert_int_equal(shm_check_span(10, 9, CAP, 1, why, sizeof why), -1);
	assert_string_equal(why, "slot 1: head 9 behind tail 10");
	assert_int_equal(shm_check_lost(1000, 1000, 1, "x", why, sizeof why), 0);
	assert_int_equal(shm_check_lost(11700000000000000000ull, 1000000000000ull, 64, "x", why,
					 sizeof why), -1);
	assert_int_equal(shm_check_lost(UINT64_MAX, UINT64_MAX, 2, "x", why, sizeof why), 0);
}

static uint64_t calls;
static void count(void *ctx, const struct prof_event *ev, uint64_t n)
{
	(void)ctx, (void)ev;
	calls += n;
}

static void reader_refuses_impossible_spans(void **state)
{
	(void)state;
	static struct prof_event ring[CAP];
	struct prof_slot slot;
	memset(&slot, 0, sizeof slot);
	atomic_store(&slot.tail, 5);
	calls = 0;
	assert_int_equal(ring_drain_upto(&slot, ring, CAP, 5 + CAP + 1, count, 0), 0);
	assert_int_equal(ring_drain_upto(&slot, ring, CAP, 4, count, 0), 0);
	assert_int_equal(ring_drain_upto(&slot, ring, 0, 6, count, 0), 0);
	assert_int_equal(ring_drain_upto(&slot, ring, 48, 6, count, 0), 0);
	assert_int_equal(calls, 0);
	assert_int_equal(atomic_load(&slot.tail), 5);
	assert_int_equal(ring_drain_upto(&slot, ring, CAP, 5 + CAP, count, 0), CAP);
	assert_int_equal(calls, CAP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(good_layout_passes),
		cmocka_unit_test(bad_geometry_refused),
		cmocka_unit_test(header_rewritten_later_refused),
		cmocka_unit_test(spans_and_lost_counts),
		cmocka_unit_test(reader_refuses_impossible_spans),
	};
	return cmocka_run_group_tests(tests, 0, 0);
}
