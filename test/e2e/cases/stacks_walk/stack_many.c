/* More distinct call stacks than a thread's remembered ways (32,768): 12 callers x 48
 * recursion depths x 64 allocating functions = 36,864, round after round, so that ways
 * are given out to the last and then taken for other stacks while the stacks they held
 * come round again. Each stack is named by its frames: the caller's function (midK),
 * the depth (down frames) and the allocating function (leafI).
 * usage: stack_many ROUNDS */
#include <stdlib.h>

#define DEPTHS 48
#define CALLERS 12
#define LEAVES 64

static void keep(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
	free(p);
}

#define LEAF(i) __attribute__((noinline)) static void leaf##i(void) { keep(malloc(16 + i)); }
#define LEAVES8(i) LEAF(i) LEAF(i##1) LEAF(i##2) LEAF(i##3) LEAF(i##4) LEAF(i##5) \
	LEAF(i##6) LEAF(i##7)
LEAVES8(0) LEAVES8(1) LEAVES8(2) LEAVES8(3) LEAVES8(4) LEAVES8(5) LEAVES8(6) LEAVES8(7)
#define L8(i) leaf##i, leaf##i##1, leaf##i##2, leaf##i##3, leaf##i##4, leaf##i##5, \
	leaf##i##6, leaf##i##7
static void (*const leaves[LEAVES])(void) = {L8(0), L8(1), L8(2), L8(3), L8(4), L8(5), L8(6),
					     L8(7)};

__attribute__((noinline)) static void down(int levels, int leaf)
{
	if (levels == 0)
		leaves[leaf]();
	else
		down(levels - 1, leaf);
	__asm__ volatile("" ::: "memory"); /* no tail call: each level keeps its frame */
}

#define MID(k)                                                                           \
	__attribute__((noinline)) static void mid##k(int depth, int leaf)                \
	{                                                                                \
		down(depth, leaf);                                                       \
		__asm__ volatile("" ::: "memory");                                       \
	}
MID(0) MID(1) MID(2) MID(3) MID(4) MID(5) MID(6) MID(7) MID(8) MID(9) MID(10) MID(11)
static void (*const callers[CALLERS])(int, int) = {mid0, mid1, mid2, mid3, mid4,  mid5,
						   mid6, mid7, mid8, mid9, mid10, mid11};

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 1;
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < CALLERS; k++)
			for (int d = 0; d < DEPTHS; d++)
				for (int l = 0; l < LEAVES; l++)
					callers[k](d, l);
	return 0;
}
