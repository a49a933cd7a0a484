/* An open-addressing hash map from 64-bit keys to 64-bit values (linear probing,
 * backward-shift deletion): the output producers' per-event look-ups (string ids,
 * table rows, live heap blocks) must cost a few nanoseconds. */
#ifndef PROF_FORMATS_U64MAP_H
#define PROF_FORMATS_U64MAP_H

#include <stddef.h>
#include <stdint.h>

/* a key beside its value: a look-up that hits touches one cache line, not two */
struct u64map_slot {
	uint64_t key, val;
};

struct u64map {
	struct u64map_slot *slots;
	size_t cap;  /* slots, a power of two, or 0 */
	size_t len;  /* keys held, including the spare one */
	/* UINT64_MAX marks a free slot, so that key lives here instead. */
	int has_spare;
	uint64_t spare_val;
};

void u64map_init(struct u64map *m);
void u64map_free(struct u64map *m);
void u64map_clear(struct u64map *m);
/* The value of key, or NULL. */
uint64_t *u64map_find(const struct u64map *m, uint64_t key);
/* The value slot of key, inserted with value 0 (and *created = 1) when absent; NULL when
 * out of memory. The pointer is valid until the next insertion. */
uint64_t *u64map_upsert(struct u64map *m, uint64_t key, int *created);
/* Removes key; 1 when it was there (its value in *val when val is not NULL), else 0. */
int u64map_remove(struct u64map *m, uint64_t key, uint64_t *val);

/* Calls fn for every key and its value, in no particular order; fn must not insert or
 * remove. */
void u64map_each(struct u64map *m, void (*fn)(void *ctx, uint64_t key, uint64_t *val),
		 void *ctx);

/* A front for look-ups that repeat a few thousand keys among many (a training step's
 * stacks among the hundreds of thousands `import torch` made): 4,096 slots mapped
 * directly, 64 KiB that stay in the CPU's caches, where the map's slots for those keys
 * lie one to a line over megabytes (its first load was 92% of the look-up in a CNN's
 * tables). Only for maps whose values never change once set, keys other than
 * UINT64_MAX (an empty slot's), and one thread at a time (a look-up fills its slot: two
 * threads filling one at once could pair a key with the other's value). */
#define U64MAP_FRONT_BITS 12
struct u64map_slot *u64map_front_new(void); /* NULL when out of memory: no front */

/* Mixes a key into a well-spread hash (splitmix64's finaliser). */
static inline uint64_t u64_hash(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/* The front slot of key (the hash's high bits: the map's index takes its low ones). */
static inline struct u64map_slot *u64map_front_at(struct u64map_slot *front, uint64_t key)
{
	return &front[u64_hash(key) >> (64 - U64MAP_FRONT_BITS)];
}

#endif
