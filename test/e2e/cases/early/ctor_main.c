/* Linked with libctor_lib.so (see ctor_lib.c); prints what its constructor did. */
#include <stdio.h>
#include <unistd.h>

extern unsigned long ctor_allocs, ctor_frees, ctor_reallocs;

int main(void)
{
	printf("ctor_allocs=%lu\nctor_frees=%lu\nctor_reallocs=%lu\npid=%d\n", ctor_allocs,
	       ctor_frees, ctor_reallocs, (int)getpid());
	return 0;
}
