/* A function defined in one loaded object, read from its dynamic symbol table. */
#ifndef PROF_PRELOAD_ELF_SYM_H
#define PROF_PRELOAD_ELF_SYM_H

struct dl_phdr_info;

/* The address of the global function name defined in the object, or NULL. */
void *prof_elf_symbol(const struct dl_phdr_info *info, const char *name);
/* The same in the loaded object whose file name (after the last '/') is soname. */
void *prof_elf_symbol_in(const char *soname, const char *name);

#endif
