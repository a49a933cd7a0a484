/* String interning; see strtab.h. */
#include "formats/util/strtab.h"

#include <stdlib.h>
#include <string.h>

#include "formats/util/u64map.h"
#include "formats/util/vec.h"

void strtab_init(struct strtab *t)
{
	memset(t, 0, sizeof(*t));
}

void strtab_free(struct strtab *t)
{
	free(t->bytes);
	free(t->ent);
	free(t->slots);
	strtab_init(t);
}

uint64_t hash_bytes(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
	uint64_t w;

	/* Eight bytes a step: names are short, but command lines and thread names are not
	 * always, and FNV's byte loop showed up in profiles of big captures. */
	for (; n >= 8; s += 8, n -= 8) {
		memcpy(&w, s, 8);
		h = u64_hash(h ^ w);
	}
	w = 0;
	memcpy(&w, s, n);
	return u64_hash(h ^ w ^ ((uint64_t)n << 56));
}

static int rehash(struct strtab *t)
{
	size_t ns = t->nslots ? t->nslots * 2 : 256, i;
	uint32_t *slots = calloc(ns, sizeof(*slots));

	if (!slots)
		return -1;
	for (i = 0; i < t->n; i++) {
		size_t j = (size_t)t->ent[i].hash & (ns - 1);
		while (slots[j])
			j = (j + 1) & (ns - 1);
		slots[j] = (uint32_t)i + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = ns;
	return 0;
}

static int add(struct strtab *t, const void *p, size_t n, uint64_t h, uint32_t *id)
{
	struct str_ent *e;

	if (t->n >= STR_NONE - 1 || n > UINT32_MAX)
		return -1;
	if (VEC_RESERVE(t->bytes, t->bytes_cap, t->used + n + 1) ||
	    VEC_RESERVE(t->ent, t->ent_cap, t->n + 1))
		return -1;
	if ((t->n + 1) * 2 > t->nslots && rehash(t))
		return -1;
	memcpy(t->bytes + t->used, p, n);
	t->bytes[t->used + n] = '\0';
	e = &t->ent[t->n];
	e->off = t->used;
	e->len = (uint32_t)n;
	e->hash = h;
	t->used += n + 1;
	*id = (uint32_t)t->n++;
	return 0;
}

int strtab_intern(struct strtab *t, const void *p, size_t n, uint32_t *id)
{
	uint64_t h = hash_bytes(p, n);
	size_t j;

	if (!t->nslots && rehash(t))
		return -1;
	for (j = (size_t)h & (t->nslots - 1); t->slots[j]; j = (j + 1) & (t->nslots - 1)) {
		const struct str_ent *e = &t->ent[t->slots[j] - 1];
		if (e->hash == h && e->len == n && !memcmp(t->bytes + e->off, p, n)) {
			*id = t->slots[j] - 1;
			return 0;
		}
	}
	if (add(t, p, n, h, id))
		return -1;
	/* The slot found above is still free unless add() rehashed; insert afresh. */
	for (j = (size_t)h & (t->nslots - 1); t->slots[j]; j = (j + 1) & (t->nslots - 1))
		;
	t->slots[j] = *id + 1;
	return 0;
}

int strtab_intern_str(struct strtab *t, const char *s, uint32_t *id)
{
	return strtab_intern(t, s, strlen(s), id);
}

const char *strtab_get(const struct strtab *t, uint32_t id, size_t *len)
{
	if (id >= t->n) {
		if (len)
			*len = 0;
		return "";
	}
	if (len)
		*len = t->ent[id].len;
	return t->bytes + t->ent[id].off;
}
