/* Open-addressing u64 -> u64 map; see u64map.h. */
#include "formats/util/u64map.h"

#include <stdlib.h>
#include <string.h>

#define EMPTY UINT64_MAX

void u64map_init(struct u64map *m)
{
	memset(m, 0, sizeof(*m));
}

void u64map_free(struct u64map *m)
{
	free(m->slots);
	u64map_init(m);
}

void u64map_clear(struct u64map *m)
{
	for (size_t i = 0; i < m->cap; i++)
		m->slots[i].key = EMPTY;
	m->len = 0;
	m->has_spare = 0;
}

static size_t slot_of(const struct u64map *m, uint64_t key)
{
	size_t mask = m->cap - 1;
	size_t i = (size_t)u64_hash(key) & mask;

	while (m->slots[i].key != key && m->slots[i].key != EMPTY)
		i = (i + 1) & mask;
	return i;
}

uint64_t *u64map_find(const struct u64map *m, uint64_t key)
{
	size_t i;

	if (key == EMPTY)
		return m->has_spare ? (uint64_t *)&m->spare_val : NULL;
	if (!m->cap)
		return NULL;
	i = slot_of(m, key);
	return m->slots[i].key == key ? &m->slots[i].val : NULL;
}

static int rehash(struct u64map *m, size_t cap)
{
	struct u64map_slot *old = m->slots;
	size_t ocap = m->cap, i;

	m->slots = malloc(cap * sizeof(*m->slots));
	if (!m->slots) {
		m->slots = old;
		return -1;
	}
	for (i = 0; i < cap; i++)
		m->slots[i].key = EMPTY;
	m->cap = cap;
	for (i = 0; i < ocap; i++) {
		if (old[i].key != EMPTY)
			m->slots[slot_of(m, old[i].key)] = old[i];
	}
	free(old);
	return 0;
}

uint64_t *u64map_upsert(struct u64map *m, uint64_t key, int *created)
{
	size_t i;

	*created = 0;
	if (key == EMPTY) {
		if (!m->has_spare) {
			m->has_spare = 1;
			m->spare_val = 0;
			m->len++;
			*created = 1;
		}
		return &m->spare_val;
	}
	/* Keep the load under 1/2: probe chains stay short for clustered keys. */
	if ((m->len + 1) * 2 > m->cap && rehash(m, m->cap ? m->cap * 2 : 64))
		return NULL;
	i = slot_of(m, key);
	if (m->slots[i].key == EMPTY) {
		m->slots[i].key = key;
		m->slots[i].val = 0;
		m->len++;
		*created = 1;
	}
	return &m->slots[i].val;
}

int u64map_remove(struct u64map *m, uint64_t key, uint64_t *val)
{
	size_t mask, i, j;

	if (key == EMPTY) {
		if (!m->has_spare)
			return 0;
		if (val)
			*val = m->spare_val;
		m->has_spare = 0;
		m->len--;
		return 1;
	}
	if (!m->cap)
		return 0;
	i = slot_of(m, key);
	if (m->slots[i].key != key)
		return 0;
	if (val)
		*val = m->slots[i].val;
	mask = m->cap - 1;
	/* Backward shift: move later members of the probe chain into the hole, so that
	 * look-ups need no tombstones and stay fast after many frees. */
	for (j = (i + 1) & mask; m->slots[j].key != EMPTY; j = (j + 1) & mask) {
		size_t home = (size_t)u64_hash(m->slots[j].key) & mask;
		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->slots[i] = m->slots[j];
			i = j;
		}
	}
	m->slots[i].key = EMPTY;
	m->len--;
	return 1;
}

void u64map_each(struct u64map *m, void (*fn)(void *ctx, uint64_t key, uint64_t *val),
		 void *ctx)
{
	for (size_t i = 0; i < m->cap; i++)
		if (m->slots[i].key != UINT64_MAX)
			fn(ctx, m->slots[i].key, &m->slots[i].val);
	if (m->has_spare)
		fn(ctx, UINT64_MAX, &m->spare_val);
}

struct u64map_slot *u64map_front_new(void)
{
	struct u64map_slot *f = malloc(sizeof(*f) << U64MAP_FRONT_BITS);
	if (f)
		for (size_t i = 0; i < (size_t)1 << U64MAP_FRONT_BITS; i++)
			f[i].key = EMPTY;
	return f;
}
