/* dlsym of data symbols beside a function (issue 31.3): libc's `stdout` and `environ`
 * read through the pointers dlsym gives, and __errno_location called through its.
 * Prints what it read. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
	void *h = dlopen("libc.so.6", RTLD_NOW);
	FILE **out = h ? (FILE **)dlsym(h, "stdout") : 0;
	FILE **in = h ? (FILE **)dlsym(h, "stdin") : 0;
	int *(*errno_at)(void) = h ? (int *(*)(void))dlsym(h, "__errno_location") : 0;
	if (!out || !in || !errno_at)
		return 2;
	errno = 0;
	fprintf(*out, "stdout=%d stdin=%d errno=%d\n", *out == stdout, *in == stdin,
		errno_at() == &errno);
	return 0;
}
