/* Checks of what the collector reads from a process segment (see shm_check.h). */
#include "collector/shm/shm_check.h"

#include <stdio.h>

/* [off, off + len) inside [lo, size), without overflow. */
static int inside(uint64_t off, uint64_t len, uint64_t lo, uint64_t size)
{
	return off >= lo && off <= size && len <= size - off;
}

#define BAD(...) (snprintf(why, len, __VA_ARGS__), -1)

int shm_geom_read(const struct prof_proc_shm *p, uint64_t mapped, struct shm_geom *g,
		  char *why, size_t len)
{
	uint64_t hdr = sizeof *p;
	if (mapped < hdr)
		return BAD("%llu bytes, smaller than its header", (unsigned long long)mapped);
	*g = (struct shm_geom){
		.size = mapped, .seg_size = p->segment_size, .pid = p->pid, .nslots = p->nslots,
		.ring_cap = p->ring_cap,
		.strings_off = p->strings_off, .strings_size = p->strings_size,
		.slots_off = p->slots_off, .rings_off = p->rings_off,
		.stacks_off = p->stacks_off, .stacks_size = p->stacks_size,
	};
	if (g->seg_size < hdr || g->seg_size > mapped)
		return BAD("segment_size %llu beyond its %llu bytes", (unsigned long long)g->seg_size,
			   (unsigned long long)mapped);
	mapped = g->seg_size; /* the areas below lie before the chunks that may follow */
	if (g->nslots == 0 || g->nslots > SHM_MAX_SLOTS)
		return BAD("nslots %u", g->nslots);
	if (g->ring_cap == 0 || g->ring_cap > SHM_MAX_RING_CAP || (g->ring_cap & (g->ring_cap - 1)))
		return BAD("ring_cap %llu is not a power of two up to 2^32",
			   (unsigned long long)g->ring_cap);
	/* aligned for the atomics and 8-byte fields read there */
	if ((g->slots_off | g->rings_off | g->stacks_off) & 7 || g->strings_off & 3)
		return BAD("misaligned area offsets");
	uint64_t slots_len = (uint64_t)g->nslots * sizeof(struct prof_slot);
	uint64_t rings_len = (uint64_t)g->nslots * g->ring_cap; /* < 2^48: no overflow */
	if (rings_len > UINT64_MAX / sizeof(struct prof_event))
		return BAD("rings too large");
	rings_len *= sizeof(struct prof_event);
	if (!inside(g->strings_off, g->strings_size, hdr, mapped))
		return BAD("strings area %llu+%llu outside its %llu bytes",
			   (unsigned long long)g->strings_off, (unsigned long long)g->strings_size,
			   (unsigned long long)mapped);
	if (!inside(g->slots_off, slots_len, hdr, mapped))
		return BAD("%u slots at %llu outside its %llu bytes", g->nslots,
			   (unsigned long long)g->slots_off, (unsigned long long)mapped);
	if (!inside(g->rings_off, rings_len, hdr, mapped))
		return BAD("%u rings of %llu events at %llu outside its %llu bytes", g->nslots,
			   (unsigned long long)g->ring_cap, (unsigned long long)g->rings_off,
			   (unsigned long long)mapped);
	if (!inside(g->stacks_off, g->stacks_size, hdr, mapped))
		return BAD("stack area %llu+%llu outside its %llu bytes",
			   (unsigned long long)g->stacks_off, (unsigned long long)g->stacks_size,
			   (unsigned long long)mapped);
	/* the areas' chunks double from the first one's size (prof_area_chunk) */
	if (!g->strings_size || (g->strings_size & (g->strings_size - 1)) || !g->stacks_size ||
	    (g->stacks_size & (g->stacks_size - 1)))
		return BAD("area sizes %llu and %llu are not powers of two",
			   (unsigned long long)g->strings_size, (unsigned long long)g->stacks_size);
	if (p->cmdline_len > PROF_CMDLINE_MAX)
		return BAD("cmdline_len %u", p->cmdline_len);
	return 0;
}

int shm_geom_same(const struct prof_proc_shm *p, const struct shm_geom *g, char *why,
		  size_t len)
{
	if (p->nslots != g->nslots)
		return BAD("nslots changed from %u to %u", g->nslots, p->nslots);
	if (p->ring_cap != g->ring_cap)
		return BAD("ring_cap changed from %llu to %llu", (unsigned long long)g->ring_cap,
			   (unsigned long long)p->ring_cap);
	const char *moved = p->strings_off != g->strings_off     ? "strings_off"
			    : p->strings_size != g->strings_size ? "strings_size"
			    : p->slots_off != g->slots_off       ? "slots_off"
			    : p->rings_off != g->rings_off       ? "rings_off"
			    : p->stacks_off != g->stacks_off     ? "stacks_off"
			    : p->stacks_size != g->stacks_size   ? "stacks_size"
								 : NULL;
	if (moved)
		return BAD("%s changed", moved);
	if (p->segment_size != g->seg_size)
		return BAD("segment_size changed from %llu to %llu", (unsigned long long)g->seg_size,
			   (unsigned long long)p->segment_size);
	return 0;
}

int shm_check_span(uint64_t tail, uint64_t head, uint64_t cap, unsigned slot, char *why,
		   size_t len)
{
	if (head - tail <= cap)
		return 0;
	if (head < tail)
		return BAD("slot %u: head %llu behind tail %llu", slot, (unsigned long long)head,
			   (unsigned long long)tail);
	return BAD("slot %u: head %llu beyond tail+capacity", slot, (unsigned long long)head);
}

int shm_check_lost(uint64_t count, uint64_t now_ns, uint64_t writers, const char *what,
		   char *why, size_t len)
{
	uint64_t most;
	if (__builtin_mul_overflow(now_ns, writers ? writers : 1, &most))
		most = UINT64_MAX;
	if (count <= most)
		return 0;
	return BAD("%s: %llu events lost is more than could be", what, (unsigned long long)count);
}
