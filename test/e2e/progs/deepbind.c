/* Loads a plugin with RTLD_DEEPBIND (lazy or now) and has it allocate K blocks of SIZE,
 * free them, and strdup a string of DUP bytes and free the copy.
 * usage: deepbind PLUGIN lazy|now K SIZE DUP */
#include "e2e.h"

#include <dlfcn.h>

int main(int argc, char **argv)
{
	if (argc < 6)
		return 2;
	int mode = strcmp(argv[2], "now") ? RTLD_LAZY : RTLD_NOW;
	long k = arg(argc, argv, 3, 10), size = arg(argc, argv, 4, 7777), dup = arg(argc, argv, 5, 555);
	void *h = dlopen(argv[1], mode | RTLD_DEEPBIND);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 3;
	}
	void *(*alloc)(size_t) = (void *(*)(size_t))dlsym(h, "deep_alloc");
	void (*release)(void *) = (void (*)(void *))dlsym(h, "deep_free");
	size_t (*dup_free)(size_t) = (size_t(*)(size_t))dlsym(h, "deep_dup_and_free");
	if (!alloc || !release || !dup_free)
		return 4;
	void *b[64];
	if (k > 64)
		return 2;
	for (long i = 0; i < k; i++)
		keep(b[i] = alloc((size_t)size));
	for (long i = 0; i < k; i++)
		release(b[i]);
	if (dup_free((size_t)dup) != (size_t)dup)
		return 5;
	printf("pid=%d\n", (int)getpid());
	return 0;
}
