/* A do-nothing interposer of malloc/free: the floor any LD_PRELOAD tool pays (the extra
 * call through the PLT and RTLD_NEXT), to compare libprof's wrapper with. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

static void *(*real_malloc)(size_t);
static void (*real_free)(void *);
static char boot[4096];
static size_t boot_used;

void *malloc(size_t n)
{
	if (!real_malloc) {
		static int resolving;
		if (resolving) { /* dlsym's own allocation */
			void *p = boot + boot_used;
			boot_used += (n + 15) & ~(size_t)15;
			return p;
		}
		resolving = 1;
		real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
		real_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	}
	return real_malloc(n);
}

void free(void *p)
{
	if ((char *)p >= boot && (char *)p < boot + sizeof boot)
		return;
	if (!real_free)
		real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	real_free(p);
}
