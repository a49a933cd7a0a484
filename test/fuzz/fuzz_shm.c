/* libFuzzer harness: process segments as libprof writes them (the real layout and ring
 * writer), then changed the way a buggy or hostile program could, drained by the
 * collector's real code (collector/drain/ through drain_fuzz.h) into a capture written
 * to /dev/null. The collector must never crash, hang or read outside a mapping.
 *
 * Input: 4 bytes of shape (slots, ring size, events, flags), then patches of 11 bytes:
 * op (bits 0-1: width 1/2/4/8 bytes; 2-3: where: header, slots, strings+stacks, anywhere;
 * 4: drain before applying it), a 16-bit offset in that region, an 8-byte value. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collector/drain/drain_fuzz.h"
#include "test/unit/segment_fixture.h"

static struct prof_session_shm session;
static struct cap_writer *writer;

/* The segment's shape from the input's first 4 bytes. */
static struct prof_proc_shm *build(const uint8_t *shape, size_t *size_out)
{
	struct seg_shape sh = {.nslots = 1 + shape[0] % 4, .cap = 16u << (shape[1] % 4),
			       .events = shape[2], .flags = shape[3] & PROF_EVF_NS,
			       .stack_depth = 1 + shape[3] % 8};
	return seg_build(&sh, size_out);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	char err[256];
	session.magic = PROF_SHM_MAGIC;
	session.version = PROF_SHM_VERSION;
	session.clock_kind = PROF_CLOCK_MONO;
	writer = cap_writer_open_workers("/dev/null", 0, err, sizeof err);
	if (!writer)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	if (len < 4)
		return 0;
	size_t size;
	struct prof_proc_shm *p = build(data, &size);
	if (!p)
		return 0;
	struct collector_options o = {.sid = "fuzz00000000fuzz", .session = &session};
	session.stacks = data[3] >> 7;
	struct collector *c = collector_fuzz_new(&o, writer);
	if (!c) {
		munmap(p, size);
		return 0;
	}
	collector_fuzz_add(c, p, size); /* takes p over */
	size_t regions[4][2] = {
		{0, sizeof *p},
		{p->slots_off, p->rings_off - p->slots_off},
		{p->strings_off, p->strings_size},
		{0, size},
	};
	regions[2][1] = size - p->strings_off; /* strings through stacks */
	int passes = 0;
	for (size_t at = 4; at + 11 <= len; at += 11) {
		uint8_t op = data[at];
		uint16_t off;
		uint64_t val;
		memcpy(&off, data + at + 1, 2);
		memcpy(&val, data + at + 3, 8);
		unsigned width = 1u << (op & 3);
		size_t *r = regions[(op >> 2) & 3];
		if ((op & 16) && passes < 64) {
			collector_fuzz_drain(c);
			passes++;
		}
		if (r[1] < width)
			continue;
		/* the region bounds are the built layout's, never the patched header's */
		size_t where = r[0] + off % (r[1] - width + 1);
		memcpy((char *)p + where, &val, width);
	}
	collector_fuzz_drain(c);
	collector_fuzz_end(c);
	return 0;
}
