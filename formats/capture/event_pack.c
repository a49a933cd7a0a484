/* Packed event records (CAP_EVENTS_PACKED): a thread's events as varints, each field
 * against what the record's previous event had, so that the common kinds take 8 to 12
 * bytes instead of 48 before compression (docs/FORMATS.md, "Packed events").
 *
 * Per event: a shape byte (bits 0-2 type; 3: t1 != t0; 4: a != 0; 5: b != 0; 6: c != 0;
 * 7: name differs from the previous event's), then cat, flags and depth bytes, then as
 * the shape says: name (varint), t0 - previous t0 (zigzag varint, always), t1 - t0
 * (zigzag), a, b (varints), c. An allocator call's pointers (a, c of a memory complete
 * event) are written against the last pointer such a call carried (zigzag): a free's
 * block is usually the one just allocated, a new block near the last one. */
#include "formats/capture/event_pack.h"

#include <string.h>

static inline uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static inline uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* 0, or -1 when the bytes end first or the value needs more than 64 bits. */
static inline int get_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (p >= end)
			return -1;
		uint8_t b = *p++;
		if (shift == 63 && b > 1)
			return -1;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*pp = p;
			*out = v;
			return 0;
		}
	}
	return -1;
}

static inline int pointer_event(const struct prof_event *e)
{
	return e->cat == PROF_CAT_MEMORY && e->type == PROF_EV_COMPLETE;
}

size_t cap_pack_events(const struct prof_event *ev, uint32_t n, uint8_t *out)
{
	uint8_t *p = out;
	uint64_t t0 = 0, ptr = 0;
	uint32_t name = 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct prof_event *e = &ev[i];
		uint8_t shape = (uint8_t)(e->type & 7) | (e->t1 != e->t0) << 3 | (e->a != 0) << 4 |
				(e->b != 0) << 5 | (e->c != 0) << 6 | (e->name != name) << 7;
		p[0] = shape;
		p[1] = e->cat;
		p[2] = e->flags;
		p[3] = e->depth;
		p += 4;
		if (e->name != name)
			p = put_varint(p, e->name);
		p = put_varint(p, zigzag((int64_t)(e->t0 - t0)));
		if (e->t1 != e->t0)
			p = put_varint(p, zigzag((int64_t)(e->t1 - e->t0)));
		int ptrs = pointer_event(e);
		if (e->a)
			p = put_varint(p, ptrs ? zigzag((int64_t)(e->a - ptr)) : e->a);
		if (e->b)
			p = put_varint(p, e->b);
		if (e->c)
			p = put_varint(p, ptrs ? zigzag((int64_t)(e->c - ptr)) : e->c);
		if (ptrs && (e->a || e->c))
			ptr = e->a ? e->a : e->c;
		name = e->name;
		t0 = e->t0;
	}
	return (size_t)(p - out);
}

int cap_unpack_events(const uint8_t *p, size_t len, uint32_t n, struct prof_event *out)
{
	const uint8_t *end = p + len;
	uint64_t t0 = 0, ptr = 0, v;
	uint32_t name = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct prof_event *e = &out[i];
		if (end - p < 4)
			return -1;
		uint8_t shape = p[0];
		memset(e, 0, sizeof *e);
		e->type = shape & 7;
		e->cat = p[1];
		e->flags = p[2];
		e->depth = p[3];
		p += 4;
		if (shape & 0x80) {
			if (get_varint(&p, end, &v) || v > UINT32_MAX)
				return -1;
			name = (uint32_t)v;
		}
		e->name = name;
		if (get_varint(&p, end, &v))
			return -1;
		t0 += (uint64_t)unzigzag(v);
		e->t0 = e->t1 = t0;
		if (shape & 0x08) {
			if (get_varint(&p, end, &v))
				return -1;
			e->t1 = t0 + (uint64_t)unzigzag(v);
		}
		int ptrs = pointer_event(e);
		if (shape & 0x10) {
			if (get_varint(&p, end, &v))
				return -1;
			e->a = ptrs ? ptr + (uint64_t)unzigzag(v) : v;
		}
		if ((shape & 0x20) && get_varint(&p, end, &e->b))
			return -1;
		if (shape & 0x40) {
			if (get_varint(&p, end, &v))
				return -1;
			e->c = ptrs ? ptr + (uint64_t)unzigzag(v) : v;
		}
		if (ptrs && (e->a || e->c))
			ptr = e->a ? e->a : e->c;
	}
	return p == end ? 0 : -1;
}
