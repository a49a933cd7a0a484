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
#include "preload/common/ring.h"
#include "preload/common/session.h"

/* above any pid_max (2^22) */
#define FAKE_PID 0x7fff0000u

static struct prof_session_shm session;
static struct cap_writer *writer;

static size_t round8(size_t v) { return (v + 7) & ~(size_t)7; }

static uint32_t add_string(struct prof_proc_shm *p, const char *s)
{
	uint64_t at = atomic_load(&p->strings_used);
	uint32_t len = (uint32_t)strlen(s);
	uint64_t size = (4 + len + 3) & ~3u;
	if (at + size > p->strings_size)
		return 0;
	struct prof_string_entry *e = (void *)(prof_proc_strings(p) + at);
	e->len = len;
	memcpy(e->bytes, s, len);
	atomic_store(&p->strings_used, at + size);
	return (uint32_t)at;
}

static void add_stack(struct prof_proc_shm *p, unsigned n)
{
	uint64_t need = sizeof(struct prof_stack_entry) + 8ull * n;
	uint64_t at = atomic_fetch_add(&p->stacks_reserved, need);
	if (at + need > p->stacks_size)
		return;
	struct prof_stack_entry *e = (void *)(prof_proc_stacks(p) + at);
	for (unsigned i = 0; i < n; i++)
		e->frames[i] = i & 1 ? PROF_STACK_FRAME_PYTHON | 4 : 0x401000 + i;
	atomic_store(&e->nframes, n);
}

/* A segment laid out as prof_proc_create lays it out, smaller. */
static struct prof_proc_shm *build(const uint8_t *shape, size_t *size_out)
{
	unsigned nslots = 1 + shape[0] % 4;
	uint64_t cap = 16u << (shape[1] % 4);
	unsigned events = shape[2];
	size_t hdr = round8(sizeof(struct prof_proc_shm));
	size_t strings = 1024, stacks = 1024;
	size_t slots = nslots * sizeof(struct prof_slot);
	size_t rings = nslots * cap * sizeof(struct prof_event);
	size_t size = hdr + strings + slots + rings + stacks;
	struct prof_proc_shm *p = mmap(0, size, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	p->version = PROF_SHM_VERSION;
	p->pid = FAKE_PID; /* no such process: its /proc files are not read */
	p->ppid = 1;
	p->nslots = nslots;
	p->created_ns = 1;
	p->ring_cap = cap;
	p->strings_off = hdr;
	p->strings_size = strings;
	p->slots_off = hdr + strings;
	p->rings_off = hdr + strings + slots;
	p->stacks_off = hdr + strings + slots + rings;
	p->stacks_size = stacks;
	p->segment_size = size;
	memcpy(p->cmdline, "fuzz\0prog", 10);
	p->cmdline_len = 10;
	atomic_store(&p->state, PROC_LIVE);
	atomic_store(&p->ncategories, 1);
	strcpy(p->categories[0], "fuzz");
	p->magic = PROF_SHM_MAGIC;
	uint32_t name = add_string(p, "malloc");
	add_string(p, "step (file.py:12)");
	add_stack(p, 3);
	add_stack(p, 1 + shape[3] % 8);
	for (unsigned i = 0; i < nslots; i++) {
		struct prof_slot *s = prof_proc_slot(p, i);
		atomic_store(&s->state, i == 1 ? SLOT_RETIRED : SLOT_OWNED);
		s->tid = FAKE_PID + i;
		atomic_store(&s->gen, 1);
		struct ring_writer w;
		ring_writer_init(&w, s, prof_proc_ring(p, i), cap, 0, NULL);
		/* more events than fit: the writer's drops and LOST records too */
		for (unsigned k = 0; k < events; k++) {
			struct prof_event *e = ring_reserve(&w, 1000 + k);
			if (!e)
				continue;
			*e = (struct prof_event){.t0 = 1000 + k, .t1 = 1010 + k, .a = k, .b = 16,
						 .name = name, .type = k % 7 == 3 ? PROF_EV_STACK :
									       PROF_EV_COMPLETE,
						 .cat = k & 1 ? PROF_CAT_MEMORY : 16,
						 .flags = shape[3] & PROF_EVF_NS};
			ring_commit(&w);
		}
	}
	*size_out = size;
	return p;
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
