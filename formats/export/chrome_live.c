/* The live Chrome trace (chrome_live.h): pass 1 and the spool as events come, pass 2 from
 * the spool at the end. */
#include "formats/export/chrome_live.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "formats/export/chrome.h"
#include "formats/util/vec.h"

#define SPOOL_BUF (1u << 20) /* bytes written at once */

uint64_t chrome_live_spool_min = 1u << 20; /* records (64 MiB) */
uint64_t chrome_live_recut_every = 65536;

struct spooled {
	uint32_t image, thread;
	uint64_t place; /* in the capture: events record << 32 | index (ties go by it) */
	struct prof_event e;
};
_Static_assert(sizeof(struct spooled) == 64, "a spool record is 64 bytes");
_Static_assert(SPOOL_BUF % sizeof(struct spooled) == 0, "whole records per buffer");

struct chrome_live {
	struct chrome *c;
	struct model *m;
	int fd;
	unsigned char *buf;   /* records not yet written to fd */
	size_t nbuf;
	uint64_t nspool;      /* records in fd and buf */
	uint64_t spool_cap;   /* compacted past this many */
	unsigned cut;         /* complete events of lower duration buckets are not kept */
	uint64_t tie_keep;    /* of the cut's bucket, the first this many can be kept */
	uint64_t recut_at;    /* c->droppable when the cut is looked at again */
	uint64_t unspooled;   /* complete events left out: the trace drops them */
	uint64_t hidden;      /* allocator calls left to the counter tracks */
	int failed;           /* a spool write failed: errno in err_no */
	int err_no;
	int held;             /* another process reads the spool: only appended to */
};

struct chrome_live *chrome_live_new(const struct chrome_options *o, struct model *m,
				    int spool_fd)
{
	struct chrome_live *l = calloc(1, sizeof *l);
	if (!l || !(l->c = chrome_new(o)) || !(l->buf = malloc(SPOOL_BUF))) {
		if (l)
			chrome_free(l->c);
		free(l);
		return NULL;
	}
	l->m = m;
	l->c->pm = l->c->om = m;
	l->fd = spool_fd;
	l->spool_cap = chrome_live_spool_min;
	l->recut_at = chrome_live_recut_every;
	return l;
}

void chrome_live_hold(struct chrome_live *l, int hold)
{
	if (l)
		l->held = hold;
}

void chrome_live_free(struct chrome_live *l)
{
	if (!l)
		return;
	chrome_free(l->c);
	free(l->buf);
	if (l->fd >= 0)
		close(l->fd);
	free(l);
}

static int write_all(int fd, const void *p, size_t n, off_t at)
{
	const unsigned char *q = p;
	while (n) {
		ssize_t w = pwrite(fd, q, n, at);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		q += w;
		n -= (size_t)w;
		at += w;
	}
	return 0;
}

static int flush(struct chrome_live *l)
{
	off_t at = (off_t)((l->nspool - l->nbuf / sizeof(struct spooled)) * sizeof(struct spooled));
	if (l->nbuf && !l->failed && write_all(l->fd, l->buf, l->nbuf, at)) {
		l->failed = 1;
		l->err_no = errno ? errno : EIO;
	}
	l->nbuf = 0;
	return l->failed ? -1 : 0;
}

static int is_droppable(const struct prof_event *e)
{
	return e->type == PROF_EV_COMPLETE && e->cat != PROF_CAT_USER;
}

static unsigned bucket_of(const struct prof_event *e)
{
	return dur_bucket(e->t1 > e->t0 ? e->t1 - e->t0 : 0);
}

/* The size rule over the events so far, with all the room the always-kept ones leave:
 * the end's rule has no more room and no fewer events, so its cut is as high or higher
 * and its ties of the same bucket no more. */
static void recut(struct chrome_live *l)
{
	struct chrome *c = l->c;
	struct dur_rule r;
	dur_rule_pick(&r, c->hist, c->droppable,
		      c->max_events > c->always ? c->max_events - c->always : 0);
	l->cut = r.dropping ? r.bucket : 0;
	l->tie_keep = r.dropping ? r.tie_keep : UINT64_MAX;
	l->recut_at = c->droppable + chrome_live_recut_every;
}

static int by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* The spool's records one buffer at a time: each given to fn, which keeps it (1) or not
 * (0); with keep set, the kept ones are written back in place, in order, and the spool
 * cut to them. 0, or -1 (a read or write failed, out of memory). */
static int spool_pass(struct chrome_live *l, int keep,
		      int (*fn)(struct chrome_live *l, const struct spooled *s, void *ctx), void *ctx)
{
	struct spooled *in = malloc(SPOOL_BUF);
	if (!in)
		return -1;
	size_t per = SPOOL_BUF / sizeof *in;
	uint64_t read_at = 0, kept = 0;
	int rc = 0;
	while (read_at < l->nspool && !rc) {
		size_t n = l->nspool - read_at < per ? (size_t)(l->nspool - read_at) : per;
		if (pread(l->fd, in, n * sizeof *in, (off_t)(read_at * sizeof *in)) !=
		    (ssize_t)(n * sizeof *in)) {
			rc = -1;
			break;
		}
		size_t out = 0;
		for (size_t i = 0; i < n && rc >= 0; i++) {
			int k = fn(l, &in[i], ctx);
			if (k < 0)
				rc = -1;
			else if (k)
				in[out++] = in[i];
		}
		/* kept <= read_at: writing never overtakes reading */
		if (keep && out && !rc &&
		    write_all(l->fd, in, out * sizeof *in, (off_t)(kept * sizeof *in)))
			rc = -1;
		kept += out;
		read_at += n;
	}
	free(in);
	if (keep && !rc && ftruncate(l->fd, (off_t)(kept * sizeof *in)))
		rc = -1;
	if (keep && !rc)
		l->nspool = kept;
	return rc;
}

/* Places of the spooled complete events of one duration bucket. */
struct places {
	unsigned bucket;
	uint64_t *v;
	size_t n, cap;
};

static int collect_places(struct chrome_live *l, const struct spooled *s, void *ctx)
{
	struct places *p = ctx;
	(void)l;
	if (!is_droppable(&s->e) || bucket_of(&s->e) != p->bucket)
		return 0;
	if (VEC_RESERVE(p->v, p->cap, p->n + 1))
		return -1;
	p->v[p->n++] = s->place;
	return 0;
}

/* The end of the first `keep` events (by place) of the spool's bucket b: the place
 * after the last of them (UINT64_MAX when the bucket holds no more than that, 0 when
 * keep is 0). 0, or -1 when out of memory. */
static int tie_end(struct chrome_live *l, unsigned b, uint64_t keep, uint64_t *end)
{
	struct places p = {.bucket = b};
	if (spool_pass(l, 0, collect_places, &p)) {
		free(p.v);
		return -1;
	}
	*end = UINT64_MAX;
	if (p.n > keep) {
		qsort(p.v, p.n, sizeof *p.v, by_u64);
		*end = keep ? p.v[keep - 1] + 1 : 0;
	}
	free(p.v);
	return 0;
}

static int under_cut(struct chrome_live *l, const struct spooled *s, void *ctx)
{
	uint64_t end = *(const uint64_t *)ctx;
	if (!is_droppable(&s->e))
		return 1;
	unsigned b = bucket_of(&s->e);
	if (b > l->cut || (b == l->cut && s->place < end))
		return 1;
	l->unspooled++;
	return 0;
}

/* The spool shares the disk with the capture: it gives up (the end then makes the trace
 * from the capture) before it could take the room the capture needs to go on, i.e. when
 * the disk's free space is less than what it could grow to by the next compaction plus
 * SPOOL_SPARE. */
#define SPOOL_SPARE (1ull << 30)

static int room_left(struct chrome_live *l)
{
	struct statvfs fs;
	if (l->held)
		return 0; /* looked at again at the next compaction */
	uint64_t grow = (l->spool_cap - l->nspool) * sizeof(struct spooled);
	if (fstatvfs(l->fd, &fs) || (uint64_t)fs.f_bavail * fs.f_frsize >= grow + SPOOL_SPARE)
		return 0;
	l->failed = 1;
	l->err_no = ENOSPC;
	if (ftruncate(l->fd, 0)) {
	}
	l->nspool = 0;
	return -1;
}

/* The spool rewritten in place with only what the cut keeps now: of its bucket, the
 * first tie_keep in capture order (the end's rule keeps no more of them, if that bucket
 * is still its cut). */
static int compact(struct chrome_live *l)
{
	uint64_t end = UINT64_MAX;
	if (flush(l))
		return -1;
	if (l->held) { /* rewriting it in place now would change what the reader reads */
		l->spool_cap = 2 * l->nspool;
		return 0;
	}
	recut(l);
	if (!l->cut && l->tie_keep == UINT64_MAX) { /* nothing to leave out yet */
		l->spool_cap = 2 * l->nspool;
		return room_left(l);
	}
	if ((l->tie_keep != UINT64_MAX && tie_end(l, l->cut, l->tie_keep, &end)) ||
	    spool_pass(l, 1, under_cut, &end)) {
		l->failed = 1;
		l->err_no = errno ? errno : ENOMEM;
		return -1;
	}
	l->spool_cap = 2 * l->nspool > chrome_live_spool_min ? 2 * l->nspool : chrome_live_spool_min;
	return room_left(l);
}

static int spool(struct chrome_live *l, uint32_t image, uint32_t thread, uint64_t place,
		 const struct prof_event *e)
{
	struct spooled rec = {.image = image, .thread = thread, .place = place, .e = *e};
	if (l->nbuf + sizeof rec > SPOOL_BUF && flush(l))
		return -1;
	memcpy(l->buf + l->nbuf, &rec, sizeof rec);
	l->nbuf += sizeof rec;
	l->nspool++;
	return 0;
}

int chrome_live_events(void *ctx, struct model *m, uint32_t image, uint32_t thread,
		       const struct prof_event *ev, uint32_t n)
{
	struct chrome_live *l = ctx;
	if (l->failed)
		return 0; /* said at the end; the tables go on */
	for (uint32_t i = 0; i < n; i++) {
		const struct prof_event *e = &ev[i];
		int kind = chrome_plan_one(l->c, m, image, e);
		if (kind < 0)
			return -1;
		if (!kind) {
			l->hidden += e->type == PROF_EV_COMPLETE && e->cat == PROF_CAT_MEMORY;
			continue;
		}
		if (kind == 1 && bucket_of(e) < l->cut) {
			l->unspooled++;
			continue;
		}
		if (spool(l, image, thread, m->events_record << 32 | (m->ev_first + i), e))
			return 0;
	}
	if (l->c->droppable >= l->recut_at)
		recut(l);
	if (l->nspool > l->spool_cap)
		compact(l);
	return 0;
}

/* The spool through pass 2's writer, a run of one thread's records at a time. */
struct run {
	struct prof_event *ev;
	uint64_t *place;
	uint32_t image, thread, n;
};

static int write_run(struct chrome_live *l, struct run *r)
{
	l->c->ev_place = r->place;
	int rc = r->n ? chrome_write_events(l->c, l->m, r->image, r->thread, r->ev, r->n) : 0;
	l->c->ev_place = NULL;
	r->n = 0;
	return rc;
}

static int add_to_run(struct chrome_live *l, const struct spooled *s, void *ctx)
{
	struct run *r = ctx;
	if ((r->n && (s->image != r->image || s->thread != r->thread)) ||
	    r->n == SPOOL_BUF / sizeof *r->ev)
		if (write_run(l, r))
			return -1;
	r->image = s->image;
	r->thread = s->thread;
	r->ev[r->n] = s->e;
	r->place[r->n++] = s->place;
	return 0;
}

static int replay(struct chrome_live *l)
{
	struct run r = {.ev = malloc(SPOOL_BUF), .place = malloc(SPOOL_BUF)};
	int rc = r.ev && r.place ? spool_pass(l, 0, add_to_run, &r) : -1;
	if (!rc)
		rc = write_run(l, &r);
	free(r.ev);
	free(r.place);
	return rc;
}

int chrome_live_write(struct chrome_live *l, const struct model_fold *fold, const char *damage,
		      const char *json_path, FILE *out, struct output_summary *sum, char *err,
		      size_t errlen)
{
	struct chrome *c = l->c;
	memset(sum, 0, sizeof *sum);
	if (flush(l)) {
		fclose(out);
		snprintf(err, errlen, "%s: its spool could not be written (%s)", json_path,
			 strerror(l->err_no));
		return 2;
	}
	c->fold.images = fold ? fold->images : 0;
	c->fold.helpers = fold ? fold->helpers : 0;
	c->damage = damage;
	int rc = chrome_plan_done(c) ? -1 : 0;
	/* the rule's ties: the first in the capture, as a read of it keeps them */
	c->tie_place_end = UINT64_MAX;
	if (!rc && c->rule.dropping)
		rc = tie_end(l, c->rule.bucket, c->rule.tie_keep, &c->tie_place_end);
	if (!rc)
		rc = chrome_write_begin(c, out);
	if (!rc)
		rc = replay(l);
	c->dropped += l->unspooled;
	c->alloc.hidden += l->hidden;
	if (!rc)
		rc = chrome_write_end(c);
	else if (c->w.buf)
		jw_finish(&c->w);
	int closed = fclose(out);
	if (rc || closed) {
		snprintf(err, errlen, "writing %s: %s", json_path,
			 strerror(c->w.err ? c->w.err : l->err_no ? l->err_no : errno ? errno : EIO));
		return 2;
	}
	chrome_summarize(c, sum);
	if (damage) {
		snprintf(err, errlen, "%s", damage);
		return 1;
	}
	return 0;
}
