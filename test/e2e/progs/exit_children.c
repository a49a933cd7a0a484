/* Children that cannot (or must not) join the session, for the no-hang-at-exit cases.
 * Each mode does 5 malloc/free pairs of 61001 before and 61002 after its child, prints
 * "parent=PID child=PID" and exits 0.
 *   exit_children spawn PATH     posix_spawn PATH (a static binary), caller's environment
 *   exit_children leave PATH     the same, but exits without waiting for the child
 *   exit_children exec PATH      fork, the child execve()s PATH (a setuid binary)
 *   exit_children setuid UID     setuid(UID), then fork: the child does 5 pairs of 61003
 *   exit_children fsize          a 4 KiB file-size limit, then fork: the child cannot make
 *                                its segment; it does 5 pairs of 61003
 *   exit_children spawn_env      posix_spawn itself with an explicit environment that
 *                                holds no PROFILER_* (only PATH and the test token)
 *   exit_children child          (spawn_env's child) prints its PROFILER_* settings, does
 *                                5 pairs of 61004 and a prof_mark("spawned-child")
 *   exit_children hello          prints "hello secure=0|1" (AT_SECURE) */
#include <signal.h>
#include <spawn.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include "e2e.h"

extern char **environ;

static pid_t wait_child(pid_t pid)
{
	int st;
	if (waitpid(pid, &st, 0) != pid)
		die("waitpid");
	return pid;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "hello")) {
		printf("hello secure=%lu\n", getauxval(AT_SECURE));
		return 0;
	}
	if (!strcmp(mode, "child")) {
		for (char **e = environ; *e; e++)
			if (!strncmp(*e, "PROFILER_", 9))
				printf("setting %s\n", *e);
		many(61004, 5);
		prof_mark("spawned-child");
		return 0;
	}
	many(61001, 5);
	pid_t child = -1;
	if ((!strcmp(mode, "spawn") || !strcmp(mode, "leave")) && argc > 2) {
		char *args[] = {argv[2], "hello", 0};
		int rc = posix_spawn(&child, argv[2], 0, 0, args, environ);
		if (rc) {
			errno = rc;
			die("posix_spawn");
		}
	} else if (!strcmp(mode, "exec") && argc > 2) {
		fflush(stdout);
		child = fork();
		if (child == 0) {
			char *args[] = {argv[2], "hello", 0};
			execve(argv[2], args, environ);
			_exit(127);
		}
	} else if (!strcmp(mode, "setuid") || !strcmp(mode, "fsize")) {
		if (!strcmp(mode, "setuid")) {
			if (setuid((uid_t)arg(argc, argv, 2, 65534)))
				die("setuid");
		} else {
			struct rlimit rl = {4096, 4096};
			signal(SIGXFSZ, SIG_IGN); /* the limit is an error, not a signal */
			if (setrlimit(RLIMIT_FSIZE, &rl))
				die("setrlimit");
		}
		fflush(stdout);
		child = fork();
		if (child == 0) {
			many(61003, 5);
			_exit(0);
		}
	} else if (!strcmp(mode, "spawn_env")) {
		char *env[4];
		int k = 0;
		for (char **e = environ; *e && k < 3; e++)
			if (!strncmp(*e, "PATH=", 5) || !strncmp(*e, "LIBPROF_E2E_TOKEN=", 18))
				env[k++] = *e;
		env[k] = 0;
		char *args[] = {"/proc/self/exe", "child", 0};
		int rc = posix_spawn(&child, args[0], 0, 0, args, env);
		if (rc) {
			errno = rc;
			die("posix_spawn");
		}
	} else {
		fprintf(stderr, "usage: exit_children spawn|exec PATH | setuid UID | fsize | "
				"spawn_env\n");
		return 2;
	}
	if (child < 0)
		die("fork");
	if (strcmp(mode, "leave"))
		wait_child(child);
	many(61002, 5);
	printf("parent=%d child=%d\n", (int)getpid(), (int)child);
	return 0;
}
