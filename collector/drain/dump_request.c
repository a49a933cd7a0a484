/* Dump requests: prof_dump()/prof_dumps() ask through the session segment (a request
 * number, answered in dump_done with dump_status, the requester waiting on that futex),
 * continuous_dump asks every dump_period_ms. A dump is made by a forked child (dump.c)
 * while the loop goes on draining. */
#define _GNU_SOURCE
#include "collector/drain/drain_internal.h"
#include "collector/output/capture_own.h"
#include "preload/common/debug.h"

/* The one answer to request req: its status (0, or -1 when no outputs were made), and
 * the requester woken. */
static void answer(struct prof_session_shm *s, uint32_t req, int status)
{
	atomic_store(&s->dump_status, status);
	atomic_store(&s->dump_done, req);
	prof_futex_wake(&s->dump_done);
}

/* A dump made from the capture by a forked child (dump.c): the capture flushed, the
 * child started. 0, or -1. */
static int dump_from_capture(struct collector *c, const struct dump_request *r)
{
	char src[64];
	return cap_flush(c->w) ||
			       dump_start(&c->dump,
					  capture_source(c->capture_fd, c->capture_path, src,
							 sizeof src),
					  c->parts ? -1 : c->capture_fd, r)
		       ? -1
		       : 0;
}

/* A dump child that ended answers the request it served (none for a continuous dump);
 * so does the live outputs' child, or, when it declined, a dump made from the capture
 * takes the request over. wait: until it is answered (the end). */
static void dump_ended(struct collector *c, int wait)
{
	int status;
	if (dump_poll(&c->dump, wait, &status) && c->dump.request)
		answer(c->s, c->dump.request, status);
	uint64_t since = prof_mono_ns();
	while (c->live_dump) {
		if (live_dump_poll(&c->live, &status)) {
			c->live_dump = 0;
			prof_debug(PROF_DEBUG_DRAIN, "dump %s in %.3f s", status == LIVE_DUMP_DECLINED
				   ? "declined by the live outputs: made from the capture"
				   : "made from the live outputs' state",
				   (double)(prof_mono_ns() - c->live_dump_since) / 1e9);
			if (status != LIVE_DUMP_DECLINED) {
				if (c->live_dump_request)
					answer(c->s, c->live_dump_request, status);
			} else if (dump_from_capture(c, &c->live_dump_fallback)) {
				if (c->live_dump_request)
					answer(c->s, c->live_dump_request, -1);
			} else if (wait && dump_poll(&c->dump, 1, &status) && c->dump.request) {
				answer(c->s, c->dump.request, status);
			}
			break;
		}
		/* the end waits while the dump is being made, not for good */
		if (!wait || prof_mono_ns() - since > 60000000000ull) {
			if (wait && c->live_dump_request)
				answer(c->s, c->live_dump_request, -1);
			if (wait)
				c->live_dump = 0;
			break;
		}
		struct timespec ts = {0, 5000000};
		nanosleep(&ts, NULL);
	}
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
	if (c->dump.pid || c->live_dump || (!asked && !periodic) || c->write_failed)
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
	if (!asked)
		c->last_dump = now;
	/* From the live outputs' child when it runs: it has read the capture as it was
	 * written, so a dump costs the outputs' writing and what it has still to read, not a
	 * read of the whole capture (continuous dumps fell behind by the end of long runs) */
	struct live_dump_request lr = {.tables = r.tables, .say = r.say};
	if (r.tables_path)
		snprintf(lr.tables_path, sizeof lr.tables_path, "%s", r.tables_path);
	if (c->live.pid && !cap_flush(c->w)) {
		live_outputs_publish(&c->live, c->parts ? c->part : 0, cap_writer_bytes(c->w));
		if (!live_dump_start(&c->live, c->parts ? c->part : 0, cap_writer_bytes(c->w),
				     &lr)) {
			c->live_dump = 1;
			c->live_dump_since = prof_mono_ns();
			c->live_dump_request = r.request;
			c->live_dump_fallback = r;
			return;
		}
	}
	if (dump_from_capture(c, &r) && asked)
		answer(s, req, -1);
}

void finish_dump(struct collector *c)
{
	dump_ended(c, 1);
}
