/* Packed event records (CAP_EVENTS_PACKED): a thread's events as columns (docs/FORMATS.md,
 * "Packed events"), so that the common kinds take ~9 bytes instead of 48 before
 * compression and what compresses alike lies together.
 *
 * Body: six u32 stream lengths; four byte columns of count bytes each (shape, cat,
 * flags, depth); then the six varint streams: name (when it changed), t0 against the
 * previous t0 (zigzag, always), t1 - t0 (zigzag, when not 0), a, b, c (when not 0). The
 * shape byte: bits 0-2 type; 3: t1 != t0; 4: a != 0; 5: b != 0; 6: c != 0; 7: name
 * differs from the previous event's. An allocator call's pointers (a, c of a memory
 * complete event) are zigzag against the last pointer such a call carried. Written by
 * columns, the rows of a record compress to about 10% less than written event after
 * event (torch's import and a few training steps: 3.24 -> 2.91 bytes an event). */
#include "formats/capture/event_pack.h"

#include <stdlib.h>
#include <string.h>

void cap_packer_init(struct cap_packer *k, uint8_t *area, uint32_t max)
{
	k->cols = area;
	k->max = max;
	for (int j = 0; j < CAP_STREAMS; j++)
		k->start[j] = area + (size_t)max * 4 + (size_t)j * max * 10;
	cap_packer_reset(k);
}

void cap_packer_reset(struct cap_packer *k)
{
	for (int j = 0; j < CAP_STREAMS; j++)
		k->s[j] = k->start[j];
	k->n = 0;
	k->t0 = k->ptr = 0;
	k->name = 0;
}

size_t cap_packer_pieces(const struct cap_packer *k, uint8_t *lengths,
			 struct cap_piece *pieces)
{
	size_t total = CAP_PACKED_LENGTHS;
	pieces[0] = (struct cap_piece){lengths, CAP_PACKED_LENGTHS};
	for (int c = 0; c < 4; c++) {
		pieces[1 + c] = (struct cap_piece){k->cols + (size_t)c * k->max, k->n};
		total += k->n;
	}
	for (int j = 0; j < CAP_STREAMS; j++) {
		uint32_t len = (uint32_t)(k->s[j] - k->start[j]);
		memcpy(lengths + 4 * j, &len, 4);
		pieces[5 + j] = (struct cap_piece){k->start[j], len};
		total += len;
	}
	return total;
}

size_t cap_pack_events(const struct prof_event *ev, uint32_t n, uint8_t *out)
{
	uint8_t *area = malloc(CAP_PACKER_AREA(n ? n : 1));
	if (!area)
		return 0;
	struct cap_packer k;
	cap_packer_init(&k, area, n);
	for (uint32_t i = 0; i < n; i++)
		cap_pack_one(&k, &ev[i]);
	struct cap_piece pieces[CAP_PACKED_PIECES];
	uint8_t lengths[CAP_PACKED_LENGTHS];
	size_t total = cap_packer_pieces(&k, lengths, pieces), at = 0;
	for (int i = 0; i < CAP_PACKED_PIECES; i++) {
		memcpy(out + at, pieces[i].p, pieces[i].len);
		at += pieces[i].len;
	}
	free(area);
	return total;
}

static inline int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
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

int cap_unpack_events(const uint8_t *p, size_t len, uint32_t n, struct prof_event *out)
{
	if (len < CAP_PACKED_LENGTHS || (len - CAP_PACKED_LENGTHS) / 4 < n)
		return -1;
	const uint8_t *cols = p + CAP_PACKED_LENGTHS;
	const uint8_t *s[CAP_STREAMS], *end[CAP_STREAMS];
	size_t at = CAP_PACKED_LENGTHS + (size_t)n * 4;
	for (int j = 0; j < CAP_STREAMS; j++) {
		uint32_t l;
		memcpy(&l, p + 4 * j, 4);
		if (l > len - at)
			return -1;
		s[j] = p + at;
		end[j] = p + at + l;
		at += l;
	}
	if (at != len)
		return -1;
	uint64_t t0 = 0, ptr = 0, v;
	uint32_t name = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct prof_event *e = &out[i];
		uint8_t shape = cols[i];
		memset(e, 0, sizeof *e);
		e->type = shape & 7;
		e->cat = cols[n + i];
		e->flags = cols[2 * (size_t)n + i];
		e->depth = cols[3 * (size_t)n + i];
		if (shape & 0x80) {
			if (get_varint(&s[CAP_S_NAME], end[CAP_S_NAME], &v) || v > UINT32_MAX)
				return -1;
			name = (uint32_t)v;
		}
		e->name = name;
		if (get_varint(&s[CAP_S_DT0], end[CAP_S_DT0], &v))
			return -1;
		t0 += (uint64_t)unzigzag(v);
		e->t0 = e->t1 = t0;
		if (shape & 0x08) {
			if (get_varint(&s[CAP_S_DUR], end[CAP_S_DUR], &v))
				return -1;
			e->t1 = t0 + (uint64_t)unzigzag(v);
		}
		int ptrs = cap_pointer_event(e);
		if (shape & 0x10) {
			if (get_varint(&s[CAP_S_A], end[CAP_S_A], &v))
				return -1;
			e->a = ptrs ? ptr + (uint64_t)unzigzag(v) : v;
		}
		if ((shape & 0x20) && get_varint(&s[CAP_S_B], end[CAP_S_B], &e->b))
			return -1;
		if (shape & 0x40) {
			if (get_varint(&s[CAP_S_C], end[CAP_S_C], &v))
				return -1;
			e->c = ptrs ? ptr + (uint64_t)unzigzag(v) : v;
		}
		if (ptrs && (e->a || e->c))
			ptr = e->a ? e->a : e->c;
	}
	for (int j = 0; j < CAP_STREAMS; j++)
		if (s[j] != end[j])
			return -1;
	return 0;
}
