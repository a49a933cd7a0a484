/* preload/core/collector_watch.c: the collector is judged by its pid and /proc start time
 * (a reused pid is not the collector), and asking leaves errno alone. The file is
 * compiled in here with the few libprof globals it reads defined by the test. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "preload/core/collector_watch.c"

struct prof_session_shm *prof_session;
struct prof_proc_shm *prof_proc;
uint64_t prof_early_given_up; /* preload/wrap/early.c */
static int warnings;

void prof_warn(const char *fmt, ...)
{
	(void)fmt;
	warnings++;
}

static struct prof_session_shm session;

static void test_own_pid_with_its_start_time_runs(void **state)
{
	(void)state;
	memset(&session, 0, sizeof session);
	session.collector_pid = (uint32_t)getpid();
	assert_true(prof_collector_running(&session)); /* start time not noted: pid alone */
	session.collector_start_ticks = prof_proc_start_ticks(getpid());
	assert_int_not_equal(session.collector_start_ticks, 0);
	assert_true(prof_collector_running(&session));
}

static void test_reused_pid_is_not_the_collector(void **state)
{
	(void)state;
	memset(&session, 0, sizeof session);
	/* our pid, but the start time of the collector that had it before */
	session.collector_pid = (uint32_t)getpid();
	session.collector_start_ticks = prof_proc_start_ticks(getpid()) - 1;
	assert_false(prof_collector_running(&session));
}

static void test_dead_collector_keeps_errno(void **state)
{
	(void)state;
	memset(&session, 0, sizeof session);
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	waitpid(child, 0, 0); /* a pid that surely is gone now */
	session.collector_pid = (uint32_t)child;
	errno = 4242;
	assert_false(prof_collector_running(&session));
	assert_int_equal(errno, 4242);
	/* a blocked writer asking, collector silent and gone: drop, errno kept */
	prof_session = &session;
	errno = 4243;
	int stalled = 0;
	for (int i = 0; i < 2000 && !stalled; i++) {
		stalled = prof_collector_stalled();
		usleep(100);
	}
	assert_true(stalled);
	assert_int_equal(errno, 4243);
	prof_session = 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_own_pid_with_its_start_time_runs),
		cmocka_unit_test(test_reused_pid_is_not_the_collector),
		cmocka_unit_test(test_dead_collector_keeps_errno),
	};
	return cmocka_run_group_tests(tests, 0, 0);
}
