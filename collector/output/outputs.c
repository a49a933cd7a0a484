/* The end of a session: the trace and the tables from the raw capture, and the one-line
 * summary on stderr. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "formats/capture/capture.h"
#include "collector/drain/collector.h"
#include "collector/output/outfile.h"
#include "collector/progress.h"
#include "formats/model/model.h"
#include "formats/model/outputs.h"

#define NAME_MAX_LEN 4352

/* An output this session put in place, so a later dump or the end may replace it (and
 * nothing else). */
struct owned_file {
	dev_t dev;
	ino_t ino;
	char path[NAME_MAX_LEN];
};

struct owned {
	struct owned_file json, txt;
};

/* Shared with the forked children that make dumps (collector/drain/dump.c), so the end knows
 * the files they made; a private copy when collector_outputs_init was not called. */
static struct owned *owned;
static struct owned owned_here;
static int overwrite_all;

void collector_outputs_init(int overwrite)
{
	overwrite_all = overwrite;
	void *m = mmap(NULL, sizeof *owned, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		       -1, 0);
	owned = m == MAP_FAILED ? &owned_here : m;
}

static struct owned *mine(void)
{
	return owned ? owned : &owned_here;
}


static const char *base(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static int is_owned(const struct owned_file *o)
{
	struct stat st;
	return o->path[0] && !lstat(o->path, &st) && S_ISREG(st.st_mode) && st.st_dev == o->dev &&
	       st.st_ino == o->ino;
}

const char *collector_outputs_txt(void)
{
	const struct owned_file *o = &mine()->txt;
	return o->path[0] && is_owned(o) ? o->path : NULL;
}

/* Puts tmp in place as prefix+ext: over the file this session put there before, else
 * under the first free name of prefix, prefix-2, ... (one whose .prof is not another
 * session's), never replacing what someone else made meanwhile. final gets the name.
 * 0 or -1. */
static int put_in_place(const char *tmp, const char *prefix, const char *ext, int overwrite,
			struct owned_file *o, char *final, size_t len)
{
	struct stat st;
	int rc;
	if (overwrite) {
		snprintf(final, len, "%s%s", prefix, ext);
		return outfile_place(tmp, final, 1) ? -1 : 0;
	}
	rc = 1;
	if (is_owned(o)) {
		snprintf(final, len, "%s", o->path);
		rc = rename(tmp, final) ? 1 : 0;
	}
	for (unsigned n = 1; rc > 0 && n <= 1000; n++) {
		char claim[NAME_MAX_LEN];
		if (outfile_suffixed(final, len, prefix, n, ext) ||
		    outfile_suffixed(claim, sizeof claim, prefix, n, ".prof"))
			return -1;
		if (n > 1 && !lstat(claim, &st))
			continue;
		rc = outfile_place(tmp, final, 0);
	}
	if (rc) {
		if (rc > 0)
			errno = EEXIST;
		return -1;
	}
	/* the file now at final is tmp's: the next dump or the end may replace it */
	if (!lstat(final, &st)) {
		o->dev = st.st_dev;
		o->ino = st.st_ino;
		snprintf(o->path, sizeof o->path, "%s", final);
	}
	return 0;
}

/* The tables of capture into fd. 0 or -1. */
static int tables_to_fd(const char *capture, int fd)
{
	char err[512];
	struct table_options opt = {.sort = SORT_TOTAL};
	struct output_summary sum;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return -1;
	}
	int rc = tables_write(capture, f, &opt, &sum, err, sizeof err) != 2 ? 0 : -1;
	if (fclose(f))
		rc = -1;
	return rc;
}

/* The tables into a new temporary file beside path; its name in tmp. 0 or -1. */
static int tables_to_temp(const char *capture, const char *path, char *tmp, size_t len)
{
	int fd = outfile_temp(path, tmp, len);
	int rc = fd >= 0 ? tables_to_fd(capture, fd) : -1;
	if (rc && fd >= 0)
		unlink(tmp);
	return rc;
}

/* The tables made by a child while this process writes the trace: two reads of the
 * capture at once, so the outputs of a long run are ready in about half the time on two
 * cores (the program's exit waits for them). The child's pid, or 0: made here, at once
 * (fork failed), or -1 (the temporary file could not be made). */
static pid_t tables_started(const char *capture, const char *path, char *tmp, size_t len)
{
	int fd = outfile_temp(path, tmp, len);
	if (fd < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		/* prof record's handlers forward signals to the command: not from here */
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		_exit(tables_to_fd(capture, fd) ? 1 : 0);
	}
	if (pid > 0) {
		close(fd);
		return pid;
	}
	if (tables_to_fd(capture, fd)) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* 1 when the tables the child made are complete; else why not said in one line. */
static int tables_finished(pid_t pid, const char *tmp)
{
	int status = 0;
	if (pid < 0)
		return 0;
	pid_t r = 0;
	while (pid > 0 && (r = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
		;
	int ok = pid == 0 || (r == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	if (!ok && r == pid && WIFSIGNALED(status))
		fprintf(stderr, "libprof: the process making the tables died of signal %d\n",
			WTERMSIG(status));
	if (!ok)
		unlink(tmp);
	return ok;
}

int collector_write_tables(const char *capture, const char *path)
{
	char tmp[NAME_MAX_LEN], why[NAME_MAX_LEN + 64];
	if (outfile_probe(path, why, sizeof why) < 0) {
		fprintf(stderr, "libprof: %s; not writing there\n", why);
		return -1;
	}
	/* a path the program named (prof_dumps): replacing a regular file is asked for */
	if (tables_to_temp(capture, path, tmp, sizeof tmp) || outfile_place(tmp, path, 1)) {
		unlink(tmp);
		fprintf(stderr, "libprof: cannot write %s\n", path);
		return -1;
	}
	return 0;
}

static int count_events(void *ctx, uint32_t type, const void *payload, uint32_t len)
{
	struct cap_events h;
	if (type == CAP_EVENTS && len >= sizeof h) {
		memcpy(&h, payload, sizeof h);
		*(uint64_t *)ctx += h.count;
	}
	return 0;
}

/* Events the collector drained but the capture does not hold (a write failed). */
static uint64_t unwritten(const char *capture, uint64_t drained)
{
	uint64_t kept = 0;
	char err[512];
	if (cap_read(capture, count_events, &kept, err, sizeof err) == CAP_READ_UNUSABLE)
		return drained;
	return drained > kept ? drained - kept : 0;
}

int collector_make_outputs(const char *capture, const char *prefix,
			   const struct output_request *q)
{
	char json[NAME_MAX_LEN], tmp[NAME_MAX_LEN], txt[NAME_MAX_LEN], err[NAME_MAX_LEN + 512];
	char made[3 * NAME_MAX_LEN];
	char txt_tmp[NAME_MAX_LEN];
	struct output_summary sum = {0};
	struct owned *own = mine();
	int rc = 0, r = 2;
	pid_t tables = -1;
	/* what the live outputs made (waiting for them); the rest is made here, the tables by
	 * a child alongside the trace */
	static struct live_made lm;
	memset(&lm, 0, sizeof lm);
	/* the end of a run that read or reads a long capture: a progress line (terminals) */
	if (!q->made && !q->quiet)
		progress_start("libprof");
	if (q->made)
		lm = *q->made;
	else if (q->live)
		live_outputs_take(q->live, q->max_json_events, &lm);
	if (lm.txt[0] && !q->tables) /* turned off during the run */
		unlink(lm.txt);
	if (q->tables) {
		snprintf(txt, sizeof txt, "%s.txt", prefix);
		if (lm.txt[0]) {
			snprintf(txt_tmp, sizeof txt_tmp, "%s", lm.txt);
			tables = 0;
		} else {
			tables = tables_started(capture, txt, txt_tmp, sizeof txt_tmp);
		}
	}
	snprintf(json, sizeof json, "%s.json", prefix);
	tmp[0] = 0;
	if (lm.json[0]) {
		snprintf(tmp, sizeof tmp, "%s", lm.json);
		sum = lm.sum;
		r = lm.json_rc;
	} else {
		int fd = outfile_temp(json, tmp, sizeof tmp);
		FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
		if (!f) {
			snprintf(err, sizeof err, "cannot write the trace %s: %s", json,
				 strerror(errno));
			if (fd >= 0) {
				close(fd);
				unlink(tmp);
			}
			tmp[0] = 0;
		} else {
			struct chrome_options o = {.max_events = q->max_json_events};
			r = chrome_export_opts(capture, json, f, &o, &sum, err, sizeof err);
		}
	}
	int json_ok = r != 2;
	if (json_ok && put_in_place(tmp, prefix, ".json", overwrite_all, &own->json, json,
				    sizeof json)) {
		snprintf(err, sizeof err, "cannot put the trace in place as %s: %s", json,
			 strerror(errno));
		json_ok = 0;
	}
	if (!json_ok) {
		/* the tables are still made: a disk too full for the trace may hold them */
		fprintf(stderr, "libprof: %s\n", err);
		if (tmp[0])
			unlink(tmp);
		rc = -1;
	}
	int txt_ok = 0;
	if (q->tables) {
		txt_ok = tables_finished(tables, txt_tmp);
		if (txt_ok && put_in_place(txt_tmp, prefix, ".txt", overwrite_all, &own->txt, txt,
					   sizeof txt)) {
			unlink(txt_tmp);
			txt_ok = 0;
		}
		if (!txt_ok) {
			fprintf(stderr, "libprof: cannot write %s\n", txt);
			rc = -1;
		}
	}
	if (!q->made)
		progress_end();
	/* said even when quiet: events lost without a word are what must never happen */
	uint64_t gone = q->write_failed && !q->flight ? unwritten(capture, q->drained) : 0;
	if (gone)
		fprintf(stderr,
			"libprof: %llu events drained after writing %s failed are not in it "
			"(counted as lost)\n",
			(unsigned long long)gone, base(capture));
	if (q->quiet || (!json_ok && !sum.processes))
		return rc; /* nothing read from the capture: its error said it all */
	if (sum.damaged)
		fprintf(stderr, "libprof: %s\n", sum.damage);
	if (sum.names_lost || sum.stacks_lost)
		fprintf(stderr, "libprof: %llu events have no name and %llu no call stack: a "
				"process reached PROFILER_AREA_MAX or filled /dev/shm (the tables "
				"count them)\n",
			(unsigned long long)sum.names_lost, (unsigned long long)sum.stacks_lost);
	/* (allocator calls left to the counter tracks, PROFILER_TRACE_ALLOC=auto, are the
	 * default, documented, and not said on every run) */
	if (json_ok && sum.json_dropped)
		fprintf(stderr,
			"libprof: the trace keeps %llu of %llu events (the shortest are left out, "
			"see otherData.json_rule); the tables and %s have them all\n",
			/* of the captured events: json_events also counts the trace's own
			 * metadata and counter points */
			(unsigned long long)(sum.events > sum.json_dropped + sum.json_alloc_hidden
						     ? sum.events - sum.json_dropped -
							       sum.json_alloc_hidden
						     : 0),
			(unsigned long long)sum.events, base(capture));
	if (q->delay_ms || q->duration_ms) {
		char end[64] = "the end";
		if (q->duration_ms)
			snprintf(end, sizeof end, "%.3fs", (q->delay_ms + q->duration_ms) / 1000.0);
		fprintf(stderr, "libprof: kept the events from %.3fs to %s of the session "
				"(PROFILER_DELAY, PROFILER_DURATION); %llu outside it left out\n",
			q->delay_ms / 1000.0, end, (unsigned long long)q->left_out);
	}
	const char *shown = q->shown_capture ? q->shown_capture : capture;
	/* the names actually written: a clash at the end may have given them a suffix */
	snprintf(made, sizeof made, "%s%s%s%s%s", json_ok ? json : "", json_ok ? ", " : "",
		 txt_ok ? (json_ok ? base(txt) : txt) : "", txt_ok ? ", " : "",
		 json_ok || txt_ok ? base(shown) : shown);
	/* the frameworks found, so a user sees that they were: "(torch, mxnet)" */
	static const char *const fw_names[PROF_NFRAMEWORKS] = PROF_FRAMEWORK_NAMES;
	char fws[64] = "";
	for (unsigned i = 0, n = 0; i < PROF_NFRAMEWORKS; i++)
		if (q->frameworks & (1u << i))
			n += (unsigned)snprintf(fws + n, sizeof fws - n, "%s%s", n ? ", " : " (",
						fw_names[i]);
	if (fws[0])
		strcat(fws, ")");
	/* a loss before libprof's constructor is named: no ring setting would help it */
	char startup[96] = "";
	if (sum.lost_startup)
		snprintf(startup, sizeof startup, ", %llu of them at start-up before libprof started",
			 (unsigned long long)sum.lost_startup);
	/* the processes the tables show; launchers folded away (pyenv's shims: 40 of 41) are
	 * counted apart */
	uint64_t procs_shown = sum.processes_shown && sum.processes_shown <= sum.processes
				 ? sum.processes_shown
				 : sum.processes;
	char folded[64] = "";
	if (procs_shown < sum.processes)
		snprintf(folded, sizeof folded, ", %llu launcher process%s folded",
			 (unsigned long long)(sum.processes - procs_shown),
			 sum.processes - procs_shown == 1 ? "" : "es");
	fprintf(stderr, "libprof: %llu events (%llu lost%s) from %llu process%s%s%s -> %s\n",
		(unsigned long long)sum.events, (unsigned long long)(sum.lost + gone), startup,
		(unsigned long long)procs_shown, procs_shown == 1 ? "" : "es", folded, fws, made);
	/* a loss to full rings, with what held the collector up and what keeps them */
	if (sum.lost > sum.lost_startup) {
		char ring[48] = "", waited[160] = "";
		if (q->ring_bytes >= (1u << 20))
			snprintf(ring, sizeof ring, " (now %llu MiB a thread)",
				 (unsigned long long)(q->ring_bytes >> 20));
		else if (q->ring_bytes)
			snprintf(ring, sizeof ring, " (now %llu KiB a thread)",
				 (unsigned long long)(q->ring_bytes >> 10));
		if (q->drain_waited_max_ns >= MODEL_DRAIN_WAIT_SAID_NS)
			snprintf(waited, sizeof waited, ": the collector waited up to %.0f ms between "
				 "two drains (a busy machine's cores, or its compressing, held it)",
				 (double)q->drain_waited_max_ns / 1e6);
		fprintf(stderr, "libprof: %llu events lost to full rings%s; a bigger "
				"PROFILER_RING_SIZE%s or PROFILER_BLOCK=1 keeps them\n",
			(unsigned long long)(sum.lost - sum.lost_startup), waited, ring);
	}
	/* follow mode with nothing followed: an empty capture is not a libprof failure */
	if (q->follow_idle && fws[0])
		fprintf(stderr, "libprof: nothing recorded: PROFILER_FOLLOW=1 records only while "
				"a framework's own profiler runs, and no loaded framework%s started "
				"its profiler (mx.profiler.set_state('run') or "
				"MXNET_PROFILER_AUTOSTART=1, torch.profiler.profile, "
				"tf.profiler.experimental.start or its profiler server's capture); "
				"leave PROFILER_FOLLOW unset to "
				"record the whole run\n", fws);
	else if (q->follow_idle)
		fprintf(stderr, "libprof: nothing recorded: PROFILER_FOLLOW=1 records only while "
				"a framework's own profiler runs, and no framework libprof follows "
				"(mxnet, torch, tensorflow) was loaded; leave PROFILER_FOLLOW unset "
				"to record the whole run\n");
	return rc;
}
