/* The raw capture reader. Each frame is checked whole (magic, lengths, zstd checksum,
 * record lengths) before any of its records is handed to the visitor, so a damaged
 * frame is never half visited and every complete frame before it is. */
#include "formats/capture/capture.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>
#include <zstd.h>

#include "formats/capture/capture_internal.h"
#include "formats/capture/event_pack.h"

/* A packed event takes 5 bytes at least (its four column bytes and a t0 varint), after
 * the streams' lengths. */
#define PACKED_MIN_EVENT 5
/* The most a frame may hold once its packed events are unpacked. */
#define EXPANDED_MAX (1ull << 30)

struct reader {
	const char *path;
	int fd;
	uint64_t size;  /* file size when opened */
	uint64_t pos;   /* offset of the current frame */
	uint64_t frame; /* 1-based number of the current frame */
	int numbered;   /* the first frame had a sequence number: every frame must */
	ZSTD_DCtx *dctx;
	unsigned char *cbuf, *raw, *exp; /* exp: a frame with its packed events unpacked */
	size_t ccap, rawcap, expcap;
	char *err;
	size_t errlen;
};

/* A damage line: "<path>: frame N at byte P <what>; K complete frames read". */
static int damaged(struct reader *r, const char *fmt, ...)
{
	char what[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(r->err, r->errlen, "%s: frame %llu at byte %llu %s; %llu complete frame%s read",
		 r->path, (unsigned long long)r->frame, (unsigned long long)r->pos, what,
		 (unsigned long long)(r->frame - 1), r->frame == 2 ? "" : "s");
	return CAP_READ_DAMAGED;
}

static int read_exact(int fd, void *p, size_t n)
{
	unsigned char *q = p;

	while (n > 0) {
		ssize_t got = read(fd, q, n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return -1;
		q += got;
		n -= (size_t)got;
	}
	return 0;
}

static int grow(unsigned char **buf, size_t *cap, size_t need)
{
	unsigned char *p;

	if (need <= *cap)
		return 0;
	p = realloc(*buf, need);
	if (!p)
		return -1;
	*buf = p;
	*cap = need;
	return 0;
}

/* Minimum (or exact) payload length per record type; a payload that cannot hold its
 * fixed part means the frame is damaged. */
static int record_len_ok(uint32_t type, const unsigned char *payload, uint32_t len)
{
	struct cap_events ev;

	switch (type) {
	case CAP_PROCESS:
		return len >= sizeof(struct cap_process);
	case CAP_PROCESS_END: /* cpu_ns came later: a record may end before it */
		return len >= offsetof(struct cap_process_end, cpu_ns);
	case CAP_THREAD:
		return len >= sizeof(struct cap_thread);
	case CAP_JOB:
		return len >= sizeof(struct cap_job);
	case CAP_DRAINED:
		return len >= sizeof(struct cap_drained);
	case CAP_STRING:
	case CAP_CATEGORY:
		return len >= sizeof(struct cap_string);
	case CAP_EVENTS:
		if (len < sizeof(ev))
			return 0;
		memcpy(&ev, payload, sizeof(ev));
		return len == sizeof(ev) + (uint64_t)ev.count * sizeof(struct prof_event);
	case CAP_EVENTS_PACKED:
		if (len < sizeof(ev) + CAP_PACKED_LENGTHS)
			return 0;
		memcpy(&ev, payload, sizeof(ev));
		return ev.count <= (len - sizeof(ev) - CAP_PACKED_LENGTHS) / PACKED_MIN_EVENT;
	default:
		return 1; /* session text and unknown (newer) types: any length */
	}
}

static int check_records(struct reader *r, size_t rawlen)
{
	size_t off = 0;

	while (off < rawlen) {
		struct cap_rec_hdr h;
		size_t left = rawlen - off;

		if (left < sizeof(h))
			return damaged(r, "has %zu stray bytes at its end", left);
		memcpy(&h, r->raw + off, sizeof(h));
		if (CAP_PAD8((uint64_t)h.len) > left - sizeof(h) ||
		    !record_len_ok(h.type, r->raw + off + sizeof(h), h.len))
			return damaged(r, "has a record of type %u with a bad length (%u bytes at "
				       "offset %zu, %zu bytes left in the frame)",
				       h.type, h.len, off, left - sizeof(h));
		off += sizeof(h) + CAP_PAD8((size_t)h.len);
	}
	return 0;
}

static int visit_records(const unsigned char *raw, size_t rawlen, cap_visit_fn visit,
			 void *ctx)
{
	size_t off = 0;

	while (off < rawlen) {
		struct cap_rec_hdr h;
		int rc;

		memcpy(&h, raw + off, sizeof(h));
		/* Records are 8-aligned in a malloc'd buffer: payloads can be used in place. */
		rc = visit(ctx, h.type, raw + off + sizeof(h), h.len);
		if (rc)
			return rc;
		off += sizeof(h) + CAP_PAD8((size_t)h.len);
	}
	return 0;
}

/* The frame in r->raw with each packed event record replaced by the CAP_EVENTS record it
 * stands for (unpacked here, in the read-ahead thread where there is one), so visitors
 * see one kind. 0, or a damage result. */
static int unpack_frame(struct reader *r, size_t *rawlen)
{
	size_t off = 0, need = 0, out = 0;
	int any = 0;
	while (off < *rawlen) {
		struct cap_rec_hdr h;
		struct cap_events ev;
		memcpy(&h, r->raw + off, sizeof(h));
		if (h.type == CAP_EVENTS_PACKED) {
			memcpy(&ev, r->raw + off + sizeof(h), sizeof(ev));
			need += sizeof(h) + CAP_PAD8(sizeof(ev) + (uint64_t)ev.count *
							   sizeof(struct prof_event));
			any = 1;
		} else {
			need += sizeof(h) + CAP_PAD8((uint64_t)h.len);
		}
		off += sizeof(h) + CAP_PAD8((size_t)h.len);
	}
	if (!any)
		return 0;
	if (need > EXPANDED_MAX)
		return damaged(r, "holds more events than can be (%zu bytes unpacked)", need);
	if (grow(&r->exp, &r->expcap, need + 1))
		return damaged(r, "cannot be read (out of memory)");
	for (off = 0; off < *rawlen;) {
		struct cap_rec_hdr h;
		memcpy(&h, r->raw + off, sizeof(h));
		const unsigned char *payload = r->raw + off + sizeof(h);
		if (h.type != CAP_EVENTS_PACKED) {
			size_t n = sizeof(h) + CAP_PAD8((size_t)h.len);
			memcpy(r->exp + out, r->raw + off, n);
			out += n;
			off += n;
			continue;
		}
		struct cap_events ev;
		memcpy(&ev, payload, sizeof(ev));
		size_t body = sizeof(ev) + (size_t)ev.count * sizeof(struct prof_event);
		struct cap_rec_hdr plain = {.type = CAP_EVENTS, .len = (uint32_t)body};
		memcpy(r->exp + out, &plain, sizeof(plain));
		memcpy(r->exp + out + sizeof(plain), &ev, sizeof(ev));
		if (body > UINT32_MAX ||
		    cap_unpack_events(payload + sizeof(ev), h.len - sizeof(ev), ev.count,
				      (struct prof_event *)(r->exp + out + sizeof(plain) +
							    sizeof(ev))))
			return damaged(r, "has a packed event record that does not unpack (at "
					  "offset %zu)", off);
		memset(r->exp + out + sizeof(plain) + body, 0, CAP_PAD8(body) - body);
		out += sizeof(plain) + CAP_PAD8(body);
		off += sizeof(h) + CAP_PAD8((size_t)h.len);
	}
	unsigned char *b = r->raw;
	size_t c = r->rawcap;
	r->raw = r->exp;
	r->rawcap = r->expcap;
	r->exp = b;
	r->expcap = c;
	*rawlen = out;
	return 0;
}

/* Whether there is a frame at r->pos: within the size known, or, following a capture
 * being written, once the writer says so. */
static int more(struct reader *r)
{
	if (r->pos < r->size)
		return 1;
	if (cap_read_follow)
		r->size = cap_read_follow(r->size);
	return r->pos < r->size;
}

/* Reads, checks and decompresses the frame at r->pos into r->raw; gives its raw length
 * and the offset of the next frame, or returns a damage result. */
static int load_frame(struct reader *r, size_t *rawlen, uint64_t *next)
{
	struct cap_frame_header fh;
	uint64_t remain = r->size - r->pos;
	size_t got;

	if (remain < sizeof(fh))
		return damaged(r, "is truncated (frame header needs %zu bytes, %llu remain)",
			       sizeof(fh), (unsigned long long)remain);
	if (read_exact(r->fd, &fh, sizeof(fh)))
		return damaged(r, "cannot be read (%s)", strerror(errno ? errno : EIO));
	remain -= sizeof(fh);
	if (fh.magic != CAP_FRAME_MAGIC)
		return damaged(r, "has a bad frame magic (0x%08x)", fh.magic);
	if (fh.rawlen > CAP_MAX_FRAME_RAW || fh.clen == 0 ||
	    fh.clen > ZSTD_compressBound(fh.rawlen) + 64)
		return damaged(r, "has impossible lengths (%u compressed, %u raw bytes)", fh.clen,
			       fh.rawlen);
	/* A frame repeated or moved (a copy gone wrong, two writers on one file) has good
	 * checksums: only its number tells. Captures from before numbering have 0s. */
	if (r->frame == 1)
		r->numbered = fh.seq != 0;
	if (r->numbered && fh.seq != r->frame)
		return damaged(r, "is out of sequence (numbered %u)", fh.seq);
	if (!r->numbered && fh.seq)
		return damaged(r, "is numbered %u in a capture without frame numbers", fh.seq);
	if (fh.clen > remain)
		return damaged(r, "is truncated (header says %u bytes, %llu remain)", fh.clen,
			       (unsigned long long)remain);
	if (grow(&r->cbuf, &r->ccap, fh.clen) || grow(&r->raw, &r->rawcap, fh.rawlen + 1))
		return damaged(r, "cannot be read (out of memory)");
	if (read_exact(r->fd, r->cbuf, fh.clen))
		return damaged(r, "cannot be read (%s)", strerror(errno ? errno : EIO));
	/* One more byte of room than announced, so a frame holding more than its header says
	 * is caught as a size mismatch rather than overwriting anything. */
	got = ZSTD_decompressDCtx(r->dctx, r->raw, fh.rawlen + 1, r->cbuf, fh.clen);
	if (ZSTD_isError(got))
		return damaged(r, "is corrupt (zstd: %s)", ZSTD_getErrorName(got));
	if (got != fh.rawlen)
		return damaged(r, "is corrupt (holds %zu bytes, header says %u)", got, fh.rawlen);
	*rawlen = got;
	*next = r->pos + sizeof(fh) + fh.clen;
	int rc = check_records(r, got);
	return rc ? rc : unpack_frame(r, rawlen);
}

static int open_capture(struct reader *r)
{
	struct cap_file_header h;
	struct stat st;

	r->fd = open(r->path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0 || fstat(r->fd, &st)) {
		snprintf(r->err, r->errlen, "%s: %s", r->path, strerror(errno));
		return CAP_READ_UNUSABLE;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(r->err, r->errlen, "%s: not a regular file", r->path);
		return CAP_READ_UNUSABLE;
	}
	r->size = (uint64_t)st.st_size;
	if (cap_read_size_limit && cap_read_size_limit < r->size)
		r->size = cap_read_size_limit;
	if (cap_read_follow) /* the file's size may end in a frame still being written */
		for (r->size = 0; r->size < sizeof(h);) {
			uint64_t was = r->size;
			if ((r->size = cap_read_follow(was)) == was)
				break;
		}
	if (r->size < sizeof(h) || read_exact(r->fd, &h, sizeof(h)) ||
	    memcmp(h.magic, CAP_FILE_MAGIC, sizeof(h.magic))) {
		snprintf(r->err, r->errlen, "%s: not a libprof capture", r->path);
		return CAP_READ_UNUSABLE;
	}
	if (h.version < CAP_VERSION_OLDEST || h.version > CAP_VERSION) {
		snprintf(r->err, r->errlen, "%s: capture version %u is not supported (this "
			 "reader knows versions %u to %u)", r->path, h.version, CAP_VERSION_OLDEST,
			 CAP_VERSION);
		return CAP_READ_UNUSABLE;
	}
	r->pos = sizeof(h);
	r->dctx = ZSTD_createDCtx();
	if (!r->dctx) {
		snprintf(r->err, r->errlen, "%s: out of memory", r->path);
		return CAP_READ_UNUSABLE;
	}
	return 0;
}

/* Frames decompressed by a second thread while the visitor takes the previous one:
 * decompressing is a third to a half of reading a capture, and the machines this runs
 * on have a core to spare for it. Two buffers go back and forth, in frame order. */
struct ahead {
	struct reader *r;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned char *buf[2];
	size_t cap[2], len[2];
	int full[2];
	uint64_t end[2];        /* the file offset after each buffer's frame */
	int done, stop, result; /* result: the load's, once done */
	int done_read;          /* the visitor's result came from the load (damage, or 0) */
};

static void *read_ahead(void *arg)
{
	struct ahead *a = arg;
	struct reader *r = a->r;
	int rc = 0;
	for (unsigned k = 0; more(r); k ^= 1) {
		size_t rawlen = 0;
		uint64_t next = 0;
		rc = load_frame(r, &rawlen, &next);
		if (rc)
			break;
		pthread_mutex_lock(&a->mu);
		while (a->full[k] && !a->stop)
			pthread_cond_wait(&a->cv, &a->mu);
		int stop = a->stop;
		if (!stop) { /* the frame's buffer changes hands; the visitor's comes back */
			unsigned char *b = a->buf[k];
			size_t c = a->cap[k];
			a->buf[k] = r->raw;
			a->cap[k] = r->rawcap;
			r->raw = b;
			r->rawcap = c;
			a->len[k] = rawlen;
			a->end[k] = next;
			a->full[k] = 1;
			pthread_cond_broadcast(&a->cv);
		}
		pthread_mutex_unlock(&a->mu);
		if (stop)
			break;
		r->pos = next;
		r->frame++;
	}
	pthread_mutex_lock(&a->mu);
	a->done = 1;
	a->result = rc;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

/* The frames of an open capture through read_ahead: 0 with the read's result in *out, or
 * -1 when the thread cannot start (the caller reads them itself). */
static int read_pipelined(struct reader *r, cap_visit_fn visit, void *ctx, int *out)
{
	struct ahead a = {.r = r};
	pthread_t t;
	pthread_mutex_init(&a.mu, NULL);
	pthread_cond_init(&a.cv, NULL);
	if (pthread_create(&t, NULL, read_ahead, &a)) {
		pthread_mutex_destroy(&a.mu);
		pthread_cond_destroy(&a.cv);
		return -1;
	}
	int rc = 0;
	uint64_t visited = r->pos; /* the offset the frames visited reach */
	for (unsigned k = 0;; k ^= 1) {
		pthread_mutex_lock(&a.mu);
		while (!a.full[k] && !a.done) {
			if (!cap_read_between) {
				pthread_cond_wait(&a.cv, &a.mu);
				continue;
			}
			struct timespec until;
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_nsec += 20000000;
			if (until.tv_nsec >= 1000000000) {
				until.tv_sec++;
				until.tv_nsec -= 1000000000;
			}
			if (pthread_cond_timedwait(&a.cv, &a.mu, &until) == ETIMEDOUT) {
				pthread_mutex_unlock(&a.mu);
				cap_read_between(visited);
				pthread_mutex_lock(&a.mu);
			}
		}
		int full = a.full[k];
		if (!full) {
			rc = a.result;
			a.done_read = 1;
		}
		pthread_mutex_unlock(&a.mu);
		if (!full)
			break;
		rc = visit_records(a.buf[k], a.len[k], visit, ctx);
		visited = a.end[k];
		if (!rc && cap_read_between)
			cap_read_between(visited);
		if (!rc && cap_read_progress)
			cap_read_progress(visited, r->size);
		pthread_mutex_lock(&a.mu);
		a.full[k] = 0;
		if (rc)
			a.stop = 1;
		pthread_cond_broadcast(&a.cv);
		pthread_mutex_unlock(&a.mu);
		if (rc)
			break;
	}
	pthread_join(t, NULL);
	pthread_mutex_destroy(&a.mu);
	pthread_cond_destroy(&a.cv);
	free(a.buf[0]);
	free(a.buf[1]);
	if (rc && !a.done_read && r->errlen) /* the visitor stopped: no damage to name */
		r->err[0] = 0;
	*out = rc;
	return 0;
}

/* A capture of a few frames is read without a second thread. Compressed frames hold up
 * to ~20 MB of events each once unpacked: one is enough to want it. */
uint64_t cap_read_ahead_min_bytes = 256u << 10;
uint64_t cap_read_size_limit;
uint64_t (*cap_read_follow)(uint64_t known);
void (*cap_read_between)(uint64_t end);
void (*cap_read_progress)(uint64_t at, uint64_t size);

int cap_read_file(const char *path, cap_visit_fn visit, void *ctx, char *err, size_t errlen)
{
	return cap_read_file_ahead(path, visit, ctx, err, errlen, 0);
}

int cap_read_file_ahead(const char *path, cap_visit_fn visit, void *ctx, char *err,
			size_t errlen, int ahead)
{
	struct reader r = { .path = path, .fd = -1, .frame = 1, .err = err, .errlen = errlen };
	int rc;

	if (errlen)
		err[0] = '\0';
	rc = open_capture(&r);
	int piped = 0; /* read by read_pipelined, to the end */
	if (!rc && (ahead || r.size >= cap_read_ahead_min_bytes || cap_read_follow) &&
	    sysconf(_SC_NPROCESSORS_ONLN) > 1)
		piped = !read_pipelined(&r, visit, ctx, &rc);
	while (!piped && !rc && more(&r)) {
		size_t rawlen = 0;
		uint64_t next = 0;

		rc = load_frame(&r, &rawlen, &next);
		if (!rc)
			rc = visit_records(r.raw, rawlen, visit, ctx);
		if (!rc && cap_read_between)
			cap_read_between(next);
		if (!rc && cap_read_progress)
			cap_read_progress(next, r.size);
		r.pos = next;
		r.frame++;
	}
	if (r.fd >= 0)
		close(r.fd);
	ZSTD_freeDCtx(r.dctx);
	free(r.cbuf);
	free(r.raw);
	free(r.exp);
	return rc;
}
