/* Live-heap analysis, streaming; see memtrack.h. */
#include "formats/model/memtrack.h"

#include <stdlib.h>
#include <string.h>

#include "formats/model/memcurve.h"
#include "formats/util/u64map.h"
#include "formats/util/vec.h"

#define SITE_BITS 24 /* a live block: size << SITE_BITS | site */
#define SITE_MASK ((1u << SITE_BITS) - 1)

/* A thread's operations not applied yet, oldest first: chunks in a list, so that a
 * queue grows without copying what it holds, and chunks a queue gave back serve the next
 * (a queue that doubled and copied touched twice the memory it held, fresh pages each
 * time: their faults were over a quarter of the tables child's CPU at 4 M operations a
 * second). */
#define OPS_PER_CHUNK 2048 /* 64 KiB */
#define SPARE_CHUNKS 256   /* kept for reuse when queues give them back: 16 MiB */
struct op_chunk {
	struct op_chunk *prev, *next;
	struct mem_op ops[OPS_PER_CHUNK];
};
struct op_queue {
	struct op_chunk *head, *tail; /* NULL when empty */
	uint32_t first, end;          /* the head chunk's first operation, the tail's end */
	size_t n;
};

struct mem_stream {
	struct op_queue *q;
	size_t nq, qcap;
	struct u64map queue_of; /* thread -> queue index */
	struct op_chunk *spare; /* chunks given back, linked by next */
	size_t nspare;
	uint32_t last_thread, last_queue; /* the latest look-up in it */
	uint32_t *heap;         /* queues holding operations, by their oldest's time */
	size_t nheap, heap_cap;
	size_t held;
	uint64_t newest;        /* latest time pushed */
	uint64_t applied_t;     /* time of the latest operation applied */
	struct u64map blocks;   /* live: pointer -> size << SITE_BITS | site */
	uint64_t live, unmatched;
	struct u64map site_of;  /* stack -> site index */
	struct u64map_slot *site_front; /* site_of's front (u64map.h), or NULL */
	size_t sites_cap;
	int64_t nostack_site;   /* the site of stack 0, -1 until made */
	uint32_t epoch;         /* +1 at each new peak: sites save their bytes lazily */
	int stacks;             /* an allocation had a stack */
};

static int before(const struct mem_op *a, const struct mem_op *b)
{
	if (a->t != b->t)
		return a->t < b->t;
	return a->size == MEM_OP_FREE && b->size != MEM_OP_FREE;
}

static const struct mem_op *head_of(const struct mem_stream *s, uint32_t qi)
{
	const struct op_queue *q = &s->q[qi];
	return &q->head->ops[q->first];
}

static void sift_up(struct mem_stream *s, size_t i)
{
	while (i) {
		size_t p = (i - 1) / 2;
		if (!before(head_of(s, s->heap[i]), head_of(s, s->heap[p])))
			break;
		uint32_t x = s->heap[i];
		s->heap[i] = s->heap[p];
		s->heap[p] = x;
		i = p;
	}
}

static void sift_down(struct mem_stream *s, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < s->nheap && before(head_of(s, s->heap[l]), head_of(s, s->heap[m])))
			m = l;
		if (r < s->nheap && before(head_of(s, s->heap[r]), head_of(s, s->heap[m])))
			m = r;
		if (m == i)
			return;
		uint32_t x = s->heap[i];
		s->heap[i] = s->heap[m];
		s->heap[m] = x;
		i = m;
	}
}

static void free_chunks(struct op_chunk *c)
{
	for (struct op_chunk *next; c; c = next) {
		next = c->next;
		free(c);
	}
}

static void chunk_put(struct mem_stream *s, struct op_chunk *c)
{
	if (s->nspare >= SPARE_CHUNKS) {
		free(c);
		return;
	}
	c->next = s->spare;
	s->spare = c;
	s->nspare++;
}

/* In time order: a thread's operations come in order, but the early buffer of the
 * allocations made before libprof's constructor (preload/wrap/early.c) may hand several
 * threads' in one batch; an out-of-order one moves back past the later ones. Only when
 * strictly earlier: at one instant the thread's own order stands (its malloc's stamp,
 * taken on return, may equal the next free's, and the free is not the earlier). */
static int queue_push(struct mem_stream *s, struct op_queue *q, const struct mem_op *op)
{
	if (!q->tail || q->end == OPS_PER_CHUNK) {
		struct op_chunk *c = s->spare;
		if (c) {
			s->spare = c->next;
			s->nspare--;
		} else if (!(c = malloc(sizeof *c))) {
			return -1;
		}
		c->prev = q->tail;
		c->next = NULL;
		if (q->tail) {
			q->tail->next = c;
		} else {
			q->head = c;
			q->first = 0;
		}
		q->tail = c;
		q->end = 0;
	}
	struct op_chunk *c = q->tail;
	uint32_t i = q->end++;
	/* never past the head (the one after it at most): it may be the min-heap's key */
	for (size_t at = q->n++; at > 1; at--) {
		struct op_chunk *pc = i ? c : c->prev;
		uint32_t pi = i ? i - 1 : OPS_PER_CHUNK - 1;
		if (!(op->t < pc->ops[pi].t))
			break;
		c->ops[i] = pc->ops[pi];
		c = pc;
		i = pi;
	}
	c->ops[i] = *op;
	return 0;
}

/* The oldest operation of a queue that holds some, taken off it. */
static struct mem_op queue_pop(struct mem_stream *s, struct op_queue *q)
{
	struct op_chunk *c = q->head;
	struct mem_op op = c->ops[q->first++];
	if (!--q->n) {
		q->head = q->tail = NULL;
		chunk_put(s, c);
	} else if (q->first == OPS_PER_CHUNK) {
		q->head = c->next;
		q->head->prev = NULL;
		q->first = 0;
		chunk_put(s, c);
	}
	return op;
}

/* The site of an allocation's stack, made when new. */
static int64_t site_for(struct mem_image *mi, struct mem_stream *s, uint32_t stack)
{
	struct u64map_slot *f = s->site_front ? u64map_front_at(s->site_front, stack) : NULL;
	if (f && f->key == stack)
		return (int64_t)f->val;
	int created;
	uint64_t *slot = u64map_upsert(&s->site_of, stack, &created);
	if (!slot)
		return -1;
	if (!created) {
		if (f) /* a site, once made, stays */
			*f = (struct u64map_slot){stack, *slot};
		return (int64_t)*slot;
	}
	if (mi->nsites >= SITE_MASK || VEC_RESERVE(mi->sites, s->sites_cap, mi->nsites + 1)) {
		u64map_remove(&s->site_of, stack, NULL);
		return -1;
	}
	/* made after the latest peak: nothing of it was live then */
	mi->sites[mi->nsites] = (struct mem_site){.stack = stack, .peak_epoch = s->epoch};
	*slot = mi->nsites;
	return (int64_t)mi->nsites++;
}

/* A site about to change: its bytes at the latest peak are saved before its first change
 * since (one epoch per peak, so a new peak copies nothing). */
static struct mem_site *touch(struct mem_image *mi, struct mem_stream *s, uint64_t site)
{
	struct mem_site *x = &mi->sites[site];
	if (x->peak_epoch != s->epoch) {
		x->peak_bytes = x->live_bytes;
		x->peak_epoch = s->epoch;
	}
	return x;
}

/* A live block (size << SITE_BITS | site) gone. */
static void release(struct mem_image *mi, struct mem_stream *s, uint64_t block)
{
	s->live -= block >> SITE_BITS;
	struct mem_site *x = touch(mi, s, block & SITE_MASK);
	x->live_bytes -= block >> SITE_BITS;
	x->live_count--;
}

static int apply(struct mem_image *mi, struct mem_stream *s, const struct mem_op *op)
{
	uint64_t old, before_live = s->live;
	if (op->t < s->applied_t)
		mi->late++;
	else
		s->applied_t = op->t;
	if (op->size == MEM_OP_FREE) {
		if (u64map_remove(&s->blocks, op->ptr, &old))
			release(mi, s, old);
		else
			s->unmatched++;
	} else {
		/* every allocation has its site (stack 0: none); kept if any had a stack */
		int64_t at = op->stack ? site_for(mi, s, op->stack) : s->nostack_site;
		if (at < 0 && !op->stack)
			at = s->nostack_site = site_for(mi, s, 0);
		if (at < 0)
			return -1;
		s->stacks |= op->stack != 0;
		/* sizes beyond 2^40 bytes are clamped in the block, counted whole */
		uint64_t size = op->size >> (64 - SITE_BITS) ? (1ull << 40) - 1 : op->size;
		int created;
		uint64_t *slot = u64map_upsert(&s->blocks, op->ptr, &created);
		if (!slot)
			return -1;
		if (!created) /* over a block whose release was lost */
			release(mi, s, *slot);
		*slot = size << SITE_BITS | (uint64_t)at;
		s->live += size;
		struct mem_site *x = touch(mi, s, (uint64_t)at);
		x->allocs++;
		x->bytes += op->size;
		x->live_bytes += size;
		x->live_count++;
	}
	if (s->live > mi->peak) {
		mi->peak = s->live;
		mi->peak_t = op->t;
		s->epoch++;
	}
	if (mi->curve && s->live != before_live)
		return memcurve_add(mi->curve, op->t, s->live);
	return 0;
}

/* Applies the oldest operation held. */
static int apply_oldest(struct mem_image *mi, struct mem_stream *s)
{
	uint32_t qi = s->heap[0];
	struct op_queue *q = &s->q[qi];
	struct mem_op op = queue_pop(s, q);
	s->held--;
	if (q->n) {
		sift_down(s, 0);
	} else {
		s->heap[0] = s->heap[--s->nheap];
		if (s->nheap)
			sift_down(s, 0);
	}
	return apply(mi, s, &op);
}

int memtrack_push(struct mem_image *mi, uint32_t thread, const struct mem_op *op, int curve)
{
	struct mem_stream *s = mi->stream;
	if (!s) {
		s = mi->stream = calloc(1, sizeof *s);
		if (!s)
			return -1;
		u64map_init(&s->queue_of);
		u64map_init(&s->blocks);
		u64map_init(&s->site_of);
		s->site_front = u64map_front_new(); /* NULL: look-ups go to the map */
		s->nostack_site = -1;
		if (curve && !mi->curve && !(mi->curve = memcurve_new()))
			return -1;
	}
	uint32_t qi;
	if (s->nq && s->last_thread == thread) { /* a record's operations are one thread's */
		qi = s->last_queue;
	} else {
		int created;
		uint64_t *slot = u64map_upsert(&s->queue_of, thread, &created);
		if (!slot)
			return -1;
		if (created) {
			if (VEC_RESERVE(s->q, s->qcap, s->nq + 1) ||
			    VEC_RESERVE(s->heap, s->heap_cap, s->nq + 1)) {
				u64map_remove(&s->queue_of, thread, NULL);
				return -1;
			}
			memset(&s->q[s->nq], 0, sizeof s->q[s->nq]);
			*slot = s->nq++;
		}
		qi = (uint32_t)*slot;
		s->last_thread = thread;
		s->last_queue = qi;
	}
	if (queue_push(s, &s->q[qi], op))
		return -1;
	s->held++;
	if (s->q[qi].n == 1) {
		s->heap[s->nheap++] = qi;
		sift_up(s, s->nheap - 1);
	}
	if (op->t > s->newest)
		s->newest = op->t;
	/* Not on "every thread holds some": a thread first seen in a later drain pass may
	 * bring older operations. */
	while (s->nheap && (s->held > MEMTRACK_MAX_HELD ||
			    head_of(s, s->heap[0])->t + MEMTRACK_WINDOW_NS < s->newest))
		if (apply_oldest(mi, s))
			return -1;
	return 0;
}

size_t memtrack_held(const struct mem_image *mi)
{
	return mi->stream ? mi->stream->held : 0;
}

int memtrack_drained(struct mem_image *mi, uint64_t before)
{
	struct mem_stream *s = mi->stream;
	while (s && s->nheap && head_of(s, s->heap[0])->t < before)
		if (apply_oldest(mi, s))
			return -1;
	return 0;
}

void memtrack_free(struct mem_image *mi)
{
	struct mem_stream *s = mi->stream;
	if (!s)
		return;
	for (size_t i = 0; i < s->nq; i++)
		free_chunks(s->q[i].head);
	free_chunks(s->spare);
	free(s->q);
	free(s->heap);
	u64map_free(&s->queue_of);
	u64map_free(&s->blocks);
	u64map_free(&s->site_of);
	free(s->site_front);
	free(s);
	mi->stream = NULL;
}

int memtrack_finish(struct mem_image *mi)
{
	struct mem_stream *s = mi->stream;
	if (!s)
		return 0;
	while (s->nheap)
		if (apply_oldest(mi, s)) {
			memtrack_free(mi);
			return -1;
		}
	mi->live_end = s->live;
	/* a release of a block never seen is not a matched free: said apart */
	mi->frees_unmatched += s->unmatched;
	mi->frees -= s->unmatched < mi->frees ? s->unmatched : mi->frees;
	for (size_t i = 0; i < mi->nsites; i++)
		touch(mi, s, i); /* unchanged since the peak: its bytes now are its bytes then */
	if (!s->stacks) { /* sites only when stacks were captured */
		free(mi->sites);
		mi->sites = NULL;
		mi->nsites = 0;
	}
	memtrack_free(mi);
	return 0;
}
