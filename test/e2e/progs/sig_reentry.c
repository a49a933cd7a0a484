/* A timer signal (SIGALRM, ITIMER_REAL, every INTERVAL us) whose
 * handler calls prof_mark("tick") and prof_counter("ticks", n) while the main thread does
 * malloc/free pairs of SIZE: the handler often interrupts libprof's own wrappers (then
 * libprof must skip the annotation) and often the program between them (then it is
 * recorded on the same ring the interrupted thread writes).
 * The main thread does at least N pairs and goes on (in batches of 1000) until at least
 * MIN signals arrived (or 5*N pairs were done). Then it spins (no call at all, so no
 * signal can interrupt libprof) until SPIN more signals arrived: every handler run of
 * that phase must be recorded. Then it stops the timer.
 * Prints pid=, pairs= (malloc/free pairs of SIZE done), deliveries= (handler runs) and
 * spin_first=, spin_last= (the numbers of the handler runs during the spin phase).
 * usage: sig_reentry N SIZE INTERVAL_US MIN SPIN */
#include <signal.h>
#include <sys/time.h>
#include "e2e.h"

static volatile sig_atomic_t deliveries, in_spin, spin_until, spin_first, spin_last;

static void on_tick(int sig)
{
	(void)sig;
	int saved = errno;
	long n = deliveries + 1;
	deliveries = n;
	if (in_spin && n <= spin_until) {
		if (!spin_first)
			spin_first = n;
		spin_last = n;
	}
	prof_mark("tick");
	prof_counter("ticks", (double)n);
	errno = saved;
}

int main(int argc, char **argv)
{
	long N = arg(argc, argv, 1, 200000), SIZE = arg(argc, argv, 2, 56001);
	long INTERVAL = arg(argc, argv, 3, 50), MIN = arg(argc, argv, 4, 1000);
	long SPIN = arg(argc, argv, 5, 100);
	if (!prof_mark)
		return 2;
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_tick;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, 0))
		die("sigaction");
	struct itimerval it = {{0, INTERVAL}, {0, INTERVAL}};
	if (setitimer(ITIMER_REAL, &it, 0))
		die("setitimer");
	long pairs = 0;
	while (pairs < N || (deliveries < MIN && pairs < 5 * N)) {
		for (int i = 0; i < 1000; i++) {
			void *p = malloc((size_t)SIZE);
			keep(p);
			free(p);
		}
		pairs += 1000;
	}
	/* exactly SPIN runs count as the spin phase: none slips in while it is set up, and
	 * one arriving after the loop saw the last but before in_spin drops is not one */
	sigset_t alrm;
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	sigprocmask(SIG_BLOCK, &alrm, 0);
	long until = deliveries + SPIN;
	spin_until = until;
	in_spin = 1;
	sigprocmask(SIG_UNBLOCK, &alrm, 0);
	while (deliveries < until)
		;
	in_spin = 0;
	struct itimerval off = {{0, 0}, {0, 0}};
	if (setitimer(ITIMER_REAL, &off, 0))
		die("setitimer off");
	/* no handler runs after this: the counts printed are final */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	sigprocmask(SIG_BLOCK, &set, 0);
	printf("pairs=%ld deliveries=%ld spin_first=%ld spin_last=%ld\n", pairs,
	       (long)deliveries, (long)spin_first, (long)spin_last);
	return 0;
}
