/* A run that a capture in parts must cut anywhere: a forked child and two threads (the
 * second started late) make N iterations each, one every PERIOD_MS: a range "phase_K"
 * (a new name every 20 iterations, so names appear in later parts), a malloc of a size
 * that depends on the iteration, its free. Deterministic counts and bytes.
 * usage: parts_mix N PERIOD_MS */
#include <sys/wait.h>

#include "e2e.h"

static long n_iter, period_ms;

static void work(const char *who)
{
	char name[32];
	for (long i = 0; i < n_iter; i++) {
		snprintf(name, sizeof name, "%s_phase_%ld", who, i / 20);
		if (prof_range_push)
			prof_range_push(name);
		void *p = malloc(64 + (size_t)(i % 7) * 100);
		keep(p);
		free(p);
		if (prof_range_pop)
			prof_range_pop();
		struct timespec d = {0, period_ms * 1000000};
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
