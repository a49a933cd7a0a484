/* Built without frame pointers (stack_walk_mixed_code): a caller the walk cannot cross. */
#define KEEP(p) __asm__ volatile("" ::"r"(p) : "memory")

__attribute__((noinline)) void *nofp_call(void *(*fn)(int), int x)
{
	void *p = fn(x + 1);
	KEEP(p);
	return p;
}
