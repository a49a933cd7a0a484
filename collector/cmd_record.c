/* `prof record [options] [--] cmd args`: profile a command without touching LD_PRELOAD,
 * like `nsys profile` or `uftrace record`. This process is the collector. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/drain/collector.h"
#include "collector/commands.h"
#include "collector/options.h"
#include "collector/shm/reclaim.h"
#include "preload/common/config.h"

extern char **environ;

static volatile pid_t record_child;

static void forward_term(int sig)
{
	if (record_child > 0)
		kill(record_child, sig);
}

static void warn_line(const char *line)
{
	fprintf(stderr, "prof record: %s\n", line);
}

/* libprof.so beside this binary (build tree) or in ../lib (installed). */
static int find_library(char *out, size_t len)
{
	const char *env = getenv("PROFILER_LIBRARY");
	if (env && *env)
		return snprintf(out, len, "%s", env) < (int)len && access(out, R_OK) == 0 ? 0 : -1;
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return -1;
	exe[n] = 0;
	char *slash = strrchr(exe, '/');
	*slash = 0;
	if (snprintf(out, len, "%s/libprof.so", exe) < (int)len && access(out, R_OK) == 0)
		return 0;
	if (snprintf(out, len, "%s/../lib/libprof.so", exe) >= (int)len)
		return -1;
	return access(out, R_OK);
}

/* The Python module's folder, so `import libprof` works in the profiled program. */
static void add_python_path(const char *lib)
{
	char dir[PATH_MAX], candidate[PATH_MAX + 64];
	snprintf(dir, sizeof dir, "%s", lib);
	char *slash = strrchr(dir, '/');
	if (!slash)
		return;
	*slash = 0;
	const char *rel[] = {"/../scripts", "/libprof/python"};
	for (size_t i = 0; i < ARRAY_LEN(rel); i++) {
		snprintf(candidate, sizeof candidate, "%s%s/libprof.py", dir, rel[i]);
		if (access(candidate, R_OK))
			continue;
		*strrchr(candidate, '/') = 0;
		const char *old = getenv("PYTHONPATH");
		char value[2 * PATH_MAX + 80];
		snprintf(value, sizeof value, "%s%s%s", candidate, old && *old ? ":" : "",
			 old ? old : "");
		setenv("PYTHONPATH", value, 1);
		return;
	}
}

/* An option that is a setting (preload/common/config.h): o->data is its key. */
static int set_setting(const struct opt *o, const char *value, void *dest)
{
	char err[512];

	if (prof_config_set(dest, o->data, value, err, sizeof err) == 0)
		return 0;
	return opt_error("record", "%s", err);
}

/* 0 with *cmd_at the index of the command in argv, OPT_HELP after --help, or 2 after one
 * line. */
static int parse(int argc, char **argv, struct prof_config *c, int *cmd_at)
{
	const struct opt opts[] = {
		{ .name = "output", .letter = 'o', .kind = OPT_CALL, .value = "PREFIX",
		  .call = set_setting, .data = "output", .dest = c, .needs = "an output prefix",
		  .help = "output prefix (default: libprof; %p pid, %h host,\n"
			  "%t start time, %r rank). When a file of PREFIX\n"
			  "exists, PREFIX-2, PREFIX-3, ... is used (the summary\n"
			  "line names the files)" },
		{ .name = "force-overwrite", .kind = OPT_FLAG, .dest = &c->overwrite,
		  .help = "replace existing files at PREFIX's names instead" },
		{ .name = "ring-size", .kind = OPT_CALL, .value = "SIZE", .call = set_setting,
		  .data = "ring_size", .dest = c, .needs = "a size (e.g. 64K, 16M)",
		  .help = "per-thread ring (default 4M; e.g. 64K, 16M)" },
		{ .name = "block", .kind = OPT_FLAG, .dest = &c->block,
		  .help = "writers wait for room instead of dropping events" },
		{ .name = "max-json-events", .kind = OPT_CALL, .value = "N", .call = set_setting,
		  .data = "trace_max_events", .dest = c, .needs = "a number of events",
		  .help = "cap on events in the Chrome trace (default 4000000)" },
		{ .name = "no-memory", .kind = OPT_FLAG_OFF, .dest = &c->profile_memory,
		  .help = "do not trace the allocator" },
		{ .name = "quiet", .letter = 'q', .kind = OPT_FLAG, .dest = &c->quiet,
		  .help = "no summary line on stderr" },
	};
	/* a list, so that options can be added at run time (settings flags) */
	struct opt_list list = { 0 };
	struct opt_command cmd = {
		.name = "record",
		.usage = "prof record [options] [--] command [args...]",
		.about = "Runs command with libprof preloaded and writes PREFIX.json (Chrome trace),\n"
			 "PREFIX.txt (tables) and PREFIX.prof (raw capture) when every process of it ended.\n",
		.after = "PROFILER_* environment variables are read as well (see README.md); options win.\n"
			 "The exit status is the command's (128+N when killed by signal N).\n",
		.stop_at_arg = 1,
	};
	char **rest;
	int nrest, rc;

	if (opt_list_add(&list, opts, ARRAY_LEN(opts)))
		return opt_error("record", "out of memory");
	cmd.opts = list.v;
	cmd.nopts = list.n;
	rc = opt_parse(&cmd, argc, argv, &rest, &nrest);
	opt_list_free(&list);
	if (rc)
		return rc;
	if (!nrest)
		return opt_error("record", "no command to run (see prof record --help)");
	*cmd_at = argc - nrest;
	return 0;
}

static void child_environment(const struct prof_config *c, const char *lib, const char *sid)
{
	const char *old = getenv("LD_PRELOAD");
	char preload[2 * PATH_MAX + 2];
	snprintf(preload, sizeof preload, "%s%s%s", lib, old && *old ? ":" : "", old ? old : "");
	setenv("LD_PRELOAD", preload, 1);
	setenv("PROFILER_SESSION", sid, 1);
	setenv("PROFILER_AUTOSTART", "1", 1);
	if (!c->profile_memory)
		setenv("PROFILER_PROFILE_MEMORY", "0", 1);
	add_python_path(lib);
}

int cmd_record(int argc, char **argv)
{
	struct prof_config cfg;
	int cmd_at = 0;
	prof_config_defaults(&cfg);
	prof_config_from_env(&cfg, environ, warn_line);
	int bad_usage = parse(argc, argv, &cfg, &cmd_at);
	if (bad_usage)
		return bad_usage == OPT_HELP ? 0 : bad_usage;
	signal(SIGCHLD, SIG_DFL); /* an inherited SIG_IGN would reap the command for us */
	char lib[PATH_MAX];
	if (find_library(lib, sizeof lib)) {
		fprintf(stderr, "prof record: cannot find libprof.so next to prof or in ../lib "
				"(set PROFILER_LIBRARY)\n");
		return 2;
	}
	char sid[PROF_SID_LEN + 1], err[512];
	prof_new_sid(sid);
	struct prof_session_shm *s = prof_session_create(sid);
	if (!s) {
		fprintf(stderr, "prof record: cannot create the session in /dev/shm: %s\n",
			strerror(errno));
		return 2;
	}
	/* set before the command starts: it joins only a session whose collector lives */
	atomic_store(&s->collector_start_ticks, prof_proc_start_ticks(getpid()));
	atomic_store(&s->collector_pid, (uint32_t)getpid());
	if (prof_session_configure(s, &cfg, getpid(), err, sizeof err)) {
		fprintf(stderr, "prof record: %s\n", err);
		prof_session_unlink(sid);
		return 2;
	}
	s->root_pid = 0; /* nobody waits in the program: this process does */
	pid_t child = fork();
	if (child < 0) {
		fprintf(stderr, "prof record: fork: %s\n", strerror(errno));
		prof_session_unlink(sid);
		return 2;
	}
	if (child == 0) {
		child_environment(&cfg, lib, sid);
		execvp(argv[cmd_at], argv + cmd_at);
		fprintf(stderr, "prof record: cannot run '%s': %s\n", argv[cmd_at], strerror(errno));
		_exit(127);
	}
	/* Ctrl-C reaches the whole process group: the command decides, we finish the job.
	 * A SIGTERM meant for us goes to the command, and we finish when it ends. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);
	record_child = child;
	signal(SIGTERM, forward_term);
	/* %p names the command's pid, and the header its command line, not prof's */
	prof_session_configure(s, &cfg, child, err, sizeof err);
	s->root_pid = 0;
	size_t used = 0;
	for (int i = cmd_at; i < argc && used + 2 < sizeof s->command; i++)
		used += (size_t)snprintf(s->command + used, sizeof s->command - used, "%s%s",
					 i > cmd_at ? " " : "", argv[i]);
	reclaim_dead_sessions(0, RECLAIM_MIN_AGE_S, NULL, 0, NULL, NULL); /* what killed sessions of this user left */
	struct collector_options o = {.sid = sid, .session = s, .child = child};
	int rc = collector_run(&o);
	atomic_store(&s->state, rc ? SESSION_FAILED : SESSION_DONE);
	prof_futex_wake(&s->state);
	prof_session_unlink(sid);
	if (!o.child_status)
		waitpid(child, &o.child_status, 0);
	/* a collector that could not start (its capture) left the command's segments */
	reclaim_session(sid);
	int st = o.child_status & 0xffff;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return rc;
}
