/* N marked malloc/free pairs of SIZE, then a forked child calls prof_dump() and is
 * SIGKILLed while inside it (the parent waits for the child's word that it is calling
 * prof_dump, then DELAY_MS more; the child's word after the call must not have come).
 * Then the parent calls prof_dump() itself and prints what it returned.
 * usage: dump_killed N SIZE DELAY_MS */
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include "e2e.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	long N = arg(argc, argv, 1, 1000000);
	long SIZE = arg(argc, argv, 2, 10);
	long DELAY = arg(argc, argv, 3, 200);
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	many((size_t)SIZE, N);
	int p[2];
	if (pipe(p))
		die("pipe");
	pid_t a = fork();
	if (a < 0)
		die("fork");
	if (a == 0) {
		close(p[0]);
		if (write(p[1], "b", 1) != 1)
			_exit(1);
		int rc = prof_dump ? prof_dump() : -2;
		char c = rc == 0 ? 'd' : 'e';
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	char c = 0;
	if (read(p[0], &c, 1) != 1 || c != 'b')
		die("the child's word");
	struct timespec d = {DELAY / 1000, (DELAY % 1000) * 1000000};
	nanosleep(&d, 0);
	kill(a, SIGKILL);
	int st;
	waitpid(a, &st, 0);
	/* the child's second word: none when it died inside prof_dump */
	ssize_t n = read(p[0], &c, 1);
	printf("child=%d killed=%d inside_dump=%d\n", (int)a,
	       WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, n == 0);
	fflush(stdout);
	double t0 = now_ms();
	int rc = prof_dump ? prof_dump() : -2;
	printf("root_dump=%d dump_ms=%.0f\n", rc, now_ms() - t0);
	fflush(stdout);
	return 0;
}
