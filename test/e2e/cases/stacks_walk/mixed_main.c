/* Stacks through code with and without frame pointers, for stack_walk_mixed_code: this
 * file is built with frame pointers; mixed_nofp.c without; mixed_asm.S keeps data in
 * %rbp after a `push %rbp` (a prologue that is no frame). Each letter of SEQ allocates
 * once from a different chain, so walks meet remembered and half-remembered stacks:
 *   a: chain12 -> ... -> chain0 -> nofp_call(leaf_a)           (12 frame-pointer frames)
 *   b: chain12 -> ... -> chain0 -> nofp_call(leaf_b -> helper)
 *   l: asm_call(nofp_call(leaf_a)): under the asm function
 *   s: asm_call(leaf_s): straight under the asm function
 *   x: asm_liar(leaf_s): under a frame-pointer prologue that lies
 *   m: malloc from main
 * usage: mixed SEQ [ROUNDS] */
#include <stdio.h>
#include <stdlib.h>

#define KEEP(p) __asm__ volatile("" ::"r"(p) : "memory")
#define NOINLINE __attribute__((noinline))

void *nofp_call(void *(*fn)(int), int x);
void *asm_call(void *(*fn)(void *), void *arg);
void *asm_liar(void *(*fn)(void *), void *arg);

NOINLINE static void *helper(int x)
{
	void *p = malloc((size_t)x);
	KEEP(p);
	return p;
}

NOINLINE static void *leaf_a(int x)
{
	void *p = malloc((size_t)x);
	KEEP(p);
	return p;
}

NOINLINE static void *leaf_b(int x)
{
	void *p = helper(x + 1);
	KEEP(p);
	return p;
}

static int use_b;

NOINLINE static void *chain0(int x)
{
	void *p = nofp_call(use_b ? leaf_b : leaf_a, x);
	KEEP(p);
	return p;
}

#define CHAIN(name, next)                                                                  \
	NOINLINE static void *name(int x)                                                  \
	{                                                                                  \
		void *p = next(x + 1);                                                     \
		KEEP(p);                                                                   \
		return p;                                                                  \
	}
CHAIN(chain1, chain0)
CHAIN(chain2, chain1)
CHAIN(chain3, chain2)
CHAIN(chain4, chain3)
CHAIN(chain5, chain4)
CHAIN(chain6, chain5)
CHAIN(chain7, chain6)
CHAIN(chain8, chain7)
CHAIN(chain9, chain8)
CHAIN(chain10, chain9)
CHAIN(chain11, chain10)
CHAIN(chain12, chain11)

NOINLINE static void *under_asm_nofp(void *arg)
{
	void *p = nofp_call(leaf_a, (int)(long)arg);
	KEEP(p);
	return p;
}

NOINLINE static void *leaf_s(void *arg)
{
	void *p = malloc((size_t)arg);
	KEEP(p);
	return p;
}

NOINLINE static void run(const char *seq)
{
	for (const char *s = seq; *s; s++) {
		void *p;
		use_b = *s == 'b';
		if (*s == 'l')
			p = asm_call(under_asm_nofp, (void *)24);
		else if (*s == 's')
			p = asm_call(leaf_s, (void *)40);
		else if (*s == 'x')
			p = asm_liar(leaf_s, (void *)48);
		else if (*s == 'm')
			p = malloc(8);
		else
			p = chain12(16);
		KEEP(p);
		free(p);
	}
}

int main(int argc, char **argv)
{
	const char *seq = argc > 1 ? argv[1] : "aab";
	int rounds = argc > 2 ? atoi(argv[2]) : 1;
	for (int i = 0; i < rounds; i++)
		run(seq);
	printf("mixed: done\n");
	return 0;
}
