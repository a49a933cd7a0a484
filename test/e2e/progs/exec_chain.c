/* A execs B execs C, each image with its own marked size and count, through execv and
 * execve with an explicit environment that has no LD_PRELOAD and no PROFILER_* (libprof
 * must put itself back). Stage s mallocs 41000+s, 5+s times.
 * usage: exec_chain [stage] */
#include "e2e.h"

extern char **environ;

int main(int argc, char **argv)
{
	long stage = arg(argc, argv, 1, 0);
	for (long i = 0; i < 5 + stage; i++) {
		void *p = malloc((size_t)(41000 + stage));
		keep(p);
		free(p);
	}
	printf("stage=%ld pid=%d preload=%s\n", stage, (int)getpid(),
	       getenv("LD_PRELOAD") ? "yes" : "no");
	fflush(stdout);
	if (stage >= 2)
		return 0;
	char next[8];
	snprintf(next, sizeof next, "%ld", stage + 1);
	char *args[] = {"/proc/self/exe", next, 0};
	/* the explicit environment: PATH, and the sanitizer settings the ASan build needs */
	char *env[8];
	int k = 0;
	for (char **e = environ; *e && k < 6; e++)
		if (!strncmp(*e, "PATH=", 5) || !strncmp(*e, "ASAN_OPTIONS=", 13) ||
		    !strncmp(*e, "UBSAN_OPTIONS=", 14))
			env[k++] = *e;
	env[k] = 0;
	if (stage == 0) {
		/* execv uses environ: strip it first */
		static char *bare[8];
		memcpy(bare, env, sizeof bare);
		environ = bare;
		execv(args[0], args);
	} else {
		execve(args[0], args, env);
	}
	die("exec");
}
