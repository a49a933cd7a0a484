/* `prof collect --session SID`: the collector that libprof.so starts for a program run
 * with bare LD_PRELOAD. Not meant to be typed by people. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collector/drain/collector.h"
#include "collector/commands.h"
#include "collector/options.h"
#include "collector/shm/reclaim.h"
#include "preload/common/child_setup.h"

/* The program's descriptors (pipes above all) must not stay open in the collector, or a
 * reader at the other end would wait for the collector too; stderr stays for messages.
 * libprof.so closes them before the exec already: this is for a collector started
 * otherwise. */
static void drop_inherited_descriptors(void)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
	}
	prof_close_from(3); /* every one, /dev/null's too when above 2 */
}

int cmd_collect(int argc, char **argv)
{
	const char *sid = 0;
	char **args;
	int nargs, bad_usage;
	const struct opt opts[] = {
		{ .name = "session", .kind = OPT_TEXT, .value = "SID", .dest = &sid,
		  .needs = "a session id", .help = "the session to collect" },
	};
	const struct opt_command c = {
		.name = "collect",
		.usage = "prof collect --session SID",
		.about = "The collector libprof.so starts for a program run with LD_PRELOAD;\n"
			 "it drains the session's rings and writes the outputs at its end.\n",
		.opts = opts,
		.nopts = ARRAY_LEN(opts),
	};

	if ((bad_usage = opt_parse(&c, argc, argv, &args, &nargs)))
		return bad_usage < 0 ? 0 : bad_usage;
	if (nargs)
		return opt_error("collect", "unexpected argument '%s'", args[0]);
	struct prof_session_shm *s = prof_session_open(sid);
	if (!s) {
		fprintf(stderr, "prof collect: no session '%s'\n", sid ? sid : "");
		return 2;
	}
	drop_inherited_descriptors();
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	/* A batch system stopping a job signals every process of it, this one too: it ends
	 * when the program has, with the outputs written (SIGKILL still stops it). */
	signal(SIGTERM, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN); /* a file-size limit is a write error, reported as such */
	signal(SIGCHLD, SIG_DFL); /* the program may ignore it; dump workers are reaped */
	if (chdir("/")) { /* outputs are absolute paths; don't pin the program's directory */
	}
	collector_catch_dump_signal();
	atomic_store(&s->collector_start_ticks, prof_proc_start_ticks(getpid()));
	atomic_store(&s->collector_pid, (uint32_t)getpid());
	reclaim_dead_sessions(0, RECLAIM_MIN_AGE_S, NULL, 0, NULL, NULL); /* what killed sessions of this user left */
	struct collector_options o = {.sid = sid, .session = s};
	int rc = collector_run(&o);
	uint32_t st = atomic_load(&s->state);
	if (st == SESSION_RUNNING || st == SESSION_CLOSING)
		atomic_store(&s->state, rc ? SESSION_FAILED : SESSION_DONE);
	prof_futex_wake(&s->state);
	prof_session_unlink(sid);
	return rc;
}
