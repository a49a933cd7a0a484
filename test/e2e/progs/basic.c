/* N marked mallocs of SIZE from the main thread (kept live), TH mallocs of SIZE+1 from a
 * thread that stays alive, then MODE: exit:<code>, kill (SIGKILL), abort, segv, wait
 * (prints "ready" and waits for a signal). MODE later: prints "ready" first, makes the
 * mallocs when SIGUSR1 comes, then exits 0.
 * usage: basic N SIZE MODE [TH] */
#include <signal.h>
#include "e2e.h"

static long TH, SIZE;
static pthread_barrier_t ready;

static void *idler(void *arg)
{
	(void)arg;
	for (long i = 0; i < TH; i++)
		keep(malloc((size_t)SIZE + 1));
	pthread_barrier_wait(&ready);
	for (;;)
		pause();
	return 0;
}

int main(int argc, char **argv)
{
	long N = arg(argc, argv, 1, 100);
	SIZE = arg(argc, argv, 2, 12345);
	const char *mode = argc > 3 ? argv[3] : "exit:0";
	TH = arg(argc, argv, 4, 0);
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	if (!strcmp(mode, "later")) {
		sigset_t usr1;
		int sig;
		sigemptyset(&usr1);
		sigaddset(&usr1, SIGUSR1);
		sigprocmask(SIG_BLOCK, &usr1, 0);
		printf("ready\n");
		fflush(stdout);
		sigwait(&usr1, &sig);
		for (long i = 0; i < N; i++)
			keep(malloc((size_t)SIZE));
		return 0;
	}
	pthread_t th;
	if (TH) {
		pthread_barrier_init(&ready, 0, 2);
		if (pthread_create(&th, 0, idler, 0))
			die("pthread_create");
		pthread_barrier_wait(&ready);
	}
	for (long i = 0; i < N; i++)
		keep(malloc((size_t)SIZE));
	if (!strncmp(mode, "exit:", 5))
		return atoi(mode + 5);
	if (!strcmp(mode, "kill"))
		raise(SIGKILL);
	if (!strcmp(mode, "abort"))
		abort();
	if (!strcmp(mode, "wait")) {
		printf("ready\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	if (!strcmp(mode, "segv")) {
		signal(SIGSEGV, SIG_DFL);
		*(volatile int *)(uintptr_t)8 = 1;
	}
	return 98;
}
