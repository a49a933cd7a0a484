/* Packed events (formats/capture/event_pack.c): every field of every event comes back
 * as it was, for the kinds a drain writes and for extreme values (all bits set, times
 * going backwards, ends before starts, pointers far apart); the common kinds take the
 * few bytes the format promises; bytes that are not exactly n events are refused, never
 * read past. And a capture written with packed records reads back as plain events. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmocka.h>

#include "formats/capture/capture.h"
#include "formats/capture/event_pack.h"

/* splitmix64: the values to pack */
static uint64_t seed = 0x243f6a8885a308d3ull;

static uint64_t next(void)
{
	uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void round_trip(const struct prof_event *ev, uint32_t n, size_t *packed_len)
{
	uint8_t *buf = malloc(CAP_PACKED_BYTES(n) + 1);
	struct prof_event *back = calloc(n + 1, sizeof *back);
	assert_non_null(buf);
	assert_non_null(back);
	size_t len = cap_pack_events(ev, n, buf);
	assert_true(len > 0 && len <= CAP_PACKED_BYTES(n));
	assert_int_equal(cap_unpack_events(buf, len, n, back), 0);
	assert_memory_equal(back, ev, (size_t)n * sizeof *ev);
	/* one byte short, one byte more, one event more or less: refused */
	if (n) {
		assert_int_equal(cap_unpack_events(buf, len - 1, n, back), -1);
		assert_int_equal(cap_unpack_events(buf, len, n - 1, back), -1);
	}
	buf[len] = 0;
	assert_int_equal(cap_unpack_events(buf, len + 1, n, back), -1);
	assert_int_equal(cap_unpack_events(buf, len, n + 1, back), -1);
	if (packed_len)
		*packed_len = len;
	free(buf);
	free(back);
}

static void allocator_pairs(void **state)
{
	(void)state;
	enum { N = 4096 };
	static struct prof_event ev[N];
	uint64_t t = 1700000000000000ull, heap = 0x55d0c0a0b000ull;
	for (int i = 0; i < N; i += 2) {
		uint64_t p = heap + (next() % 64) * 80;
		t += 40 + next() % 30;
		ev[i] = (struct prof_event){.t0 = t, .t1 = t, .a = p, .b = 64, .name = 3,
					    .cat = PROF_CAT_MEMORY, .type = PROF_EV_COMPLETE,
					    .flags = PROF_EVF_ALLOCS, .depth = 2};
		t += 25;
		ev[i + 1] = (struct prof_event){.t0 = t, .t1 = t, .c = p, .name = 4,
						.cat = PROF_CAT_MEMORY, .type = PROF_EV_COMPLETE,
						.flags = PROF_EVF_FREES, .depth = 2};
	}
	size_t len;
	round_trip(ev, N, &len);
	/* an untimed malloc/free pair: shape, cat, flags, depth, name, t0, a or c, b */
	assert_true(len < (size_t)N * 10);
}

static void extremes(void **state)
{
	(void)state;
	struct prof_event ev[8] = {
		{.t0 = UINT64_MAX, .t1 = 0, .a = UINT64_MAX, .b = UINT64_MAX, .c = UINT64_MAX,
		 .name = UINT32_MAX, .cat = 255, .type = 7, .flags = 255, .depth = 255},
		{.t0 = 0, .t1 = UINT64_MAX, .a = 1, .b = 1, .c = 1, .name = 0, .type = 1},
		{.t0 = 5, .t1 = 3, .a = UINT64_MAX, .c = 1, .cat = PROF_CAT_MEMORY,
		 .type = PROF_EV_COMPLETE},
		{.t0 = 1, .t1 = 1, .a = 0x7fffffffffffull, .c = 0x1000, .cat = PROF_CAT_MEMORY,
		 .type = PROF_EV_COMPLETE, .flags = PROF_EVF_ALLOCS | PROF_EVF_FREES},
		{.t0 = UINT64_MAX - 1, .t1 = UINT64_MAX, .a = 0, .c = UINT64_MAX,
		 .cat = PROF_CAT_MEMORY, .type = PROF_EV_COMPLETE},
		{.type = PROF_EV_LOST, .cat = PROF_CAT_LOST, .a = 12345, .t0 = 9, .t1 = 99},
		{.type = PROF_EV_STACK, .cat = PROF_CAT_MEMORY, .a = 77, .t0 = 9, .t1 = 9},
		{0},
	};
	round_trip(ev, 8, NULL);
	round_trip(ev, 0, NULL);
	for (int k = 0; k < 200; k++) { /* random fields */
		struct prof_event r[16];
		for (int i = 0; i < 16; i++) {
			uint64_t m = next();
			r[i] = (struct prof_event){.t0 = next() >> (m & 63), .t1 = next() >> (m >> 6 & 63),
						   .a = m & 1 ? 0 : next(), .b = m & 2 ? 0 : next(),
						   .c = m & 4 ? 0 : next(), .name = (uint32_t)next(),
						   .cat = (uint8_t)(m & 8 ? 0 : next()),
						   .type = (uint8_t)(next() & 7),
						   .flags = (uint8_t)next(), .depth = (uint8_t)next()};
		}
		round_trip(r, 16, NULL);
	}
}

static void garbage_is_refused_or_bounded(void **state)
{
	(void)state;
	uint8_t bytes[256];
	struct prof_event out[64];
	for (int k = 0; k < 20000; k++) {
		size_t len = next() % sizeof bytes;
		for (size_t i = 0; i < len; i++)
			bytes[i] = (uint8_t)next();
		/* any answer, but never a read past len (ASan's build checks) */
		uint8_t *copy = malloc(len ? len : 1);
		memcpy(copy, bytes, len);
		(void)cap_unpack_events(copy, len, (uint32_t)(next() % 64), out);
		free(copy);
	}
	/* one event whose t0 stream holds an 11-byte varint, then a 10th byte over 1 */
	uint8_t bad[CAP_PACKED_LENGTHS + 4 + 11] = {0};
	uint32_t dt0_len = 11;
	memcpy(bad + 4 * CAP_S_DT0, &dt0_len, 4);
	memset(bad + CAP_PACKED_LENGTHS + 4, 0xff, 10);
	bad[CAP_PACKED_LENGTHS + 4 + 10] = 0x01;
	assert_int_equal(cap_unpack_events(bad, sizeof bad, 1, out), -1);
	dt0_len = 10;
	memcpy(bad + 4 * CAP_S_DT0, &dt0_len, 4);
	bad[CAP_PACKED_LENGTHS + 4 + 9] = 0x02;
	assert_int_equal(cap_unpack_events(bad, sizeof bad - 1, 1, out), -1);
	bad[CAP_PACKED_LENGTHS + 4 + 9] = 0x01; /* the largest value: fine */
	assert_int_equal(cap_unpack_events(bad, sizeof bad - 1, 1, out), 0);
	/* a stream longer than what follows it */
	dt0_len = 1000;
	memcpy(bad + 4 * CAP_S_DT0, &dt0_len, 4);
	assert_int_equal(cap_unpack_events(bad, sizeof bad, 1, out), -1);
}

/* ---- through the capture writer and reader ---- */

struct got {
	uint64_t events, plain_records, packed_records;
	struct prof_event first;
};

static int visit(void *ctx, uint32_t type, const void *payload, uint32_t len)
{
	struct got *g = ctx;
	g->packed_records += type == CAP_EVENTS_PACKED;
	if (type == CAP_EVENTS) {
		struct cap_events h;
		memcpy(&h, payload, sizeof h);
		assert_int_equal(len, sizeof h + h.count * sizeof(struct prof_event));
		if (!g->events)
			memcpy(&g->first, (const char *)payload + sizeof h, sizeof g->first);
		g->events += h.count;
		g->plain_records++;
	}
	return 0;
}

static void capture_reads_packed_as_plain(void **state)
{
	(void)state;
	char path[] = "/tmp/libprof-test-pack-XXXXXX", err[256];
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	struct cap_writer *w = cap_writer_fdopen(fd, path, 2, err, sizeof err);
	assert_non_null(w);
	enum { PER = 3000, RECORDS = 500 }; /* ~1.5 M events: many frames */
	static struct prof_event ev[PER];
	static uint8_t packed[CAP_PACKED_BYTES(PER)];
	for (int r = 0; r < RECORDS; r++) {
		for (int i = 0; i < PER; i++)
			ev[i] = (struct prof_event){.t0 = 1000 + (uint64_t)r * PER + i,
						    .t1 = 1000 + (uint64_t)r * PER + i,
						    .a = 0x1000 + (uint64_t)i * 16, .b = 32, .name = 1,
						    .cat = PROF_CAT_MEMORY, .type = PROF_EV_COMPLETE,
						    .flags = PROF_EVF_ALLOCS};
		struct cap_events h = {.pid = 1, .tid = 2, .count = PER};
		size_t n = cap_pack_events(ev, PER, packed);
		/* every other record plain: both kinds in one frame */
		int rc = r & 1 ? cap_write2(w, CAP_EVENTS, &h, sizeof h, ev, sizeof ev)
			       : cap_write2(w, CAP_EVENTS_PACKED, &h, sizeof h, packed, n);
		assert_int_equal(rc, 0);
	}
	assert_int_equal(cap_writer_close(w), 0);
	struct got g = {0};
	assert_int_equal(cap_read(path, visit, &g, err, sizeof err), CAP_READ_OK);
	assert_int_equal(g.events, (uint64_t)PER * RECORDS);
	assert_int_equal(g.plain_records, RECORDS);
	assert_int_equal(g.packed_records, 0);
	assert_int_equal(g.first.t0, 1000);
	assert_int_equal(g.first.a, 0x1000);
	/* a version 1 file (before packed records) still reads */
	uint32_t v1 = 1;
	fd = open(path, O_WRONLY);
	assert_int_equal(pwrite(fd, &v1, sizeof v1, 8), (ssize_t)sizeof v1);
	close(fd);
	memset(&g, 0, sizeof g);
	assert_int_equal(cap_read(path, visit, &g, err, sizeof err), CAP_READ_OK);
	assert_int_equal(g.events, (uint64_t)PER * RECORDS);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(allocator_pairs),
		cmocka_unit_test(extremes),
		cmocka_unit_test(garbage_is_refused_or_bounded),
		cmocka_unit_test(capture_reads_packed_as_plain),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
