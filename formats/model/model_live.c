/* The live model: records given to the model as they are read, each new image's events
 * and thread names held until the launchers' fold can decide it (model_live.h). */
#include "formats/model/model_live.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/capture/capture_internal.h"
#include "formats/model/model_internal.h"
#include "formats/util/vec.h"

#define LIVE_OOM 3     /* the visitor's stops: not cap_read results */
#define LIVE_GIVE_UP 4 /* an image given as shown exec'd: it is folded after all */
#define CHECK_EVERY_NS 10000000ull /* held images looked at every 10 ms of stream time */

enum { HELD, SHOWN, FOLDED };

struct held_hdr {
	uint32_t type, len;
	uint64_t place; /* of an events record: its place among them (model.events_record) */
};

/* Held records in chunks (struct held_hdr, then the payload, 8-aligned), so that holding
 * more never copies what is held; chunks given back serve the next image held (a buffer
 * that doubled touched twice the memory and moved it: a tenth of the tables child's CPU
 * at 4 M events a second). */
#define HELD_CHUNK (1u << 20)
#define SPARE_HELD 16 /* chunks kept for reuse */
struct held_chunk {
	struct held_chunk *next;
	size_t used, cap;
	unsigned char data[];
};

struct live_img {
	int state;
	int64_t announce; /* its CAP_PROCESS record's index (the fold's), -1: never announced */
	uint64_t start_ns;
	struct held_chunk *held, *held_tail;
	size_t nheld; /* bytes held */
	uint64_t given; /* records given to the model once decided */
};

struct model_live {
	struct model *m;
	struct fold_live *fold;
	struct live_img *img;
	size_t nimg, img_cap;
	size_t nholding; /* images in state HELD with records */
	uint64_t held_bytes, now, last_check;
	uint64_t events_records; /* CAP_EVENTS records read */
	struct held_chunk *spare; /* HELD_CHUNK chunks given back */
	size_t nspare;
	uint32_t gave_up_pid;
};

struct model_live *model_live_new(struct model *m)
{
	struct model_live *l = calloc(1, sizeof *l);
	if (l && !(l->fold = fold_live_new())) {
		free(l);
		return NULL;
	}
	if (l)
		l->m = m;
	return l;
}

static void free_chunks(struct held_chunk *c)
{
	for (struct held_chunk *next; c; c = next) {
		next = c->next;
		free(c);
	}
}

size_t model_live_held_bytes(const struct model_live *l)
{
	return l->held_bytes;
}

void model_live_free(struct model_live *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->nimg; i++)
		free_chunks(l->img[i].held);
	free_chunks(l->spare);
	free(l->img);
	fold_live_free(l->fold);
	free(l);
}

/* Every image the model has, tracked: the ones made since are new and not announced
 * (a pid's events without its process record: never folded, so given at once). */
static int track(struct model_live *l)
{
	if (VEC_RESERVE(l->img, l->img_cap, l->m->nimg))
		return -1;
	for (; l->nimg < l->m->nimg; l->nimg++) {
		memset(&l->img[l->nimg], 0, sizeof *l->img);
		l->img[l->nimg].state = SHOWN;
		l->img[l->nimg].announce = -1;
	}
	return 0;
}

static int give(struct model_live *l, int64_t im, uint32_t type, const void *p, uint32_t len,
		uint64_t place)
{
	l->img[im].given++;
	l->m->events_record = place;
	return type == CAP_EVENTS ? model_events_of(l->m, im, p, len)
				  : model_thread_record_of(l->m, im, p, len);
}

/* An image decided: its held records given to the model, as a folded launcher's or not. */
static int release(struct model_live *l, size_t im, int folded)
{
	struct live_img *li = &l->img[im];
	li->state = folded ? FOLDED : SHOWN;
	l->m->img[im].folded = folded;
	int rc = 0;
	for (struct held_chunk *c = li->held; c && !rc; c = c->next)
		for (size_t off = 0; off < c->used && !rc;) {
			struct held_hdr h;
			memcpy(&h, c->data + off, sizeof h);
			rc = give(l, (int64_t)im, h.type, c->data + off + sizeof h, h.len, h.place);
			off += sizeof h + CAP_PAD8((size_t)h.len);
		}
	if (li->nheld)
		l->nholding--;
	l->held_bytes -= li->nheld;
	for (struct held_chunk *c = li->held, *next; c; c = next) {
		next = c->next;
		if (c->cap == HELD_CHUNK && l->nspare < SPARE_HELD) {
			c->next = l->spare;
			l->spare = c;
			l->nspare++;
		} else {
			free(c);
		}
	}
	li->held = li->held_tail = NULL;
	li->nheld = 0;
	return rc;
}

static int hold(struct model_live *l, size_t im, uint32_t type, const void *p, uint32_t len,
		uint64_t place)
{
	struct live_img *li = &l->img[im];
	size_t need = sizeof(struct held_hdr) + CAP_PAD8((size_t)len);
	struct held_chunk *c = li->held_tail;
	if (!c || c->cap - c->used < need) {
		if (need <= HELD_CHUNK && l->spare) {
			c = l->spare;
			l->spare = c->next;
			l->nspare--;
		} else {
			size_t cap = need > HELD_CHUNK ? need : HELD_CHUNK;
			if (!(c = malloc(sizeof *c + cap)))
				return -1;
			c->cap = cap;
		}
		c->used = 0;
		c->next = NULL;
		if (li->held_tail)
			li->held_tail->next = c;
		else
			li->held = c;
		li->held_tail = c;
	}
	struct held_hdr h = {.type = type, .len = len, .place = place};
	memcpy(c->data + c->used, &h, sizeof h);
	memcpy(c->data + c->used + sizeof h, p, len);
	/* the padding's bytes are never read: left as they are */
	c->used += need;
	if (!li->nheld)
		l->nholding++;
	li->nheld += need;
	l->held_bytes += need;
	return 0;
}

/* Whether a held image is to be given now: its hold is over, or too much is held. */
static int due(const struct model_live *l, const struct live_img *li)
{
	return li->state == HELD && (li->start_ns + MODEL_LIVE_HOLD_NS <= l->now ||
				     l->held_bytes > MODEL_LIVE_HOLD_BYTES);
}

/* The held images whose hold is over (or, when too much is held, the oldest first till
 * it fits) given as the fold decides now. */
static int decide_due(struct model_live *l)
{
	l->last_check = l->now;
	size_t n = 0;
	for (size_t i = 0; i < l->nimg; i++)
		n += due(l, &l->img[i]);
	if (!n)
		return 0;
	struct model_fold f;
	if (fold_live_decide(l->fold, &f))
		return -1;
	int rc = 0;
	for (size_t i = 0; i < l->nimg && !rc; i++) {
		struct live_img *li = &l->img[i];
		if (due(l, li))
			rc = release(l, i, (size_t)li->announce < f.n && f.folded[li->announce]);
	}
	model_fold_free(&f);
	return rc;
}

static int record(struct model_live *l, uint32_t type, const void *p, uint32_t len)
{
	struct model *m = l->m;
	fold_live_record(l->fold, type, p, len, NULL);
	if (type == CAP_PROCESS) {
		struct cap_process cp;
		memcpy(&cp, p, sizeof cp);
		/* one session: the pid is its key (source 0) */
		const uint64_t *cur = cp.exec_seq ? u64map_find(&m->pid_image, cp.pid) : NULL;
		/* shown before its fold was known, and it may be folded after all (one that
		 * worked never is) */
		if (cur && *cur < l->nimg && l->img[*cur].state == SHOWN && l->img[*cur].given &&
		    l->img[*cur].announce >= 0 &&
		    !fold_live_worked(l->fold, (size_t)l->img[*cur].announce)) {
			l->gave_up_pid = cp.pid;
			return LIVE_GIVE_UP;
		}
		size_t announced = m->nannounced;
		if (model_record(m, type, p, len) || track(l))
			return -1;
		if (m->nannounced > announced) { /* a new image, the latest of its pid */
			struct live_img *li = &l->img[m->nimg - 1];
			li->state = HELD;
			li->announce = (int64_t)announced;
			li->start_ns = cp.start_ns;
			if (cp.start_ns > l->now)
				l->now = cp.start_ns;
		}
		return 0;
	}
	if (type != CAP_EVENTS && type != CAP_THREAD)
		return model_record(m, type, p, len);
	uint32_t pid;
	memcpy(&pid, p, sizeof pid);
	int64_t im = model_image_of(m, pid);
	if (im < 0 || track(l))
		return -1;
	if (type == CAP_EVENTS) {
		struct cap_events ce;
		memcpy(&ce, p, sizeof ce);
		/* a thread's events end in time order: its last one is its latest */
		const struct prof_event *last = ce.count
			? (const struct prof_event *)((const char *)p + sizeof ce) + ce.count - 1
			: NULL;
		if (last && last->type != PROF_EV_LOST) {
			uint64_t t = last->t1 > last->t0 ? last->t1 : last->t0;
			if (t > l->now)
				l->now = t;
		}
	}
	uint64_t place = type == CAP_EVENTS ? l->events_records++ : 0;
	struct live_img *li = &l->img[im];
	int rc;
	if (li->state != HELD) {
		rc = give(l, im, type, p, len, place);
	} else if (li->announce >= 0 && fold_live_worked(l->fold, (size_t)li->announce)) {
		/* never folded, whatever comes: shown now, not held for the rest of its hold
		 * (a busy program's first second was up to 64 MiB of records copied) */
		rc = release(l, (size_t)im, 0);
		if (!rc)
			rc = give(l, im, type, p, len, place);
	} else {
		rc = hold(l, (size_t)im, type, p, len, place);
	}
	if (!rc && l->nholding &&
	    (l->now >= l->last_check + CHECK_EVERY_NS || l->held_bytes > MODEL_LIVE_HOLD_BYTES))
		rc = decide_due(l);
	return rc;
}

int model_live_visit(void *ctx, uint32_t type, const void *payload, uint32_t len)
{
	int rc = record(ctx, type, payload, len);
	return rc == LIVE_GIVE_UP ? rc : rc ? LIVE_OOM : 0;
}

int model_live_finish(struct model_live *l, int rc, const char *path, struct model_fold *f,
		      int *read_rc, char *err, size_t errlen)
{
	memset(f, 0, sizeof *f);
	if (rc == LIVE_GIVE_UP) {
		snprintf(err, errlen, "process %u exec'd after its events were shown: a launcher, "
			 "folded", l->gave_up_pid);
		return 1;
	}
	if (rc == LIVE_OOM || fold_live_decide(l->fold, f)) {
		snprintf(err, errlen, "%s: out of memory while reading the capture", path);
		return 2;
	}
	if (rc != CAP_READ_OK && rc != CAP_READ_DAMAGED)
		return 2; /* err says why */
	for (size_t i = 0; i < l->nimg; i++) {
		struct live_img *li = &l->img[i];
		if (li->announce < 0)
			continue;
		int folded = (size_t)li->announce < f->n && f->folded[li->announce];
		if (li->state == HELD) {
			if (release(l, i, folded)) {
				snprintf(err, errlen, "%s: out of memory while reading the capture",
					 path);
				return 2;
			}
		} else if ((li->state == FOLDED) != folded && li->given) {
			snprintf(err, errlen, "process %u (image %zu) was %s before its fold was "
				 "known", l->m->img[i].pid, i, folded ? "shown" : "folded");
			return 1;
		} else {
			l->m->img[i].folded = folded;
		}
	}
	*read_rc = model_read_finish(l->m, rc, path, err, errlen);
	return *read_rc == CAP_READ_OK || *read_rc == CAP_READ_DAMAGED ? 0 : 2;
}
