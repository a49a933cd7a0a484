/* Writes events as fast as it can for a fixed time once told to.
 * usage: block_writer SECONDS   prints "ready" (and the session), waits for the file "go" in its working
 * directory, then does malloc/free pairs of 62001 for SECONDS and prints "pairs=N". */
#include <time.h>
#include "e2e.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = (double)arg(argc, argv, 1, 2);
	const char *sid = getenv("PROFILER_SESSION");
	printf("ready pid=%d session=%s\n", (int)getpid(), sid ? sid : "none");
	fflush(stdout);
	while (access("go", F_OK))
		usleep(1000);
	long pairs = 0;
	for (double end = now_s() + secs; now_s() < end;) {
		many(62001, 1000);
		pairs += 1000;
	}
	printf("pairs=%ld\n", pairs);
	return 0;
}
