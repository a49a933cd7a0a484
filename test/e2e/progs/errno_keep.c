/* errno_keep N: prints "ready pid=P session=S", waits for the file "go", then makes N
 * rounds of malloc, realloc, free (and a new thread doing the same), each with errno
 * set to a marker before; a successful call must leave errno alone (and errno is 0
 * at main's start: "start_errno=E" on the ready line). Prints
 * "changed=K calls=M" (K calls that changed errno) and "errno=E" for the first one. */
#include "e2e.h"

static long changed, calls;
static int first_seen;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void note(int want)
{
	int got = errno;
	pthread_mutex_lock(&mu);
	calls++;
	if (got != want) {
		if (!changed++)
			first_seen = got;
	}
	pthread_mutex_unlock(&mu);
}

static void *rounds(void *arg)
{
	long n = (long)arg;
	for (long i = 0; i < n; i++) {
		errno = 7001;
		void *p = malloc(62001);
		note(7001);
		keep(p);
		errno = 7002;
		void *q = realloc(p, 62003);
		note(7002);
		keep(q);
		errno = 7003;
		free(q);
		note(7003);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int start = errno; /* zero at program startup (C11 7.5) */
	long n = arg(argc, argv, 1, 20000);
	const char *sid = getenv("PROFILER_SESSION");
	printf("ready pid=%d session=%s start_errno=%d\n", (int)getpid(), sid ? sid : "none",
	       start);
	fflush(stdout);
	while (access("go", F_OK))
		usleep(1000);
	rounds((void *)n);
	pthread_t t;
	if (pthread_create(&t, 0, rounds, (void *)n) == 0)
		pthread_join(t, 0);
	printf("changed=%ld calls=%ld errno=%d\n", changed, calls, first_seen);
	return 0;
}
