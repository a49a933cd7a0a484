/* Holds descriptors above 1023 when it starts libprof's collector: /dev/null dup'ed to
 * 1500 and to a high one (70000, or below the hard RLIMIT_NOFILE when that is lower; the
 * soft limit is raised for it), neither close-on-exec. Then prof_set_state(PROF_RUN)
 * starts the session, and the program prints "sid=SID high=FD" and waits for the file
 * "go" in its directory (at most 60 s) before allocating N marked blocks (62001) and
 * exiting. usage: inherit_fds N */
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include "e2e.h"

int main(int argc, char **argv)
{
	long N = arg(argc, argv, 1, 10);
	int high = 70000;
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max <= (rlim_t)high)
			high = (int)rl.rlim_max - 1;
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	int fd = open("/dev/null", O_RDONLY);
	if (fd < 0 || dup2(fd, 1500) != 1500) {
		perror("inherit_fds: dup2 1500");
		return 2;
	}
	if (high <= 1500 || dup2(fd, high) != high)
		high = 0; /* the limit allows no higher one: 1500 alone is checked */
	close(fd);
	if (!prof_set_state) {
		printf("no libprof\n");
		return 0;
	}
	prof_set_state(PROF_RUN);
	const char *sid = getenv("PROFILER_SESSION");
	printf("sid=%s high=%d\n", sid ? sid : "none", high);
	fflush(stdout);
	struct stat st;
	for (int i = 0; i < 6000 && stat("go", &st); i++)
		nanosleep(&(struct timespec){0, 10000000}, 0);
	many(62001, N);
	return 0;
}
