/* `prof record [options] [--] cmd args`: profile a command without touching LD_PRELOAD,
 * like `nsys profile` or `uftrace record`. This process starts the command and reaps it;
 * the collector is a child of its own in a session of its own: Linux shares the CPU
 * between sessions first (autogroups), so a collector inside the job's session got a
 * share of one among the job's busy processes, and a torchrun under load lost up to 12%
 * of its events where the bare command's collector (a session of its own) lost none. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/drain/collector.h"
#include "collector/commands.h"
#include "collector/huge_malloc.h"
#include "collector/options.h"
#include "collector/shm/reclaim.h"
#include "preload/common/child_setup.h"
#include "preload/common/config.h"

extern char **environ;

static volatile pid_t record_child, record_collector;

static void forward_term(int sig)
{
	if (record_child > 0)
		kill(record_child, sig);
}

/* `kill -USR2` on prof record (prof dump's signal) asks its collector for a dump. */
static void forward_dump(int sig)
{
	if (record_collector > 0)
		kill(record_collector, sig);
}

static void warn_line(const char *line)
{
	fprintf(stderr, "prof record: %s\n", line);
}

/* libprof.so beside this binary (build tree) or in ../lib (installed). */
static int find_library(char *out, size_t len)
{
	static const char *const rels[] = {"libprof.so", "../lib/libprof.so", NULL};
	const char *env = getenv("PROFILER_LIBRARY");
	char exe[PATH_MAX] = "";
	ssize_t n = env && *env ? 0 : readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n < 0)
		return -1;
	exe[n] = 0;
	return prof_find_sibling(exe, rels, R_OK, env, out, len);
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

/* An option made from a row of the settings table (preload/common/settings.c): o->data
 * is the row; a switch sets the row's record_value. */
static int set_setting(const struct opt *o, const char *value, void *dest)
{
	const struct prof_setting *row = o->data;
	char err[512];

	if (prof_config_set(dest, row->name, value ? value : row->record_value, err,
			    sizeof err) == 0)
		return 0;
	return opt_error("record", "%s", err);
}

/* 0 with *cmd_at the index of the command in argv, OPT_HELP after --help, or 2 after one
 * line. The options are the settings table's rows that name a prof record flag, so a
 * setting and its flag cannot drift apart. */
static int parse(int argc, char **argv, struct prof_config *c, int *cmd_at, int *stats)
{
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

	for (size_t i = 0; i < prof_nsettings; i++) {
		const struct prof_setting *row = &prof_settings[i];
		if (!row->record_flag)
			continue;
		struct opt o = { .name = row->record_flag + 2, .letter = row->record_short,
				 .kind = OPT_CALL, .value = row->record_arg, .call = set_setting,
				 .data = row, .dest = c, .needs = row->record_needs,
				 .help = row->record_help ? row->record_help : row->help };
		if (opt_list_add(&list, &o, 1)) {
			opt_list_free(&list);
			return opt_error("record", "out of memory");
		}
	}
	/* what prof record itself does, not a setting of the session */
	struct opt stats_opt = { .name = "stats", .kind = OPT_FLAG, .dest = stats,
				 .help = "print the tables (PREFIX.txt) on standard output once\n"
					 "the command ended, as nsys profile --stats=true does" };
	if (opt_list_add(&list, &stats_opt, 1)) {
		opt_list_free(&list);
		return opt_error("record", "out of memory");
	}
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
	huge_malloc_restore(); /* the command's own GLIBC_TUNABLES */
	const char *old = getenv("LD_PRELOAD");
	char preload[strlen(lib) + (old ? strlen(old) : 0) + 16];
	prof_preload_entry(preload, sizeof preload, lib, old);
	setenv("LD_PRELOAD", preload + strlen("LD_PRELOAD="), 1);
	setenv("PROFILER_SESSION", sid, 1);
	setenv("PROFILER_AUTOSTART", "1", 1);
	if (!c->profile_memory)
		setenv("PROFILER_PROFILE_MEMORY", "0", 1);
	add_python_path(lib);
}

/* --stats: the tables this session wrote, after the command's own output. */
static void print_tables(void)
{
	const char *txt = collector_outputs_txt();
	FILE *f = txt ? fopen(txt, "r") : NULL;
	if (!f) {
		fprintf(stderr, "prof record: --stats: no tables were written\n");
		return;
	}
	char buf[65536];
	size_t n;
	fflush(stdout);
	putchar('\n');
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		fwrite(buf, 1, n, stdout);
	fclose(f);
	fflush(stdout);
}

int cmd_record(int argc, char **argv)
{
	struct prof_config cfg;
	int cmd_at = 0, stats = 0;
	prof_config_defaults(&cfg);
	prof_config_from_env(&cfg, environ, warn_line);
	int bad_usage = parse(argc, argv, &cfg, &cmd_at, &stats);
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
	/* inherited by the collector forked below: a `prof dump` that finds its pid never
	 * meets the default action (termination) */
	collector_catch_dump_signal();
	if (prof_session_configure(s, &cfg, getpid(), err, sizeof err)) {
		fprintf(stderr, "prof record: %s\n", err);
		prof_session_unlink(sid);
		return 2;
	}
	/* nobody waits in the program: this process does (a root_pid naming the command,
	 * even for a moment, made a quick command wait at its exit for a collector that
	 * waited for it to be reaped: both hung) */
	s->root_pid = 0;
	/* the command waits at the gate until its session and collector are ready */
	int gate[2];
	if (pipe2(gate, O_CLOEXEC)) {
		fprintf(stderr, "prof record: pipe: %s\n", strerror(errno));
		prof_session_unlink(sid);
		return 2;
	}
	pid_t child = fork();
	if (child < 0) {
		fprintf(stderr, "prof record: fork: %s\n", strerror(errno));
		prof_session_unlink(sid);
		return 2;
	}
	if (child == 0) {
		char c;
		close(gate[1]);
		while (read(gate[0], &c, 1) < 0 && errno == EINTR)
			;
		child_environment(&cfg, lib, sid);
		execvp(argv[cmd_at], argv + cmd_at);
		fprintf(stderr, "prof record: cannot run '%s': %s\n", argv[cmd_at], strerror(errno));
		_exit(127);
	}
	close(gate[0]);
	/* Ctrl-C reaches the whole process group: the command decides, we finish the job.
	 * A SIGTERM meant for us goes to the command, and we finish when it ends. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);
	record_child = child;
	signal(SIGTERM, forward_term);
	/* %p names the command's pid, and the header its command line, not prof's; the
	 * rest of the session stays as the command may already have read it */
	prof_session_output_for(s, &cfg, child, err, sizeof err);
	size_t used = 0;
	for (int i = cmd_at; i < argc && used + 2 < sizeof s->command; i++)
		used += (size_t)snprintf(s->command + used, sizeof s->command - used, "%s%s",
					 i > cmd_at ? " " : "", argv[i]);
	reclaim_dead_sessions(0, RECLAIM_MIN_AGE_S, NULL, 0, NULL, NULL); /* what killed sessions of this user left */
	atomic_store(&s->record_child, (uint32_t)child);
	pid_t collector = fork();
	if (collector == 0) {
		close(gate[1]);
		setsid(); /* its own autogroup (above); and no terminal's signals */
		signal(SIGTERM, SIG_IGN); /* it ends when the command has, outputs written */
		signal(SIGHUP, SIG_IGN);
		struct collector_options o = {.sid = sid, .session = s, .child = child,
					      .child_elsewhere = 1};
		int rc = collector_run(&o);
		atomic_store(&s->state, rc ? SESSION_FAILED : SESSION_DONE);
		prof_futex_wake(&s->state);
		if (stats)
			print_tables();
		fflush(0);
		_exit(rc);
	}
	int rc = 0, st = 0;
	if (collector < 0) {
		fprintf(stderr, "prof record: fork: %s; the command runs unprofiled\n",
			strerror(errno));
	} else {
		/* set before the command starts: it joins only a session whose collector lives */
		atomic_store(&s->collector_start_ticks, prof_proc_start_ticks(collector));
		atomic_store(&s->collector_pid, (uint32_t)collector);
		record_collector = collector;
		struct sigaction sa = {.sa_handler = forward_dump, .sa_flags = SA_RESTART};
		sigemptyset(&sa.sa_mask);
		sigaction(SIGUSR2, &sa, NULL);
	}
	close(gate[1]); /* the command goes */
	while (waitpid(child, &st, 0) < 0 && errno == EINTR)
		;
	atomic_store(&s->record_exit, PROF_RECORD_EXITED | ((uint32_t)st & 0xffff));
	if (collector > 0) {
		int cst = 0;
		while (waitpid(collector, &cst, 0) < 0 && errno == EINTR)
			;
		rc = WIFEXITED(cst) ? WEXITSTATUS(cst) : 1;
		if (WIFSIGNALED(cst))
			fprintf(stderr, "prof record: the collector was killed by signal %d; "
					"no outputs\n", WTERMSIG(cst));
	}
	prof_session_unlink(sid);
	/* a collector that could not start (its capture) left the command's segments */
	reclaim_session(sid);
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return rc;
}
