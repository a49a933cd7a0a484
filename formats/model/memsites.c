/* Allocation call sites of one image: the operations replayed once more, each live
 * block remembering its site, so the bytes each site holds at the peak and at the end
 * (leaks) are exact. */
#include <stdlib.h>

#include "formats/model/memtrack.h"
#include "formats/util/u64map.h"
#include "formats/util/vec.h"

#define SITE_BITS 24 /* a live block: size << SITE_BITS | site */
#define SITE_MASK ((1u << SITE_BITS) - 1)

static int64_t site_of(struct mem_image *mi, struct u64map *ix, size_t *cap, uint32_t stack)
{
	int created;
	uint64_t *slot = u64map_upsert(ix, stack, &created);
	if (!slot)
		return -1;
	if (!created)
		return (int64_t)*slot;
	if (mi->nsites > SITE_MASK || VEC_RESERVE(mi->sites, *cap, mi->nsites + 1))
		return -1;
	mi->sites[mi->nsites] = (struct mem_site){.stack = stack};
	*slot = mi->nsites;
	return (int64_t)mi->nsites++;
}

int memsites_analyze(struct mem_image *mi, size_t peak_i)
{
	struct u64map ix, blocks;
	size_t cap = 0;
	int rc = 0;
	u64map_init(&ix);
	u64map_init(&blocks);
	free(mi->sites);
	mi->sites = NULL;
	mi->nsites = 0;
	for (size_t i = 0; i < mi->nops && !rc; i++) {
		const struct mem_op *op = &mi->ops[i];
		uint64_t old;
		if (op->size == MEM_OP_FREE || u64map_find(&blocks, op->ptr)) {
			/* a release, or an allocation over a block whose release was lost */
			if (u64map_remove(&blocks, op->ptr, &old)) {
				struct mem_site *s = &mi->sites[old & SITE_MASK];
				s->live_bytes -= old >> SITE_BITS;
				s->live_count--;
			}
		}
		if (op->size != MEM_OP_FREE) {
			int64_t site = site_of(mi, &ix, &cap, op->stack);
			int created;
			uint64_t *slot = site < 0 ? NULL : u64map_upsert(&blocks, op->ptr, &created);
			if (!slot) {
				rc = -1;
				break;
			}
			/* sizes beyond 2^40 bytes are clamped in the block, counted whole */
			uint64_t size = op->size >> (64 - SITE_BITS) ? (1ull << 40) - 1 : op->size;
			*slot = size << SITE_BITS | (uint64_t)site;
			struct mem_site *s = &mi->sites[site];
			s->allocs++;
			s->bytes += op->size;
			s->live_bytes += size;
			s->live_count++;
		}
		if (i == peak_i)
			for (size_t k = 0; k < mi->nsites; k++)
				mi->sites[k].peak_bytes = mi->sites[k].live_bytes;
	}
	u64map_free(&ix);
	u64map_free(&blocks);
	return rc;
}
