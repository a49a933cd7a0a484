/* Interned byte strings: each distinct string gets one small id, so that names from
 * every process can be compared and keyed as integers. */
#ifndef PROF_FORMATS_STRTAB_H
#define PROF_FORMATS_STRTAB_H

#include <stddef.h>
#include <stdint.h>

#define STR_NONE UINT32_MAX

struct strtab {
	char *bytes; /* every string, each followed by a NUL */
	size_t used, bytes_cap;
	struct str_ent { uint64_t off; uint64_t hash; uint32_t len; } *ent;
	size_t n, ent_cap;
	uint32_t *slots; /* id + 1, 0 = free */
	size_t nslots;
};

void strtab_init(struct strtab *t);
void strtab_free(struct strtab *t);
/* The id of bytes p[0..n), added when new. 0, or -1 when out of memory. */
int strtab_intern(struct strtab *t, const void *p, size_t n, uint32_t *id);
int strtab_intern_str(struct strtab *t, const char *s, uint32_t *id);
/* The NUL-terminated bytes of id (which may also hold NULs: see len). Valid until the
 * next intern. */
const char *strtab_get(const struct strtab *t, uint32_t id, size_t *len);

uint64_t hash_bytes(const void *p, size_t n);

#endif
