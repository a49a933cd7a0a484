/* Rounds of the same ~3,000 distinct call stacks, as a training step repeats its
 * allocations: 48 recursion depths x 64 allocation sites, each stack taken once a
 * round. After the first round every one should be remembered: the ones libunwind walks
 * again are the remembered-stack cache's misses (with two ways a set, the few sets that
 * three of them fall into by chance missed every round).
 * usage: stack_rounds ROUNDS   (built -O0: the 64 sites stay 64 calls) */
#include <stdlib.h>

#define DEPTHS 48

static void keep(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
	free(p);
}

#define SITE(i) case i: keep(malloc(16 + i)); break;
#define SITES8(i) SITE(i) SITE(i + 1) SITE(i + 2) SITE(i + 3) SITE(i + 4) SITE(i + 5) \
	SITE(i + 6) SITE(i + 7)

__attribute__((noinline)) static void leaf(int site)
{
	switch (site) {
	SITES8(0) SITES8(8) SITES8(16) SITES8(24) SITES8(32) SITES8(40) SITES8(48) SITES8(56)
	}
}

__attribute__((noinline)) static void down(int levels, int site)
{
	if (levels == 0)
		leaf(site);
	else
		down(levels - 1, site);
	__asm__ volatile("" ::: "memory"); /* no tail call: each level keeps its frame */
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 1;
	for (int r = 0; r < rounds; r++)
		for (int d = 0; d < DEPTHS; d++)
			for (int s = 0; s < 64; s++)
				down(d, s);
	return 0;
}
