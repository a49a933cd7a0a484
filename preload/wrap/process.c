/* The process tree: fork (the child gets its own segment, see init.c), exec (the new
 * image must find libprof and the session in its environment even when the caller passed
 * its own), posix_spawn likewise. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload/common/child_setup.h"
#include "preload/wrap/exec_target.h"
#include "preload/core/state.h"

#define EXPORT __attribute__((visibility("default")))

extern char **environ;

#define REAL(name) \
	static __typeof__(&name) real_##name; \
	if (!real_##name) \
		real_##name = (__typeof__(&name))dlsym(RTLD_NEXT, #name)

int prof_session_user(void)
{
	return prof_session && getuid() == prof_session->uid && geteuid() == prof_session->euid;
}

/* A counted child by pid, so the collector can tell one that can still join (alive, no
 * segment yet) from one that never will (gone). */
static void note_child(pid_t pid)
{
	uint32_t i = atomic_fetch_add(&prof_session->children_next, 1);
	atomic_store(&prof_session->children[i % PROF_CHILD_SLOTS], (uint32_t)pid);
}

EXPORT pid_t fork(void)
{
	REAL(fork);
	struct prof_thread *t = &prof_thr;
	/* a child of a process that changed its user is not profiled (init.c): not counted */
	int counted = prof_proc && prof_session && prof_session_user();
	if (counted) {
		atomic_fetch_add(&prof_session->forks_started, 1);
		t->counted_fork = 1;
	}
	pid_t pid = real_fork();
	if (pid != 0) {
		t->counted_fork = 0;
		if (pid < 0 && counted)
			atomic_fetch_sub(&prof_session->forks_started, 1);
		if (pid > 0 && counted)
			note_child(pid);
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

/* The PROFILER_* settings the process started with, copied (a program may overwrite its
 * environment's memory, as setproctitle does): a spawned image gets them even when the
 * caller passes an environment of its own. */
#define SAVED_VARS 64
static char saved_bytes[8192];
static char *saved_vars[SAVED_VARS + 1];

void prof_spawn_env_save(char **env)
{
	size_t used = 0, n = 0;
	for (; env && *env && n < SAVED_VARS; env++) {
		if (strncmp(*env, "PROFILER_", 9) || !strncmp(*env, "PROFILER_SESSION=", 17) ||
		    !strncmp(*env, "PROFILER_SPAWNED=", 17))
			continue;
		size_t len = strlen(*env) + 1;
		if (used + len > sizeof saved_bytes)
			continue;
		memcpy(saved_bytes + used, *env, len);
		saved_vars[n++] = saved_bytes + used;
		used += len;
	}
	saved_vars[n] = 0;
}

/* env sets the variable that var ("NAME=value") sets */
static int env_has(char *const *env, const char *var)
{
	size_t n = strcspn(var, "=") + 1;
	for (; env && *env; env++)
		if (!strncmp(*env, var, n))
			return 1;
	return 0;
}

static size_t env_count(char *const *env)
{
	size_t n = 0;
	while (env && env[n])
		n++;
	return n;
}

/* Copies env into out (room for env_count + SAVED_VARS + 3), with LD_PRELOAD naming
 * libprof, PROFILER_SESSION naming this session and the saved settings env lacks. The buffers live in the caller's frame: no heap
 * use, so this is safe after vfork. */
/* The new image registers when it joins (PROFILER_SPAWNED in its environment): until
 * then the collector does not end the session. */
static void count_spawn(int delta)
{
	if (prof_session)
		atomic_fetch_add(&prof_session->forks_started, (uint64_t)(int64_t)delta);
}

static char **session_env(char *const *env, char **out, char *preload, size_t plen, char *sid,
			  size_t slen, int counted)
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
	prof_preload_entry(preload, plen, lib, old_preload);
	snprintf(sid, slen, "PROFILER_SESSION=%s", prof_sid);
	for (char **v = saved_vars; *v; v++)
		if (!env_has(env, *v))
			out[k++] = *v;
	out[k++] = preload;
	out[k++] = sid;
	/* only a counted image registers: one judged unable to join that joins after all
	 * (a loader run directly looks static) must not settle another child's count */
	if (counted)
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
	prof_note_cpu_time(); /* the image's CPU time ends here; the next counts on */
	atomic_store_explicit(&prof_proc->state, PROC_EXECING, memory_order_release);
	return 1;
}

static void exec_failed(int marked)
{
	if (marked)
		atomic_store_explicit(&prof_proc->state, PROC_LIVE, memory_order_release);
}

/* Whether the image exec'd from file (searched on PATH when search) will join: if not,
 * it is named now and not counted (the session would wait for it). No heap: may run in
 * a vfork child. */
static const char *refusal(const char *file, int search)
{
	char path[PATH_MAX];
	if (!prof_session_user())
		return "its user id is not the session's (setuid)";
	if (search ? prof_exec_resolve(file, path, sizeof path) : strlen(file) >= sizeof path)
		return 0; /* the exec will fail */
	return prof_exec_target_refuses(search ? path : file);
}

static void say_not_profiled(const char *file, pid_t pid, const char *why)
{
	if (!prof_session->quiet)
		prof_warn("not profiling %s (pid %d): %s", file, (int)pid, why);
}

static int will_join(const char *file, int search, pid_t pid)
{
	const char *why = refusal(file, search);
	if (why)
		say_not_profiled(file, pid, why);
	return !why;
}

#define WITH_SESSION_ENV(file, search, env, call)                                         \
	do {                                                                               \
		if (!prof_session)                                                         \
			return call(env);                                                  \
		char *fixed[env_count(env) + SAVED_VARS + 4];                              \
		char preload_var[PATH_MAX * 2], sid_var[64];                               \
		int counted = will_join(file, search, getpid());                           \
		session_env(env, fixed, preload_var, sizeof preload_var, sid_var,          \
			    sizeof sid_var, counted);                                      \
		int marked = mark_exec();                                                  \
		if (counted) {                                                             \
			count_spawn(1);                                                    \
			note_child(getpid());                                              \
		}                                                                          \
		int rc = call(fixed);                                                      \
		if (counted)                                                               \
			count_spawn(-1);                                                   \
		exec_failed(marked);                                                       \
		return rc;                                                                 \
	} while (0)

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	REAL(execve);
#define CALL(e) real_execve(path, argv, e)
	WITH_SESSION_ENV(path, 0, envp, CALL);
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
	WITH_SESSION_ENV(file, 1, envp, CALL);
#undef CALL
}

EXPORT int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

/* fexecve and execveat: glibc's make the execveat system call themselves, past execve,
 * so (as with execl) an image exec'd with a cleared environment lost libprof without a
 * word. The target is named for refusal() by a path that reaches it: /proc/self/fd/N,
 * with the relative path after it. No heap, no stdio: may run in a vfork child. */
static const char *fd_path(char *buf, size_t size, int fd, const char *rest)
{
	static const char head[] = "/proc/self/fd/";
	char digits[16];
	int nd = 0;
	unsigned v = fd < 0 ? 0 : (unsigned)fd;
	do
		digits[nd++] = (char)('0' + v % 10);
	while ((v /= 10) && nd < (int)sizeof digits);
	size_t len = sizeof head - 1, rl = rest ? strlen(rest) : 0;
	if (len + (size_t)nd + 1 + rl + 1 > size)
		return "";
	memcpy(buf, head, len);
	while (nd)
		buf[len++] = digits[--nd];
	if (rl) {
		buf[len++] = '/';
		memcpy(buf + len, rest, rl);
		len += rl;
	}
	buf[len] = 0;
	return buf;
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	REAL(fexecve);
	char path[PATH_MAX];
	const char *target = fd_path(path, sizeof path, fd, 0);
#define CALL(e) real_fexecve(fd, argv, e)
	WITH_SESSION_ENV(target, 0, envp, CALL);
#undef CALL
}

EXPORT int execveat(int dirfd, const char *pathname, char *const argv[], char *const envp[],
		    int flags)
{
	REAL(execveat);
	char path[PATH_MAX];
	/* declared nonnull, but the system call takes NULL (EFAULT): not read here then */
	const char *target = pathname;
	__asm__("" : "+r"(target));
	if (target && !target[0] && (flags & AT_EMPTY_PATH))
		target = fd_path(path, sizeof path, dirfd, 0);
	else if (target && target[0] != '/' && dirfd != AT_FDCWD)
		target = fd_path(path, sizeof path, dirfd, target);
	if (!real_execveat) { /* a libc older than 2.34 has none to call */
		errno = ENOSYS;
		return -1;
	}
	if (!target) /* fails as it would have (EFAULT) */
		return real_execveat(dirfd, pathname, argv, envp, flags);
#define CALL(e) real_execveat(dirfd, pathname, argv, e, flags)
	WITH_SESSION_ENV(target, 0, envp, CALL);
#undef CALL
}

/* execl, execlp, execle: glibc's build an argv and call execve inside libc, past the
 * wrappers above, so a program that cleared its environment (clearenv) and then
 * execl'd lost libprof in the new image without a word. Their lists become an argv here
 * (on the stack: no allocation), then the wrappers above run. */
static size_t list_length(const char *arg, va_list ap)
{
	size_t n = 0;
	va_list c;
	va_copy(c, ap);
	for (const char *a = arg; a; a = va_arg(c, const char *))
		n++;
	va_end(c);
	return n;
}

/* The list from arg on (ap: the arguments after it), then execle's environment. */
static int exec_list(const char *file, int search, int with_env, const char *arg, va_list ap)
{
	size_t n = list_length(arg, ap);
	char *argv[n + 1];
	for (size_t i = 0; i < n; i++)
		argv[i] = i ? va_arg(ap, char *) : (char *)arg;
	argv[n] = 0;
	if (n)
		(void)va_arg(ap, char *); /* the list's NULL */
	char *const *envp = with_env ? va_arg(ap, char *const *) : environ;
	return search ? execvpe(file, argv, envp) : execve(file, argv, envp);
}

#define EXEC_LIST(file, search, with_env, arg)                                            \
	va_list ap;                                                                        \
	va_start(ap, arg);                                                                 \
	int rc = exec_list(file, search, with_env, arg, ap);                               \
	va_end(ap);                                                                        \
	return rc

EXPORT int execl(const char *path, const char *arg, ...)
{
	EXEC_LIST(path, 0, 0, arg);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
	EXEC_LIST(file, 1, 0, arg);
}

EXPORT int execle(const char *path, const char *arg, ...)
{
	EXEC_LIST(path, 0, 1, arg);
}

/* The spawned image is counted unless it cannot join; its pid is noted once known. */
static int spawn_in_session(int (*spawn)(pid_t *, const char *,
					 const posix_spawn_file_actions_t *,
					 const posix_spawnattr_t *, char *const[], char *const[]),
			    pid_t *pid, const char *file, int search,
			    const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
			    char *const argv[], char *const envp[])
{
	if (!prof_session)
		return spawn(pid, file, fa, attr, argv, envp);
	char *fixed[env_count(envp) + SAVED_VARS + 4];
	char preload_var[PATH_MAX * 2], sid_var[64];
	pid_t child = 0;
	const char *why = refusal(file, search);
	if (!why)
		count_spawn(1);
	int rc = spawn(&child, file, fa, attr, argv,
		       session_env(envp, fixed, preload_var, sizeof preload_var, sid_var,
				   sizeof sid_var, !why));
	if (pid && !rc)
		*pid = child;
	if (rc && !why)
		count_spawn(-1);
	else if (!rc && !why)
		note_child(child);
	else if (!rc)
		say_not_profiled(file, child, why);
	return rc;
}

EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		       const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	REAL(posix_spawn);
	return spawn_in_session(real_posix_spawn, pid, path, 0, fa, attr, argv, envp);
}

EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	REAL(posix_spawnp);
	return spawn_in_session(real_posix_spawnp, pid, file, 1, fa, attr, argv, envp);
}

/* _exit, _Exit: the session's root ending this way (dash's and busybox's sh, Python's
 * os._exit) still waits for the outputs, as exit() does through the destructor. Only
 * the root itself: a forked child calling _exit (after a failed exec, in a
 * multi-threaded program) must stay async-signal-safe, and a vfork child shares its
 * parent's memory, segment pointer included (its pid tells it apart). */
static void end_if_root(void)
{
	if (prof_proc && prof_session && prof_proc->pid == (uint32_t)getpid() &&
	    prof_session->root_pid == prof_proc->pid)
		prof_process_end(0);
}

EXPORT void _exit(int status)
{
	REAL(_exit);
	end_if_root();
	real__exit(status);
	__builtin_unreachable();
}

EXPORT void _Exit(int status)
{
	REAL(_Exit);
	end_if_root();
	real__Exit(status);
	__builtin_unreachable();
}
