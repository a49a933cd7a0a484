/* Loads local_thrower.so RTLD_LOCAL and lets it throw and catch. usage: local_loader SO */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : 0;
	int (*run)(int) = h ? (int (*)(int))dlsym(h, "thrower_run") : 0;
	if (!run) {
		fprintf(stderr, "local_loader: %s\n", dlerror());
		return 2;
	}
	printf("caught=%d\n", run(5));
	return 0;
}
