/* Signal handlers that make traced calls while the interrupted thread makes traced calls
 * too (issue 31.2): the main thread calls getpid N times; a timer signal (ITIMER_REAL,
 * every 30 us) runs a handler that calls getppid. MODE:
 *   plain    the handler on the thread's stack
 *   altstack the handler on an alternate signal stack (SA_ONSTACK)
 *   nested   every 8th run raises SIGUSR1 inside the handler (SA_NODEFER): its handler
 *            calls getppid too, nested in the first
 *   jump     every 64th run leaves the handler by siglongjmp to the main loop
 * Prints calls= (getpid calls completed), handled=1 when the handler ran, jumps=1 when
 * it jumped (so the output is the same from run to run).
 * usage: signal_traced N MODE */
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static volatile sig_atomic_t runs, nested_runs, jumps;
static int mode_nested, mode_jump;
static sigjmp_buf back;
static volatile sig_atomic_t jump_ready;

static void on_usr1(int sig)
{
	(void)sig;
	getppid();
	nested_runs++;
}

static void on_alarm(int sig)
{
	(void)sig;
	getppid();
	runs++;
	if (mode_nested && runs % 8 == 0)
		raise(SIGUSR1);
	if (mode_jump && jump_ready && runs % 64 == 0) {
		jump_ready = 0;
		siglongjmp(back, 1);
	}
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	const char *mode = argc > 2 ? argv[2] : "plain";
	mode_nested = !strcmp(mode, "nested");
	mode_jump = !strcmp(mode, "jump");
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_NODEFER * mode_nested;
	if (!strcmp(mode, "altstack")) {
		static char alt[64 << 10];
		stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt};
		if (sigaltstack(&ss, 0))
			return 2;
		sa.sa_flags |= SA_ONSTACK;
	}
	sigaction(SIGALRM, &sa, 0);
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_NODEFER;
	sigaction(SIGUSR1, &sa, 0);
	struct itimerval it = {{0, 30}, {0, 30}};
	setitimer(ITIMER_REAL, &it, 0);
	volatile long calls = 0;
	if (sigsetjmp(back, 1))
		jumps++;
	jump_ready = 1;
	while (calls < n) {
		getpid();
		calls++;
	}
	memset(&it, 0, sizeof it);
	setitimer(ITIMER_REAL, &it, 0);
	printf("calls=%ld handled=%d jumps=%d\n", (long)calls, runs > 0, jumps > 0 || !mode_jump);
	return 0;
}
