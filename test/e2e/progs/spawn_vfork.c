/* A parent that starts two children of its own image: one with vfork + execve, one with
 * posix_spawn, both with an explicit environment that has no LD_PRELOAD and no
 * PROFILER_* (only PATH, the sanitizer settings and LIBPROF_E2E_TOKEN): libprof must put
 * itself back. Each child does N malloc/free pairs of its marked size (vfork child 58001,
 * spawned child 58002), prints "child=PID size=S preload=yes|no" and exits; the parent
 * does N pairs of 58003 and waits for both.
 * usage: spawn_vfork N            (child: spawn_vfork child SIZE N) */
#include <spawn.h>
#include <sys/wait.h>
#include "e2e.h"

extern char **environ;

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "child")) {
		long size = arg(argc, argv, 2, 0), n = arg(argc, argv, 3, 0);
		many((size_t)size, n);
		printf("child=%d size=%ld preload=%s\n", (int)getpid(), size,
		       getenv("LD_PRELOAD") ? "yes" : "no");
		return 0;
	}
	long N = arg(argc, argv, 1, 20);
	char *env[8];
	int k = 0;
	for (char **e = environ; *e && k < 6; e++)
		if (!strncmp(*e, "PATH=", 5) || !strncmp(*e, "ASAN_OPTIONS=", 13) ||
		    !strncmp(*e, "UBSAN_OPTIONS=", 14) || !strncmp(*e, "LIBPROF_E2E_TOKEN=", 18))
			env[k++] = *e;
	env[k] = 0;
	char n[32];
	snprintf(n, sizeof n, "%ld", N);
	char *vargs[] = {"/proc/self/exe", "child", "58001", n, 0};
	char *sargs[] = {"/proc/self/exe", "child", "58002", n, 0};
	printf("parent=%d\n", (int)getpid());
	fflush(stdout);
	/* vfork first: nothing has looked up the real execve yet */
	pid_t v = vfork();
	if (v < 0)
		die("vfork");
	if (v == 0) {
		execve(vargs[0], vargs, env);
		_exit(127);
	}
	pid_t s;
	int rc = posix_spawn(&s, sargs[0], 0, 0, sargs, env);
	if (rc) {
		errno = rc;
		die("posix_spawn");
	}
	many(58003, N);
	int st;
	if (waitpid(v, &st, 0) != v || !WIFEXITED(st) || WEXITSTATUS(st))
		die("vfork child failed");
	if (waitpid(s, &st, 0) != s || !WIFEXITED(st) || WEXITSTATUS(st))
		die("spawned child failed");
	printf("vforked=%d spawned=%d\n", (int)v, (int)s);
	return 0;
}
