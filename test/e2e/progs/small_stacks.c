/* Threads with small stacks (issue 31.4): PTHREAD_STACK_MIN (16 KiB) and 64 KiB, each
 * making allocations, a libprof range and a traced call (getppid under PROFILER_TRACE).
 * glibc takes every module's static TLS from a thread's stack: libprof's 47 KiB made
 * pthread_create fail with EINVAL. Prints each size's pthread_create result and work.
 * usage: small_stacks */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include "e2e.h"

static void *work(void *arg)
{
	(void)arg;
	if (prof_range_push) /* weak: absent natively */
		prof_range_push("small stack");
	for (int i = 0; i < 100; i++) {
		void *p = malloc(100 + i);
		getppid();
		free(p);
	}
	if (prof_range_pop)
		prof_range_pop();
	return (void *)1;
}

int main(void)
{
	size_t sizes[] = {PTHREAD_STACK_MIN, 64 << 10};
	for (unsigned i = 0; i < 2; i++) {
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setstacksize(&a, sizes[i]);
		pthread_t t;
		int rc = pthread_create(&t, &a, work, 0);
		void *r = 0;
		if (!rc)
			pthread_join(t, &r);
		printf("stack=%zu create=%s work=%d\n", sizes[i], rc ? strerror(rc) : "ok", r != 0);
		pthread_attr_destroy(&a);
	}
	return 0;
}
