/* Outputs made while the session runs (prof_dump, prof_dumps, continuous_dump). Making a
 * trace can take seconds; the drain loop must not stop meanwhile, or busy programs
 * overflow their rings. So the capture is flushed, its complete frames are copied to a
 * snapshot (copy_file_range: in the kernel), and a forked child of the collector makes
 * the outputs from the snapshot while the parent goes on draining. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/drain/collector.h"
#include "collector/drain/dump.h"
#include "collector/output/outfile.h"
#include "formats/model/outputs.h"

/* The snapshot is made under a new unpredictable name beside the capture (outfile.h). */
static int copy_prefix(const char *from, char *to, size_t tolen)
{
	to[0] = 0;
	int in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -1;
	int out = outfile_temp(from, to, tolen);
	struct stat st;
	int rc = out < 0 || fstat(in, &st) ? -1 : 0;
	for (off_t left = st.st_size; rc == 0 && left > 0;) {
		ssize_t n = copy_file_range(in, 0, out, 0, (size_t)left, 0);
		if (n <= 0) {
			rc = -1;
			break;
		}
		left -= n;
	}
	close(in);
	if (out >= 0 && close(out))
		rc = -1;
	return rc;
}


int dump_start(struct dump_job *job, const char *capture, const struct dump_request *r)
{
	if (job->pid)
		return -1;
	if (copy_prefix(capture, job->snapshot, sizeof job->snapshot)) {
		fprintf(stderr, "libprof: cannot snapshot %s for a dump: %s\n", capture,
			strerror(errno));
		if (job->snapshot[0])
			unlink(job->snapshot);
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		unlink(job->snapshot);
		return -1;
	}
	if (pid == 0) {
		struct output_request q = {.max_json_events = r->max_json_events,
					   .tables = r->tables, .quiet = 1};
		int rc = r->tables_path ? collector_write_tables(job->snapshot, r->tables_path)
					: collector_make_outputs(job->snapshot, r->prefix, &q);
		unlink(job->snapshot);
		_exit(rc ? 1 : 0);
	}
	job->pid = pid;
	job->request = r->request;
	return 0;
}

int dump_poll(struct dump_job *job, int wait, int *status)
{
	if (!job->pid)
		return 0;
	int st;
	pid_t got;
	while ((got = waitpid(job->pid, &st, wait ? 0 : WNOHANG)) < 0 && errno == EINTR)
		;
	if (got == 0)
		return 0;
	*status = got == job->pid && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
	if (got < 0)
		unlink(job->snapshot);
	job->pid = 0;
	return 1;
}
