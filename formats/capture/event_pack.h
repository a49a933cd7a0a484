/* Packed event records (CAP_EVENTS_PACKED): struct prof_event arrays as varints against
 * the previous event (event_pack.c; docs/FORMATS.md). */
#ifndef PROF_FORMATS_EVENT_PACK_H
#define PROF_FORMATS_EVENT_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "preload/common/event.h"

/* The most bytes one event takes packed: shape, cat, flags, depth and six varints. */
#define CAP_PACKED_MAX_EVENT 64

/* Packs n events (types 0..7) into out, which holds n * CAP_PACKED_MAX_EVENT bytes:
 * the bytes written. */
size_t cap_pack_events(const struct prof_event *ev, uint32_t n, uint8_t *out);
/* Unpacks exactly n events from the len bytes at p into out: 0, or -1 when the bytes do
 * not hold n events and nothing else. */
int cap_unpack_events(const uint8_t *p, size_t len, uint32_t n, struct prof_event *out);

#endif
