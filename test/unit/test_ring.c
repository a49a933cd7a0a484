/* The ring: wrap-around, a full ring (drop and count, then the LOST event in order),
 * blocking mode, and a concurrent reader that must see every event exactly once. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "preload/common/ring.h"

#define CAP 64

struct fixture {
	struct prof_slot slot;
	struct prof_event ring[CAP];
	struct ring_writer w;
};

struct seen {
	uint64_t n;
	uint64_t next_a; /* events carry a = sequence number */
	uint64_t lost_events, lost_count;
	int out_of_order;
};

static void collect(void *ctx, const struct prof_event *ev, uint64_t n)
{
	struct seen *s = ctx;
	for (uint64_t i = 0; i < n; i++) {
		if (ev[i].type == PROF_EV_LOST) {
			s->lost_events++;
			s->lost_count += ev[i].a;
			continue;
		}
		if (ev[i].a < s->next_a)
			s->out_of_order = 1;
		s->next_a = ev[i].a + 1;
		s->n++;
	}
}

static struct fixture *make(int block)
{
	struct fixture *f = calloc(1, sizeof *f);
	ring_writer_init(&f->w, &f->slot, f->ring, CAP, block, 0);
	return f;
}

static int put_into(struct ring_writer *w, uint64_t seq)
{
	struct prof_event *e = ring_reserve(w, seq);
	if (!e)
		return 0;
	memset(e, 0, sizeof *e);
	e->type = PROF_EV_COMPLETE;
	e->a = seq;
	ring_commit(w);
	return 1;
}

static int put(struct fixture *f, uint64_t seq)
{
	return put_into(&f->w, seq);
}

static void wraps_around(void **state)
{
	(void)state;
	struct fixture *f = make(0);
	struct seen s = {0};
	uint64_t seq = 0;
	for (int round = 0; round < 10; round++) {
		for (int i = 0; i < 50; i++)
			assert_true(put(f, seq++));
		assert_int_equal(ring_drain(&f->slot, f->ring, CAP, collect, &s), 50);
	}
	assert_int_equal(s.n, 500);
	assert_int_equal(s.next_a, 500);
	assert_false(s.out_of_order);
	assert_int_equal(atomic_load(&f->slot.lost_total), 0);
	free(f);
}

static void full_ring_drops_and_reports_gap(void **state)
{
	(void)state;
	struct fixture *f = make(0);
	struct seen s = {0};
	int kept = 0;
	for (uint64_t i = 0; i < CAP + 10; i++)
		kept += put(f, i);
	assert_int_equal(kept, CAP);
	assert_int_equal(atomic_load(&f->slot.lost_pending), 10);
	assert_int_equal(atomic_load(&f->slot.lost_first), CAP);
	assert_int_equal(atomic_load(&f->slot.lost_last), CAP + 9);
	ring_drain(&f->slot, f->ring, CAP, collect, &s);
	/* the next event that fits is preceded by the gap's LOST event */
	assert_true(put(f, 1000));
	ring_drain(&f->slot, f->ring, CAP, collect, &s);
	assert_int_equal(s.n, CAP + 1);
	assert_int_equal(s.lost_events, 1);
	assert_int_equal(s.lost_count, 10);
	assert_int_equal(atomic_load(&f->slot.lost_pending), 0);
	assert_int_equal(atomic_load(&f->slot.lost_total), 10);
	free(f);
}

struct reader_arg {
	struct fixture *f;
	_Atomic int done;
	struct seen s;
};

static void *reader(void *p)
{
	struct reader_arg *r = p;
	while (!atomic_load(&r->done))
		ring_drain(&r->f->slot, r->f->ring, CAP, collect, &r->s);
	ring_drain(&r->f->slot, r->f->ring, CAP, collect, &r->s);
	return 0;
}

/* Returns the events produced: total, plus the attempts it took to flush a last gap. */
static uint64_t run_concurrent(int block, uint64_t total, struct seen *out, uint64_t *lost)
{
	struct reader_arg r = {.f = make(block)};
	pthread_t t;
	pthread_create(&t, 0, reader, &r);
	uint64_t produced = 0;
	for (uint64_t i = 0; i < total; i++, produced++)
		put(r.f, i);
	/* events that fit after the reader caught up flush a pending gap */
	while (atomic_load(&r.f->slot.lost_pending)) {
		put(r.f, total + produced);
		produced++;
	}
	atomic_store(&r.done, 1);
	pthread_join(t, 0);
	*out = r.s;
	*lost = atomic_load(&r.f->slot.lost_total);
	free(r.f);
	return produced;
}

static void concurrent_reader_sees_each_event_once(void **state)
{
	(void)state;
	struct seen s;
	uint64_t lost;
	uint64_t produced = run_concurrent(0, 1000000, &s, &lost);
	assert_false(s.out_of_order);
	assert_int_equal(s.n + lost, produced); /* kept + lost = produced */
	assert_int_equal(s.lost_count, lost);
}

static void blocking_mode_loses_nothing(void **state)
{
	(void)state;
	struct seen s;
	uint64_t lost;
	run_concurrent(1, 300000, &s, &lost);
	assert_int_equal(lost, 0);
	assert_int_equal(s.n, 300000);
	assert_int_equal(s.next_a, 300000);
	assert_false(s.out_of_order);
}

/* ring_wait_room (the early buffer's flush): a non-blocking writer waits for a reader
 * that drains, and gives up when stalled() says so or when the reader takes nothing for
 * still_ns; it never drops by itself. */
static int stall_calls, stall_after;
static int stalled_after_some(void) { return ++stall_calls > stall_after; }

static void wait_room_waits_for_a_reader(void **state)
{
	(void)state;
	struct reader_arg r = {.f = make(0)};
	pthread_t t;
	pthread_create(&t, 0, reader, &r);
	for (uint64_t i = 0; i < 100000; i++) {
		assert_int_equal(ring_wait_room(&r.f->w, 2, 10000000000ull), 0);
		assert_true(put(r.f, i));
	}
	atomic_store(&r.done, 1);
	pthread_join(t, 0);
	assert_int_equal(r.s.n, 100000);
	assert_false(r.s.out_of_order);
	assert_int_equal(atomic_load(&r.f->slot.lost_total), 0);
	free(r.f);
}

static void wait_room_gives_up(void **state)
{
	(void)state;
	struct fixture *f = make(0);
	for (uint64_t i = 0; i < CAP - 1; i++)
		assert_true(put(f, i));
	assert_int_equal(ring_wait_room(&f->w, 1, 0), 0); /* room: at once */
	/* no reader: the collector's watch gives up after a few looks */
	f->w.stalled = stalled_after_some;
	stall_calls = 0;
	stall_after = 5;
	assert_int_equal(ring_wait_room(&f->w, 2, 0), -1);
	assert_int_equal(stall_calls, 6);
	/* a reader alive but taking nothing: given up after still_ns */
	f->w.stalled = 0;
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(ring_wait_room(&f->w, 2, 20000000), -1);
	clock_gettime(CLOCK_MONOTONIC, &b);
	int64_t ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
	assert_true(ms >= 20 && ms < 2000);
	/* nothing was dropped or counted: giving up is the caller's to count */
	assert_int_equal(atomic_load(&f->slot.lost_total), 0);
	free(f);
}

/* A full ring read in pieces gives its space back piece by piece: a writer finds room
 * while the rest of the batch is still being read (given back only at the end, a writer
 * going flat out dropped everything it wrote meanwhile). */
#define BIG (4 * RING_DRAIN_PIECE)
struct piecewise {
	struct prof_slot slot;
	struct prof_event ring[BIG];
	struct ring_writer w;
	uint64_t calls, fits, seq, seen;
};

static void read_and_write(void *ctx, const struct prof_event *ev, uint64_t n)
{
	struct piecewise *p = ctx;
	(void)ev;
	assert_true(n <= RING_DRAIN_PIECE);
	/* every piece before this one is given back already */
	assert_int_equal(atomic_load(&p->slot.tail), p->seen);
	p->seen += n;
	p->calls++;
	struct prof_event *e = ring_reserve(&p->w, p->seq);
	if (e) {
		memset(e, 0, sizeof *e);
		e->type = PROF_EV_COMPLETE;
		e->a = p->seq++;
		ring_commit(&p->w);
		p->fits++;
	}
}

static void drained_piece_by_piece(void **state)
{
	(void)state;
	struct piecewise *p = calloc(1, sizeof *p);
	assert_non_null(p);
	ring_writer_init(&p->w, &p->slot, p->ring, BIG, 0, 0);
	for (p->seq = 0; p->seq < BIG;) {
		struct prof_event *e = ring_reserve(&p->w, p->seq);
		assert_non_null(e);
		memset(e, 0, sizeof *e);
		e->type = PROF_EV_COMPLETE;
		e->a = p->seq++;
		ring_commit(&p->w);
	}
	uint64_t head = atomic_load(&p->slot.head);
	assert_int_equal(ring_drain_upto(&p->slot, p->ring, BIG, head, read_and_write, p), BIG);
	assert_int_equal(p->calls, 4);
	/* full at the first piece; room at each later one */
	assert_int_equal(p->fits, 3);
	assert_int_equal(atomic_load(&p->slot.tail), BIG);
	free(p);
}

/* Lazy commit: a ring committed as its writer reaches it, in chunks doubling from
 * RING_COMMIT_FIRST, contiguous from the ring's start; a commit that fails (a full
 * /dev/shm) drops what lies past it, counted, without a blocking writer hanging. */
#define LAZY_CAP 8192
struct lazy {
	struct prof_slot slot;
	struct prof_event ring[LAZY_CAP];
	struct ring_writer w;
};
static struct {
	size_t off[16], len[16];
	int n; /* commits made */
	/* attempts from fail_from up to fail_until fail (0: none; fail_until 0: all on) */
	int attempts, fail_from, fail_until;
} commits;

static int fake_commit(void *addr, size_t len)
{
	extern struct lazy *lazy_now;
	int k = ++commits.attempts;
	if (commits.fail_from && k >= commits.fail_from &&
	    (!commits.fail_until || k <= commits.fail_until))
		return -1;
	commits.off[commits.n] = (size_t)((char *)addr - (char *)lazy_now->ring);
	commits.len[commits.n++] = len;
	return 0;
}
struct lazy *lazy_now;

static struct lazy *make_lazy(int block, int fail_from)
{
	struct lazy *l = calloc(1, sizeof *l);
	assert_non_null(l);
	memset(&commits, 0, sizeof commits);
	commits.fail_from = fail_from;
	lazy_now = l;
	ring_writer_init(&l->w, &l->slot, l->ring, LAZY_CAP, block, 0);
	return l;
}

static int lazy_put(struct lazy *l, uint64_t seq)
{
	return put_into(&l->w, seq);
}

static void commits_as_written(void **state)
{
	(void)state;
	struct lazy *l = make_lazy(0, 0);
	const size_t first = RING_COMMIT_FIRST / sizeof(struct prof_event) * sizeof(struct prof_event);
	assert_int_equal(ring_writer_commit_lazily(&l->w, fake_commit), 0);
	assert_int_equal(commits.n, 1);
	assert_int_equal(commits.off[0], 0);
	assert_int_equal(commits.len[0], first);
	/* a thread that writes little commits its first chunk only */
	struct seen s = {0};
	for (uint64_t i = 0; i < 1000; i++)
		assert_true(lazy_put(l, i));
	assert_int_equal(commits.n, 1);
	/* writing on (drained as it goes): chunks doubling, contiguous, up to the ring */
	for (uint64_t i = 1000; i < 3 * LAZY_CAP; i++) {
		assert_true(lazy_put(l, i));
		if (i % 500 == 0)
			ring_drain(&l->slot, l->ring, LAZY_CAP, collect, &s);
	}
	ring_drain(&l->slot, l->ring, LAZY_CAP, collect, &s);
	assert_int_equal(s.n, 3 * LAZY_CAP);
	assert_false(s.out_of_order);
	size_t end = 0;
	for (int i = 0; i < commits.n; i++) {
		assert_int_equal(commits.off[i], end);
		if (i && i + 1 < commits.n)
			assert_int_equal(commits.len[i], commits.off[i]); /* doubles what was */
		end += commits.len[i];
	}
	assert_int_equal(end, sizeof l->ring);
	assert_int_equal(commits.n, 4); /* 1365, 2730, 5460, 8192 events */
	assert_int_equal(atomic_load(&l->slot.prepared), 1);
	assert_int_equal(atomic_load(&l->slot.committed), sizeof l->ring);
	assert_int_equal(atomic_load(&l->slot.lost_total), 0);
	free(l);
}

static void next_owner_continues(void **state)
{
	(void)state;
	struct lazy *l = make_lazy(0, 0);
	assert_int_equal(ring_writer_commit_lazily(&l->w, fake_commit), 0);
	for (uint64_t i = 0; i < 2000; i++)
		assert_true(lazy_put(l, i));
	assert_int_equal(commits.n, 2);
	/* the slot recycled (the collector resets head and tail): its next owner commits
	 * nothing already committed */
	atomic_store(&l->slot.head, 0);
	atomic_store(&l->slot.tail, 0);
	ring_writer_init(&l->w, &l->slot, l->ring, LAZY_CAP, 0, 0);
	assert_int_equal(ring_writer_commit_lazily(&l->w, fake_commit), 0);
	for (uint64_t i = 0; i < 4000; i++)
		assert_true(lazy_put(l, i));
	assert_int_equal(commits.n, 3);
	assert_int_equal(commits.off[2], commits.off[1] + commits.len[1]);
	/* a slot the collector prepared: nothing committed by the writer */
	struct lazy *p = make_lazy(0, 0);
	atomic_store(&p->slot.prepared, 1);
	assert_int_equal(ring_writer_commit_lazily(&p->w, fake_commit), 0);
	for (uint64_t i = 0; i < LAZY_CAP; i++)
		assert_true(lazy_put(p, i));
	assert_int_equal(commits.n, 0);
	free(p);
	free(l);
}

static void commit_failure_drops_counted(void **state)
{
	(void)state;
	for (int block = 0; block < 2; block++) {
		struct lazy *l = make_lazy(block, 2); /* the second chunk fails */
		assert_int_equal(ring_writer_commit_lazily(&l->w, fake_commit), 0);
		const uint64_t first = RING_COMMIT_FIRST / sizeof(struct prof_event);
		int kept = 0;
		/* a blocking writer does not wait for room no drain can make */
		for (uint64_t i = 0; i < first + 100; i++)
			kept += lazy_put(l, i);
		assert_int_equal(kept, first);
		assert_int_equal(atomic_load(&l->slot.lost_pending), 100);
		assert_int_equal(atomic_load(&l->slot.committed),
				 first * sizeof(struct prof_event));
		assert_int_equal(atomic_load(&l->slot.prepared), 0);
		free(l);
	}
	/* the first chunk refused: the claim gives the slot up */
	struct lazy *l = make_lazy(0, 1);
	assert_int_equal(ring_writer_commit_lazily(&l->w, fake_commit), -1);
	free(l);
	/* room made in /dev/shm later is used: the commit is asked again every
	 * RING_COMMIT_RETRY refusals, and the ring grows on */
	l = make_lazy(0, 2);
	commits.fail_until = 2;
	assert_int_equal(ring_writer_commit_lazily(&l->w, fake_commit), 0);
	const uint64_t first = RING_COMMIT_FIRST / sizeof(struct prof_event);
	int kept = 0;
	for (uint64_t i = 0; i < first + RING_COMMIT_RETRY + 100; i++)
		kept += lazy_put(l, i);
	/* the refused event and the 1,023 after it dropped, the rest kept */
	assert_int_equal(commits.attempts, 3);
	assert_int_equal(kept, first + 100);
	assert_int_equal(atomic_load(&l->slot.lost_total), RING_COMMIT_RETRY);
	assert_true(atomic_load(&l->slot.committed) > first * sizeof(struct prof_event));
	free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(wraps_around),
		cmocka_unit_test(full_ring_drops_and_reports_gap),
		cmocka_unit_test(concurrent_reader_sees_each_event_once),
		cmocka_unit_test(blocking_mode_loses_nothing),
		cmocka_unit_test(drained_piece_by_piece),
		cmocka_unit_test(wait_room_waits_for_a_reader),
		cmocka_unit_test(wait_room_gives_up),
		cmocka_unit_test(commits_as_written),
		cmocka_unit_test(next_owner_continues),
		cmocka_unit_test(commit_failure_drops_counted),
	};
	return cmocka_run_group_tests(tests, 0, 0);
}
