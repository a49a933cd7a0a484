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

#include "preload/common/child_setup.h"
#include "preload/core/launch.h"
#include "preload/common/env.h"

#include <stdatomic.h>
#include <stdint.h>

extern char **environ;

int prof_find_collector(char *out, size_t len)
{
	static const char *const rels[] = {"prof", "../bin/prof", NULL};
	const char *env = prof_getenv("PROFILER_COLLECTOR");
	Dl_info info;
	char self[PATH_MAX];
	if (!(env && *env) && (!dladdr((void *)prof_find_collector, &info) || !info.dli_fname ||
			       !realpath(info.dli_fname, self)))
		return -1;
	return prof_find_sibling(self, rels, X_OK, env, out, len);
}

int prof_spawn_collector(const char *path, const char *sid, _Atomic uint32_t *pid_out)
{
	/* Everything is prepared before fork: the child only makes async-signal-safe calls,
	 * so this is safe from a multi-threaded program too. */
	size_t n = 0;
	while (environ && environ[n])
		n++;
	char **envp = alloca((n + 2) * sizeof *envp);
	static const char *const drop[] = {"LD_PRELOAD", "PROFILER_SESSION", "GLIBC_TUNABLES",
					   NULL};
	size_t kept = prof_env_drop(environ, drop, envp);
	/* the collector's malloc on huge pages (child_setup.h); the program's own value when
	 * it would not fit (this may run on a thread with a small stack) */
	const char *tunables = prof_getenv("GLIBC_TUNABLES");
	char tunables_entry[512];
	if (!prof_tunables_entry(tunables_entry, sizeof tunables_entry, tunables))
		envp[kept++] = tunables_entry;
	else if (tunables)
		envp[kept++] = (char *)tunables - strlen("GLIBC_TUNABLES=");
	envp[kept] = NULL;
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
			/* the program's descriptors, close-on-exec or not, stay the program's */
			prof_close_from(3);
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
