/* The streaming live-heap analysis (formats/model/memtrack.c) against a replay of the same
 * operations sorted by time, and its bounds; the bounded curve (memcurve.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "formats/model/memcurve.h"
#include "formats/model/memtrack.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

struct tagged {
	struct mem_op op;
	uint32_t thread, slot; /* slot: one live block at a time */
};

static int by_time(const void *a, const void *b)
{
	const struct tagged *x = a, *y = b;
	if (x->op.t != y->op.t)
		return x->op.t < y->op.t ? -1 : 1;
	return (y->op.size == MEM_OP_FREE) - (x->op.size == MEM_OP_FREE);
}

/* Threads each allocating and releasing their own blocks (some released by another
 * thread), at increasing times; delivered in drain-pass batches, thread by thread. */
static size_t workload(struct tagged *ops, size_t n, unsigned threads)
{
	uint64_t ptrs[64] = {0};
	size_t k = 0;
	/* 1 to 3 ms apart: the run spans minutes, many windows */
	for (uint64_t t = 1000; k < n; t += 1000000 + next_rand() % 2000000) {
		unsigned th = (unsigned)(next_rand() % threads), slot = (unsigned)(next_rand() % 64);
		if (ptrs[slot]) {
			ops[k++] = (struct tagged){{.t = t, .ptr = ptrs[slot], .size = MEM_OP_FREE}, th, slot};
			ptrs[slot] = 0;
		} else {
			ptrs[slot] = 0x10000 + slot * 0x100 + (next_rand() % 4) * 0x10000000ull;
			ops[k++] = (struct tagged){{.t = t, .ptr = ptrs[slot], .size = 1 + next_rand() % 5000,
						    .stack = 1 + slot % 5},
						   th, slot};
		}
	}
	return k;
}

/* Reference: sorted replay. */
static void replay(struct tagged *ops, size_t n, uint64_t *peak, uint64_t *peak_t,
		   uint64_t *end, uint64_t site_peak[6])
{
	uint64_t live = 0, sizes[64] = {0}, site_of[64] = {0}, site_live[6] = {0};
	qsort(ops, n, sizeof *ops, by_time);
	*peak = *peak_t = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned key = ops[i].slot;
		if (ops[i].op.size == MEM_OP_FREE) {
			live -= sizes[key];
			site_live[site_of[key]] -= sizes[key];
			sizes[key] = 0;
		} else {
			sizes[key] = ops[i].op.size;
			site_of[key] = ops[i].op.stack;
			live += sizes[key];
			site_live[site_of[key]] += sizes[key];
		}
		if (live > *peak) {
			*peak = live;
			*peak_t = ops[i].op.t;
			memcpy(site_peak, site_live, sizeof site_live);
		}
	}
	*end = live;
}

/* mi, finished, says what a sorted replay of the n operations in ops says. */
static void expect_as_replay(const struct mem_image *mi, struct tagged *ops, size_t n)
{
	uint64_t peak, peak_t, end, site_peak[6];
	replay(ops, n, &peak, &peak_t, &end, site_peak);
	assert_int_equal(mi->peak, peak);
	assert_int_equal(mi->peak_t, peak_t);
	assert_int_equal(mi->live_end, end);
	assert_int_equal(mi->frees_unmatched, 0);
	for (size_t i = 0; i < mi->nsites; i++)
		assert_int_equal(mi->sites[i].peak_bytes, site_peak[mi->sites[i].stack]);
}

/* One drain pass: each thread's operations of [lo, hi), thread after thread (so a later
 * thread's are older than an earlier one's last). */
static void push_pass(struct mem_image *mi, const struct tagged *ops, size_t lo, size_t hi,
		      unsigned threads)
{
	for (unsigned th = threads; th-- > 0;)
		for (size_t i = lo; i < hi; i++)
			if (ops[i].thread == th)
				assert_int_equal(memtrack_push(mi, th, &ops[i].op, 1), 0);
}

static void test_streaming_equals_sorted_replay(void **state)
{
	(void)state;
	enum { N = 200000, THREADS = 7, BATCH = 500 };
	struct tagged *ops = malloc(N * sizeof *ops), *copy = malloc(N * sizeof *ops);
	size_t n = workload(ops, N, THREADS);
	memcpy(copy, ops, n * sizeof *ops);
	struct mem_image mi;
	memset(&mi, 0, sizeof mi);
	/* drain passes: per pass, each thread's operations of that time span */
	for (size_t lo = 0; lo < n; lo += BATCH) {
		size_t hi = lo + BATCH < n ? lo + BATCH : n;
		push_pass(&mi, ops, lo, hi, THREADS);
	}
	assert_int_equal(memtrack_finish(&mi), 0);
	expect_as_replay(&mi, copy, n);
	assert_int_equal(mi.late, 0);
	assert_int_equal(mi.nsites, 5);
	uint64_t peak = mi.peak, peak_t = mi.peak_t, end = mi.live_end;
	/* the curve's points hold the peak, the last value, and are bounded */
	struct memcurve_point *p;
	size_t np = memcurve_points(mi.curve, &p), at_peak = 0;
	assert_true(np <= 2 * MEMCURVE_BUCKETS + 1);
	assert_true(mi.curve->changes > np);
	for (size_t i = 0; i < np; i++) {
		at_peak |= p[i].live == peak && p[i].t == peak_t;
		if (i)
			assert_true(p[i].t >= p[i - 1].t);
	}
	assert_true(at_peak);
	assert_int_equal(p[np - 1].live, end);
	free(p);
	memcurve_free(mi.curve);
	free(mi.sites);
	free(ops);
	free(copy);
}

/* With the capture's CAP_DRAINED marks after each pass: the same answer as a sorted
 * replay, holding no more than a pass's operations (the window alone held them all: the
 * run's span is under MEMTRACK_WINDOW_NS here); one arriving after its mark is late. */
static void test_drained_marks_bound_what_is_held(void **state)
{
	(void)state;
	enum { N = 100000, THREADS = 5, BATCH = 400 };
	struct tagged *ops = malloc(N * sizeof *ops), *copy = malloc(N * sizeof *ops);
	size_t n = workload(ops, N, THREADS);
	for (size_t i = 0; i < n; i++)
		ops[i].op.t /= 1000; /* microseconds apart: all of it within one window */
	memcpy(copy, ops, n * sizeof *ops);
	assert_true(ops[n - 1].op.t - ops[0].op.t < MEMTRACK_WINDOW_NS);
	struct mem_image mi;
	memset(&mi, 0, sizeof mi);
	size_t most = 0;
	for (size_t lo = 0; lo < n; lo += BATCH) {
		size_t hi = lo + BATCH < n ? lo + BATCH : n;
		push_pass(&mi, ops, lo, hi, THREADS);
		if (memtrack_held(&mi) > most)
			most = memtrack_held(&mi);
		/* everything before the next pass's first operation is in */
		assert_int_equal(memtrack_drained(&mi, hi < n ? ops[hi].op.t : UINT64_MAX), 0);
		assert_true(memtrack_held(&mi) <= 1); /* ties at the mark's time wait */
	}
	assert_true(most <= BATCH);
	struct mem_op late = {.t = ops[0].op.t, .ptr = 0x77, .size = 8};
	assert_int_equal(memtrack_push(&mi, 0, &late, 1), 0);
	assert_int_equal(memtrack_drained(&mi, UINT64_MAX), 0);
	assert_int_equal(mi.late, 1);
	struct mem_op gone = {.t = ops[n - 1].op.t + 1, .ptr = 0x77, .size = MEM_OP_FREE};
	assert_int_equal(memtrack_push(&mi, 0, &gone, 1), 0);
	assert_int_equal(memtrack_finish(&mi), 0);
	expect_as_replay(&mi, copy, n);
	memcurve_free(mi.curve);
	free(mi.sites);
	free(ops);
	free(copy);
}

/* A thread's operations delivered out of time order (the early buffer's batches), in
 * blocks longer than a queue's chunk, each block reversed: put back in order across the
 * chunks, as a sorted replay has them. */
static void test_out_of_order_across_chunks(void **state)
{
	(void)state;
	enum { N = 12001, BLOCK = 3000 };
	struct tagged *ops = calloc(N, sizeof *ops), *copy = malloc(N * sizeof *ops);
	uint64_t ptrs[64] = {0};
	for (size_t k = 0; k < N; k++) {
		unsigned slot = (unsigned)(next_rand() % 64);
		uint64_t t = 1000 + 10 * k;
		if (ptrs[slot]) {
			ops[k] = (struct tagged){{.t = t, .ptr = ptrs[slot], .size = MEM_OP_FREE}, 0, slot};
			ptrs[slot] = 0;
		} else {
			ptrs[slot] = 0x10000 + slot * 0x100;
			ops[k] = (struct tagged){{.t = t, .ptr = ptrs[slot], .size = 1 + next_rand() % 5000,
						  .stack = 1 + slot % 5}, 0, slot};
		}
	}
	memcpy(copy, ops, N * sizeof *ops);
	struct mem_image mi;
	memset(&mi, 0, sizeof mi);
	assert_int_equal(memtrack_push(&mi, 0, &ops[0].op, 0), 0); /* the head: the oldest */
	for (size_t lo = 1; lo < N; lo += BLOCK)
		for (size_t i = lo + BLOCK; i-- > lo;)
			assert_int_equal(memtrack_push(&mi, 0, &ops[i].op, 0), 0);
	assert_int_equal(memtrack_finish(&mi), 0);
	expect_as_replay(&mi, copy, N);
	assert_int_equal(mi.late, 0);
	free(mi.sites);
	free(ops);
	free(copy);
}

/* A long run holds at most MEMTRACK_MAX_HELD operations, whatever its length; one older
 * than the window arrives late: applied and counted. */
static void test_bounded_and_late(void **state)
{
	(void)state;
	struct mem_image mi;
	memset(&mi, 0, sizeof mi);
	uint64_t n = 3ull * (MEMTRACK_MAX_HELD + 1); /* pairs: an even count */
	for (uint64_t i = 0; i < n; i++) {
		struct mem_op op = {.t = 1 + i, .ptr = 0x1000 + (i / 2) * 16,
				    .size = i % 2 ? MEM_OP_FREE : 32};
		assert_int_equal(memtrack_push(&mi, 0, &op, 0), 0);
	}
	struct mem_op old = {.t = 1, .ptr = 0x99, .size = 8};
	assert_int_equal(memtrack_push(&mi, 1, &old, 0), 0); /* long applied past */
	assert_int_equal(memtrack_finish(&mi), 0);
	assert_int_equal(mi.late, 1);
	assert_int_equal(mi.peak, 40);
	assert_int_equal(mi.live_end, 8);
	assert_null(mi.curve);
	assert_int_equal(mi.nsites, 0); /* no stacks: no sites */
}

/* 20,000 stacks (five times the sites' 4,096-slot front, so stacks share its slots)
 * allocated in rounds: one site per stack, each with its own bytes. */
static void test_sites_past_the_front(void **state)
{
	(void)state;
	enum { STACKS = 20000, ROUNDS = 5 };
	struct mem_image mi;
	memset(&mi, 0, sizeof mi);
	uint64_t t = 1;
	for (unsigned r = 0; r < ROUNDS; r++)
		for (uint32_t k = 1; k <= STACKS; k++) {
			/* stack k's block of k bytes, left live until the last round's frees */
			struct mem_op op = {.t = t++, .ptr = 0x100000 + ((uint64_t)r * STACKS + k) * 64,
					    .size = k, .stack = k};
			assert_int_equal(memtrack_push(&mi, 0, &op, 0), 0);
		}
	assert_int_equal(memtrack_finish(&mi), 0);
	assert_int_equal(mi.nsites, STACKS);
	for (size_t i = 0; i < mi.nsites; i++)
		assert_int_equal(mi.sites[i].peak_bytes, (uint64_t)ROUNDS * mi.sites[i].stack);
	memtrack_free(&mi);
	free(mi.sites); /* the image's, not the stream's */
}

/* Late points (applied out of order) keep the curve in time order and bounded, when
 * they come while every change is kept and when it turns to buckets (the turn used to
 * take the first point's time as the earliest). */
static void test_curve_late_points(void **state)
{
	(void)state;
	struct mem_curve *c = memcurve_new();
	uint64_t peak = 0;
	for (uint64_t i = 0; i < 100000; i++) {
		uint64_t t = 1000000 + i * 1000, live = (i * 7919) % 100003;
		if (i % 5000 == 4999 || i == 2 * MEMCURVE_BUCKETS - 1)
			t = 10; /* late, long before */
		peak = live > peak ? live : peak;
		assert_int_equal(memcurve_add(c, t, live), 0);
	}
	struct memcurve_point *p;
	size_t n = memcurve_points(c, &p), at_peak = 0;
	assert_true(n > 0 && n <= 2 * MEMCURVE_BUCKETS + 1);
	for (size_t i = 0; i < n; i++) {
		at_peak |= p[i].live == peak;
		if (i)
			assert_true(p[i].t >= p[i - 1].t);
	}
	assert_true(at_peak);
	free(p);
	memcurve_free(c);
}

/* Each bucket keeps the earliest lowest and the earliest highest point of its span (one
 * point when they are equal), whatever the path a point took in: placed, merged when the
 * buckets widen, or passed over as inside the current bucket's range. */
static void test_curve_buckets_exact(void **state)
{
	(void)state;
	enum { N = 300000 };
	struct memcurve_point *all = malloc(N * sizeof *all);
	assert_non_null(all);
	struct mem_curve *c = memcurve_new();
	uint64_t live = 1 << 20, seed = 12345;
	for (size_t i = 0; i < N; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		/* mostly an allocation and its release (64 bytes up and down), now and then a
		 * step: a busy heap, whose points mostly fall inside their bucket's range */
		unsigned r = (unsigned)(seed >> 33) % 100;
		live = r < 96 ? (i & 1 ? live - 64 : live + 64) : live + (seed >> 40) % 4096 - 2000;
		all[i] = (struct memcurve_point){.t = 1000 + i * 37 + (seed >> 60), .live = live};
		assert_int_equal(memcurve_add(c, all[i].t, all[i].live), 0);
	}
	assert_non_null(c->bucket);
	size_t j = 0;
	for (size_t b = 0; b < MEMCURVE_BUCKETS; b++) {
		uint64_t from = c->origin + b * c->width, to = from + c->width;
		struct memcurve_point lo = {0}, hi = {0};
		for (; j < N && all[j].t < to; j++) {
			assert_true(all[j].t >= from);
			if (!lo.t || all[j].live < lo.live)
				lo = all[j];
			if (!hi.t || all[j].live > hi.live)
				hi = all[j];
		}
		struct memcurve_point *k = c->bucket[b];
		if (!lo.t) {
			assert_true(!k[0].t);
			continue;
		}
		if (lo.live == hi.live) {
			assert_true(k[0].t == lo.t && k[0].live == lo.live && !k[1].t);
			continue;
		}
		struct memcurve_point first = lo.t < hi.t ? lo : hi, second = lo.t < hi.t ? hi : lo;
		assert_true(k[0].t == first.t && k[0].live == first.live);
		assert_true(k[1].t == second.t && k[1].live == second.live);
	}
	assert_int_equal(j, N);
	memcurve_free(c);
	free(all);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_streaming_equals_sorted_replay),
		cmocka_unit_test(test_drained_marks_bound_what_is_held),
		cmocka_unit_test(test_bounded_and_late),
		cmocka_unit_test(test_out_of_order_across_chunks),
		cmocka_unit_test(test_sites_past_the_front),
		cmocka_unit_test(test_curve_late_points),
		cmocka_unit_test(test_curve_buckets_exact),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
