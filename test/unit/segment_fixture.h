/* A process segment laid out as prof_proc_create lays it out (smaller), in anonymous
 * memory, its rings written by the real ring writer: what test/fuzz/fuzz_shm.c changes
 * the way a hostile program could, and what unit tests drain with the collector's real
 * code (collector/drain/drain_fuzz.h). Header only: the fuzzer and the tests each
 * compile it in. */
#ifndef PROF_TEST_SEGMENT_FIXTURE_H
#define PROF_TEST_SEGMENT_FIXTURE_H

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "preload/common/ring.h"
#include "preload/common/session.h"

/* above any pid_max (2^22): no such process, its /proc files are not read */
#define FAKE_PID 0x7fff0000u

struct seg_shape {
	unsigned nslots;      /* slot 1 (when there is one) retired, the others owned */
	uint64_t cap;         /* events a ring holds: a power of two */
	unsigned events;      /* written to each ring, t0 = t_base + 1000 + k: more than fit
				 drop */
	uint64_t t_base;
	uint16_t flags;       /* of every event (PROF_EVF_NS: stamped in ns) */
	unsigned stack_depth; /* frames of the second stack (the first has 3) */
};

static size_t seg_round8(size_t v) { return (v + 7) & ~(size_t)7; }

static uint32_t seg_add_string(struct prof_proc_shm *p, const char *s)
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

static void seg_add_stack(struct prof_proc_shm *p, unsigned n)
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

/* NULL when it cannot be mapped. Events: every seventh a stack, the others
 * alternately allocator calls and another category's. */
static struct prof_proc_shm *seg_build(const struct seg_shape *sh, size_t *size_out)
{
	unsigned nslots = sh->nslots;
	uint64_t cap = sh->cap;
	size_t hdr = seg_round8(sizeof(struct prof_proc_shm));
	size_t strings = 1024, stacks = 1024;
	size_t slots = nslots * sizeof(struct prof_slot);
	size_t rings = nslots * cap * sizeof(struct prof_event);
	size_t size = hdr + strings + slots + rings + stacks;
	struct prof_proc_shm *p = mmap(0, size, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	p->version = PROF_SHM_VERSION;
	p->pid = FAKE_PID;
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
	uint32_t name = seg_add_string(p, "malloc");
	seg_add_string(p, "step (file.py:12)");
	seg_add_stack(p, 3);
	seg_add_stack(p, sh->stack_depth);
	for (unsigned i = 0; i < nslots; i++) {
		struct prof_slot *s = prof_proc_slot(p, i);
		atomic_store(&s->state, i == 1 ? SLOT_RETIRED : SLOT_OWNED);
		s->tid = FAKE_PID + i;
		atomic_store(&s->gen, 1);
		struct ring_writer w;
		ring_writer_init(&w, s, prof_proc_ring(p, i), cap, 0, NULL);
		/* more events than fit: the writer's drops and LOST records too */
		for (unsigned k = 0; k < sh->events; k++) {
			uint64_t t = sh->t_base + 1000 + k;
			struct prof_event *e = ring_reserve(&w, t);
			if (!e)
				continue;
			*e = (struct prof_event){.t0 = t, .t1 = t + 10, .a = k, .b = 16,
						 .name = name, .type = k % 7 == 3 ? PROF_EV_STACK :
									       PROF_EV_COMPLETE,
						 .cat = k & 1 ? PROF_CAT_MEMORY : 16,
						 .flags = sh->flags};
			ring_commit(&w);
		}
	}
	*size_out = size;
	return p;
}

#endif
