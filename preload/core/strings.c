/* Interned names: each distinct string is stored once in the process segment (where the
 * collector reads it) and events carry its id. Lookups take no lock; inserts take a
 * spinlock, which only user annotations with new names ever reach. */
#include <string.h>

#include "preload/core/state.h"

#define TABLE_BITS 18 /* 262,144 distinct names per process */
#define TABLE_SIZE (1u << TABLE_BITS)

/* (hash << 32) | (id + 1); 0 is empty. Private memory: a forked child keeps it, and its
 * ids stay valid because the child's segment starts as a copy of the parent's strings. */
static _Atomic uint64_t table[TABLE_SIZE];
static atomic_flag insert_lock = ATOMIC_FLAG_INIT;

static uint32_t hash_bytes(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h ? h : 1;
}

static const struct prof_string_entry *entry_at(uint32_t id)
{
	return (const struct prof_string_entry *)(prof_proc_strings(prof_proc) + id);
}

static int same(uint32_t id, const char *s, size_t n)
{
	const struct prof_string_entry *e = entry_at(id);
	return e->len == n && memcmp(e->bytes, s, n) == 0;
}

/* Appends an entry to the segment; UINT32_MAX when the area is full. */
static uint32_t append(const char *s, size_t n)
{
	uint64_t used = atomic_load_explicit(&prof_proc->strings_used, memory_order_relaxed);
	uint64_t need = (sizeof(uint32_t) + n + 3) & ~3ull;
	if (used + need > prof_proc->strings_size)
		return UINT32_MAX;
	struct prof_string_entry *e = (struct prof_string_entry *)(prof_proc_strings(prof_proc) + used);
	e->len = (uint32_t)n;
	memcpy(e->bytes, s, n);
	atomic_store_explicit(&prof_proc->strings_used, used + need, memory_order_release);
	return (uint32_t)used;
}

static uint32_t lookup(uint32_t h, const char *s, size_t n, uint32_t *free_at)
{
	for (uint32_t i = h & (TABLE_SIZE - 1), probes = 0; probes < TABLE_SIZE;
	     i = (i + 1) & (TABLE_SIZE - 1), probes++) {
		uint64_t v = atomic_load_explicit(&table[i], memory_order_acquire);
		if (!v) {
			*free_at = i;
			return UINT32_MAX;
		}
		if ((uint32_t)(v >> 32) == h && same((uint32_t)v - 1, s, n))
			return (uint32_t)v - 1;
	}
	*free_at = UINT32_MAX;
	return UINT32_MAX;
}

uint32_t prof_intern(const char *s)
{
	if (!prof_proc)
		return 0;
	if (!s)
		s = "(null)";
	size_t n = strnlen(s, 4096);
	uint32_t h = hash_bytes(s, n), slot;
	uint32_t id = lookup(h, s, n, &slot);
	if (id != UINT32_MAX)
		return id;
	while (atomic_flag_test_and_set_explicit(&insert_lock, memory_order_acquire))
		;
	id = lookup(h, s, n, &slot);
	if (id == UINT32_MAX && slot != UINT32_MAX) {
		id = append(s, n);
		if (id != UINT32_MAX)
			atomic_store_explicit(&table[slot], (uint64_t)h << 32 | (id + 1),
					      memory_order_release);
	}
	atomic_flag_clear_explicit(&insert_lock, memory_order_release);
	if (id != UINT32_MAX)
		return id;
	/* a full table or area: the event is kept under "<unnamed>" (id 0) */
	static int warned;
	if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		prof_warn("more distinct names than fit (%u, or %llu bytes): further new names "
			  "are recorded as <unnamed>", TABLE_SIZE,
			  (unsigned long long)prof_proc->strings_size);
	return 0;
}

void prof_strings_reset(void)
{
	memset(table, 0, sizeof table);
	atomic_flag_clear(&insert_lock);
}

void prof_strings_inherit(struct prof_proc_shm *from, struct prof_proc_shm *to)
{
	uint64_t used = atomic_load_explicit(&from->strings_used, memory_order_acquire);
	if (used > to->strings_size)
		used = 0;
	memcpy(prof_proc_strings(to), prof_proc_strings(from), used);
	atomic_store_explicit(&to->strings_used, used, memory_order_release);
	uint32_t ncat = atomic_load(&from->ncategories);
	memcpy(to->categories, from->categories, sizeof to->categories);
	atomic_store_explicit(&to->ncategories, ncat, memory_order_release);
	/* a fork may have caught another thread holding the lock */
	atomic_flag_clear(&insert_lock);
}

uint8_t prof_category(const char *name)
{
	struct prof_proc_shm *p = prof_proc;
	if (!p)
		return PROF_CAT_FIRST_DYNAMIC;
	while (atomic_flag_test_and_set_explicit(&insert_lock, memory_order_acquire))
		;
	uint32_t n = atomic_load_explicit(&p->ncategories, memory_order_relaxed), i;
	for (i = 0; i < n; i++)
		if (!strncmp(p->categories[i], name, PROF_CATEGORY_NAME_MAX))
			break;
	if (i == n && n < PROF_MAX_CATEGORIES) {
		strncpy(p->categories[n], name, PROF_CATEGORY_NAME_MAX - 1);
		atomic_store_explicit(&p->ncategories, n + 1, memory_order_release);
	}
	atomic_flag_clear_explicit(&insert_lock, memory_order_release);
	return (uint8_t)(PROF_CAT_FIRST_DYNAMIC + (i < PROF_MAX_CATEGORIES ? i : 0));
}
