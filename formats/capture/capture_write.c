/* The raw capture writer: records are gathered in a raw buffer (a frame) and handed,
 * once it reaches CAP_FRAME_TARGET or on cap_flush, to worker threads that compress it
 * into one zstd frame; frames are written in the order they were made, each with a
 * single write(), and a failed write is cut off again, so that the file always ends at
 * a frame boundary and keeps every frame written before the failure.
 *
 * Why workers: compressing (zstd level 1, ~500 MB/s a core) is most of the collector's
 * work. Done inline, it made the drain loop ten times slower than a program allocating
 * in a tight loop writes events, and the rings overflowed within milliseconds. Frames
 * waiting for a worker are held in memory up to STAGED_MAX raw bytes, so bursts (a
 * framework's import, a data loader's start) are absorbed whole; past that, the caller
 * waits for room. */
#define _GNU_SOURCE
#include "formats/capture/capture.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zstd.h>

#include "formats/capture/capture_internal.h"
#include "formats/capture/event_pack.h"

#define MAX_WORKERS 4
#define THIEF MAX_WORKERS
/* raw bytes of frames handed over and not yet written, at most */
#define STAGED_MAX (256u << 20)
/* spare frames kept for reuse after a burst; the rest are freed */
#define SPARES_KEPT 16
/* spare frames made ahead (cap_writer_tidy, by the caller when it is idle), their pages
 * in place, so that the drain loop does not stop to have 1.25 MB zeroed by the kernel
 * (~0.2 ms, 20 k events of a writer going flat out) for each new frame of a burst. Not by
 * the workers: a mapping change takes the process's mmap lock for writing, and a worker
 * at SCHED_IDLE preempted while holding it on a busy machine stopped the drain loop's own
 * mappings for up to 5 s (a torchrun under load lost 40% of its events) */
#define SPARES_AHEAD 8
/* A frame's first buffer: mapped with its pages made at once (MAP_POPULATE) rather than
 * faulted in one by one while the drain loop fills it (page faults were most of the
 * drain loop's own time in a burst); room for the usual overshoot of the target by one
 * record of events. Spares keep theirs, so a later burst reuses them. */
#define FRAME_MAP (CAP_FRAME_TARGET + (256u << 10))
/* the workers' niceness, above the drain loop's */
#define WORKER_NICE 10

struct frame {
	struct frame *next;
	uint64_t seq;
	unsigned char *raw;
	size_t raw_len, raw_cap;
	int raw_mapped; /* raw is a FRAME_MAP mapping, else malloc'd */
	/* frame header + compressed bytes. A frame of FRAME_MAP has a mapping of OUT_MAP
	 * for them made with it and kept while it is reused (compressing needs no memory
	 * of its own then: see SPARES_AHEAD); a larger one's is malloc'd by the compressor */
	unsigned char *out;
	size_t out_len, out_cap;
	int out_mapped;
	int zstd_failed;
	char zstd_error[96];
};

struct cap_writer {
	int fd;
	char *path;
	struct frame *cur; /* being filled by the caller */
	pthread_mutex_t lock;
	pthread_cond_t work, room, written;
	struct frame *pending, *pending_tail; /* handed over, not yet taken by a worker */
	struct frame *done;             /* compressed, waiting for their turn */
	struct frame *spare;
	unsigned nspare;
	uint64_t next_seq, next_write;
	size_t staged; /* raw bytes of frames between hand-over and written */
	int writing;   /* a worker is writing frames in order */
	int stop;
	int flushing;  /* cap_flush waits: the workers leave SCHED_IDLE */
	int hurry;     /* cap_writer_hurry: so do they */
	struct frame *retired; /* written frames beyond SPARES_KEPT: freed by the caller */
	unsigned nworkers;
	pthread_t workers[MAX_WORKERS];
	/* one per worker, [0] also for writing inline; [THIEF] the caller's (steal_locked) */
	ZSTD_CCtx *cctx[MAX_WORKERS + 1];
	int stealing; /* the caller compresses a frame itself */
	uint64_t bytes; /* file size after the last complete frame */
	uint64_t raw_written; /* raw bytes of the frames written */
	_Atomic int err; /* errno of the first failure; later calls fail fast with it */
	char msg[256];
};

static int fail(struct cap_writer *w, int err, const char *what, const char *reason)
{
	pthread_mutex_lock(&w->lock);
	if (!atomic_load(&w->err)) {
		snprintf(w->msg, sizeof(w->msg), "%s %s: %s", what, w->path,
			 reason ? reason : strerror(err));
		atomic_store(&w->err, err);
	}
	int e = atomic_load(&w->err);
	pthread_mutex_unlock(&w->lock);
	errno = e;
	return -1;
}

static int failed(struct cap_writer *w)
{
	int e = atomic_load(&w->err);
	if (e)
		errno = e;
	return e != 0;
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
	while (n > 0) {
		ssize_t r = write(fd, p, n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0) {
			errno = EIO;
			return -1;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

#define OUT_MAP (sizeof(struct cap_frame_header) + ZSTD_COMPRESSBOUND(FRAME_MAP))

static void frame_free(struct frame *f)
{
	if (!f)
		return;
	if (f->raw_mapped)
		munmap(f->raw, f->raw_cap);
	else
		free(f->raw);
	if (f->out_mapped)
		munmap(f->out, f->out_cap);
	else
		free(f->out);
	free(f);
}

static void frames_free(struct frame *f)
{
	for (struct frame *next; f; f = next) {
		next = f->next;
		frame_free(f);
	}
}

/* Compresses f->raw into f->out (header included), with worker k's context. */
static void compress_frame(struct cap_writer *w, unsigned k, struct frame *f)
{
	struct cap_frame_header fh;
	size_t bound = sizeof(fh) + ZSTD_compressBound(f->raw_len), clen;

	f->out_len = 0;
	if (bound > f->out_cap) {
		/* a frame grown past FRAME_MAP (one record larger than a frame): rare */
		unsigned char *p = f->out_mapped ? malloc(bound) : realloc(f->out, bound);
		if (!p) {
			f->zstd_failed = ENOMEM;
			return;
		}
		if (f->out_mapped)
			munmap(f->out, f->out_cap);
		f->out = p;
		f->out_cap = bound;
		f->out_mapped = 0;
	}
	clen = ZSTD_compress2(w->cctx[k], f->out + sizeof(fh), f->out_cap - sizeof(fh), f->raw,
			      f->raw_len);
	if (ZSTD_isError(clen)) {
		f->zstd_failed = EIO;
		snprintf(f->zstd_error, sizeof(f->zstd_error), "%s", ZSTD_getErrorName(clen));
		return;
	}
	fh.magic = CAP_FRAME_MAGIC;
	fh.clen = (uint32_t)clen;
	fh.rawlen = (uint32_t)f->raw_len;
	/* 1-based, so the reader refuses a frame repeated or moved (0: older writers) */
	fh.seq = (uint32_t)(f->seq + 1);
	memcpy(f->out, &fh, sizeof(fh));
	f->out_len = sizeof(fh) + clen;
}

/* Writes f (its turn has come), or drops it after an earlier failure. Under no lock:
 * only the thread holding w->writing (or the caller when there are no workers) writes. */
static void write_frame(struct cap_writer *w, struct frame *f)
{
	if (atomic_load(&w->err))
		return;
	if (f->zstd_failed) {
		fail(w, f->zstd_failed, f->zstd_failed == ENOMEM ? "buffering records for"
								  : "compressing",
		     f->zstd_error[0] ? f->zstd_error : NULL);
		return;
	}
	if (write_all(w->fd, f->out, f->out_len)) {
		int e = errno;
		/* Cut a partly written frame off, so the file ends on a frame boundary. */
		if (ftruncate(w->fd, (off_t)w->bytes) == 0)
			lseek(w->fd, (off_t)w->bytes, SEEK_SET);
		fail(w, e, "writing", NULL);
		return;
	}
	pthread_mutex_lock(&w->lock);
	w->bytes += f->out_len;
	w->raw_written += f->raw_len;
	pthread_mutex_unlock(&w->lock);
}

/* A written frame's buffers go back to the spares (under the lock). */
static void recycle_locked(struct cap_writer *w, struct frame *f)
{
	w->staged -= f->raw_cap;
	f->out_len = 0;
	f->raw_len = 0;
	f->zstd_failed = 0;
	f->zstd_error[0] = 0;
	if (w->nspare < SPARES_KEPT) {
		f->next = w->spare;
		w->spare = f;
		w->nspare++;
	} else {
		f->next = w->retired; /* unmapped by the caller (SPARES_AHEAD) */
		w->retired = f;
	}
	pthread_cond_broadcast(&w->room);
}

/* The done frame whose turn it is, taken off the list; NULL when it is not done yet. */
static struct frame *take_next_locked(struct cap_writer *w)
{
	for (struct frame **p = &w->done; *p; p = &(*p)->next)
		if ((*p)->seq == w->next_write) {
			struct frame *f = *p;
			*p = f->next;
			return f;
		}
	return NULL;
}

/* Writes every frame whose turn has come, in order; one thread at a time. Called and
 * returns with the lock held. */
static void write_in_order_locked(struct cap_writer *w)
{
	struct frame *f;

	if (w->writing)
		return; /* that thread will find ours too */
	w->writing = 1;
	while ((f = take_next_locked(w))) {
		pthread_mutex_unlock(&w->lock);
		write_frame(w, f);
		pthread_mutex_lock(&w->lock);
		w->next_write++;
		recycle_locked(w, f);
		pthread_cond_broadcast(&w->written);
	}
	w->writing = 0;
}

/* A frame whose first buffer is mapped with its pages made (MAP_POPULATE), and its
 * output's mapping (pages made as the compressor writes them); NULL when out of
 * memory. By the caller only (SPARES_AHEAD). */
static struct frame *made_frame(void)
{
	struct frame *f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	void *m = mmap(NULL, FRAME_MAP, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	void *o = m == MAP_FAILED ? MAP_FAILED
				  : mmap(NULL, OUT_MAP, PROT_READ | PROT_WRITE,
					 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (o == MAP_FAILED) {
		if (m != MAP_FAILED)
			munmap(m, FRAME_MAP);
		free(f);
		return NULL;
	}
	f->raw = m;
	f->raw_cap = FRAME_MAP;
	f->raw_mapped = 1;
	f->out = o;
	f->out_cap = OUT_MAP;
	f->out_mapped = 1;
	return f;
}

/* The written frames beyond the spares kept, taken for the caller to free. */
static struct frame *take_retired(struct cap_writer *w)
{
	pthread_mutex_lock(&w->lock);
	struct frame *r = w->retired;
	w->retired = NULL;
	pthread_mutex_unlock(&w->lock);
	return r;
}

void cap_writer_tidy(struct cap_writer *w)
{
	frames_free(take_retired(w));
	pthread_mutex_lock(&w->lock);
	unsigned want = w->stop || w->nspare >= SPARES_AHEAD ? 0 : SPARES_AHEAD - w->nspare;
	pthread_mutex_unlock(&w->lock);
	for (struct frame *f; want-- && (f = made_frame());) {
		pthread_mutex_lock(&w->lock);
		f->next = w->spare;
		w->spare = f;
		w->nspare++;
		pthread_mutex_unlock(&w->lock);
	}
}

struct worker_arg {
	struct cap_writer *w;
	unsigned k;
};

static void *worker(void *p)
{
	struct worker_arg *a = p;
	struct cap_writer *w = a->w;
	unsigned k = a->k;

	free(a);
	/* Below the thread that drains the rings: it must keep up with the program, while
	 * compressing can catch up from the staged frames after a burst. */
	pid_t tid = (pid_t)syscall(SYS_gettid);
	setpriority(PRIO_PROCESS, (id_t)tid, WORKER_NICE);
	int idle = 0;
	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->pending && !w->stop)
			pthread_cond_wait(&w->work, &w->lock);
		if (!w->pending)
			break;
		struct frame *f = w->pending;
		w->pending = f->next;
		if (!w->pending)
			w->pending_tail = NULL;
		/* Only what no one else wants of the CPU while little is staged: on a 2-core
		 * machine the drain loop and the compressing share the core the program
		 * leaves, and even at nice 10 compressing took enough of it during a burst
		 * that the rings overflowed. Half the staging used, the end near, or an
		 * error: nice 10 again, so that a busy machine cannot starve it for good. */
		int want_idle = w->staged < STAGED_MAX / 2 && !w->stop && !w->flushing &&
				!w->hurry;
		pthread_mutex_unlock(&w->lock);
		if (want_idle != idle) {
			struct sched_param none = {0};
			if (!sched_setscheduler(tid, want_idle ? SCHED_IDLE : SCHED_OTHER, &none)) {
				idle = want_idle;
				if (!idle)
					setpriority(PRIO_PROCESS, (id_t)tid, WORKER_NICE);
			}
		}
		if (!atomic_load(&w->err))
			compress_frame(w, k, f);
		pthread_mutex_lock(&w->lock);
		f->next = w->done;
		w->done = f;
		write_in_order_locked(w);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* A frame for the caller to fill: a spare, else a new one. */
static struct frame *fresh_frame(struct cap_writer *w)
{
	struct frame *f = NULL;

	frames_free(take_retired(w));
	pthread_mutex_lock(&w->lock);
	if (w->spare) {
		f = w->spare;
		w->spare = f->next;
		w->nspare--;
	}
	pthread_mutex_unlock(&w->lock);
	if (!f)
		f = made_frame();
	if (!f)
		f = calloc(1, sizeof(*f));
	if (f)
		f->next = NULL;
	return f;
}

static int context(struct cap_writer *w, unsigned k);

/* The caller, waiting for room or for every frame written, compresses a frame no worker
 * has taken yet itself: the workers run at SCHED_IDLE while little is staged, and a
 * thread of an unprivileged user cannot leave it again (RLIMIT_NICE), so on a busy
 * machine they may get no CPU and the end of a run would wait on them for good. Called
 * and returns with the lock held; 1 if it took one. */
static int steal_locked(struct cap_writer *w)
{
	struct frame *f = w->pending;
	if (!f || w->stealing)
		return 0;
	w->pending = f->next;
	if (!w->pending)
		w->pending_tail = NULL;
	w->stealing = 1;
	pthread_mutex_unlock(&w->lock);
	if (!atomic_load(&w->err)) {
		if (context(w, THIEF))
			f->zstd_failed = ENOMEM;
		else
			compress_frame(w, THIEF, f);
	}
	pthread_mutex_lock(&w->lock);
	w->stealing = 0;
	f->next = w->done;
	w->done = f;
	write_in_order_locked(w);
	return 1;
}

/* Hands the current frame to the workers (or compresses and writes it here when there
 * are none), waiting while STAGED_MAX bytes are in flight. */
static int hand_over(struct cap_writer *w)
{
	struct frame *f = w->cur;

	if (!f || !f->raw_len)
		return 0;
	pthread_mutex_lock(&w->lock);
	while (w->staged && w->staged + f->raw_cap > STAGED_MAX && !atomic_load(&w->err))
		if (!steal_locked(w))
			pthread_cond_wait(&w->room, &w->lock);
	f->seq = w->next_seq++;
	w->staged += f->raw_cap;
	if (w->nworkers) {
		if (w->pending_tail)
			w->pending_tail->next = f;
		else
			w->pending = f;
		w->pending_tail = f;
		pthread_cond_signal(&w->work);
		pthread_mutex_unlock(&w->lock);
	} else {
		pthread_mutex_unlock(&w->lock);
		compress_frame(w, 0, f);
		pthread_mutex_lock(&w->lock);
		f->next = w->done;
		w->done = f;
		write_in_order_locked(w);
		pthread_mutex_unlock(&w->lock);
	}
	w->cur = fresh_frame(w);
	if (!w->cur)
		return fail(w, ENOMEM, "buffering records for", NULL);
	return failed(w) ? -1 : 0;
}

unsigned cap_writer_workers(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	/* a quarter of the machine at most: the program being profiled comes first */
	long n = cpus / 4;
	return n < 1 ? 1 : n > MAX_WORKERS ? MAX_WORKERS : (unsigned)n;
}

static void writer_free(struct cap_writer *w)
{
	struct frame *f, *next;

	if (w->fd >= 0)
		close(w->fd);
	for (unsigned k = 0; k <= THIEF; k++) {
		ZSTD_freeCCtx(w->cctx[k]);
	}
	frame_free(w->cur);
	for (f = w->spare; f; f = next) {
		next = f->next;
		frame_free(f);
	}
	frames_free(w->retired);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->work);
	pthread_cond_destroy(&w->room);
	pthread_cond_destroy(&w->written);
	free(w->path);
	free(w);
}

/* Compressing context k, made if it is not yet. 0 or -1. */
static int context(struct cap_writer *w, unsigned k)
{
	if (w->cctx[k])
		return 0;
	w->cctx[k] = ZSTD_createCCtx();
	if (!w->cctx[k])
		return -1;
	/* Level 1: the collector compresses while the application runs; the checksum lets
	 * the reader tell a damaged frame from a good one. */
	size_t r = ZSTD_CCtx_setParameter(w->cctx[k], ZSTD_c_compressionLevel, 1);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(w->cctx[k], ZSTD_c_checksumFlag, 1);
	return ZSTD_isError(r) ? -1 : 0;
}

static int writer_setup(struct cap_writer *w, unsigned n)
{
	for (unsigned k = 0; k < n; k++)
		if (context(w, k))
			return -1;
	w->cur = calloc(1, sizeof(*w->cur));
	return w->cur ? 0 : -1;
}

/* Without threads the writer still works: frames are compressed and written inline. */
static void start_workers(struct cap_writer *w, unsigned n)
{
	for (unsigned k = 0; k < n; k++) {
		struct worker_arg *a = malloc(sizeof(*a));
		if (!a)
			break;
		a->w = w;
		a->k = k;
		if (pthread_create(&w->workers[k], NULL, worker, a)) {
			free(a);
			break;
		}
		w->nworkers++;
	}
}

struct cap_writer *cap_writer_open(const char *path, char *err, size_t errlen)
{
	return cap_writer_open_workers(path, cap_writer_workers(), err, errlen);
}

struct cap_writer *cap_writer_open_workers(const char *path, unsigned n, char *err,
					   size_t errlen)
{
	/* O_NOFOLLOW: never write through a link planted at the name */
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);

	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	return cap_writer_fdopen(fd, path, n, err, errlen);
}

struct cap_writer *cap_writer_fdopen(int fd, const char *path, unsigned n, char *err,
				     size_t errlen)
{
	struct cap_file_header h;
	struct cap_writer *w = calloc(1, sizeof(*w));

	if (!w || !(w->path = strdup(path))) {
		snprintf(err, errlen, "%s: %s", path, strerror(ENOMEM));
		free(w);
		close(fd);
		return NULL;
	}
	w->fd = -1;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->work, NULL);
	pthread_cond_init(&w->room, NULL);
	pthread_cond_init(&w->written, NULL);
	if (n > MAX_WORKERS)
		n = MAX_WORKERS;
	w->fd = fd;
	if (writer_setup(w, n ? n : 1)) {
		snprintf(err, errlen, "%s: cannot set up zstd compression", path);
		writer_free(w);
		return NULL;
	}
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, CAP_FILE_MAGIC, sizeof(h.magic));
	h.version = CAP_VERSION;
	if (w->fd < 0 || write_all(w->fd, (const unsigned char *)&h, sizeof(h))) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		writer_free(w);
		errno = e;
		return NULL;
	}
	w->bytes = sizeof(h);
	start_workers(w, n);
	return w;
}

int cap_writer_help(struct cap_writer *w)
{
	pthread_mutex_lock(&w->lock);
	int did = steal_locked(w);
	pthread_mutex_unlock(&w->lock);
	return did;
}

int cap_writer_hurry(struct cap_writer *w, int on)
{
	pthread_mutex_lock(&w->lock);
	w->hurry = on;
	pthread_mutex_unlock(&w->lock);
	if (failed(w))
		return -1;
	return on ? hand_over(w) : 0;
}

int cap_flush(struct cap_writer *w)
{
	if (failed(w))
		return -1;
	pthread_mutex_lock(&w->lock);
	w->flushing++;
	pthread_mutex_unlock(&w->lock);
	int rc = hand_over(w);
	pthread_mutex_lock(&w->lock);
	while (!rc && w->next_write < w->next_seq)
		if (!steal_locked(w))
			pthread_cond_wait(&w->written, &w->lock);
	w->flushing--;
	pthread_mutex_unlock(&w->lock);
	return rc || failed(w) ? -1 : 0;
}

static int append(struct cap_writer *w, const void *p, size_t n)
{
	struct frame *f = w->cur;

	if (!f->raw && f->raw_len + n <= FRAME_MAP) {
		void *m = mmap(NULL, FRAME_MAP, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (m != MAP_FAILED) {
			f->raw = m;
			f->raw_cap = FRAME_MAP;
			f->raw_mapped = 1;
		}
	}
	if (f->raw_len + n > f->raw_cap) {
		size_t cap = f->raw_cap ? f->raw_cap : CAP_FRAME_TARGET + 4096;
		unsigned char *q;
		while (cap < f->raw_len + n)
			cap *= 2;
		q = f->raw_mapped ? malloc(cap) : realloc(f->raw, cap);
		if (!q)
			return fail(w, ENOMEM, "buffering records for", NULL);
		if (f->raw_mapped) {
			memcpy(q, f->raw, f->raw_len);
			munmap(f->raw, f->raw_cap);
			f->raw_mapped = 0;
		}
		f->raw = q;
		f->raw_cap = cap;
	}
	if (n)
		memcpy(f->raw + f->raw_len, p, n);
	f->raw_len += n;
	return 0;
}

int cap_writev(struct cap_writer *w, uint32_t type, const struct cap_piece *pieces, int n)
{
	static const unsigned char zeros[8];
	struct cap_rec_hdr rh;
	size_t len = 0, rec;

	if (failed(w))
		return -1;
	for (int i = 0; i < n; i++) {
		if (pieces[i].len > UINT32_MAX || len + pieces[i].len > UINT32_MAX) {
			errno = EMSGSIZE;
			return -1;
		}
		len += pieces[i].len;
	}
	rec = sizeof(rh) + CAP_PAD8(len);
	if (rec > CAP_MAX_FRAME_RAW) {
		/* Not sticky: the file is still fine, only this record cannot be stored. */
		errno = EMSGSIZE;
		return -1;
	}
	if (w->cur->raw_len + rec > CAP_MAX_FRAME_RAW && hand_over(w))
		return -1;
	rh.type = type;
	rh.len = (uint32_t)len;
	if (append(w, &rh, sizeof(rh)))
		return -1;
	for (int i = 0; i < n; i++)
		if (append(w, pieces[i].p, pieces[i].len))
			return -1;
	if (append(w, zeros, CAP_PAD8(len) - len))
		return -1;
	if (w->cur->raw_len >= CAP_FRAME_TARGET)
		return hand_over(w);
	return 0;
}

int cap_write2(struct cap_writer *w, uint32_t type, const void *head, size_t head_len,
	       const void *tail, size_t tail_len)
{
	struct cap_piece pieces[2] = {{head, head_len}, {tail, tail_len}};
	return cap_writev(w, type, pieces, 2);
}

int cap_write(struct cap_writer *w, uint32_t type, const void *payload, size_t len)
{
	return cap_write2(w, type, payload, len, NULL, 0);
}

int cap_writer_close(struct cap_writer *w)
{
	int rc = cap_flush(w), e = errno;

	pthread_mutex_lock(&w->lock);
	w->stop = 1;
	pthread_cond_broadcast(&w->work);
	pthread_mutex_unlock(&w->lock);
	for (unsigned k = 0; k < w->nworkers; k++)
		pthread_join(w->workers[k], NULL);
	if (close(w->fd) && !rc) {
		e = errno;
		rc = fail(w, e, "closing", NULL);
	}
	w->fd = -1;
	writer_free(w);
	errno = e;
	return rc;
}

const char *cap_writer_error(const struct cap_writer *w)
{
	return atomic_load(&w->err) ? w->msg : NULL;
}

uint64_t cap_writer_bytes(const struct cap_writer *w)
{
	struct cap_writer *m = (struct cap_writer *)w;
	pthread_mutex_lock(&m->lock);
	uint64_t b = m->bytes;
	pthread_mutex_unlock(&m->lock);
	return b;
}

void cap_writer_sizes(const struct cap_writer *w, uint64_t *written, uint64_t *raw_written,
		      uint64_t *raw_pending)
{
	struct cap_writer *m = (struct cap_writer *)w;
	pthread_mutex_lock(&m->lock);
	*written = m->bytes;
	*raw_written = m->raw_written;
	*raw_pending = m->staged + (m->cur ? m->cur->raw_len : 0);
	pthread_mutex_unlock(&m->lock);
}
