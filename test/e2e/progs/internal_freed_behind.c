/* A block libprof allocated for itself (the environment array of its setenv) released
 * behind its back, as a RTLD_DEEPBIND library's free reaches libc's directly: the
 * program's next block at that address must be seen allocated and freed. Run under
 * libprof only (natively environ is not a heap block).
 * Prints "reused=0|1 size=N pid=P". */
#include "e2e.h" /* first: _GNU_SOURCE */
#include <dlfcn.h>
#include <malloc.h>

extern char **environ;

int main(void)
{
	static char *copy[1024];
	char **blk = environ;
	size_t n = 0;
	for (; blk[n] && n < 1022; n++)
		copy[n] = blk[n];
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void (*libc_free)(void *) = libc ? (void (*)(void *))dlsym(libc, "free") : 0;
	if (!libc_free || blk[n])
		return 2;
	size_t size = malloc_usable_size(blk);
	environ = copy;
	libc_free(blk);
	void *p = malloc(size);
	keep(p);
	int reused = p == (void *)blk;
	free(p);
	printf("reused=%d size=%zu pid=%d\n", reused, size, (int)getpid());
	return 0;
}
