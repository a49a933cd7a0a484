/* Dump requests: prof_dump()/prof_dumps() ask through the session segment (a request
 * number, answered in dump_done with dump_status, the requester waiting on that futex),
 * continuous_dump asks every dump_period_ms. A dump is made by a forked child (dump.c)
 * while the loop goes on draining. */
#define _GNU_SOURCE
#include "collector/drain/drain_internal.h"
#include "collector/output/capture_own.h"

/* The one answer to request req: its status (0, or -1 when no outputs were made), and
 * the requester woken. */
static void answer(struct prof_session_shm *s, uint32_t req, int status)
{
	atomic_store(&s->dump_status, status);
	atomic_store(&s->dump_done, req);
	prof_futex_wake(&s->dump_done);
}

/* A dump child that ended answers the request it served (none for a continuous dump). */
static void dump_ended(struct collector *c, int wait)
{
	int status;
	if (dump_poll(&c->dump, wait, &status) && c->dump.request)
		answer(c->s, c->dump.request, status);
}

void answer_dump(struct collector *c)
{
	struct prof_session_shm *s = c->s;
	dump_ended(c, 0);
	uint32_t req = atomic_load(&s->dump_request);
	uint64_t now = prof_mono_ns();
	int asked = req != atomic_load(&s->dump_done) && req != c->dump.request;
	int periodic = s->continuous_dump && now - c->last_dump >= s->dump_period_ms * 1000000ull;
	int signalled = collector_dump_signalled != 0;
	periodic |= signalled;
	if (asked && c->write_failed) {
		answer(s, req, -1); /* the capture is broken: say so, don't hang */
		return;
	}
	if (c->dump.pid || (!asked && !periodic) || c->write_failed)
		return;
	if (asked) {
		scan_segments(c); /* the requester may be younger than the last scan */
		drain_all(c);
		if (c->write_failed) { /* a part could not be begun (drain_all rotates) */
			answer(s, req, -1);
			return;
		}
	}
	struct dump_request r = {
		.request = asked ? req : 0,
		.tables_path = asked && s->dump_kind == DUMP_TABLES ? s->dump_path : 0,
		.prefix = s->output_prefix,
		.max_json_events = s->max_json_events,
		.tables = (int)s->aggregate_stats,
		.say = signalled && !asked && !s->quiet,
	};
	if (!asked && signalled)
		collector_dump_signalled = 0;
	char src[64];
	if (cap_flush(c->w) ||
	    dump_start(&c->dump, capture_source(c->capture_fd, c->capture_path, src, sizeof src),
		       c->parts ? -1 : c->capture_fd, &r)) {
		if (asked)
			answer(s, req, -1);
		return;
	}
	if (!asked)
		c->last_dump = now;
}

void finish_dump(struct collector *c)
{
	dump_ended(c, 1);
}
