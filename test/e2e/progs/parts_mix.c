/* A run that a capture in parts must cut anywhere: a forked child and two threads (the
 * second started late) make N iterations each, one every PERIOD_MS: a range "phase_K"
 * (a new name every 20 iterations, so names appear in later parts), a malloc of a size
 * that depends on the iteration, its free. Deterministic counts and bytes. With "names",
 * every range has a name of its own, about 110 random characters (the names a part
 * repeats grow with the run, up to the 2 MiB string area). usage: parts_mix N PERIOD_MS [names] */
#include <sys/wait.h>

#include "e2e.h"

static long n_iter, period_ms;
static int unique_names;

static void work(const char *who)
{
	char name[128];
	for (long i = 0; i < n_iter; i++) {
		if (unique_names) { /* 6 random bits a character: names that hardly compress */
			static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
						  "0123456789+-";
			uint64_t h = (uint64_t)i * 0x9e3779b97f4a7c15ull ^ (uint64_t)who[0] << 56;
			int at = snprintf(name, sizeof name, "%s_%08ld_", who, i);
			for (int k = 0; k < 100; k++) {
				h = h * 6364136223846793005ull + 1442695040888963407ull;
				name[at++] = abc[h >> 58];
			}
			name[at] = 0;
		} else {
			snprintf(name, sizeof name, "%s_phase_%ld", who, i / 20);
		}
		if (prof_range_push)
			prof_range_push(name);
		void *p = malloc(64 + (size_t)(i % 7) * 100);
		keep(p);
		free(p);
		if (prof_range_pop)
			prof_range_pop();
		struct timespec d = {0, period_ms * 1000000};
		if (period_ms)
			nanosleep(&d, 0);
	}
}

static void *thread_main(void *arg)
{
	work(arg);
	return NULL;
}

int main(int argc, char **argv)
{
	n_iter = arg(argc, argv, 1, 100);
	period_ms = arg(argc, argv, 2, 5);
	unique_names = argc > 3 && !strcmp(argv[3], "names");
	fflush(stdout);
	pid_t child = fork();
	if (child == 0) {
		n_iter /= 2;
		work("child");
		_exit(0);
	}
	pthread_t a, b;
	pthread_create(&a, NULL, thread_main, "a");
	struct timespec late = {1, 0};
	nanosleep(&late, 0);
	pthread_create(&b, NULL, thread_main, "b");
	work("main");
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	int st;
	waitpid(child, &st, 0);
	printf("iterations=%ld\n", n_iter);
	return 0;
}
