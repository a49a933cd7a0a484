/* Writing one GOT entry, the only way libprof writes any (got.c, alloc_got.c). */
#ifndef PROF_PRELOAD_GOT_WRITE_H
#define PROF_PRELOAD_GOT_WRITE_H

#include <stdint.h>

/* One object's RELRO range and what its pages allow; zero it (then set relro_lo/relro_hi,
 * from PT_GNU_RELRO) before an object's entries are written. */
struct prof_got_object {
	uintptr_t relro_lo, relro_hi;
	int prot_known; /* prot read for this pass */
	int prot;
};

/* Stores value in slot: 0; PROF_GOT_LATER when not written because the object's RELRO
 * pages are still writable (the loader is relocating it, and will write its own entries
 * after); PROF_GOT_REFUSED, errno set, when the slot's read-only page cannot be made
 * writable (mprotect refused: a read-only file mapping, a sealed page): given up. */
#define PROF_GOT_LATER (-1)
#define PROF_GOT_REFUSED (-2)
int prof_got_write(struct prof_got_object *o, void **slot, void *value);
/* The end of a pass over an object's entries: the page the last write opened is put back
 * as it was. */
void prof_got_write_done(void);
/* A fork may have caught another thread writing: the child's lock is free. */
void prof_got_write_after_fork(void);

#endif
