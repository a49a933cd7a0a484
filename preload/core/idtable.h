/* A private hash index from a 32-bit hash to a nonzero 32-bit value (a string's or a
 * stack's id), growing with its entries (issue 29: a fixed table ran full during
 * `import torch`). Lookups take no lock and make no system call; growth maps a table
 * twice the size of the last, copies the entries into it and publishes it, and the older
 * tables stay readable, so a lookup racing a growth still finds what was there. */
#ifndef PROF_PRELOAD_IDTABLE_H
#define PROF_PRELOAD_IDTABLE_H

#include <stdatomic.h>
#include <stdint.h>

#define IDT_TABLES 20

struct idtable {
	unsigned first_bits;
	_Atomic unsigned ntables;
	_Atomic(_Atomic uint64_t *) t[IDT_TABLES];
	_Atomic uint64_t filled; /* entries of the newest table */
	atomic_flag growing;
};

#define IDT_INIT(bits) {.first_bits = (bits), .growing = ATOMIC_FLAG_INIT}

/* Calls same(val, key) for each value stored under hash h, newest table first, until
 * it returns 1: that value, or 0 when none matched. */
uint32_t idt_find(struct idtable *t, uint32_t h, int (*same)(uint32_t val, const void *key),
		  const void *key);
/* Adds (h, val); -1 when no table could be made (no memory). Values may repeat. */
int idt_add(struct idtable *t, uint32_t h, uint32_t val);
/* Empty again, its tables unmapped and a first one made (no other thread may be using
 * it): to be called before the first idt_add. */
void idt_reset(struct idtable *t);

/* In a forked child: a growth another thread of the parent was making is not waited for. */
void idt_after_fork(struct idtable *t);

#endif
