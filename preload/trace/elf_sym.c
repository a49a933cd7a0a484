/* Finding a function defined in one loaded object by reading its dynamic symbol table
 * (DT_GNU_HASH, else DT_HASH), without the loader. dlopen(RTLD_NOLOAD) of an object that
 * was loaded as a dependency and is still being initialised runs the pending
 * constructors of its dependencies from inside the constructor that asked (the
 * `import torch` crash under PROFILER_TRACE='c10d::*'); dlsym on a link_map only searches
 * objects that were dlopen'ed themselves. Reading the tables is plain memory access:
 * safe in a constructor and under the loader's lock. */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

#include "preload/trace/elf_sym.h"

static uintptr_t dyn_addr(uintptr_t base, Elf64_Addr v)
{
	/* glibc relocates most d_ptr values in place; a small one is still an offset */
	return v < base ? base + v : v;
}

static uint32_t gnu_hash(const char *s)
{
	uint32_t h = 5381;
	for (; *s; s++)
		h = h * 33 + (unsigned char)*s;
	return h;
}

static uint32_t sysv_hash(const char *s)
{
	uint32_t h = 0;
	for (; *s; s++) {
		h = (h << 4) + (unsigned char)*s;
		h ^= (h >> 24) & 0xf0;
	}
	return h & 0x0fffffff;
}

/* versym (DT_VERSYM, or NULL) marks a compatibility copy of a function (glibc's
 * sched_setaffinity@GLIBC_2.3.3 beside @@GLIBC_2.3.4) hidden: dlsym and the loader never
 * bind an unversioned reference to it, nor may we. */
static int wanted(const Elf64_Sym *sym, const char *strtab, const char *name,
		  const Elf64_Half *versym, uint32_t index)
{
	int type = ELF64_ST_TYPE(sym->st_info);
	if (versym && (versym[index] & 0x8000))
		return 0;
	return sym->st_shndx != SHN_UNDEF && sym->st_value &&
	       type == STT_FUNC && /* an ifunc's value is its resolver: left to the loader */
	       ELF64_ST_BIND(sym->st_info) != STB_LOCAL && !strcmp(strtab + sym->st_name, name);
}

void *prof_elf_symbol(const struct dl_phdr_info *info, const char *name)
{
	const Elf64_Dyn *dyn = 0;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const Elf64_Dyn *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	if (!dyn)
		return 0;
	const Elf64_Sym *symtab = 0;
	const char *strtab = 0;
	const uint32_t *gnu = 0, *sysv = 0;
	const Elf64_Half *versym = 0;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		uintptr_t p = dyn_addr(info->dlpi_addr, dyn->d_un.d_ptr);
		if (dyn->d_tag == DT_SYMTAB)
			symtab = (const Elf64_Sym *)p;
		else if (dyn->d_tag == DT_STRTAB)
			strtab = (const char *)p;
		else if (dyn->d_tag == DT_GNU_HASH)
			gnu = (const uint32_t *)p;
		else if (dyn->d_tag == DT_HASH)
			sysv = (const uint32_t *)p;
		else if (dyn->d_tag == DT_VERSYM)
			versym = (const Elf64_Half *)p;
	}
	if (!symtab || !strtab)
		return 0;
	const Elf64_Sym *found = 0;
	if (gnu) {
		uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_size = gnu[2];
		const uint64_t *bloom = (const uint64_t *)(gnu + 4);
		const uint32_t *buckets = (const uint32_t *)(bloom + bloom_size);
		const uint32_t *chain = buckets + nbuckets;
		uint32_t h = gnu_hash(name);
		if (!nbuckets)
			return 0;
		for (uint32_t i = buckets[h % nbuckets]; i >= symoffset && !found; i++) {
			if ((chain[i - symoffset] | 1) == (h | 1) &&
			    wanted(&symtab[i], strtab, name, versym, i))
				found = &symtab[i];
			if (chain[i - symoffset] & 1)
				break;
		}
	} else if (sysv) {
		uint32_t nbuckets = sysv[0];
		const uint32_t *buckets = sysv + 2, *chain = buckets + nbuckets;
		if (!nbuckets)
			return 0;
		for (uint32_t i = buckets[sysv_hash(name) % nbuckets]; i && !found; i = chain[i])
			if (wanted(&symtab[i], strtab, name, versym, i))
				found = &symtab[i];
	}
	return found ? (void *)(info->dlpi_addr + found->st_value) : 0;
}

struct by_name {
	const char *soname, *name;
	void *found;
};

static int look_in(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	struct by_name *q = ctx;
	const char *base = strrchr(info->dlpi_name, '/');
	base = base ? base + 1 : info->dlpi_name;
	if (strcmp(base, q->soname))
		return 0;
	q->found = prof_elf_symbol(info, q->name);
	return q->found != 0;
}

void *prof_elf_symbol_in(const char *soname, const char *name)
{
	struct by_name q = {soname, name, 0};
	dl_iterate_phdr(look_in, &q);
	return q.found;
}
