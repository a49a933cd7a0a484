/* Which process images the outputs fold away by default: the launchers a program is
 * started through (pyenv's shims, `env`, `sh -c 'exec ...'`, a launch script), so one
 * `python3` reads as one process, not forty. A light pass over the capture reads only
 * the process records and the events' times; the rule (docs/FORMATS.md, "Folded
 * launchers") is about exec, and only ever folds a process that did little:
 *
 *  - an image that exec'd (a later CAP_PROCESS of its pid with exec_seq > 0) is folded
 *    into the image it became: that pid keeps its row and track, under its last image;
 *  - a process forked by a folded image is a helper of it (a shim's `$(readlink ...)`)
 *    and folded, with all of its images, when it ended and all of its events ended
 *    before that image did (exec'd, or, for a helper's own image, ended): the launcher
 *    waited for it. Its end as the collector saw it must also be within 100 ms of that
 *    (the collector notices ends every 10 ms), so a quiet background child (`sleep 100 &`
 *    before `exec`) is shown. A child of the program itself (a DataLoader worker, an MPI
 *    rank, any fork of the last image) is never folded.
 *
 * Either way an image is folded only when it is light: at most FOLD_MAX_EVENTS events
 * (pyenv's heaviest shim image makes 6,675) and none but allocator calls (no range,
 * mark, step, counter, framework, GPU or traced call). A program that worked and then
 * exec'd, or a helper that prepared data, is shown: folding once hid 99% of such a run.
 *
 * Folded images stay in the capture; their own events are left out of the tables and
 * the trace and counted in the tables' header; --all-processes shows them. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "formats/capture/capture_internal.h"
#include "formats/capture/capture_source.h"
#include "formats/model/model.h"
#include "formats/util/vec.h"

#define FOLD_END_SLACK_NS 100000000ull /* 100 ms: see the rule above */
#define FOLD_MAX_EVENTS 10000
#define FOLD_OOM 3 /* the visitor's "stop": not a cap_read result */

struct fimg {
	uint32_t source, pid, ppid, exec_seq;
	int ended, helper;
	int worked; /* more than FOLD_MAX_EVENTS events, or one not an allocator call */
	uint64_t start_ns, end_ns, last_t, events;
	int64_t next;  /* the pid's next image (an exec when its exec_seq > 0), else -1 */
	int64_t first; /* the first image of its process */
};

struct fold_read {
	struct fimg *img;
	size_t n, cap;
	struct u64map cur;   /* source << 32 | pid -> its latest image + 1 */
	struct u64map first; /* source << 32 | pid -> its first image + 1 (its list's head) */
	struct cap_sources sources; /* several captures read as one: pids are per source */
};

static uint64_t key(uint32_t source, uint32_t pid)
{
	return (uint64_t)source << 32 | pid;
}

static struct fimg *current(struct fold_read *r, uint32_t pid)
{
	uint64_t *v = u64map_find(&r->cur, key(r->sources.cur, pid));
	return v ? &r->img[*v - 1] : NULL;
}

/* An events record of pid's current image whose latest time is last, with count events
 * (stacks and losses left out), some of them not allocator calls when work. */
static void events_until(struct fold_read *r, uint32_t pid, uint64_t last, uint64_t count,
			 int work)
{
	struct fimg *f = current(r, pid);
	if (!f)
		return;
	if (last > f->last_t)
		f->last_t = last;
	f->events += count;
	if (work || f->events > FOLD_MAX_EVENTS)
		f->worked = 1;
}

int fold_event_counts(const struct prof_event *e)
{
	return e->type != PROF_EV_STACK && e->type != PROF_EV_LOST;
}

int fold_event_is_work(const struct prof_event *e)
{
	return fold_event_counts(e) && e->cat != PROF_CAT_MEMORY && e->cat != PROF_CAT_LOST;
}

/* One record, its payload in two pieces (the collector's writes: a struct then bytes;
 * a reader's: all in head). */
static int fold_record(struct fold_read *r, uint32_t type, const void *p, size_t hlen,
		       const void *tail)
{
	int created;

	if (type == CAP_SESSION)
		return cap_sources_session(&r->sources, p, (uint32_t)hlen) < 0 ? FOLD_OOM : 0;
	if (type == CAP_PROCESS) {
		struct cap_process cp;
		memcpy(&cp, p, sizeof(cp));
		struct fimg *cur = current(r, cp.pid);
		if ((cp.flags & CAP_PROCESS_CONTINUED) && cur && !cur->ended &&
		    cur->exec_seq == cp.exec_seq)
			return 0; /* a later part's repeat (model.c skips it alike) */
		if (VEC_RESERVE(r->img, r->cap, r->n + 1))
			return FOLD_OOM;
		struct fimg *f = &r->img[r->n];
		memset(f, 0, sizeof(*f));
		f->source = r->sources.cur;
		f->pid = cp.pid;
		f->ppid = cp.ppid;
		f->exec_seq = cp.exec_seq;
		f->start_ns = cp.start_ns;
		f->next = -1;
		f->first = (int64_t)r->n;
		struct fimg *prev = current(r, cp.pid);
		if (prev) {
			prev->next = (int64_t)r->n;
			if (cp.exec_seq > 0)
				f->first = prev->first;
		}
		uint64_t *c = u64map_upsert(&r->cur, key(f->source, cp.pid), &created);
		uint64_t *h = c ? u64map_upsert(&r->first, key(f->source, cp.pid), &created) : NULL;
		if (!h)
			return FOLD_OOM;
		if (created)
			*h = r->n + 1;
		*c = ++r->n;
	} else if (type == CAP_PROCESS_END) {
		struct cap_process_end pe = {0};
		memcpy(&pe, p, hlen < sizeof(pe) ? hlen : sizeof(pe)); /* older: no cpu_ns */
		struct fimg *f = current(r, pe.pid);
		if (f) {
			f->ended = 1;
			f->end_ns = pe.end_ns;
		}
	} else if (type == CAP_EVENTS) {
		struct cap_events ce;
		memcpy(&ce, p, sizeof(ce));
		const struct fimg *f = current(r, ce.pid);
		if (!f || f->worked)
			return 0; /* nothing of its events changes the fold any more */
		const struct prof_event *ev = hlen > sizeof(ce)
			? (const struct prof_event *)((const char *)p + sizeof(ce))
			: tail; /* the length was checked by the reader, or made by the writer */
		uint64_t last = 0, counted = 0;
		int work = 0;
		for (uint32_t i = 0; i < ce.count; i++) {
			uint64_t t = ev[i].t1 > ev[i].t0 ? ev[i].t1 : ev[i].t0;
			if (t > last)
				last = t;
			counted += (uint64_t)fold_event_counts(&ev[i]);
			work |= fold_event_is_work(&ev[i]);
		}
		if (ce.count)
			events_until(r, ce.pid, last, counted, work);
	}
	return 0;
}

static int visit(void *ctx, uint32_t type, const void *p, uint32_t len)
{
	return fold_record(ctx, type, p, len, NULL);
}

static int execd(const struct fold_read *r, size_t i)
{
	return r->img[i].next >= 0 && r->img[r->img[i].next].exec_seq > 0;
}

/* An image the fold may hide: it exec'd, and did little. */
static int foldable(const struct fold_read *r, size_t i)
{
	return execd(r, i) && !r->img[i].worked;
}

/* The image of pid current at time t (the latest started by then), or -1. */
static int64_t image_at(const struct fold_read *r, uint32_t source, uint32_t pid, uint64_t t)
{
	const uint64_t *h = u64map_find(&r->first, key(source, pid));
	int64_t at = -1;

	for (int64_t i = h ? (int64_t)*h - 1 : -1; i >= 0; i = r->img[i].next)
		if (r->img[i].start_ns <= t)
			at = i;
	return at;
}

/* Whether process (first image p0) is a helper its parent's folded image waited for. */
static int is_helper(const struct fold_read *r, const uint8_t *folded, size_t p0)
{
	const struct fimg *p = &r->img[p0];
	int64_t w = image_at(r, p->source, p->ppid, p->start_ns);

	if (w < 0 || !folded[w])
		return 0;
	const struct fimg *W = &r->img[w];
	uint64_t bound;
	if (execd(r, (size_t)w))
		bound = r->img[W->next].start_ns;
	else if (W->ended)
		bound = W->end_ns;
	else
		return 0;
	size_t i = p0;
	for (;;) {
		if (r->img[i].last_t >= bound || r->img[i].worked)
			return 0;
		if (!execd(r, i))
			break;
		i = (size_t)r->img[i].next;
	}
	return r->img[i].ended && r->img[i].end_ns <= bound + FOLD_END_SLACK_NS;
}

/* The fold of the records seen: 0, or -1 when out of memory. */
static int decide(struct fold_read *r, struct model_fold *f)
{
	memset(f, 0, sizeof(*f));
	f->folded = calloc(r->n ? r->n : 1, 1);
	if (!f->folded)
		return -1;
	f->n = r->n;
	for (size_t i = 0; i < r->n; i++)
		f->folded[i] = (uint8_t)foldable(r, i);
	/* helpers of helpers: until nothing changes (each round folds at least one more) */
	for (int changed = 1; changed;) {
		changed = 0;
		for (size_t i = 0; i < r->n; i++) {
			if ((size_t)r->img[i].first != i || r->img[i].helper ||
			    !is_helper(r, f->folded, i))
				continue;
			r->img[i].helper = changed = 1;
			f->helpers++;
			for (int64_t j = (int64_t)i; j >= 0;
			     j = execd(r, (size_t)j) ? r->img[j].next : -1)
				f->folded[j] = 1;
		}
	}
	for (size_t i = 0; i < r->n; i++)
		f->images += f->folded[i] && !r->img[r->img[i].first].helper;
	for (size_t i = 0; i < r->n; i++)
		r->img[i].helper = 0; /* decided again later from the same state, alike */
	return 0;
}

static void fold_read_free(struct fold_read *r)
{
	free(r->img);
	u64map_free(&r->cur);
	u64map_free(&r->first);
	cap_sources_free(&r->sources);
}

/* Several captures read as one (each a whole session's file): their collectors' own
 * decisions, one after the other in reading order, as the CAP_PROCESS records come. 0, or
 * -1 when a file has none (a rotation's earlier parts, a damaged capture): the pass
 * decides then. */
static int fold_from_ends(struct model_fold *f, const char *dir)
{
	char **names;
	size_t n;
	if (cap_parts(dir, &names, &n))
		return -1;
	int rc = n ? 0 : -1;
	for (size_t i = 0; i < n && !rc; i++) {
		struct model_fold one;
		uint8_t *all;
		if (model_fold_from_end(&one, names[i])) {
			rc = -1;
			break;
		}
		if (!(all = realloc(f->folded, f->n + one.n + 1))) {
			rc = -1;
		} else {
			memcpy(all + f->n, one.folded, one.n);
			f->folded = all;
			f->n += one.n;
			f->images += one.images;
			f->helpers += one.helpers;
		}
		model_fold_free(&one);
	}
	cap_parts_free(names, n);
	if (rc)
		model_fold_free(f);
	return rc;
}

int model_fold_read(struct model_fold *f, const char *path, char *err, size_t errlen)
{
	struct fold_read r;
	int rc;

	memset(f, 0, sizeof(*f));
	/* the collector's own decision, at the capture's end: no pass over the events */
	if (!cap_is_parts(path) ? !model_fold_from_end(f, path) : !fold_from_ends(f, path))
		return CAP_READ_OK;
	memset(&r, 0, sizeof(r));
	u64map_init(&r.cur);
	u64map_init(&r.first);
	cap_sources_init(&r.sources);
	rc = cap_read(path, visit, &r, err, errlen);
	/* a damaged capture's complete frames say enough: fold by them */
	if (rc == CAP_READ_OK || rc == CAP_READ_DAMAGED)
		rc = decide(&r, f) ? FOLD_OOM : CAP_READ_OK;
	if (rc == FOLD_OOM)
		snprintf(err, errlen, "%s: out of memory while reading the capture", path);
	fold_read_free(&r);
	return rc == CAP_READ_OK ? rc : CAP_READ_UNUSABLE;
}

/* ---- the collector's side: the fold decided as the records are written ---- */

struct fold_live {
	struct fold_read r;
	int failed; /* out of memory once: no decision (readers make their own) */
};

struct fold_live *fold_live_new(void)
{
	struct fold_live *l = calloc(1, sizeof *l);
	if (l) {
		u64map_init(&l->r.cur);
		u64map_init(&l->r.first);
		cap_sources_init(&l->r.sources);
	}
	return l;
}

void fold_live_record(struct fold_live *l, uint32_t type, const void *head, size_t hlen,
		      const void *tail)
{
	if (!l->failed && (type == CAP_PROCESS || type == CAP_PROCESS_END || type == CAP_EVENTS))
		l->failed = fold_record(&l->r, type, head, hlen, tail) != 0;
}

void fold_live_events(struct fold_live *l, uint32_t pid, uint64_t last, uint64_t count,
		      int work)
{
	if (!l->failed)
		events_until(&l->r, pid, last, count, work);
}

int fold_live_payload(struct fold_live *l, void **payload, size_t *len)
{
	struct model_fold f;
	if (l->failed || decide(&l->r, &f))
		return -1;
	struct cap_fold h = {.n = (uint32_t)f.n, .images = (uint32_t)f.images,
			     .helpers = (uint32_t)f.helpers};
	unsigned char *p = malloc(sizeof h + f.n);
	if (p) {
		memcpy(p, &h, sizeof h);
		memcpy(p + sizeof h, f.folded, f.n);
	}
	model_fold_free(&f);
	*payload = p;
	*len = sizeof h + h.n;
	return p ? 0 : -1;
}

int fold_live_decide(struct fold_live *l, struct model_fold *f)
{
	return l->failed || decide(&l->r, f) ? -1 : 0;
}

int fold_live_worked(const struct fold_live *l, size_t i)
{
	return !l->failed && i < l->r.n && l->r.img[i].worked;
}

void fold_live_free(struct fold_live *l)
{
	if (l) {
		fold_read_free(&l->r);
		free(l);
	}
}

/* ---- the reader's side: that decision found in the capture's last frame ---- */

#define TAIL_MAX (64u << 10)

/* The frame headers from the file's header to last_at: each where the one before ends,
 * numbered 1, 2, ... up to the last's seq (headers only: a read of 16 bytes each). */
static int frames_whole(int fd, uint64_t last_at, uint32_t last_seq)
{
	uint64_t at = sizeof(struct cap_file_header);
	for (uint32_t seq = 1;; seq++) {
		struct cap_frame_header h;
		if (pread(fd, &h, sizeof h, (off_t)at) != (ssize_t)sizeof h ||
		    h.magic != CAP_FRAME_MAGIC || h.seq != seq)
			return 0;
		if (at == last_at)
			return seq == last_seq;
		at += sizeof h + h.clen;
		if (at > last_at)
			return 0;
	}
}

int model_fold_from_end(struct model_fold *f, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return -1;
	int rc = -1;
	unsigned char *tail = NULL, *raw = NULL;
	/* read as cut short (a dump): its end is not the capture's */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < 32 || cap_read_size_limit)
		goto out;
	size_t n = st.st_size < (off_t)TAIL_MAX ? (size_t)st.st_size : TAIL_MAX;
	tail = malloc(n);
	if (!tail || pread(fd, tail, n, st.st_size - (off_t)n) != (ssize_t)n)
		goto out;
	/* the last frame: a header whose compressed bytes end exactly at the file's end */
	for (size_t at = n - 16; at-- > 0;) {
		if (at + 16 > n)
			break;
		uint32_t h[4];
		memcpy(h, tail + at, sizeof h);
		if (h[0] != CAP_FRAME_MAGIC || (uint64_t)at + 16 + h[1] != n || h[2] > TAIL_MAX)
			continue;
		raw = malloc(h[2] + 1);
		if (!raw)
			goto out;
		size_t got = ZSTD_decompress(raw, h[2] + 1, tail + at + 16, h[1]);
		struct cap_rec_hdr rh;
		struct cap_fold cf;
		if (ZSTD_isError(got) || got != h[2] || got < sizeof rh + sizeof cf)
			goto out;
		memcpy(&rh, raw, sizeof rh);
		memcpy(&cf, raw + sizeof rh, sizeof cf);
		/* the frame holds that record alone, of the length it says */
		if (rh.type != CAP_FOLD || rh.len != sizeof cf + (uint64_t)cf.n ||
		    sizeof rh + CAP_PAD8((size_t)rh.len) != got)
			goto out;
		/* and every frame before it in place, numbered in order: a capture cut and
		 * written on, two files joined, or frames moved, is folded by the pass (whose
		 * CAP_PROCESS records the indexes would not match) */
		if (!frames_whole(fd, (uint64_t)st.st_size - n + at, h[3]))
			goto out;
		memset(f, 0, sizeof *f);
		f->folded = malloc(cf.n ? cf.n : 1);
		if (!f->folded)
			goto out;
		memcpy(f->folded, raw + sizeof rh + sizeof cf, cf.n);
		f->n = cf.n;
		f->images = cf.images;
		f->helpers = cf.helpers;
		rc = 0;
		goto out;
	}
out:
	free(tail);
	free(raw);
	close(fd);
	return rc;
}

void model_fold_free(struct model_fold *f)
{
	free(f->folded);
	memset(f, 0, sizeof(*f));
}

int model_read_folded(struct model *m, struct model_fold *f, const char *path, char *err,
		      size_t errlen)
{
	int rc = model_fold_read(f, path, err, errlen);

	if (rc != CAP_READ_OK)
		return rc;
	m->fold = f;
	return model_read(m, path, err, errlen);
}
