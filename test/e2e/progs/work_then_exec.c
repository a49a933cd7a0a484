/* A program that does its work and then execs itself (as a data-preparing stage hands
 * over to the next): 4 threads x 20,000 mallocs of 61001 bytes and a forked child's
 * 10,000 of 61002, then the exec'd image's 777 of 61003. None of it is launcher noise.
 * usage: work_then_exec [after] */
#include <pthread.h>
#include <sys/wait.h>

#include "e2e.h"

static void *thread_work(void *arg)
{
	(void)arg;
	many(61001, 20000);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		many(61003, 777);
		printf("after pid=%d\n", (int)getpid());
		return 0;
	}
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		if (pthread_create(&t[i], 0, thread_work, 0))
			die("pthread_create");
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], 0);
	pid_t child = fork();
	if (child < 0)
		die("fork");
	if (!child) {
		many(61002, 10000);
		_exit(0);
	}
	int status;
	waitpid(child, &status, 0);
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	char *args[] = {"/proc/self/exe", "after", 0};
	execv(args[0], args);
	die("execv");
}
