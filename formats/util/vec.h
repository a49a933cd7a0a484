/* Growable arrays for the output producers: plain pointer + length + capacity. */
#ifndef PROF_FORMATS_VEC_H
#define PROF_FORMATS_VEC_H

#include <stddef.h>

/* Makes the array at *pptr (a pointer to any object pointer) hold at least need elements
 * of elem bytes, doubling so that pushes cost O(1) amortised. 0, or -1 when out of memory
 * (the array is left as it was). */
int vec_grow(void *pptr, size_t *cap, size_t need, size_t elem);

#define VEC_RESERVE(arr, cap, need) \
	((need) <= (cap) ? 0 : vec_grow(&(arr), &(cap), (need), sizeof(*(arr))))

#endif
