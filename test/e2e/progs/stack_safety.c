/* Stack capture where it can go wrong: an allocating signal handler interrupting
 * allocations many times a second, threads adding new stacks at once, a fork in the
 * middle (the child allocates at sites of its own), and a function without unwind
 * information. Prints pid= and the counts it made so the test can check them.
 * usage: stack_safety ITERATIONS THREADS */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

/* No CFI at all: the unwinder meets a frame it has no table for. */
void *nocfi_alloc(size_t n);
__asm__(".text\n.globl nocfi_alloc\n.type nocfi_alloc, @function\nnocfi_alloc:\n"
	"\tpush %rbp\n\tmov %rsp, %rbp\n\tcall malloc@PLT\n\tpop %rbp\n\tret\n"
	".size nocfi_alloc, .-nocfi_alloc\n");

static volatile sig_atomic_t handler_allocs;

static void on_alarm(int sig)
{
	(void)sig;
	free(malloc(24)); /* glibc's malloc is not async-signal-safe in general; here the
			     interrupted code is never inside malloc's locked part long */
	handler_allocs++;
}

/* Many distinct stacks: recursion depth varies with the argument. */
__attribute__((noinline)) static void *deep(int d, size_t n)
{
	void *p = d ? deep(d - 1, n) : malloc(n);
	__asm__ volatile("" ::"r"(p) : "memory");
	return p;
}

static long iterations;

static void *worker(void *arg)
{
	long id = (long)arg;
	for (long i = 0; i < iterations; i++)
		free(deep((int)((i + id) % 17), 32));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	iterations = atol(argv[1]);
	int threads = atoi(argv[2]);
	signal(SIGALRM, on_alarm);
	struct itimerval it = {{0, 200}, {0, 200}};
	setitimer(ITIMER_REAL, &it, 0);
	pthread_t th[16];
	for (long i = 0; i < threads && i < 16; i++)
		pthread_create(&th[i], 0, worker, (void *)i);
	worker((void *)99);
	pid_t child = fork();
	if (child == 0) {
		for (int i = 0; i < 100; i++)
			free(deep(20 + i % 3, 48));
		_exit(0);
	}
	for (int i = 0; i < 10; i++)
		free(nocfi_alloc(4096));
	for (long i = 0; i < threads && i < 16; i++)
		pthread_join(th[i], 0);
	int st = 0;
	waitpid(child, &st, 0);
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, 0);
	printf("pid=%d\nchild=%d\nchild_ok=%d\nhandler_allocs=%d\n", (int)getpid(), (int)child,
	       WIFEXITED(st) && WEXITSTATUS(st) == 0, (int)handler_allocs);
	return 0;
}
