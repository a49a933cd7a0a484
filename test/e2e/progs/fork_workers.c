/* DataLoader-style: the parent (with a background thread allocating) forks W workers;
 * each does N marked mallocs and exits (the last one with _exit); the parent waits, then
 * does its own marked mallocs.
 * Marks: parent before fork 31001 x PRE, parent thread 31002 x TH, worker 31003 x N,
 * parent after the workers 31004 x POST.
 * usage: fork_workers W N PRE TH POST */
#include <sys/wait.h>
#include "e2e.h"

static long TH;
static pthread_barrier_t started;

static void *background(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&started);
	for (long i = 0; i < TH; i++) {
		void *p = malloc(31002);
		keep(p);
		free(p);
		if (i % 16 == 0)
			usleep(100);
	}
	return 0;
}

int main(int argc, char **argv)
{
	long W = arg(argc, argv, 1, 3), N = arg(argc, argv, 2, 50), PRE = arg(argc, argv, 3, 7);
	TH = arg(argc, argv, 4, 200);
	long POST = arg(argc, argv, 5, 9);
	pthread_t th;
	pthread_barrier_init(&started, 0, 2);
	if (pthread_create(&th, 0, background, 0))
		die("pthread_create");
	pthread_barrier_wait(&started);
	many(31001, PRE);
	pid_t kids[16];
	if (W > 16)
		return 2;
	for (long w = 0; w < W; w++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0) {
			many(31003, N);
			if (w == W - 1)
				_exit(0);
			exit(0);
		}
		kids[w] = pid;
	}
	for (long w = 0; w < W; w++) {
		int st;
		if (waitpid(kids[w], &st, 0) != kids[w] || !WIFEXITED(st) || WEXITSTATUS(st))
			die("worker failed");
	}
	pthread_join(th, 0);
	many(31004, POST);
	printf("parent=%d\n", (int)getpid());
	for (long w = 0; w < W; w++)
		printf("worker=%d\n", (int)kids[w]);
	return 0;
}
