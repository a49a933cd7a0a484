/* prof export --format parquet: a directory of Parquet files (docs/FORMATS.md, "Parquet")
 * for DuckDB, Spark, Trino or Dask. The columnar encoding is pyarrow's (Apache Arrow's
 * own writer), run in a Python child: prof hands it the tables (prof report's JSON) and
 * then streams the events as CSV into its standard input, so neither side holds them.
 * The files are written into a temporary directory beside OUT, which becomes OUT in one
 * rename once all are complete. */
#define _GNU_SOURCE /* open_memstream, mkdtemp */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/export_parquet.h"
#include "collector/options.h"
#include "formats/capture/capture.h"
#include "formats/export/events_csv.h"
#include "formats/model/outputs.h"

extern char **environ;

#define bad(...) opt_error("export", __VA_ARGS__)
#define PYARROW_MISSING 3 /* parquet_export.py's exit status */

static const char script[] =
#include "parquet_export_py.h"
	;

/* Every file in dir removed, then dir. */
static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	char path[PATH_MAX + 256];
	if (d) {
		for (struct dirent *e; (e = readdir(d));)
			if (e->d_name[0] != '.') {
				snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
				unlink(path);
			}
		closedir(d);
	}
	rmdir(dir);
}

/* The complete directory tmp put at out in one rename; an existing out (replaced with
 * --force-overwrite) is moved aside first and removed once the new one is in place. */
static int place_dir(const char *tmp, const char *out)
{
	char old[PATH_MAX + 16];
	int aside = 0;
	snprintf(old, sizeof old, "%s.old-XXXXXX", out);
	if (!access(out, F_OK)) {
		if (!mkdtemp(old) || rename(out, old)) {
			int e = errno;
			rmdir(old);
			remove_dir(tmp);
			return bad("%s: %s", out, strerror(e));
		}
		aside = 1;
	}
	if (rename(tmp, out)) {
		int e = errno;
		if (aside)
			rename(old, out); /* as it was */
		remove_dir(tmp);
		return bad("%s: %s", out, strerror(e));
	}
	if (aside)
		remove_dir(old);
	return 0;
}

/* The Python half, its standard input a pipe: its pid, or -1 with errno. */
static pid_t start_python(const char *python, const char *dir, int *in)
{
	int p[2], e;
	pid_t pid = -1;
	posix_spawn_file_actions_t fa;
	if (pipe2(p, O_CLOEXEC))
		return -1;
	char *argv[] = {(char *)python, "-c", (char *)script, (char *)dir, NULL};
	if (!(e = posix_spawn_file_actions_init(&fa))) {
		e = posix_spawn_file_actions_adddup2(&fa, p[0], 0);
		if (!e && (e = posix_spawnp(&pid, python, &fa, NULL, argv, environ)))
			pid = -1; /* its error is its result, not errno */
		posix_spawn_file_actions_destroy(&fa);
	}
	close(p[0]);
	if (pid < 0) {
		close(p[1]);
		errno = e;
		return -1;
	}
	*in = p[1];
	return pid;
}

/* The tables as prof report's JSON, into memory. */
static int report_json(const char *capture, int all_processes, char **buf, size_t *len,
		       int64_t **fix, size_t *nfix, char *err, size_t errlen)
{
	struct table_options opt = {.sort = SORT_TOTAL, .format = FORMAT_JSON,
				    .all_processes = all_processes};
	struct output_summary sum;
	FILE *f = open_memstream(buf, len);
	if (!f) {
		snprintf(err, errlen, "out of memory");
		return 2;
	}
	int rc = tables_write_fixes(capture, f, &opt, &sum, fix, nfix, err, errlen);
	if (fclose(f) && rc != 2) {
		snprintf(err, errlen, "out of memory");
		rc = 2;
	}
	return rc;
}

int export_parquet(const char *capture, const char *shown, const char *out, int force,
		   int all_processes)
{
	struct stat st;
	if (!stat(out, &st) && !force)
		return bad("%s exists; not replacing it (use --force-overwrite)", out);
	if (!stat(out, &st) && !S_ISDIR(st.st_mode))
		return bad("%s: not a directory (--format parquet writes a directory)", out);
	char err[512], *json = NULL;
	size_t json_len = 0, nfix = 0;
	int64_t *fix = NULL; /* the clocks as the tables aligned them, for the events too */
	int rc = report_json(capture, all_processes, &json, &json_len, &fix, &nfix, err,
			     sizeof err);
	if (rc == 2) {
		free(json);
		free(fix);
		return bad("%s", err);
	}
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", out);
	if (!mkdtemp(tmp)) {
		int e = errno;
		free(json);
		free(fix);
		return bad("cannot make %s: %s", tmp, strerror(e));
	}
	const char *python = getenv("PROF_PYTHON");
	python = python && *python ? python : "python3";
	int in = -1;
	pid_t pid = start_python(python, tmp, &in);
	FILE *f = pid > 0 ? fdopen(in, "w") : NULL;
	if (!f) {
		int e = errno;
		if (pid > 0) {
			close(in);
			waitpid(pid, NULL, 0);
		}
		free(json);
		free(fix);
		remove_dir(tmp);
		return bad("cannot run %s: %s", python, strerror(e));
	}
	/* the child may end early (no pyarrow): its status says why, not a SIGPIPE here */
	struct sigaction ign = {.sa_handler = SIG_IGN}, old;
	sigaction(SIGPIPE, &ign, &old);
	fprintf(f, "LIBPROF-PARQUET 1\nreport %zu\n", json_len);
	fwrite(json, 1, json_len, f);
	fputs("events\n", f);
	free(json);
	uint64_t events = 0;
	char damage[512] = "";
	int read_rc = rc == 1 ? CAP_READ_DAMAGED : CAP_READ_OK;
	if (!ferror(f)) {
		int erc = events_csv_write(capture, f, all_processes, fix, nfix, &events, damage,
					   sizeof damage);
		if (erc != CAP_READ_OK)
			read_rc = erc;
	}
	fclose(f);
	free(fix);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	sigaction(SIGPIPE, &old, NULL);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		remove_dir(tmp);
		if (WIFEXITED(status) && WEXITSTATUS(status) == PYARROW_MISSING)
			return bad("--format parquet needs Python's pyarrow in %s (pip install "
				   "pyarrow, or set PROF_PYTHON to a python that has it)", python);
		return bad("--format parquet: %s failed (%s %d)", python,
			   WIFEXITED(status) ? "exit status" : "signal",
			   WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	}
	if (read_rc == CAP_READ_UNUSABLE) {
		remove_dir(tmp);
		return bad("%s", damage);
	}
	if (place_dir(tmp, out))
		return 2;
	printf("%s: %llu events in %s/events.parquet, and the tables beside it\n", shown,
	       (unsigned long long)events, out);
	if (read_rc == CAP_READ_DAMAGED || rc == 1) {
		bad("%s", damage[0] ? damage : err);
		return 1;
	}
	return 0;
}
