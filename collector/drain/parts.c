/* A capture in parts (PROFILER_ROTATE, PROFILER_FLIGHT): PREFIX.prof is a directory and
 * the drain writes part-000001.prof, part-000002.prof, ... A new part starts between
 * drain passes once the current one is due (its time or its compressed size); it
 * repeats the session header and, for every process still running, what its later
 * events need, so each part reads alone. The flight recorder rotates every quarter of
 * its span and drops the parts wholly older than it: nothing older is kept on disk, and
 * the outputs leave out what precedes the span (formats/model, keep_from). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/drain/drain_internal.h"

static void part_name(uint32_t n, char *out, size_t len)
{
	snprintf(out, len, CAP_PART_PREFIX "%06u" CAP_PART_SUFFIX, n);
}

void parts_current(const struct collector *c, char *out, size_t len)
{
	char name[64];
	part_name(c->part, name, sizeof name);
	snprintf(out, len, "%s/%s", c->capture_path, name);
}

static struct cap_writer *open_part(struct collector *c, uint32_t n, char *err, size_t errlen)
{
	char name[64], path[PROF_PATH_MAX + 80];
	part_name(n, name, sizeof name);
	snprintf(path, sizeof path, "%s/%s", c->capture_path, name);
	int fd = openat(c->capture_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			0666);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	return cap_writer_fdopen(fd, path, cap_writer_workers(), err, errlen);
}

static int remember(struct collector *c)
{
	if (c->nkept == c->kept_cap) {
		size_t cap = c->kept_cap ? c->kept_cap * 2 : 16;
		struct part_kept *k = realloc(c->kept, cap * sizeof *k);
		if (!k)
			return -1;
		c->kept = k;
		c->kept_cap = cap;
	}
	c->kept[c->nkept++] = (struct part_kept){c->part, c->part_start_ns, 0};
	return 0;
}

/* The start of a part: the session header, then which part it is. */
static void part_header(struct collector *c, uint64_t now)
{
	char text[96];
	put(c, CAP_SESSION, c->session_text, strlen(c->session_text), 0, 0);
	snprintf(text, sizeof text, "part=%u\nstart_ns=%llu\n", c->part, (unsigned long long)now);
	put(c, CAP_PART, text, strlen(text), 0, 0);
}

int parts_open_first(struct collector *c, char *err, size_t errlen)
{
	const struct prof_session_shm *s = c->s;
	c->parts = 1;
	c->part = 1;
	c->part_start_ns = prof_mono_ns();
	c->flight_ns = s->flight_ms * 1000000ull;
	c->flight_bytes = s->flight_bytes;
	/* the flight recorder rotates every quarter of what it keeps */
	c->rotate_ns = s->flight_ms ? c->flight_ns / 4 : s->rotate_ms * 1000000ull;
	c->rotate_bytes = s->flight_bytes ? s->flight_bytes / 4 : s->rotate_bytes;
	if (remember(c)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	c->w = open_part(c, 1, err, errlen);
	return c->w ? 0 : -1;
}

/* Parts wholly older than the flight recorder's span (by time: the next part started
 * before it; by size: the newer parts hold the span without it). */
static void drop_old_parts(struct collector *c, uint64_t now)
{
	size_t drop = 0;
	if (c->flight_ns) {
		while (drop + 1 < c->nkept && c->kept[drop + 1].start_ns + c->flight_ns <= now)
			drop++;
	} else if (c->flight_bytes) {
		uint64_t newer = 0; /* the finished parts after the oldest */
		for (size_t i = 1; i + 1 < c->nkept; i++)
			newer += c->kept[i].bytes;
		while (drop + 2 < c->nkept && newer >= c->flight_bytes) {
			drop++;
			newer -= c->kept[drop].bytes;
		}
	}
	for (size_t i = 0; i < drop; i++) {
		char name[64];
		part_name(c->kept[i].n, name, sizeof name);
		if (unlinkat(c->capture_fd, name, 0) && errno != ENOENT)
			fprintf(stderr, "libprof: cannot drop %s/%s (%s); it stays\n",
				c->capture_path, name, strerror(errno));
	}
	memmove(c->kept, c->kept + drop, (c->nkept - drop) * sizeof *c->kept);
	c->nkept -= drop;
}

/* What the part will hold once the records handed over are written: those still
 * compressing counted at the ratio of the session so far (this part's alone would be
 * its repeated names', which compress worse than events). Before any frame is written
 * (the compressing threads run at idle priority, so on a busy machine the first part
 * can be all pending), at 2/5: packed event columns compress about 2.5 times (0.39 on
 * alloc_storm); the 1/7 of unpacked events made first parts twice the size asked. */
static uint64_t size_estimate(const struct collector *c)
{
	uint64_t written, raw, pending;
	cap_writer_sizes(c->w, &written, &raw, &pending);
	double bytes = (double)(c->done_bytes + written), of = (double)(c->done_raw + raw);
	return written + (uint64_t)(of > 0 ? (double)pending * bytes / of
					   : (double)pending * 2 / 5);
}

void parts_rotate_if_due(struct collector *c, uint64_t now)
{
	if (!c->parts || c->write_failed)
		return;
	/* a part's size counts what came after its repeated records: when those alone
	 * reach the size, a new part on every pass would fill the disk with them */
	uint64_t bytes = c->rotate_bytes ? size_estimate(c) : 0;
	if (!c->session_text ||
	    (!(c->rotate_ns && now - c->part_start_ns >= c->rotate_ns) &&
	     !(c->rotate_bytes && bytes - c->part_base >= c->rotate_bytes)))
		return;
	char err[PROF_PATH_MAX + 512];
	/* the part is complete before the next one exists: a reader of the directory never
	 * sees a later part beside an unfinished earlier one */
	int bad = cap_flush(c->w);
	uint64_t written, raw, pending;
	cap_writer_sizes(c->w, &written, &raw, &pending);
	c->kept[c->nkept - 1].bytes = written;
	c->done_bytes += written;
	c->done_raw += raw;
	bad |= cap_writer_close(c->w);
	c->w = NULL;
	if (bad) {
		fprintf(stderr, "libprof: part %u of the capture could not be finished; the "
				"capture keeps what was written before\n", c->part);
		c->write_failed = 1;
		return;
	}
	c->part++;
	c->part_start_ns = now;
	if (remember(c)) {
		fprintf(stderr, "libprof: out of memory; the capture keeps the parts written "
				"before\n");
		c->write_failed = 1;
		return;
	}
	c->w = open_part(c, c->part, err, sizeof err);
	if (!c->w) {
		fprintf(stderr, "libprof: %s; the capture keeps the parts written before\n", err);
		c->nkept--; /* no such part */
		c->write_failed = 1;
		return;
	}
	part_header(c, now);
	for (struct proc_entry *p = c->procs; p; p = p->next)
		if (!p->finished)
			replay_process(c, p);
	/* written out, so the base is what they take (an estimate before any frame of the
	 * part was written would guess a usual ratio, and names compress less) */
	if (cap_flush(c->w)) {
		write_failed(c);
		return;
	}
	c->part_base = cap_writer_bytes(c->w);
	if (c->rotate_bytes && c->part_base >= c->rotate_bytes && !c->said_base) {
		fprintf(stderr, "libprof: the names and stacks each part repeats take %.1f MiB, more "
				"than a part's size (%.1f MiB): parts are larger\n",
			c->part_base / 1048576.0, c->rotate_bytes / 1048576.0);
		c->said_base = 1;
	}
	drop_old_parts(c, now);
}

void parts_finish(struct collector *c)
{
	if (c->parts)
		drop_old_parts(c, prof_mono_ns());
}

void parts_remove(struct collector *c)
{
	for (size_t i = 0; i < c->nkept; i++) {
		char name[64];
		part_name(c->kept[i].n, name, sizeof name);
		unlinkat(c->capture_fd, name, 0);
	}
	rmdir(c->capture_path);
}
