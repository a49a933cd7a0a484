/* Live-heap analysis; see memtrack.h. */
#include "formats/model/memtrack.h"

#include <stdlib.h>
#include <string.h>

#include "formats/util/u64map.h"

static int op_before(const struct mem_op *a, const struct mem_op *b)
{
	if (a->t != b->t)
		return a->t < b->t;
	return a->size == MEM_OP_FREE && b->size != MEM_OP_FREE;
}

static int is_sorted(const struct mem_op *ops, size_t n)
{
	size_t i;

	for (i = 1; i < n; i++)
		if (op_before(&ops[i], &ops[i - 1]))
			return 0;
	return 1;
}

/* Moves ops into tmp, releases first, keeping order otherwise. */
static void split_kinds(const struct mem_op *ops, struct mem_op *tmp, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		if (ops[i].size == MEM_OP_FREE)
			tmp[k++] = ops[i];
	for (i = 0; i < n; i++)
		if (ops[i].size != MEM_OP_FREE)
			tmp[k++] = ops[i];
}

/* LSD radix sort, one byte of t per pass, skipping bytes that all ops share (a session
 * spans a few seconds of a 64-bit clock: usually 4 or 5 passes). O(n), unlike qsort,
 * which cost seconds on captures of tens of millions of allocator calls. */
int memtrack_sort(struct mem_op *ops, size_t n)
{
	size_t count[8][256];
	struct mem_op *tmp, *src, *dst, *sw;
	size_t i, b;

	if (n < 2 || is_sorted(ops, n))
		return 0;
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return -1;
	memset(count, 0, sizeof(count));
	for (i = 0; i < n; i++)
		for (b = 0; b < 8; b++)
			count[b][(ops[i].t >> (8 * b)) & 255]++;
	split_kinds(ops, tmp, n);
	src = tmp;
	dst = ops;
	for (b = 0; b < 8; b++) {
		size_t pos[256], sum = 0, d;
		if (count[b][(src[0].t >> (8 * b)) & 255] == n)
			continue;
		for (d = 0; d < 256; d++) {
			pos[d] = sum;
			sum += count[b][d];
		}
		for (i = 0; i < n; i++)
			dst[pos[(src[i].t >> (8 * b)) & 255]++] = src[i];
		sw = src;
		src = dst;
		dst = sw;
	}
	if (src != ops)
		memcpy(ops, src, n * sizeof(*ops));
	free(tmp);
	return 0;
}

static int apply(struct u64map *live_blocks, const struct mem_op *op, uint64_t *live,
		 uint64_t *unmatched)
{
	uint64_t old, *slot;
	int created;

	if (op->size == MEM_OP_FREE) {
		if (u64map_remove(live_blocks, op->ptr, &old))
			*live -= old;
		else
			++*unmatched;
		return 0;
	}
	slot = u64map_upsert(live_blocks, op->ptr, &created);
	if (!slot)
		return -1;
	if (!created)
		*live -= *slot;
	*slot = op->size;
	*live += op->size;
	return 0;
}

int memtrack_analyze(struct mem_image *mi, mem_curve_fn fn, void *ctx)
{
	struct u64map blocks;
	uint64_t live = 0, unmatched = 0;
	size_t i;
	int rc = 0;

	mi->peak = mi->peak_t = mi->live_end = 0;
	if (memtrack_sort(mi->ops, mi->nops))
		return -1;
	size_t peak_i = 0;
	int stacks = 0;
	u64map_init(&blocks);
	for (i = 0; i < mi->nops && !rc; i++) {
		stacks |= mi->ops[i].stack != 0;
		uint64_t before = live;
		if (apply(&blocks, &mi->ops[i], &live, &unmatched)) {
			rc = -1;
			break;
		}
		if (live > mi->peak) {
			mi->peak = live;
			mi->peak_t = mi->ops[i].t;
			peak_i = i;
		}
		if (fn && live != before)
			rc = fn(ctx, mi->ops[i].t, live);
	}
	mi->live_end = live;
	/* a release of a block never seen is not a matched free: said apart */
	mi->frees_unmatched += unmatched;
	mi->frees -= unmatched < mi->frees ? unmatched : mi->frees;
	u64map_free(&blocks);
	if (!rc && stacks && mi->peak)
		rc = memsites_analyze(mi, peak_i);
	free(mi->ops);
	mi->ops = NULL;
	mi->nops = mi->cap = 0;
	return rc;
}
