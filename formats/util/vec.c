/* Growth of the plain arrays used by the output producers. */
#include "formats/util/vec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int vec_grow(void *pptr, size_t *cap, size_t need, size_t elem)
{
	void *old, *p;
	size_t n = *cap ? *cap : 16;

	if (need <= *cap)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return -1;
		n *= 2;
	}
	if (n > SIZE_MAX / elem)
		return -1;
	/* memcpy, not a cast: the caller's pointer may be of any object type. */
	memcpy(&old, pptr, sizeof(old));
	p = realloc(old, n * elem);
	if (!p)
		return -1;
	memcpy(pptr, &p, sizeof(p));
	*cap = n;
	return 0;
}
