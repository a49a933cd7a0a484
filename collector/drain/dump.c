/* Outputs made while the session runs (prof_dump, prof_dumps, continuous_dump, SIGUSR2).
 * Making a trace can take seconds; the drain loop must not stop meanwhile, or busy
 * programs overflow their rings. So the capture is flushed and a forked child of the
 * collector, at a lower priority, makes the outputs from what it held then: the frames
 * of a capture in one file up to its size then (they never change), or a snapshot of a
 * capture in parts (its finished parts linked, the current one copied). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/drain/collector.h"
#include "collector/drain/dump.h"
#include "formats/capture/capture.h"
#include "formats/model/outputs.h"

#define DUMP_NICE 10

/* in's bytes as they are now (a writer may go on appending) into out. */
static int copy_to(int in, int out)
{
	struct stat st;
	if (fstat(in, &st))
		return -1;
	for (off_t left = st.st_size; left > 0;) {
		ssize_t n = copy_file_range(in, 0, out, 0, (size_t)left, 0);
		if (n <= 0)
			return -1;
		left -= n;
	}
	return 0;
}

/* Removes a snapshot: a directory of parts (a capture in one file needs none). */
static void snapshot_remove(const char *path)
{
	char **parts;
	size_t n;
	if (!path[0])
		return;
	if (!cap_is_parts(path)) {
		unlink(path);
		return;
	}
	if (!cap_parts(path, &parts, &n)) {
		for (size_t i = 0; i < n; i++)
			unlink(parts[i]);
		cap_parts_free(parts, n);
	}
	rmdir(path);
}

/* A capture in parts: a new directory beside it with the finished parts linked (they
 * never change, and a flight recorder's drop then leaves the snapshot alone) and the
 * part being written copied as far as it was flushed. */
static int snapshot_parts(const char *dir, char *to, size_t tolen)
{
	char **parts;
	size_t n;
	if (snprintf(to, tolen, "%s.dump-XXXXXX", dir) >= (int)tolen || !mkdtemp(to)) {
		to[0] = 0;
		return -1;
	}
	if (cap_parts(dir, &parts, &n))
		return -1;
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		char dest[PATH_MAX + 128];
		const char *base = strrchr(parts[i], '/') + 1;
		snprintf(dest, sizeof dest, "%s/%s", to, base);
		if (i + 1 < n && !link(parts[i], dest))
			continue;
		if (i + 1 < n && errno == ENOENT)
			continue; /* dropped by the flight recorder meanwhile */
		int in = open(parts[i], O_RDONLY | O_CLOEXEC);
		int out = open(dest, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		rc = in < 0 || out < 0 ? -1 : copy_to(in, out);
		if (in >= 0)
			close(in);
		if (out >= 0 && close(out))
			rc = -1;
	}
	cap_parts_free(parts, n);
	return rc;
}

int dump_start(struct dump_job *job, const char *capture, int fd, const struct dump_request *r)
{
	if (job->pid)
		return -1;
	/* One file: its frames up to its size now are complete (flushed by the caller) and
	 * never change, so the child reads that much of it, in place. Parts: a snapshot of
	 * them, as the flight recorder drops old ones. */
	struct stat st;
	char by_fd[64];
	job->snapshot[0] = 0;
	int parts = fd < 0;
	if (parts ? snapshot_parts(capture, job->snapshot, sizeof job->snapshot)
		  : fstat(fd, &st)) {
		fprintf(stderr, "libprof: cannot snapshot %s for a dump: %s\n", capture,
			strerror(errno));
		snapshot_remove(job->snapshot);
		return -1;
	}
	/* the child has the descriptor: another session renaming its capture over the name
	 * meanwhile does not give it that one to read */
	snprintf(by_fd, sizeof by_fd, "/proc/self/fd/%d", fd);
	const char *source = parts ? job->snapshot : by_fd;
	pid_t pid = fork();
	if (pid < 0) {
		snapshot_remove(job->snapshot);
		return -1;
	}
	if (pid == 0) {
		struct output_request q = {.max_json_events = r->max_json_events,
					   .tables = r->tables, .quiet = !r->say,
					   .shown_capture = capture};
		if (!parts)
			cap_read_size_limit = (uint64_t)st.st_size;
		/* the drain comes first: a dump that waits loses nothing, a drain that waits
		 * makes the program's rings overflow */
		if (setpriority(PRIO_PROCESS, 0, DUMP_NICE)) {
		}
		int rc = r->tables_path ? collector_write_tables(source, r->tables_path)
					: collector_make_outputs(source, r->prefix, &q);
		snapshot_remove(job->snapshot);
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
	/* the child removes it, unless it died first (its links would keep the disk space
	 * a flight recorder frees) */
	snapshot_remove(job->snapshot);
	job->pid = 0;
	return 1;
}
