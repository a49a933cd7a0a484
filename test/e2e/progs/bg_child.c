/* The program forks a background child and exits at once. The child points its
 * standard descriptors at /dev/null (it closes nothing else), does N marked malloc/free
 * pairs of 63002 bytes, and sleeps SECS seconds; the parent did N of 63001.
 * usage: bg_child SECS N */
#include <fcntl.h>
#include "e2e.h"

int main(int argc, char **argv)
{
	long SECS = arg(argc, argv, 1, 3);
	long N = arg(argc, argv, 2, 10);
	many(63001, N);
	int p[2];
	if (pipe(p))
		die("pipe");
	pid_t c = fork();
	if (c < 0)
		die("fork");
	if (c == 0) {
		int nul = open("/dev/null", O_RDWR);
		dup2(nul, 0);
		dup2(nul, 1);
		dup2(nul, 2);
		close(p[0]);
		setsid();
		many(63002, N);
		close(p[1]); /* the parent exits once the child's allocations are done */
		sleep((unsigned)SECS);
		_exit(0);
	}
	close(p[1]);
	char b;
	while (read(p[0], &b, 1) > 0)
		;
	printf("pid=%d child=%d\n", (int)getpid(), (int)c);
	return 0;
}
