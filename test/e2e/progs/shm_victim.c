/* shm_victim N SIZE: a program whose segment a test corrupts while it runs. N mallocs of
 * SIZE, a forked child (prints child=PID) and N mallocs of SIZE+1 in it; "pid=PID ready"
 * once those are surely drained; then, when the file "go" exists in the working
 * directory, N mallocs of SIZE+2 in the parent and SIZE+3 in the child, and both exit. */
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "e2e.h"

static void wait_for_go(void)
{
	struct stat st;
	struct timespec ts = {0, 10 * 1000000};
	for (int i = 0; i < 6000 && stat("go", &st); i++) /* a minute at most */
		nanosleep(&ts, 0);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100;
	size_t size = argc > 2 ? (size_t)atol(argv[2]) : 40001;
	many(size, n);
	pid_t child = fork();
	if (child == 0) {
		many(size + 1, n);
		wait_for_go();
		many(size + 3, n);
		return 0;
	}
	struct timespec ts = {0, 300 * 1000000}; /* the collector drains every millisecond */
	nanosleep(&ts, 0);
	printf("pid=%d child=%d ready\n", (int)getpid(), (int)child);
	fflush(stdout);
	wait_for_go();
	many(size + 2, n);
	waitpid(child, 0, 0);
	return 0;
}
