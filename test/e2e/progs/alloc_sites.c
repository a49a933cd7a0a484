/* Allocation sites known by construction: site_keep allocates K blocks of S bytes and
 * half of them are freed only after site_temp's blocks came and went (so the peak holds
 * all K), the other half leak; site_temp allocates T blocks of 2*S, freeing each at once.
 * usage: alloc_sites K S T */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((noinline)) static void *site_keep(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" ::"r"(p) : "memory"); /* a call, not a tail call */
	return p;
}

__attribute__((noinline)) static void *site_temp(size_t n)
{
	void *p = calloc(1, n);
	__asm__ volatile("" ::"r"(p) : "memory");
	return p;
}

int main(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	int k = atoi(argv[1]), t = atoi(argv[3]);
	size_t s = (size_t)atol(argv[2]);
	void **keep = calloc((size_t)k, sizeof *keep);
	for (int i = 0; i < k; i++)
		keep[i] = site_keep(s);
	for (int i = 0; i < t; i++)
		free(site_temp(2 * s));
	for (int i = 0; i < k / 2; i++)
		free(keep[i]);
	printf("pid=%d\nalloc_sites: done\n", (int)getpid());
	return 0;
}
