/* Starting the collector from inside the program: `prof collect --session SID`, found
 * next to libprof.so (build tree) or in ../bin (installed), detached by a double fork so
 * the program's wait() calls never see it, and without LD_PRELOAD in its environment. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "preload/core/launch.h"

#include <stdatomic.h>
#include <stdint.h>

extern char **environ;

static int try_path(char *out, size_t len, const char *dir, const char *rel)
{
	size_t n = strlen(dir) + strlen(rel) + 1;
	if (n >= len)
		return 0;
	strcpy(out, dir);
	strcat(out, rel);
	return access(out, X_OK) == 0;
}

int prof_find_collector(char *out, size_t len)
{
	const char *env = getenv("PROFILER_COLLECTOR");
	if (env && *env) {
		if (strlen(env) >= len || access(env, X_OK))
			return -1;
		strcpy(out, env);
		return 0;
	}
	Dl_info info;
	if (!dladdr((void *)prof_find_collector, &info) || !info.dli_fname)
		return -1;
	char dir[PATH_MAX];
	if (!realpath(info.dli_fname, dir))
		return -1;
	char *slash = strrchr(dir, '/');
	if (!slash)
		return -1;
	*slash = 0;
	if (try_path(out, len, dir, "/prof") || try_path(out, len, dir, "/../bin/prof"))
		return 0;
	return -1;
}

int prof_spawn_collector(const char *path, const char *sid, _Atomic uint32_t *pid_out)
{
	/* Everything is prepared before fork: the child only makes async-signal-safe calls,
	 * so this is safe from a multi-threaded program too. */
	size_t n = 0;
	while (environ && environ[n])
		n++;
	char **envp = alloca((n + 1) * sizeof *envp);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11) && strncmp(environ[i], "PROFILER_SESSION=", 17))
			envp[k++] = environ[i];
	envp[k] = 0;
	char sid_copy[64];
	strncpy(sid_copy, sid, sizeof sid_copy - 1);
	sid_copy[sizeof sid_copy - 1] = 0;
	char *argv[] = {(char *)path, "collect", "--session", sid_copy, 0};

	pid_t mid = fork();
	if (mid < 0)
		return -1;
	if (mid == 0) {
		setsid();
		pid_t c = fork();
		if (c > 0)
			atomic_store(pid_out, (uint32_t)c); /* shared memory: the program sees it */
		if (c == 0) {
			execve(path, argv, envp);
			_exit(127);
		}
		_exit(c < 0 ? 1 : 0);
	}
	int status = 0;
	while (waitpid(mid, &status, 0) < 0) {
		if (errno == ECHILD) /* SIGCHLD ignored: reaped already; did it get going? */
			return atomic_load(pid_out) ? 0 : -1;
		if (errno != EINTR)
			return -1;
	}
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}
