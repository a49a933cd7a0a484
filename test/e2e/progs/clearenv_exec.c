/* A program that clears its environment, then forks and execs itself through execl,
 * execlp, execle, fexecve or execveat (issue 31.5): glibc's execl family calls execve
 * inside libc, and fexecve and execveat make the system call themselves, so the new
 * image lost LD_PRELOAD and the session without a word. The child does 10 allocations
 * of 61001 bytes and prints "child pid=N".
 * usage: clearenv_exec execl|execlp|execle|fexecve|execveat
 *        (clearenv_exec child: the exec'd image) */
#define _GNU_SOURCE /* execveat */
#include <fcntl.h>
#include <sys/wait.h>
#include "e2e.h"

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "child")) {
		for (int i = 0; i < 10; i++)
			keep(malloc(61001));
		printf("child pid=%d\n", (int)getpid());
		return 0;
	}
	const char *how = argc > 1 ? argv[1] : "execl";
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return 2;
	self[n] = 0;
	clearenv();
	fflush(stdout);
	pid_t p = fork();
	if (!p) {
		if (!strcmp(how, "execlp")) {
			setenv("PATH", "/nonexistent", 1);
			execlp(self, "clearenv_exec", "child", (char *)0);
		} else if (!strcmp(how, "execle")) {
			char *env[] = {"ONLY=this", 0};
			execle(self, "clearenv_exec", "child", (char *)0, env);
		} else if (!strcmp(how, "fexecve")) {
			/* an empty environment (glibc's fexecve refuses clearenv's NULL) */
			char *args[] = {"clearenv_exec", "child", 0}, *none[] = {0};
			int fd = open(self, O_RDONLY);
			fexecve(fd, args, none);
		} else if (!strcmp(how, "execveat")) {
			/* a name relative to a directory's descriptor */
			char *args[] = {"clearenv_exec", "child", 0}, *none[] = {0};
			char *slash = strrchr(self, '/');
			*slash = 0;
			int dir = open(self, O_RDONLY | O_DIRECTORY);
			execveat(dir, slash + 1, args, none, 0);
		} else {
			execl(self, "clearenv_exec", "child", (char *)0);
		}
		_exit(127);
	}
	int st = 0;
	waitpid(p, &st, 0);
	printf("status=%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return 0;
}
