/* Call stacks known by construction: main -> outer_a -> inner allocates A blocks of S
 * bytes, main -> outer_b -> inner B blocks; main -> sleeper calls usleep(U) N times
 * (through the PLT: a traced call when PROFILER_TRACE names usleep). Every block is freed.
 * usage: stacks_work A B S N U */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Each call is followed by code, so no call becomes a tail call (which would drop the
 * caller's frame from the stack). */
#define BARRIER(p) __asm__ volatile("" ::"r"(p) : "memory")

__attribute__((noinline)) static void *inner(size_t n)
{
	void *p = malloc(n);
	BARRIER(p);
	return p;
}

__attribute__((noinline)) static void outer_a(int k, size_t n)
{
	for (int i = 0; i < k; i++) {
		void *p = inner(n);
		BARRIER(p);
		free(p);
	}
}

__attribute__((noinline)) static void outer_b(int k, size_t n)
{
	for (int i = 0; i < k; i++) {
		void *p = inner(n);
		BARRIER(p);
		free(p);
	}
}

__attribute__((noinline)) static void sleeper(int k, unsigned us)
{
	for (int i = 0; i < k; i++) {
		int rc = usleep(us);
		BARRIER(&rc);
	}
}

int main(int argc, char **argv)
{
	if (argc < 6)
		return 2;
	size_t s = (size_t)atol(argv[3]);
	outer_a(atoi(argv[1]), s);
	outer_b(atoi(argv[2]), s);
	sleeper(atoi(argv[4]), (unsigned)atoi(argv[5]));
	printf("pid=%d\nstacks_work: done\n", (int)getpid());
	return 0;
}
