/* The process tree: fork (the child gets its own segment, see init.c), exec (the new
 * image must find libprof and the session in its environment even when the caller passed
 * its own), posix_spawn likewise. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "state.h"

#define EXPORT __attribute__((visibility("default")))

extern char **environ;

#define REAL(name) \
	static __typeof__(&name) real_##name; \
	if (!real_##name) \
		real_##name = (__typeof__(&name))dlsym(RTLD_NEXT, #name)

EXPORT pid_t fork(void)
{
	REAL(fork);
	struct prof_thread *t = &prof_thr;
	int counted = prof_proc && prof_session;
	if (counted) {
		atomic_fetch_add(&prof_session->forks_started, 1);
		t->counted_fork = 1;
	}
	pid_t pid = real_fork();
	if (pid != 0) {
		t->counted_fork = 0;
		if (pid < 0 && counted)
			atomic_fetch_sub(&prof_session->forks_started, 1);
	}
	return pid;
}

static const char *library_path(void)
{
	static char path[PATH_MAX];
	Dl_info info;
	if (!path[0] && dladdr((void *)library_path, &info) && info.dli_fname)
		realpath(info.dli_fname, path);
	return path;
}

static size_t env_count(char *const *env)
{
	size_t n = 0;
	while (env && env[n])
		n++;
	return n;
}

/* Copies env into out (room for env_count + 3), with LD_PRELOAD naming libprof and
 * PROFILER_SESSION naming this session. The buffers live in the caller's frame: no heap
 * use, so this is safe after vfork. */
/* The new image registers when it joins (PROFILER_SPAWNED in its environment): until
 * then the collector does not end the session. */
static void count_spawn(int delta)
{
	if (prof_session)
		atomic_fetch_add(&prof_session->forks_started, (uint64_t)(int64_t)delta);
}

static char **session_env(char *const *env, char **out, char *preload, size_t plen, char *sid,
			  size_t slen)
{
	const char *lib = library_path();
	const char *old_preload = 0;
	size_t k = 0;
	for (size_t i = 0; env && env[i]; i++) {
		if (!strncmp(env[i], "LD_PRELOAD=", 11))
			old_preload = env[i] + 11;
		else if (strncmp(env[i], "PROFILER_SESSION=", 17) &&
			 strncmp(env[i], "PROFILER_SPAWNED=", 17))
			out[k++] = env[i];
	}
	if (old_preload && (!*lib || strstr(old_preload, lib)))
		snprintf(preload, plen, "LD_PRELOAD=%s", old_preload);
	else if (old_preload && *old_preload)
		snprintf(preload, plen, "LD_PRELOAD=%s:%s", lib, old_preload);
	else
		snprintf(preload, plen, "LD_PRELOAD=%s", lib);
	snprintf(sid, slen, "PROFILER_SESSION=%s", prof_sid);
	out[k++] = preload;
	out[k++] = sid;
	out[k++] = "PROFILER_SPAWNED=1";
	out[k] = 0;
	return out;
}

/* Only the process itself marks its segment: after vfork the child shares the parent's
 * memory, and the parent is not the one that execs. */
static int mark_exec(void)
{
	if (!prof_proc || (pid_t)prof_proc->pid != getpid())
		return 0;
	atomic_store_explicit(&prof_proc->state, PROC_EXECING, memory_order_release);
	return 1;
}

static void exec_failed(int marked)
{
	if (marked)
		atomic_store_explicit(&prof_proc->state, PROC_LIVE, memory_order_release);
}

#define WITH_SESSION_ENV(env, call)                                                       \
	do {                                                                               \
		if (!prof_session)                                                         \
			return call(env);                                                  \
		char *fixed[env_count(env) + 4];                                           \
		char preload_var[PATH_MAX * 2], sid_var[64];                               \
		session_env(env, fixed, preload_var, sizeof preload_var, sid_var,          \
			    sizeof sid_var);                                               \
		int marked = mark_exec();                                                  \
		count_spawn(1);                                                            \
		int rc = call(fixed);                                                      \
		count_spawn(-1);                                                           \
		exec_failed(marked);                                                       \
		return rc;                                                                 \
	} while (0)

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	REAL(execve);
#define CALL(e) real_execve(path, argv, e)
	WITH_SESSION_ENV(envp, CALL);
#undef CALL
}

EXPORT int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	REAL(execvpe);
#define CALL(e) real_execvpe(file, argv, e)
	WITH_SESSION_ENV(envp, CALL);
#undef CALL
}

EXPORT int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		       const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	REAL(posix_spawn);
#define CALL(e) real_posix_spawn(pid, path, fa, attr, argv, e)
	if (!prof_session)
		return CALL(envp);
	char *fixed[env_count(envp) + 4];
	char preload_var[PATH_MAX * 2], sid_var[64];
	count_spawn(1);
	int rc = CALL(session_env(envp, fixed, preload_var, sizeof preload_var, sid_var,
				  sizeof sid_var));
	if (rc)
		count_spawn(-1);
	return rc;
#undef CALL
}

EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	REAL(posix_spawnp);
#define CALL(e) real_posix_spawnp(pid, file, fa, attr, argv, e)
	if (!prof_session)
		return CALL(envp);
	char *fixed[env_count(envp) + 4];
	char preload_var[PATH_MAX * 2], sid_var[64];
	count_spawn(1);
	int rc = CALL(session_env(envp, fixed, preload_var, sizeof preload_var, sid_var,
				  sizeof sid_var));
	if (rc)
		count_spawn(-1);
	return rc;
#undef CALL
}
