/* Interned names: each distinct string is stored once in the process segment (where the
 * collector reads it) and events carry its id, its logical offset in the strings area.
 * Lookups take no lock; inserts take a spinlock, which only new names ever reach. The
 * index and the area both grow (idtable.h, area.h): no count of names makes one
 * "<unnamed>" while memory allows. */
#include <sched.h>
#include <string.h>

#include "preload/core/area.h"
#include "preload/core/idtable.h"
#include "preload/core/state.h"

/* hash -> id + 1. Private memory: a forked child keeps it, and its ids stay valid because
 * the child's segment starts as a copy of the parent's strings. */
static struct idtable index_ = IDT_INIT(14);
static atomic_flag insert_lock = ATOMIC_FLAG_INIT;

struct key {
	const char *s;
	size_t n;
};

static uint32_t hash_bytes(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h ? h : 1;
}

static int same(uint32_t val, const void *key)
{
	const struct key *k = key;
	const struct prof_string_entry *e =
		(const void *)prof_area_at(PROF_AREA_STRINGS, (uint64_t)val - 1);
	return e && e->len == k->n && memcmp(e->bytes, k->s, k->n) == 0;
}

/* Appends an entry to the area; UINT32_MAX when it cannot grow. Under insert_lock. */
static uint32_t append(const char *s, size_t n)
{
	const struct prof_area_map *m = &prof_areas[PROF_AREA_STRINGS];
	uint64_t used = atomic_load_explicit(&prof_proc->strings_used, memory_order_relaxed);
	uint64_t need = (sizeof(uint32_t) + n + 3) & ~3ull;
	unsigned k = prof_area_chunk(m->first, used);
	uint64_t end = prof_area_chunk_start(m->first, k) + prof_area_chunk_size(m->first, k);
	char *at;
	if (used + need > end) {
		/* the rest of this chunk is skipped, said by a pad entry where one fits */
		if (end - used >= 4 && (at = prof_area_at(PROF_AREA_STRINGS, used)))
			((struct prof_string_entry *)at)->len = PROF_AREA_PAD;
		used = end;
		k++;
	}
	if (used + need > m->limit)
		return UINT32_MAX;
	if (!(at = prof_area_at(PROF_AREA_STRINGS, used)) && prof_area_grow(PROF_AREA_STRINGS, k))
		at = prof_area_at(PROF_AREA_STRINGS, used);
	if (!at)
		return UINT32_MAX;
	struct prof_string_entry *e = (struct prof_string_entry *)at;
	e->len = (uint32_t)n;
	memcpy(e->bytes, s, n);
	atomic_store_explicit(&prof_proc->strings_used, used + need, memory_order_release);
	return (uint32_t)used;
}

uint32_t prof_intern(const char *s)
{
	if (!prof_proc)
		return 0;
	if (!s)
		s = "(null)";
	size_t n = strnlen(s, 4096);
	struct key k = {s, n};
	uint32_t h = hash_bytes(s, n);
	uint32_t v = idt_find(&index_, h, same, &k);
	if (v)
		return v - 1;
	/* a signal handler interrupting this thread's growth of an area: the lock may be
	 * held under it, by this thread or by one waiting for the growth */
	if (prof_area_growing_here) {
		atomic_fetch_add_explicit(&prof_proc->names_lost, 1, memory_order_relaxed);
		return 0;
	}
	while (atomic_flag_test_and_set_explicit(&insert_lock, memory_order_acquire))
		sched_yield();
	uint32_t id = UINT32_MAX;
	v = idt_find(&index_, h, same, &k);
	if (v)
		id = v - 1;
	else if ((id = append(s, n)) != UINT32_MAX && idt_add(&index_, h, id + 1))
		id = UINT32_MAX; /* stored but not findable: the next intern stores it again */
	atomic_flag_clear_explicit(&insert_lock, memory_order_release);
	if (id != UINT32_MAX)
		return id;
	/* the area cannot grow: the event is kept under "<unnamed>" (id 0), and counted */
	atomic_fetch_add_explicit(&prof_proc->names_lost, 1, memory_order_relaxed);
	static int warned;
	if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		prof_warn("the names of this process fill what PROFILER_AREA_MAX or /dev/shm "
			  "allows (%llu bytes): further new names are recorded as <unnamed>, "
			  "counted in the tables",
			  (unsigned long long)atomic_load(&prof_proc->strings_used));
	return 0;
}

void prof_strings_reset(void)
{
	idt_reset(&index_);
	atomic_flag_clear(&insert_lock);
}

void prof_strings_inherit(struct prof_proc_shm *from, struct prof_proc_shm *to,
			  uint64_t used)
{
	atomic_store_explicit(&to->strings_used, used, memory_order_release);
	uint32_t ncat = atomic_load(&from->ncategories);
	memcpy(to->categories, from->categories, sizeof to->categories);
	atomic_store_explicit(&to->ncategories, ncat, memory_order_release);
	/* a fork may have caught another thread holding the lock */
	atomic_flag_clear(&insert_lock);
	idt_after_fork(&index_);
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
