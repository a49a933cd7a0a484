/* The allocator's GOT entries of objects that bypass libprof (see alloc_got.h).
 *
 * A library dlopen'ed with RTLD_DEEPBIND looks its symbols up in its own dependencies
 * before the global scope, so its calls to malloc and free reach libc's directly: its
 * blocks are never seen, and a string libc allocated for it through libprof (strdup)
 * and it released looks leaked. Each allocator entry (JUMP_SLOT or GLOB_DAT) of every
 * loaded object is pointed at libprof's wrapper when it leads to the very function the
 * wrapper itself calls (RTLD_NEXT's, libc's): bound already, or, for a lazy entry not
 * yet bound, what the object's own scope would bind it to. An entry leading anywhere
 * else (an allocator the object or its dependencies bring: jemalloc, a sanitizer's) is
 * left alone, as is an object that defines the function itself. Objects are checked
 * when the session starts and on each dlsym after a load (as got.c patches traced
 * functions); a lazy entry is resolved only through the handle the program passes to
 * dlsym. A DEEPBIND library's allocations made by its own constructors, before any
 * dlsym, are not seen.
 *
 * The same passes point every object's entries for CPython's GIL calls at gil.c's
 * wrappers (gil.h): there the entry must lead to the interpreter's own function, and
 * one that cannot be redirected (or is not settled yet) is reported to gil.c, which then
 * keeps no walk. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "preload/common/debug.h"
#include "preload/wrap/alloc.h"
#include "preload/wrap/alloc_got.h"
#include "preload/wrap/dl.h"
#include "preload/stacks/gil.h"
#include "preload/trace/got_write.h"
#include "preload/core/state.h"

#define MAX_OBJECTS 1024

static unsigned long long seen_adds, seen_subs;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct dl_phdr_info objects[MAX_OBJECTS];
static unsigned nobjects, unlisted; /* unlisted: past the table, not checked */
static uintptr_t done[MAX_OBJECTS]; /* objects checked since the last unload */
static unsigned ndone;
/* this pass left a GIL call's entry (gil.h) not yet redirected */
static int gil_unsettled;

struct object_dyn {
	const ElfW(Sym) *symtab;
	const char *strtab;
	const ElfW(Rela) *jmprel, *rela;
	size_t jmprel_size, rela_size;
	uintptr_t relro_lo, relro_hi;
	uintptr_t lo, hi; /* the object's mapped range: a lazy entry points inside it */
};

static int counts(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	unsigned long long *c = ctx;
	c[0] = info->dlpi_adds;
	c[1] = info->dlpi_subs;
	return 1;
}

/* Listed here, examined after dl_iterate_phdr returns: dladdr1 and dlsym take a loader
 * lock that a concurrent dlopen may hold while waiting for dl_iterate_phdr's. */
static int list(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	(void)ctx;
	if (nobjects < MAX_OBJECTS)
		objects[nobjects++] = *info;
	else
		unlisted++;
	return 0;
}

static uintptr_t addr(uintptr_t base, ElfW(Addr) v)
{
	return v < base ? base + v : v; /* most d_ptr values are relocated in place */
}

static int read_object(const struct dl_phdr_info *info, struct object_dyn *d)
{
	const ElfW(Dyn) *dyn = 0;
	memset(d, 0, sizeof *d);
	d->lo = UINTPTR_MAX;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t at = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)at;
		else if (ph->p_type == PT_GNU_RELRO)
			d->relro_lo = at, d->relro_hi = at + ph->p_memsz;
		else if (ph->p_type == PT_LOAD) {
			if (at < d->lo)
				d->lo = at;
			if (at + ph->p_memsz > d->hi)
				d->hi = at + ph->p_memsz;
		}
	}
	if (!dyn)
		return -1;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		uintptr_t v = addr(info->dlpi_addr, dyn->d_un.d_ptr);
		switch (dyn->d_tag) {
		case DT_SYMTAB: d->symtab = (const void *)v; break;
		case DT_STRTAB: d->strtab = (const void *)v; break;
		case DT_JMPREL: d->jmprel = (const void *)v; break;
		case DT_RELA: d->rela = (const void *)v; break;
		case DT_PLTRELSZ: d->jmprel_size = dyn->d_un.d_val; break;
		case DT_RELASZ: d->rela_size = dyn->d_un.d_val; break;
		case DT_PLTREL:
			if (dyn->d_un.d_val != DT_RELA)
				return -1;
			break;
		}
	}
	return d->symtab && d->strtab ? 0 : -1;
}

/* 1 when the entry is settled; 0 when it is lazy and no handle to resolve it was given,
 * or the object is still being relocated (got_write.c). */
static int check_entry(const struct dl_phdr_info *info, const struct object_dyn *d,
		       const ElfW(Rela) *r, void *handle, struct prof_got_object *pages)
{
	const ElfW(Sym) *sym = &d->symtab[ELF64_R_SYM(r->r_info)];
	if (sym->st_shndx != SHN_UNDEF)
		return 1; /* the object's own definition */
	void *ours, *real;
	const char *name = d->strtab + sym->st_name;
	int gil = 0;
	if (prof_alloc_targets(name, &ours, &real)) {
		if (prof_gil_targets(name, &ours, &real))
			return 1;
		gil = 1;
	}
	void **slot = (void **)(info->dlpi_addr + r->r_offset);
	void *cur = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (cur == ours)
		return 1;
	if (!real) {
		/* a GIL call whose function is not the interpreter's (gil.c): not seen */
		if (gil)
			prof_gil_entry_refused();
		return 1;
	}
	if ((uintptr_t)cur >= d->lo && (uintptr_t)cur < d->hi) {
		/* lazy, not bound yet: what the object's own scope gives, looked up through
		 * the program's handle (a handle libprof opened itself could, once closed,
		 * unload an object whose constructor is running) */
		if (!handle) {
			gil_unsettled |= gil;
			return 0;
		}
		cur = prof_real_dlsym(handle, name);
	}
	if (cur != real) {
		/* leads elsewhere: an allocator of the object's own is left to it; a GIL call
		 * that does not reach the interpreter's function is not seen */
		if (gil)
			prof_gil_entry_refused();
		return 1;
	}
	int rc = prof_got_write(pages, slot, ours);
	if (rc == PROF_GOT_REFUSED) {
		if (gil)
			prof_gil_entry_refused();
		/* the page will not become writable later: given up, as settled */
		prof_debug(PROF_DEBUG_GOT | PROF_DEBUG_ALLOC,
			   "cannot redirect %s in %s to libprof: slot %p in a read-only mapping "
			   "(mprotect: %s)", d->strtab + sym->st_name,
			   *info->dlpi_name ? info->dlpi_name : "the executable", (void *)slot,
			   strerror(errno));
		return 1;
	}
	gil_unsettled |= gil && rc;
	return rc == 0;
}

static int skip(const struct dl_phdr_info *info)
{
	const char *n = info->dlpi_name;
	static uintptr_t self;
	if (!self) {
		Dl_info di;
		if (dladdr((void *)prof_alloc_got_refresh, &di))
			self = (uintptr_t)di.dli_fbase;
	}
	return strstr(n, "linux-vdso") || strstr(n, "ld-linux") || strstr(n, "/ld-") ||
	       info->dlpi_addr == self;
}

/* 1 when every allocator entry of the object is settled. */
static int check_object(const struct dl_phdr_info *info, void *handle)
{
	struct object_dyn d;
	int settled = 1;
	if (skip(info) || read_object(info, &d))
		return 1;
	struct prof_got_object pages = {.relro_lo = d.relro_lo, .relro_hi = d.relro_hi};
	for (size_t i = 0; d.jmprel && i < d.jmprel_size / sizeof(ElfW(Rela)); i++)
		if (ELF64_R_TYPE(d.jmprel[i].r_info) == R_X86_64_JUMP_SLOT)
			settled &= check_entry(info, &d, &d.jmprel[i], handle, &pages);
	for (size_t i = 0; d.rela && i < d.rela_size / sizeof(ElfW(Rela)); i++)
		if (ELF64_R_TYPE(d.rela[i].r_info) == R_X86_64_GLOB_DAT)
			settled &= check_entry(info, &d, &d.rela[i], handle, &pages);
	prof_got_write_done();
	return settled;
}

static int is_done(uintptr_t base)
{
	for (unsigned j = 0; j < ndone; j++)
		if (done[j] == base)
			return 1;
	return 0;
}

/* Checks the objects not settled yet; the one at handle_base with handle (its lazy
 * entries too). */
static void check_all(void *handle, uintptr_t handle_base)
{
	nobjects = unlisted = 0;
	gil_unsettled = 0;
	dl_iterate_phdr(list, 0);
	if (unlisted)
		prof_debug(PROF_DEBUG_ALLOC, "not checking the allocator entries of %u loaded "
			   "objects: more than %d loaded", unlisted, MAX_OBJECTS);
	for (unsigned i = 0; i < nobjects; i++) {
		uintptr_t base = objects[i].dlpi_addr;
		if (is_done(base))
			continue;
		void *h = handle && base == handle_base ? handle : 0;
		if (check_object(&objects[i], h) && ndone < MAX_OBJECTS)
			done[ndone++] = base;
	}
	/* objects past the table are not checked: their GIL calls are not known to be seen */
	prof_gil_pass_done(gil_unsettled || unlisted);
}

void prof_alloc_got_refresh(void *handle)
{
	struct prof_thread *t = &prof_thr;
	if (!prof_proc || t->busy)
		return;
	if (handle == RTLD_DEFAULT || handle == RTLD_NEXT)
		handle = 0;
	unsigned long long c[2] = {0, 0};
	dl_iterate_phdr(counts, c);
	int loaded = c[0] != __atomic_load_n(&seen_adds, __ATOMIC_ACQUIRE);
	if (!loaded && !handle)
		return;
	/* a new object's GIL calls lead to the interpreter until a pass redirects them,
	 * which another thread's pass may already be past, or the lock may put off */
	if (loaded)
		prof_gil_pass_done(1);
	/* Another thread checking holds the lock while it calls into the loader, whose lock
	 * a constructor calling dlsym here may hold: waiting could deadlock. The next dlsym
	 * checks again. */
	if (pthread_mutex_trylock(&lock))
		return;
	t->busy++;
	struct link_map *lm = 0;
	if (handle && (dlinfo(handle, RTLD_DI_LINKMAP, &lm) || !lm || is_done(lm->l_addr)))
		handle = 0;
	if (loaded || handle) {
		if (c[1] != seen_subs)
			ndone = 0; /* an object unloaded: another may now sit at its address */
		seen_subs = c[1];
		check_all(handle, handle ? lm->l_addr : 0);
		__atomic_store_n(&seen_adds, c[0], __ATOMIC_RELEASE);
		/* an object loaded during the pass was not in its list */
		unsigned long long after[2] = {0, 0};
		dl_iterate_phdr(counts, after);
		if (after[0] != c[0])
			prof_gil_pass_done(1);
	}
	pthread_mutex_unlock(&lock);
	t->busy--;
}

/* A fork may have caught another thread checking: the child's copy of the lock is free. */
void prof_alloc_got_after_fork(void)
{
	pthread_mutex_init(&lock, 0);
	prof_got_write_after_fork(); /* the one GOT writers' lock, got.c's included */
}
