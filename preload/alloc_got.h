#ifndef PROF_PRELOAD_ALLOC_GOT_H
#define PROF_PRELOAD_ALLOC_GOT_H
/* Objects that bind the allocator past libprof (loaded with RTLD_DEEPBIND: their own
 * dependencies, libc, come before the global scope) get their allocator GOT entries
 * pointed at libprof's wrappers. Cheap when nothing was loaded since the last call. */
void prof_alloc_got_refresh(void);
#endif
