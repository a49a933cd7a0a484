/* Control flow that does not return normally, for PROFILER_TRACE='*' (every function the
 * program calls through its PLT is traced: qsort, raise, puts, the setjmp family,
 * swapcontext, vfork, execl). Prints the same lines with and without libprof.
 * usage: trace_nonlocal sigjmp|setjmp|ucontext|vfork|threads [N]
 *   sigjmp    N times: sigsetjmp, then siglongjmp out of a qsort comparator (a traced
 *             qsort frame left behind) or out of a SIGUSR1 handler (raise's frame)
 *   setjmp    the same with setjmp/longjmp (no handler)
 *   ucontext  two coroutines on malloc'd stacks switching back and forth N times with
 *             swapcontext, each switch from inside a qsort comparator (traced qsort calls
 *             of both stay open across the switches)
 *   vfork     N times vfork + execl("/bin/echo"), waited for
 *   threads   N times: a thread calls pthread_exit from a qsort comparator, another is
 *             cancelled in sleep (both traced frames, unwound by glibc's own unwinder);
 *             each has a cleanup handler */
#include <setjmp.h>
#include <signal.h>
#include <sys/wait.h>
#include <ucontext.h>
#include "e2e.h"

static sigjmp_buf senv;
static jmp_buf env;
static int use_sig;

static int cmp_jump(const void *a, const void *b)
{
	(void)a;
	(void)b;
	if (use_sig)
		siglongjmp(senv, 1);
	longjmp(env, 1);
}

static void on_usr1(int sig)
{
	(void)sig;
	siglongjmp(senv, 2);
}

static void jumps(int n, int sig)
{
	int v[8] = {5, 3, 7, 1, 8, 2, 6, 4};
	use_sig = sig;
	signal(SIGUSR1, on_usr1);
	for (int i = 0; i < n; i++) {
		int r = sig ? sigsetjmp(senv, 1) : setjmp(env);
		if (r == 0) {
			if (sig && (i & 1))
				raise(SIGUSR1);
			else
				qsort(v, 8, sizeof v[0], cmp_jump);
			puts("not reached");
		} else {
			printf("jump %d came back with %d\n", i, r);
		}
	}
}

/* ---- coroutines ---- */

static ucontext_t main_ctx, co_ctx[2];
static int rounds, running, switched[2];

/* The first comparison of each qsort switches to the other coroutine. */
static int cmp_switch(const void *a, const void *b)
{
	int me = running;
	if (!switched[me]) {
		switched[me] = 1;
		running = !me;
		swapcontext(&co_ctx[me], &co_ctx[!me]);
		running = me;
	}
	return *(const int *)a - *(const int *)b;
}

static void coroutine(int me)
{
	for (int i = 0; i < rounds; i++) {
		int v[4] = {4, 2, 3, 1};
		printf("co%d round %d\n", me, i);
		switched[me] = 0;
		qsort(v, 4, sizeof v[0], cmp_switch);
		printf("co%d sorted %d %d %d %d\n", me, v[0], v[1], v[2], v[3]);
	}
	printf("co%d done\n", me);
	/* uc_link: back to main (the other coroutine stays suspended in its qsort) */
}

static void coroutines(int n)
{
	/* one block: co1's stack right below co0's, so a return of co0's qsort takes co1's
	 * open qsort (further down the same 64 MiB) for a frame a longjmp left */
	char *stacks = malloc(512 << 10);
	rounds = n;
	for (int me = 0; me < 2; me++) {
		getcontext(&co_ctx[me]);
		co_ctx[me].uc_stack.ss_size = 256 << 10;
		co_ctx[me].uc_stack.ss_sp = stacks + (me ? 0 : 256 << 10);
		co_ctx[me].uc_link = &main_ctx;
		makecontext(&co_ctx[me], (void (*)(void))coroutine, 1, me);
	}
	swapcontext(&main_ctx, &co_ctx[0]);
	printf("main back\n");
}

static void vforks(int n)
{
	for (int i = 0; i < n; i++) {
		char arg[32];
		snprintf(arg, sizeof arg, "child %d", i);
		fflush(stdout);
		pid_t pid = vfork();
		if (pid == 0) {
			execl("/bin/echo", "echo", arg, (char *)0);
			_exit(127);
		}
		int st = 0;
		waitpid(pid, &st, 0);
		printf("parent: child %d exited %d\n", i, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	}
}

/* ---- threads ending inside traced calls ---- */

static int cmp_exit(const void *a, const void *b)
{
	(void)a;
	(void)b;
	pthread_exit((void *)7);
}

static void cleanup(void *what)
{
	printf("cleanup %s\n", (const char *)what);
}

static void *exit_in_qsort(void *arg)
{
	int v[4] = {3, 1, 2, 4};
	(void)arg;
	pthread_cleanup_push(cleanup, "exit");
	qsort(v, 4, sizeof v[0], cmp_exit);
	pthread_cleanup_pop(0);
	return 0;
}

static void *sleep_until_cancelled(void *arg)
{
	(void)arg;
	pthread_cleanup_push(cleanup, "cancel");
	for (;;)
		sleep(1);
	pthread_cleanup_pop(0);
	return 0;
}

static void threads(int n)
{
	for (int i = 0; i < n; i++) {
		pthread_t t;
		void *r;
		pthread_create(&t, 0, exit_in_qsort, 0);
		pthread_join(t, &r);
		printf("thread %d exited with %ld\n", i, (long)r);
		pthread_create(&t, 0, sleep_until_cancelled, 0);
		usleep(20000);
		pthread_cancel(t);
		pthread_join(t, &r);
		printf("thread %d cancelled: %d\n", i, r == PTHREAD_CANCELED);
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int n = (int)arg(argc, argv, 2, 5);
	if (!strcmp(mode, "sigjmp"))
		jumps(n, 1);
	else if (!strcmp(mode, "setjmp"))
		jumps(n, 0);
	else if (!strcmp(mode, "ucontext"))
		coroutines(n);
	else if (!strcmp(mode, "vfork"))
		vforks(n);
	else if (!strcmp(mode, "threads"))
		threads(n);
	else {
		fprintf(stderr, "usage: trace_nonlocal sigjmp|setjmp|ucontext|vfork|threads [N]\n");
		return 2;
	}
	printf("%s: ok\n", mode);
	return 0;
}
