/* A non-PIE executable that takes the address of puts and malloc in its code: the linker
 * makes their PLT entries the functions' canonical addresses (the dynamic symbols are
 * undefined with a value), so a lookup of "puts" answers the executable's PLT entry,
 * which jumps through the executable's own GOT slot. Built -no-pie -fno-pic. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static void call(int (*f)(const char *), const char *s)
{
	f(s);
}

__attribute__((noinline)) static void *get(void *(*f)(size_t), size_t n)
{
	return f(n);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3;
	for (int i = 0; i < n; i++) {
		call(puts, "through a pointer");
		puts("direct");
		free(get(malloc, 10));
	}
	return 0;
}
