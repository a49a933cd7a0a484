/* The live outputs (live.h): the collector's side (the page it shares with the child, the
 * child's start and end) and the child's own work. */
#define _GNU_SOURCE
#include "collector/drain/live.h"

#include <dirent.h>
#include <sched.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collector/drain/collector.h"
#include "collector/output/outfile.h"
#include "collector/progress.h"
#include "formats/capture/capture.h"
#include "formats/export/chrome_live.h"
#include "formats/model/model_live.h"
#include "formats/model/outputs.h"
#include "formats/model/stats.h"
#include "preload/common/debug.h"

#define LIVE_NICE 19     /* where SCHED_IDLE is refused */
#define LIVE_DUMP_NICE 10 /* while a dump waits: as the dumps made from the capture ran */
#define POLL_NS 5000000L /* 5 ms between looks at the page while nothing new is written */
#define PART_SHIFT 40    /* a part's bytes below 1 TiB */
/* The end waits for the child as long as it moves on; this long without a record read or
 * an output begun, it is taken for stuck, killed, and the outputs made from the capture:
 * the program's exit must not wait for good on a bug here. */
#define STALL_NS 60000000000ull
/* Holding a blocking program for the child (live_outputs_behind): from this much of the
 * child's work behind the drain (the end would wait about that long), until it is back
 * under half of it; a child that, over a HOLD_CHECK_NS while held, ran under a quarter
 * of it and was starved (waited runnable over half of it: an unprivileged one cannot
 * leave SCHED_IDLE beside busy processes) or read nothing (stopped) is not waited for
 * again. Before it has read enough to say, an event is taken for GUESS_NS. */
#define HOLD_FROM_NS 500000000ull
#define HOLD_UNTIL_NS 250000000ull
#define HOLD_CHECK_NS 250000000ull
/* One hold lasts this long at most, and the next begins this long after it at the
 * earliest: an event stamped before a hold and published after it (its writer blocked
 * on the full ring) must stay within the live-heap analysis's window of the newest
 * (MEMTRACK_WINDOW_NS, 2 s), or it is applied out of order. */
#define HOLD_MAX_NS 1000000000ull
#define HOLD_REST_NS 20000000ull
#define HOLD_MEASURED (1u << 20)
/* The end, waiting for a child it could not take out of SCHED_IDLE, looks this often at
 * the CPU it gets */
#define END_CHECK_NS 500000000ull
#define GUESS_NS 50

enum { RUNNING, DONE, FAILED };

struct live_page {
	/* how far the capture's complete frames go: the part being written << PART_SHIFT |
	 * its bytes (part 0: a capture in one file); one word, read whole */
	_Atomic uint64_t at;
	atomic_int finished;   /* at is the capture's end */
	atomic_int result;     /* the child's: RUNNING, DONE (made is set), FAILED (why) */
	_Atomic uint64_t finished_ns, ready_ns; /* CLOCK_MONOTONIC: said on the debug channel */
	_Atomic uint64_t progress; /* records read, outputs begun: the child is not stuck */
	_Atomic uint64_t read_to;  /* how far its read goes, in at's form */
	/* the events of the records it has read, and its reading thread's CPU time then:
	 * what the collector holds a blocking program by */
	_Atomic uint64_t events_read, cpu_ns;
	atomic_int hurry;          /* the program is held for it: no SCHED_IDLE */
	uint64_t max_json_events; /* the cap the trace was made for */
	struct live_made made;
	char why[1024];          /* why the tables were not made */
	char json_why[1024];     /* why the trace was not made (the tables were) */
	/* A dump served from the child's state (live_dump_start): the collector fills the
	 * request, then bumps dump_seq; the child, once it has read the capture to dump_at,
	 * forks, and the fork writes the outputs, says what it would have printed in
	 * dump_said, and sets dump_status and then dump_done to that seq. */
	_Atomic uint64_t dump_at;
	_Atomic uint32_t dump_seq, dump_done;
	atomic_int dump_status; /* 0, -1 (no outputs), LIVE_DUMP_DECLINED */
	struct live_dump_request dump;
	char dump_said[2048];   /* its lines for the collector's stderr */
};

/* ---- the child ---- */

char **collector_argv;

/* argv[1] ("collect", "record") becomes "tables", in place: /proc/PID/cmdline shows the
 * argument area as it is now. */
static void rename_self(void)
{
	static const char word[] = "tables";
	prctl(PR_SET_NAME, "prof tables");
	if (!collector_argv || !collector_argv[0] || !collector_argv[1])
		return;
	size_t room = strlen(collector_argv[1]);
	if (room < sizeof word - 1)
		return;
	memset(collector_argv[1], 0, room);
	memcpy(collector_argv[1], word, sizeof word - 1);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Only the capture stays open: whoever reads the program's output through a pipe gets
 * EOF when the program (and its collector) let go of it, not when this child ends, and
 * nothing else the collector holds is held longer by it. */
static void keep_only(int fd)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	for (int i = 0; i < 3; i++)
		if (null < 0 || dup2(null, i) < 0)
			close(i);
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return;
	int mine = dirfd(d);
	for (struct dirent *e; (e = readdir(d));) {
		int n = atoi(e->d_name);
		if (n > 2 && n != fd && n != mine)
			close(n);
	}
	closedir(d);
}

static struct live_page *followed;
static pid_t collector_pid;

static volatile int stopping; /* the read stopped early: follow waits no more */

static int visit(void *ctx, uint32_t type, const void *payload, uint32_t len);

static uint32_t reading_part; /* the part being read (0: a capture in one file) */
static char part_path[4352];

static void nap(void)
{
	/* a held program waits on this too */
	struct timespec ts = {0, followed && atomic_load(&followed->hurry) ? POLL_NS / 10 : POLL_NS};
	nanosleep(&ts, NULL);
}

/* Whether to stop waiting: the collector gone (killed: nothing more will come, and no one
 * waits), or the read stopped. */
static int abandoned(void)
{
	return stopping || getppid() != collector_pid;
}

static uint64_t follow(uint64_t known)
{
	for (;;) {
		/* finished before at: at is stored first, so read after the flag it is the end */
		int finished = atomic_load(&followed->finished);
		uint64_t at = atomic_load(&followed->at);
		if (at >> PART_SHIFT > reading_part) {
			/* a later part begun: this one is closed, whole on disk */
			struct stat st;
			if (!stat(part_path, &st) && (uint64_t)st.st_size > known)
				return (uint64_t)st.st_size;
			return known;
		}
		uint64_t size = at & ((1ull << PART_SHIFT) - 1);
		if (size > known)
			return size;
		if (finished || abandoned())
			return known;
		nap();
	}
}

/* A capture in parts: each part in turn, as the collector begins it, into one model (as
 * cap_read reads the directory). The worst result of a part, or the visitor's stop. */
static int read_parts(const char *dir, void *l, char *damage, size_t len)
{
	int worst = CAP_READ_OK;
	char err[1024];
	for (uint32_t k = 1;; k++) {
		for (;;) {
			int finished = atomic_load(&followed->finished);
			if (atomic_load(&followed->at) >> PART_SHIFT >= k)
				break;
			if (finished || abandoned())
				return worst;
			nap();
		}
		reading_part = k;
		snprintf(part_path, sizeof part_path, "%s/" CAP_PART_PREFIX "%06u" CAP_PART_SUFFIX,
			 dir, k);
		int rc = cap_read_file(part_path, visit, l, err, sizeof err);
		if (rc > CAP_READ_UNUSABLE)
			return rc; /* the visitor's */
		if (rc != CAP_READ_OK && worst == CAP_READ_OK) {
			worst = CAP_READ_DAMAGED; /* as cap_read says of a directory */
			snprintf(damage, len, "%s", err);
		}
	}
}

/* model_live_visit, telling follow when it stops the read (a launcher decided wrong, out
 * of memory): the read-ahead thread may be waiting in it for frames. */
static int visit(void *ctx, uint32_t type, const void *payload, uint32_t len)
{
	int rc = model_live_visit(ctx, type, payload, len);
	if (rc)
		stopping = 1;
	else if (type == CAP_EVENTS && len >= sizeof(struct cap_events))
		atomic_fetch_add_explicit(&followed->events_read,
					  ((const struct cap_events *)payload)->count,
					  memory_order_relaxed);
	atomic_fetch_add_explicit(&followed->progress, 1, memory_order_relaxed);
	return rc;
}

/* damage names the descriptor read: say the capture's name instead */
static void name_capture(char *damage, size_t len, const char *source, const char *path)
{
	size_t n = strlen(source);
	if (strncmp(damage, source, n))
		return;
	char rest[1024];
	snprintf(rest, sizeof rest, "%s", damage + n);
	snprintf(damage, len, "%s%s", path, rest);
}

static int failed(struct live_page *p, const char *why)
{
	snprintf(p->why, sizeof p->why, "%s", why);
	atomic_store(&p->result, FAILED);
	return 1;
}

/* The model's events to both: the tables' aggregates and the trace's plan. */
struct both {
	struct stats *s;
	struct chrome_live *trace; /* NULL: no live trace */
};

static int to_both(void *ctx, struct model *m, uint32_t image, uint32_t thread,
		   const struct prof_event *ev, uint32_t n)
{
	struct both *b = ctx;
	if (stats_on_events(b->s, m, image, thread, ev, n))
		return -1;
	return b->trace ? chrome_live_events(b->trace, m, image, thread, ev, n) : 0;
}

/* A new file beside final, opened for writing; its name in tmp (the page: the collector
 * removes what is named there and not handed over) once it is ours. NULL with why set. */
static FILE *temp_beside(const char *final, char *tmp, size_t len, char *why, size_t whylen)
{
	char name[4352];
	int fd = outfile_temp(final, name, sizeof name);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (fd >= 0)
		snprintf(tmp, len, "%s", name);
	if (!f) {
		snprintf(why, whylen, "cannot make a file beside %s: %s", final, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(name);
		}
		tmp[0] = 0;
	}
	return f;
}

/* What one writing of the outputs made (the end's, in the page; a dump's, its own). */
struct made_here {
	struct live_made *made;
	char *why, *json_why; /* sizeof the page's */
};

static void write_tables(struct made_here *h, struct model *m, struct stats *s,
			 const struct model_fold *fold, int read_rc, const char *damage,
			 const char *path, const char *txt)
{
	char err[1024];
	struct live_made *made = h->made;
	FILE *f = temp_beside(txt, made->txt, sizeof made->txt, h->why, sizeof followed->why);
	if (!f)
		return;
	struct table_options opt = {.sort = SORT_TOTAL};
	struct output_summary sum;
	int rc = tables_write_model(m, s, fold, read_rc, damage, path, f, &opt, &sum, err,
				    sizeof err);
	if (fclose(f) && rc != 2) {
		rc = 2;
		snprintf(err, sizeof err, "writing the tables: %s", strerror(errno));
	}
	if (rc == 2) {
		unlink(made->txt);
		made->txt[0] = 0;
		snprintf(h->why, sizeof followed->why, "%s", err);
	}
}

static void write_trace(struct made_here *h, struct chrome_live *trace,
			const struct model_fold *fold, int read_rc, const char *damage,
			const char *json)
{
	char err[1024];
	struct live_made *made = h->made;
	if (!trace) {
		snprintf(h->json_why, sizeof followed->json_why, "no spool");
		return;
	}
	FILE *f = temp_beside(json, made->json, sizeof made->json, h->json_why,
			      sizeof followed->json_why);
	if (!f)
		return;
	int rc = chrome_live_write(trace, fold, read_rc == CAP_READ_DAMAGED ? damage : NULL,
				   json, f, &made->sum, err, sizeof err);
	if (rc == 2) {
		unlink(made->json);
		made->json[0] = 0;
		snprintf(h->json_why, sizeof followed->json_why, "%s", err);
	}
	made->json_rc = rc == 1;
}

/* The trace's spool: an unnamed file beside it (it holds about what the trace will). */
static int spool_beside(const char *json)
{
	char tmp[4352];
	int fd = outfile_temp(json, tmp, sizeof tmp);
	if (fd < 0)
		return -1;
	/* read back at the end: opened again for that (made write-only) */
	int rw = open(tmp, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	unlink(tmp);
	close(fd);
	return rw;
}

/* ---- dumps from the child's state ---- */

/* What a dump's fork needs of the child: set once the child reads. */
static struct {
	struct model_live *l;
	struct model *m;
	struct stats *s;
	struct chrome_live *trace;
	const char *source, *path, *prefix;
	pid_t pid;        /* the fork writing a dump, 0 when none */
	uint32_t serving; /* the request it serves */
	uint64_t since;   /* when it began */
	int boosted;      /* out of SCHED_IDLE while a dump waits */
} dumps;

static void sched_idle(int idle)
{
	struct sched_param none = {0};
	if (idle) {
		if (sched_setscheduler(0, SCHED_IDLE, &none))
			setpriority(PRIO_PROCESS, 0, LIVE_NICE);
	} else if (!sched_setscheduler(0, SCHED_OTHER, &none)) {
		setpriority(PRIO_PROCESS, 0, LIVE_DUMP_NICE);
	}
}

static void dump_answered(struct live_page *p, uint32_t seq, int status)
{
	atomic_store(&p->dump_status, status);
	atomic_store(&p->dump_done, seq);
}

/* The tables only (prof_dumps), to the path the program named. 0 or -1. */
static int dump_tables_to(struct live_page *p, const struct model_fold *fold, int read_rc,
			  const char *damage)
{
	char why[1024] = "", json_why[1024] = "";
	struct live_made made = {0};
	struct made_here h = {&made, why, json_why};
	const char *path = p->dump.tables_path;
	if (outfile_probe(path, why, sizeof why) < 0) {
		fprintf(stderr, "libprof: %s; not writing there\n", why);
		return -1;
	}
	write_tables(&h, dumps.m, dumps.s, fold, read_rc, damage, dumps.path, path);
	if (!made.txt[0] || outfile_place(made.txt, path, 1)) {
		if (made.txt[0])
			unlink(made.txt);
		fprintf(stderr, "libprof: cannot write %s\n", path);
		return -1;
	}
	return 0;
}

/* The outputs under the session's prefix, put in place as the end's are. 0 or -1. */
static int dump_outputs(struct live_page *p, const struct model_fold *fold, int read_rc,
			const char *damage)
{
	char why[1024] = "", json_why[1024] = "", txt[4352], json[4352];
	struct live_made made = {0};
	struct made_here h = {&made, why, json_why};
	snprintf(txt, sizeof txt, "%s.txt", dumps.prefix);
	snprintf(json, sizeof json, "%s.json", dumps.prefix);
	if (p->dump.tables)
		write_tables(&h, dumps.m, dumps.s, fold, read_rc, damage, dumps.path, txt);
	write_trace(&h, dumps.trace, fold, read_rc, damage, json);
	struct output_request q = {.max_json_events = p->max_json_events,
				   .tables = p->dump.tables, .quiet = !p->dump.say,
				   .shown_capture = dumps.path, .made = &made};
	return collector_make_outputs(dumps.source, dumps.prefix, &q);
}

/* The dump's fork: the child's state as it is now, finished as if the capture ended
 * here, written out; what it prints goes to the page for the collector's stderr. */
static int dump_fork(struct live_page *p)
{
	char damage[1024] = "";
	struct model_fold fold;
	int read_rc = CAP_READ_OK, rc = -1;
	FILE *said = tmpfile();
	if (said)
		dup2(fileno(said), 2);
	if (!model_live_finish(dumps.l, CAP_READ_OK, dumps.path, &fold, &read_rc, damage,
			       sizeof damage))
		rc = p->dump.tables_path[0] ? dump_tables_to(p, &fold, read_rc, damage)
					    : dump_outputs(p, &fold, read_rc, damage);
	else
		fprintf(stderr, "libprof: the dump could not be made: %s\n", damage);
	fflush(stderr);
	if (said) {
		size_t n = (size_t)pread(2, p->dump_said, sizeof p->dump_said - 1, 0);
		p->dump_said[n < sizeof p->dump_said ? n : 0] = 0;
	}
	return rc;
}

/* A dump's fork that ended: its answer stands (or -1 if it died first). */
static void reap_dump(int wait)
{
	int st;
	if (!dumps.pid)
		return;
	/* stuck (a fork of a threaded process can inherit a lock held for good): the
	 * collector makes it from the capture instead, and prof_dump() is answered */
	if (!wait && mono_ns() - dumps.since > STALL_NS) {
		kill(dumps.pid, SIGKILL);
		wait = 1;
		if (atomic_load(&followed->dump_done) != dumps.serving)
			dump_answered(followed, dumps.serving, LIVE_DUMP_DECLINED);
	}
	if (waitpid(dumps.pid, &st, wait ? 0 : WNOHANG) <= 0)
		return;
	if (atomic_load(&followed->dump_done) != dumps.serving)
		dump_answered(followed, dumps.serving, -1);
	dumps.pid = 0;
	chrome_live_hold(dumps.trace, 0);
}

static void serve_dump(uint32_t seq)
{
	struct live_page *p = followed;
	atomic_store(&p->dump_status, 0);
	p->dump_said[0] = 0;
	chrome_live_hold(dumps.trace, 1);
	pid_t live = getpid(), pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the child it copies */
		if (getppid() != live)
			_exit(1);
		int rc = dump_fork(p);
		dump_answered(p, seq, rc ? -1 : 0);
		_exit(0);
	}
	if (pid < 0) {
		chrome_live_hold(dumps.trace, 0);
		dump_answered(p, seq, LIVE_DUMP_DECLINED);
		return;
	}
	dumps.pid = pid;
	dumps.serving = seq;
	dumps.since = mono_ns();
}

/* cap_read_between: once the frames read reach the request's place, a fork of this
 * child writes the dump from its state. While one waits, out of SCHED_IDLE (someone may
 * be blocked in prof_dump). */
static void between(uint64_t end)
{
	struct live_page *p = followed;
	if (end != UINT64_MAX)
		atomic_store_explicit(&p->read_to, (uint64_t)reading_part << PART_SHIFT | end,
				      memory_order_relaxed);
	struct timespec cpu;
	if (!clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu))
		atomic_store_explicit(&p->cpu_ns, (uint64_t)cpu.tv_sec * 1000000000ull +
					  (uint64_t)cpu.tv_nsec, memory_order_relaxed);
	reap_dump(0);
	uint32_t seq = atomic_load(&p->dump_seq);
	if (seq == atomic_load(&p->dump_done)) {
		if (dumps.boosted && !dumps.pid && !atomic_load(&p->finished) &&
		    !atomic_load(&p->hurry)) {
			sched_idle(1);
			dumps.boosted = 0;
		}
		return;
	}
	if (dumps.pid)
		return;
	if (stopping || !dumps.l) { /* its state is not the capture's: the collector's way */
		dump_answered(p, seq, LIVE_DUMP_DECLINED);
		return;
	}
	if (!dumps.boosted) {
		if (!atomic_load(&p->hurry)) /* held for: already out of it, at nice 0 */
			sched_idle(0);
		dumps.boosted = 1;
	}
	if (((uint64_t)reading_part << PART_SHIFT | end) >= atomic_load(&p->dump_at))
		serve_dump(seq);
}

static int child(struct live_page *p, int fd, int parts, const char *path, const char *prefix)
{
	char source[64], damage[1024] = "", txt[4352], json[4352];
	struct model m;
	struct stats s;
	struct model_fold fold;
	int read_rc = CAP_READ_OK;

	snprintf(source, sizeof source, "/proc/self/fd/%d", fd);
	snprintf(txt, sizeof txt, "%s.txt", prefix);
	snprintf(json, sizeof json, "%s.json", prefix);
	followed = p;
	cap_read_follow = follow;
	model_init(&m);
	stats_init(&s);
	m.track_memory = 1;
	m.keep_curves = 1; /* the trace's live heap track */
	struct chrome_options o = {.max_events = p->max_json_events};
	int spool = spool_beside(json);
	struct both b = {.s = &s,
			 .trace = spool >= 0 ? chrome_live_new(&o, &m, spool) : NULL};
	if (spool >= 0 && !b.trace)
		close(spool);
	m.on_events = to_both;
	m.ctx = &b;
	struct model_live *l = model_live_new(&m);
	if (!l)
		return failed(p, "out of memory");
	dumps.l = l;
	dumps.m = &m;
	dumps.s = &s;
	dumps.trace = b.trace;
	dumps.source = source;
	dumps.path = path;
	dumps.prefix = prefix;
	cap_read_between = between;
	int rc = parts ? read_parts(source, l, damage, sizeof damage)
		       : cap_read(source, visit, l, damage, sizeof damage);
	/* a dump asked at the very end, or still being written */
	if (!stopping)
		between(UINT64_MAX);
	while (dumps.pid) { /* ends, or is taken for stuck */
		reap_dump(0);
		if (dumps.pid)
			nap();
	}
	if (atomic_load(&p->dump_seq) != atomic_load(&p->dump_done))
		dump_answered(p, atomic_load(&p->dump_seq), LIVE_DUMP_DECLINED);
	cap_read_between = NULL;
	dumps.l = NULL;
	if (getppid() != collector_pid)
		return 1;
	rc = model_live_finish(l, rc, path, &fold, &read_rc, damage, sizeof damage);
	name_capture(damage, sizeof damage, source, path);
	model_live_free(l);
	if (rc)
		return failed(p, damage);
	struct made_here h = {&p->made, p->why, p->json_why};
	atomic_fetch_add(&p->progress, 1);
	write_tables(&h, &m, &s, &fold, read_rc, damage, path, txt);
	atomic_fetch_add(&p->progress, 1);
	write_trace(&h, b.trace, &fold, read_rc, damage, json);
	atomic_store(&p->ready_ns, mono_ns());
	atomic_store(&p->result, DONE);
	return 0;
}

/* ---- the collector's side ---- */

int live_outputs_start(struct live_outputs *lo, int fd, int parts, const char *path,
		       const char *prefix, uint64_t max_json_events)
{
	lo->pid = 0;
	lo->page = mmap(NULL, sizeof *lo->page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			-1, 0);
	if (lo->page == MAP_FAILED) {
		lo->page = NULL;
		return -1;
	}
	lo->page->max_json_events = max_json_events;
	collector_pid = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		/* never outlive the collector, whatever ends it */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != collector_pid)
			_exit(1);
		/* what the collector outlives (a job's SIGTERM to everyone, ^C, a hangup: it
		 * writes the outputs), this child does too; it ends with the collector */
		signal(SIGTERM, SIG_IGN);
		signal(SIGINT, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		signal(SIGUSR2, SIG_IGN); /* `prof dump` is the collector's */
		rename_self();
		keep_only(fd);
		/* only CPU time nobody else wants while the program runs: a program that keeps
		 * every core busy ran at half speed beside a nice 10 child (bench long_run) */
		struct sched_param none = {0};
		if (sched_setscheduler(0, SCHED_IDLE, &none) && setpriority(PRIO_PROCESS, 0, LIVE_NICE)) {
		}
		_exit(child(lo->page, fd, parts, path, prefix));
	}
	if (pid < 0) {
		munmap(lo->page, sizeof *lo->page);
		lo->page = NULL;
		return -1;
	}
	lo->pid = pid;
	return 0;
}

void live_outputs_publish(struct live_outputs *lo, uint32_t part, uint64_t size)
{
	uint64_t at = (uint64_t)part << PART_SHIFT | size;
	if (lo->pid && atomic_load_explicit(&lo->page->at, memory_order_relaxed) != at)
		atomic_store(&lo->page->at, at);
}

/* Every thread of the child to SCHED_IDLE, or out of it: once the capture is finished
 * the collector (and the program's exit) waits for the child, and so does a blocking
 * program held for it, and a busy machine could starve an idle one for good. */
static int child_sched(pid_t pid, int idle)
{
	char dir[64];
	int refused = 0;
	snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
	struct sched_param none = {0};
	DIR *d = opendir(dir);
	for (struct dirent *e; d && (e = readdir(d));) {
		pid_t tid = atoi(e->d_name);
		if (tid > 0 && sched_setscheduler(tid, idle ? SCHED_IDLE : SCHED_OTHER, &none)) {
			refused |= errno == EPERM;
			if (idle)
				setpriority(PRIO_PROCESS, (id_t)tid, LIVE_NICE);
		}
	}
	if (d)
		closedir(d);
	return refused ? -1 : 0;
}

/* The child's threads together (its reading thread and the one decompressing ahead of
 * it): the ns they have run, and the ns they have waited runnable for a CPU
 * (/proc/PID/task/TID/schedstat). 0, or -1 when unreadable. Waiting runnable is what
 * tells a starved child from one that waits for frames or for the disk, or is stopped. */
static int child_times(pid_t pid, uint64_t *ran, uint64_t *waited)
{
	char dir[64], path[352], buf[128];
	int got = 0;
	*ran = *waited = 0;
	snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
	DIR *d = opendir(dir);
	for (struct dirent *e; d && (e = readdir(d));) {
		if (atoi(e->d_name) <= 0)
			continue;
		snprintf(path, sizeof path, "%s/%s/schedstat", dir, e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
		if (fd >= 0)
			close(fd);
		unsigned long long r, w;
		if (n <= 0)
			continue;
		buf[n] = 0;
		if (sscanf(buf, "%llu %llu", &r, &w) != 2)
			continue;
		*ran += r;
		*waited += w;
		got = 1;
	}
	if (d)
		closedir(d);
	return got ? 0 : -1;
}

/* Over a window of ns: whether the child was starved (it ran under a quarter of it and
 * waited runnable over half); unreadable times say nothing. */
static int starved(int readable, uint64_t ran, uint64_t waited, uint64_t ns)
{
	return readable && ran < ns / 4 && waited > ns / 2;
}

static int end_hold(struct live_outputs *lo, uint64_t now)
{
	if (!lo->holding)
		return 0;
	lo->holding = 0;
	lo->held_until = now;
	lo->held_ns += now - lo->held_since;
	atomic_store(&lo->page->hurry, 0);
	return 1;
}

static int dump_waits(const struct live_page *p)
{
	return atomic_load(&p->dump_seq) != atomic_load(&p->dump_done);
}

/* Back to SCHED_IDLE, but not under a dump that waits (the child left it for that):
 * later, once none does. */
static void stop_holding(struct live_outputs *lo, uint64_t now)
{
	if (end_hold(lo, now) && lo->pid)
		lo->idle_later = 1;
	if (lo->idle_later && lo->pid && !dump_waits(lo->page) &&
	    !atomic_load(&lo->page->finished)) {
		child_sched(lo->pid, 1);
		lo->idle_later = 0;
	}
}

/* A hold's next check window begins: what the child has read and run so far. */
static void check_from(struct live_outputs *lo, uint64_t now, uint64_t read, uint64_t cpu)
{
	lo->check_at = now;
	lo->check_read = read;
	lo->check_cpu = cpu;
	if (child_times(lo->pid, &lo->check_ran, &lo->check_waited))
		lo->check_ran = lo->check_waited = 0;
}

int live_outputs_behind(struct live_outputs *lo, uint64_t drained, uint64_t now, int may_hold)
{
	struct live_page *p = lo->page;
	if (!p)
		return 0;
	if (!may_hold || !lo->pid || lo->gave_up || atomic_load(&p->result) != RUNNING) {
		stop_holding(lo, now);
		return 0;
	}
	uint64_t read = atomic_load_explicit(&p->events_read, memory_order_relaxed);
	uint64_t cpu = atomic_load_explicit(&p->cpu_ns, memory_order_relaxed), per = GUESS_NS;
	if (read >= HOLD_MEASURED) {
		per = cpu / read;
		per = per ? per : 1;
	}
	/* counts of the records both sides see; an overflow would be a lie: not held */
	uint64_t behind = drained > read && drained - read < UINT64_MAX / per
				  ? (drained - read) * per : 0;
	if (!lo->holding) {
		stop_holding(lo, now); /* an idling put off for a dump */
		if (behind < HOLD_FROM_NS || (lo->holds && now - lo->held_until < HOLD_REST_NS))
			return 0;
		lo->holding = 1;
		lo->holds++;
		lo->held_since = now;
		check_from(lo, now, read, cpu);
		lo->idle_later = 0;
		atomic_store(&p->hurry, 1);
		child_sched(lo->pid, 0);
		return 1;
	}
	if (now - lo->held_since >= HOLD_MAX_NS) {
		stop_holding(lo, now);
		return 0;
	}
	if (now - lo->check_at >= HOLD_CHECK_NS) {
		/* starved, or idle and reading nothing (stopped; or its frames are not
		 * coming); busy without finishing a record (a big one, the trace's spool) is
		 * waited for */
		uint64_t ran = 0, waited = 0, window = now - lo->check_at;
		int readable = !child_times(lo->pid, &ran, &waited);
		ran = !readable ? (cpu > lo->check_cpu ? cpu - lo->check_cpu : 0)
				: ran > lo->check_ran ? ran - lo->check_ran : 0;
		waited = waited > lo->check_waited ? waited - lo->check_waited : 0;
		if ((read == lo->check_read && ran < window / 4) ||
		    starved(readable, ran, waited, window)) {
			prof_debug(PROF_DEBUG_DRAIN, "the live outputs ran %.3f s and waited for a CPU "
						     "%.3f s of the %.3f s the program waited for them%s: "
						     "not waited for again", (double)ran / 1e9,
				   (double)waited / 1e9, (double)window / 1e9,
				   read == lo->check_read ? ", reading nothing" : "");
			lo->gave_up = 1;
			stop_holding(lo, now);
			return 0;
		}
		check_from(lo, now, read, cpu);
	}
	if (behind < HOLD_UNTIL_NS) {
		stop_holding(lo, now);
		return 0;
	}
	return 1;
}

void live_outputs_finish(struct live_outputs *lo, uint32_t part, uint64_t size)
{
	if (!lo->pid)
		return;
	end_hold(lo, mono_ns());
	lo->stays_idle = child_sched(lo->pid, 0) != 0;
	atomic_store(&lo->page->at, (uint64_t)part << PART_SHIFT | size);
	atomic_store(&lo->page->finished_ns, mono_ns());
	atomic_store(&lo->page->finished, 1);
}

/* The files the child made and nobody took (whatever became of it: it names them only
 * once they are its own). */
static void remove_made(struct live_page *p)
{
	if (p->made.txt[0])
		unlink(p->made.txt);
	if (p->made.json[0])
		unlink(p->made.json);
	p->made.txt[0] = p->made.json[0] = 0;
}

static int reap(struct live_outputs *lo, int wait)
{
	int st;
	pid_t got;
	while ((got = waitpid(lo->pid, &st, wait ? 0 : WNOHANG)) < 0 && errno == EINTR)
		;
	if (got == 0)
		return 0;
	/* done: its outputs are written and closed, however it ended after that */
	int ok = got == lo->pid && ((WIFEXITED(st) && WEXITSTATUS(st) == 0) ||
				    atomic_load(&lo->page->result) == DONE);
	if (got == lo->pid && WIFSIGNALED(st) && atomic_load(&lo->page->result) == RUNNING)
		snprintf(lo->page->why, sizeof lo->page->why, "it died of signal %d", WTERMSIG(st));
	if (!ok) {
		remove_made(lo->page);
		atomic_store(&lo->page->result, FAILED);
	}
	lo->pid = 0;
	return 1;
}

void live_outputs_take(struct live_outputs *lo, uint64_t max_json_events, struct live_made *out)
{
	memset(out, 0, sizeof *out);
	if (!lo->page)
		return;
	struct live_page *p = lo->page;
	uint64_t seen = atomic_load(&p->progress), since = mono_ns();
	uint64_t check_at = since, check_ran = 0, check_waited = 0;
	if (lo->stays_idle && child_times(lo->pid, &check_ran, &check_waited))
		lo->stays_idle = 0; /* nothing to tell starved by: waited for, as before */
	while (lo->pid && !reap(lo, 0)) {
		uint64_t end = atomic_load(&p->at), to = atomic_load(&p->read_to);
		if (end >> PART_SHIFT == to >> PART_SHIFT) /* a capture in parts: its last one */
			progress_show(to & ((1ull << PART_SHIFT) - 1),
				      end & ((1ull << PART_SHIFT) - 1), "writing the outputs:");
		uint64_t now = mono_ns(), at = atomic_load(&p->progress);
		if (at != seen) {
			seen = at;
			since = now;
		} else if (now - since > STALL_NS && atomic_load(&p->result) == RUNNING) {
			kill(lo->pid, SIGKILL);
			reap(lo, 1);
			snprintf(p->why, sizeof p->why, "no progress for %llu s",
				 STALL_NS / 1000000000ull);
			break;
		}
		/* Left at SCHED_IDLE on a busy machine it may take minutes: the collector,
		 * at the priority it has, makes the outputs from the capture instead (not
		 * once they are made: the child only has to exit). */
		if (lo->stays_idle && now - check_at >= END_CHECK_NS &&
		    atomic_load(&p->result) == RUNNING) {
			uint64_t ran = 0, waited = 0, window = now - check_at;
			/* a thread gone since takes its times with it: nothing said then */
			if (!child_times(lo->pid, &ran, &waited) && ran >= check_ran &&
			    waited >= check_waited &&
			    starved(1, ran - check_ran, waited - check_waited, window)) {
				kill(lo->pid, SIGKILL);
				reap(lo, 1);
				snprintf(p->why, sizeof p->why, "it could not leave SCHED_IDLE and "
					 "ran %.2f s, waiting for a CPU %.2f s, of the %.2f s the end "
					 "waited for it", (double)(ran - check_ran) / 1e9,
					 (double)(waited - check_waited) / 1e9, (double)window / 1e9);
				break;
			}
			check_at = now;
			check_ran = ran;
			check_waited = waited;
		}
		struct timespec ts = {0, POLL_NS};
		nanosleep(&ts, NULL);
	}
	if (atomic_load(&p->result) != DONE) {
		prof_debug(PROF_DEBUG_DRAIN, "the live outputs were not used (%s); made from the "
					     "capture; the program held for them %u times, %.3f s in all",
			   p->why[0] ? p->why : "?", lo->holds, (double)lo->held_ns / 1e9);
	} else {
		if (p->made.json[0] && p->max_json_events != max_json_events) {
			unlink(p->made.json);
			p->made.json[0] = 0;
			snprintf(p->json_why, sizeof p->json_why, "the trace's cap changed during "
				 "the run");
		}
		*out = p->made;
		p->made.txt[0] = p->made.json[0] = 0; /* the caller's now */
		uint64_t end = atomic_load(&p->finished_ns), ready = atomic_load(&p->ready_ns);
		prof_debug(PROF_DEBUG_DRAIN, "the outputs were kept as the capture was written "
					     "(tables%s%s%s): ready %.3f s after its end; the program "
					     "held for them %u times, %.3f s in all",
			   out->txt[0] ? "" : " not made", out->json[0] ? ", trace" : "; trace not made: ",
			   out->json[0] ? "" : p->json_why,
			   ready > end ? (double)(ready - end) / 1e9 : 0.0, lo->holds,
			   (double)lo->held_ns / 1e9);
	}
	munmap(p, sizeof *p);
	lo->page = NULL;
}

void live_outputs_stop(struct live_outputs *lo)
{
	if (lo->pid) {
		kill(lo->pid, SIGKILL);
		reap(lo, 1);
	}
	if (lo->page) {
		remove_made(lo->page);
		munmap(lo->page, sizeof *lo->page);
		lo->page = NULL;
	}
}

int live_dump_start(struct live_outputs *lo, uint32_t part, uint64_t size,
		    const struct live_dump_request *r)
{
	struct live_page *p = lo->page;
	if (!lo->pid || !p || atomic_load(&p->result) != RUNNING || atomic_load(&p->finished) ||
	    atomic_load(&p->dump_seq) != atomic_load(&p->dump_done))
		return -1;
	p->dump = *r;
	atomic_store(&p->dump_at, (uint64_t)part << PART_SHIFT | size);
	atomic_store(&p->dump_seq, atomic_load(&p->dump_seq) + 1);
	return 0;
}

int live_dump_poll(struct live_outputs *lo, int *status)
{
	struct live_page *p = lo->page;
	if (!p)
		return 0;
	uint32_t seq = atomic_load(&p->dump_seq);
	if (seq == atomic_load(&p->dump_done)) {
		*status = atomic_load(&p->dump_status);
		if (*status != LIVE_DUMP_DECLINED && p->dump_said[0])
			fputs(p->dump_said, stderr);
		p->dump_said[0] = 0;
		return 1;
	}
	if (!lo->pid || reap(lo, 0)) { /* the child is gone, and its fork with it */
		atomic_store(&p->dump_done, seq);
		*status = LIVE_DUMP_DECLINED;
		return 1;
	}
	return 0;
}
