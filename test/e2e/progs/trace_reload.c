/* dlopen, call, dlclose, twice: the second library usually lands where the first was.
 * usage: trace_reload LIB1 SYM1 LIB2 SYM2 N
 * Calls SYMk(i) N times from each, prints "base1=ADDR base2=ADDR" and the sums. */
#include "e2e.h" /* first: _GNU_SOURCE */
#include <dlfcn.h>
#include <link.h>

int main(int argc, char **argv)
{
	if (argc < 6) {
		fprintf(stderr, "usage: trace_reload LIB1 SYM1 LIB2 SYM2 N\n");
		return 2;
	}
	int n = atoi(argv[5]);
	for (int k = 0; k < 2; k++) {
		void *h = dlopen(argv[1 + 2 * k], RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			fprintf(stderr, "trace_reload: %s\n", dlerror());
			return 1;
		}
		int (*f)(int) = (int (*)(int))dlsym(h, argv[2 + 2 * k]);
		struct link_map *lm = 0; /* f may be libprof's stub: ask the handle */
		if (!f || dlinfo(h, RTLD_DI_LINKMAP, &lm) || !lm) {
			fprintf(stderr, "trace_reload: no %s\n", argv[2 + 2 * k]);
			return 1;
		}
		long sum = 0;
		for (int i = 0; i < n; i++)
			sum += f(i);
		printf("base%d=%#lx sum%d=%ld\n", k + 1, (unsigned long)lm->l_addr, k + 1, sum);
		dlclose(h);
	}
	return 0;
}
