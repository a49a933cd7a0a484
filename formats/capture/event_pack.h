/* Packed event records (CAP_EVENTS_PACKED): a thread's struct prof_event array written
 * as columns, each field against the record's previous event (event_pack.c;
 * docs/FORMATS.md, "Packed events"). */
#ifndef PROF_FORMATS_EVENT_PACK_H
#define PROF_FORMATS_EVENT_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "preload/common/event.h"

/* The varint streams, in the order they follow the byte columns. */
enum cap_stream { CAP_S_NAME, CAP_S_DT0, CAP_S_DUR, CAP_S_A, CAP_S_B, CAP_S_C, CAP_STREAMS };

/* The most bytes one event takes packed: four column bytes and six varints. */
#define CAP_PACKED_MAX_EVENT (4 + CAP_STREAMS * 10)
/* Before the columns: each stream's length, u32. */
#define CAP_PACKED_LENGTHS (CAP_STREAMS * 4)
/* A packer's area for max events. */
#define CAP_PACKER_AREA(max) ((size_t)(max) * CAP_PACKED_MAX_EVENT)
/* One record body of n events at most (cap_pack_events's out). */
#define CAP_PACKED_BYTES(n) (CAP_PACKED_LENGTHS + CAP_PACKER_AREA(n))

/* Packing one event at a time (the collector's drain packs as it reads the rings) into
 * an area of CAP_PACKER_AREA(max) bytes: the four byte columns (shape, cat, flags,
 * depth) of max bytes each, then the six streams' room of max * 10 bytes each. */
struct cap_packer {
	uint8_t *cols;
	uint8_t *start[CAP_STREAMS], *s[CAP_STREAMS];
	uint32_t n, max;
	uint64_t t0, ptr;
	uint32_t name;
};

/* A record body in pieces, in the order written. */
struct cap_piece {
	const void *p;
	size_t len;
};
#define CAP_PACKED_PIECES (1 + 4 + CAP_STREAMS)

void cap_packer_init(struct cap_packer *k, uint8_t *area, uint32_t max);
/* Empty again, against zeros. */
void cap_packer_reset(struct cap_packer *k);
/* The packed body of the events so far: lengths (CAP_PACKED_LENGTHS bytes of room) is
 * filled, and pieces (CAP_PACKED_PIECES) point into it and the area; the body's size. */
size_t cap_packer_pieces(const struct cap_packer *k, uint8_t *lengths,
			 struct cap_piece *pieces);

static inline uint8_t *cap_put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static inline uint64_t cap_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

/* An allocator call: its pointers are written against the last pointer such a call
 * carried (a free's block is usually one just allocated). */
static inline int cap_pointer_event(const struct prof_event *e)
{
	return e->cat == PROF_CAT_MEMORY && e->type == PROF_EV_COMPLETE;
}

/* Packs e (type 0..7); k holds fewer than max events. */
static inline void cap_pack_one(struct cap_packer *k, const struct prof_event *e)
{
	uint32_t i = k->n++, m = k->max;
	uint8_t shape = (uint8_t)(e->type & 7) | (e->t1 != e->t0) << 3 | (e->a != 0) << 4 |
			(e->b != 0) << 5 | (e->c != 0) << 6 | (e->name != k->name) << 7;
	k->cols[i] = shape;
	k->cols[m + i] = e->cat;
	k->cols[2 * m + i] = e->flags;
	k->cols[3 * m + i] = e->depth;
	if (e->name != k->name)
		k->s[CAP_S_NAME] = cap_put_varint(k->s[CAP_S_NAME], e->name);
	k->s[CAP_S_DT0] = cap_put_varint(k->s[CAP_S_DT0], cap_zigzag((int64_t)(e->t0 - k->t0)));
	if (e->t1 != e->t0)
		k->s[CAP_S_DUR] = cap_put_varint(k->s[CAP_S_DUR],
						 cap_zigzag((int64_t)(e->t1 - e->t0)));
	int ptrs = cap_pointer_event(e);
	if (e->a)
		k->s[CAP_S_A] = cap_put_varint(k->s[CAP_S_A],
					       ptrs ? cap_zigzag((int64_t)(e->a - k->ptr)) : e->a);
	if (e->b)
		k->s[CAP_S_B] = cap_put_varint(k->s[CAP_S_B], e->b);
	if (e->c)
		k->s[CAP_S_C] = cap_put_varint(k->s[CAP_S_C],
					       ptrs ? cap_zigzag((int64_t)(e->c - k->ptr)) : e->c);
	if (ptrs && (e->a || e->c))
		k->ptr = e->a ? e->a : e->c;
	k->name = e->name;
	k->t0 = e->t0;
}

/* Packs n events (types 0..7) into out, which holds CAP_PACKED_BYTES(n) bytes: the
 * bytes written, or 0 when out of memory. */
size_t cap_pack_events(const struct prof_event *ev, uint32_t n, uint8_t *out);
/* Unpacks exactly n events from the len bytes at p into out: 0, or -1 when the bytes do
 * not hold n events and nothing else. */
int cap_unpack_events(const uint8_t *p, size_t len, uint32_t n, struct prof_event *out);

#endif
