/* Distinct call stacks past the first chunk of the stack area (issue 29): a binary tree
 * of calls D levels deep, each leaf allocating once with a size naming its path, so there
 * are 2^D distinct stacks (D = 18: 262,144 of ~40 frames, ~80 MB); then, with F = 1, a
 * forked child walks the same tree (its stacks are its parent's, inherited) and one more
 * level of new ones.
 * usage: stacks_many D F */
#include "e2e.h"

#include <sys/wait.h>

static int depth;

static void descend(int level, unsigned path);

/* Two callers of descend: a leaf's stack is the path of return addresses through them. */
__attribute__((noinline)) static void via_left(int level, unsigned path)
{
	descend(level, path);
	__asm__ volatile("" ::: "memory"); /* no tail call: the frame stays on the stack */
}

__attribute__((noinline)) static void via_right(int level, unsigned path)
{
	descend(level, path);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void descend(int level, unsigned path)
{
	if (level == depth) {
		keep(malloc(1000 + (path & 7)));
		return;
	}
	if (path >> level & 1)
		via_right(level + 1, path);
	else
		via_left(level + 1, path);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	depth = (int)arg(argc, argv, 1, 18);
	int forked = (int)arg(argc, argv, 2, 0);
	for (unsigned path = 0; path < 1u << depth; path++)
		descend(0, path);
	if (forked) {
		pid_t pid = fork();
		if (pid < 0)
			die("fork");
		if (!pid) {
			for (unsigned path = 0; path < 1u << depth; path++)
				descend(0, path);
			depth++;
			for (unsigned path = 1u << (depth - 1); path < 1u << depth; path++)
				descend(0, path);
			_exit(0);
		}
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			die("child");
	}
	printf("pid=%d\n", (int)getpid());
	return 0;
}
