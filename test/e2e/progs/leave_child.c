/* A program that leaves a child running: the child does N marked mallocs, sleeps MS
 * milliseconds, does N more and exits; the parent does N marked mallocs and exits at
 * once, without waiting. Marks: parent 33001, child 33002 (before) and 33003 (after).
 * usage: leave_child N MS */
#include <time.h>
#include "e2e.h"

int main(int argc, char **argv)
{
	long N = arg(argc, argv, 1, 20), ms = arg(argc, argv, 2, 500);
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
		many(33002, N);
		nanosleep(&ts, 0);
		many(33003, N);
		_exit(0);
	}
	many(33001, N);
	printf("parent=%d child=%d\n", (int)getpid(), (int)pid);
	return 0;
}
