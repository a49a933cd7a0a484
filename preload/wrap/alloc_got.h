#ifndef PROF_PRELOAD_ALLOC_GOT_H
#define PROF_PRELOAD_ALLOC_GOT_H
/* Objects that bind the allocator past libprof (loaded with RTLD_DEEPBIND: their own
 * dependencies, libc, come before the global scope) get their allocator GOT entries
 * pointed at libprof's wrappers, and every object its entries for CPython's GIL calls
 * (preload/stacks/gil.h). dlsym_handle: the handle the program passed to dlsym (or
 * NULL), through which its object's lazy entries are resolved. */
void prof_alloc_got_refresh(void *dlsym_handle);
void prof_alloc_got_after_fork(void);
#endif
