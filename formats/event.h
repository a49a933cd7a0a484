/* The fixed-size event record shared by the ring writer (preload/), the collector and
 * the raw capture. One layout, defined here only. */
#ifndef PROF_FORMATS_EVENT_H
#define PROF_FORMATS_EVENT_H

#include <stdint.h>

enum prof_ev_type {
	PROF_EV_COMPLETE = 1, /* a call or range: t0..t1 */
	PROF_EV_INSTANT = 2,  /* a mark or a step: t0 == t1 */
	PROF_EV_COUNTER = 3,  /* a = value (double bits when PROF_EVF_DOUBLE) */
	PROF_EV_LOST = 4,     /* a = events dropped between t0 and t1 (full ring) */
	PROF_EV_STACK = 5,    /* a = stack id of the thread's next event, whose t0 it shares */
};

/* Fixed categories; later ones (framework API, operators, CUDA) are registered at run
 * time from PROF_CAT_FIRST_DYNAMIC on and named in the capture by CAP_CATEGORY. */
enum prof_category {
	PROF_CAT_MEMORY = 0,  /* allocator calls */
	PROF_CAT_USER = 1,    /* prof_range_push/pop */
	PROF_CAT_MARK = 2,    /* prof_mark */
	PROF_CAT_STEP = 3,    /* prof_step */
	PROF_CAT_COUNTER = 4, /* prof_counter */
	PROF_CAT_LOST = 5,
	PROF_CAT_FIRST_DYNAMIC = 16,
};

/* In a call stack (struct cap_stack): a Python frame, low 32 bits its string id. */
#define PROF_STACK_FRAME_PYTHON (1ull << 63)

/* flags */
#define PROF_EVF_ALLOCS 0x01 /* a = new block of b bytes */
#define PROF_EVF_FREES 0x02  /* c = block released */
#define PROF_EVF_DOUBLE 0x04 /* counter value a holds double bits */

/* 48 bytes. In a ring, t0/t1 are raw clock ticks; in the raw capture they are
 * nanoseconds of CLOCK_MONOTONIC. Memory events: a = returned pointer, b = requested
 * bytes, c = released pointer (free, realloc's old block). Steps: a = step number. */
struct prof_event {
	uint64_t t0;
	uint64_t t1;
	uint64_t a;
	uint64_t b;
	uint64_t c;
	uint32_t name;  /* string id, per process */
	uint8_t cat;    /* enum prof_category or a dynamic one */
	uint8_t type;   /* enum prof_ev_type */
	uint8_t flags;  /* PROF_EVF_* */
	uint8_t depth;  /* nesting depth on its thread when it began (saturates at 255) */
};

_Static_assert(sizeof(struct prof_event) == 48, "prof_event is part of the shm ABI");

/* Name of a fixed category, or NULL for a dynamic one. */
const char *prof_fixed_category_name(unsigned cat);

#endif
