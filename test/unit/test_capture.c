/* The raw capture: a round trip over several frames; truncation at many offsets and a
 * flipped byte give CAP_READ_DAMAGED after visiting exactly the complete frames before;
 * bad record lengths inside a good frame are damage too; files that are not captures
 * are unusable; a writer that hits a full disk keeps every frame written before. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <zstd.h>

#include <cmocka.h>

#include "capture_fixture.h"

#define NREC 4000
#define PER_REC 64 /* events per record: 3 KiB, so 4000 records span ~12 frames */

struct frame_info {
	uint64_t off, end;
	uint64_t records; /* records in this frame */
};

struct seen {
	uint64_t records, next_seq;
	int bad;
	int stop_after;
};

static void write_records(struct fx *f, int nrec, uint64_t *seq);

/* Every record is CAP_EVENTS with a = sequence number of each event; a CAP_STRING
 * after each tenth record gives the reader a second record type. */
static void write_sample(struct fx *f)
{
	uint64_t seq = 0;

	fx_open(f, "cap");
	write_records(f, NREC, &seq);
	fx_close(f);
}

/* nrec records of PER_REC events numbered on from *seq. */
static void write_records(struct fx *f, int nrec, uint64_t *seq)
{
	static struct prof_event ev[PER_REC];
	int r, i;

	for (r = 0; r < nrec; r++) {
		for (i = 0; i < PER_REC; i++) {
			ev[i] = fx_range(*seq * 10, *seq * 10 + 7, (uint32_t)r, 0, 0);
			/* Pseudo-random bits so frames do not compress to almost nothing. */
			ev[i].b = (*seq * 0x9e3779b97f4a7c15ull) >> 13;
			ev[i].a = (*seq)++;
		}
		fx_events(f, 1, 2, ev, PER_REC);
		if (r % 10 == 9) {
			char name[32];
			snprintf(name, sizeof(name), "name-%d", r);
			fx_name(f, 1, (uint32_t)r, name);
		}
	}
}

static int visit(void *ctx, uint32_t type, const void *payload, uint32_t len)
{
	struct seen *s = ctx;
	struct cap_events h;
	const struct prof_event *ev;
	uint32_t i;

	s->records++;
	if (type == CAP_STRING)
		return 0;
	if (type != CAP_EVENTS) {
		s->bad = 1;
		return 0;
	}
	memcpy(&h, payload, sizeof(h));
	if (len != sizeof(h) + h.count * sizeof(*ev) || h.pid != 1 || h.tid != 2)
		s->bad = 1;
	ev = (const struct prof_event *)((const char *)payload + sizeof(h));
	for (i = 0; i < h.count; i++) {
		if (ev[i].a != s->next_seq || ev[i].t1 != ev[i].a * 10 + 7)
			s->bad = 1;
		s->next_seq = ev[i].a + 1;
	}
	if (s->stop_after && s->records == (uint64_t)s->stop_after)
		return 42;
	return 0;
}

/* Frame boundaries and record counts, found independently of cap_read. */
static size_t frames_of(const char *buf, size_t len, struct frame_info *fi, size_t max)
{
	size_t n = 0, off = 16;

	while (off + 16 <= len && n < max) {
		uint32_t h[4];
		char *raw;
		size_t got, p = 0;

		memcpy(h, buf + off, sizeof(h));
		assert_int_equal(h[0], CAP_FRAME_MAGIC);
		raw = malloc(h[2]);
		got = ZSTD_decompress(raw, h[2], buf + off + 16, h[1]);
		assert_int_equal(got, h[2]);
		fi[n].off = off;
		fi[n].end = off + 16 + h[1];
		fi[n].records = 0;
		while (p < got) {
			struct cap_rec_hdr rh;
			memcpy(&rh, raw + p, sizeof(rh));
			p += sizeof(rh) + ((rh.len + 7u) & ~7u);
			fi[n].records++;
		}
		free(raw);
		off = fi[n++].end;
	}
	assert_int_equal(off, len);
	return n;
}

static void write_file(const char *path, const char *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void test_round_trip(void **state)
{
	struct fx f;
	struct seen s = { 0 };
	struct frame_info fi[64];
	char err[256], *buf;
	size_t len = 0, n;

	(void)state;
	write_sample(&f);
	buf = fx_slurp(f.path, &len);
	n = frames_of(buf, len, fi, 64);
	assert_true(n >= 5); /* ~1 MiB raw per frame */
	assert_int_equal(cap_read(f.path, visit, &s, err, sizeof(err)), CAP_READ_OK);
	assert_int_equal(s.bad, 0);
	assert_int_equal(s.records, NREC + NREC / 10);
	assert_int_equal(s.next_seq, (uint64_t)NREC * PER_REC);
	assert_string_equal(err, "");
	free(buf);
	unlink(f.path);
}

/* A capture read as it is written (cap_read_follow): the hook makes one more frame known
 * at each call, as the collector publishes them; every record is visited once, in
 * order, and the read ends when the hook says the capture is finished. */
static struct frame_info follow_frames[64];
static size_t follow_nframes, follow_calls;

static uint64_t follow_one_more(uint64_t known)
{
	follow_calls++;
	if (known < 16)
		return 16; /* the file's header alone, first */
	for (size_t i = 0; i < follow_nframes; i++)
		if (follow_frames[i].end > known)
			return follow_frames[i].end;
	return known; /* finished */
}

static void test_follow_growing(void **state)
{
	struct fx f;
	struct seen s = { 0 };
	char err[256], *buf;
	size_t len = 0;

	(void)state;
	write_sample(&f);
	buf = fx_slurp(f.path, &len);
	follow_nframes = frames_of(buf, len, follow_frames, 64);
	follow_calls = 0;
	cap_read_follow = follow_one_more;
	int rc = cap_read(f.path, visit, &s, err, sizeof(err));
	cap_read_follow = NULL;
	assert_int_equal(rc, CAP_READ_OK);
	assert_int_equal(s.bad, 0);
	assert_int_equal(s.records, NREC + NREC / 10);
	assert_int_equal(s.next_seq, (uint64_t)NREC * PER_REC);
	/* the header, each frame, then "finished" (once more, or a few more ahead) */
	assert_true(follow_calls >= follow_nframes + 2);
	/* a visitor that stops halfway: the read ends (the hook is not waited on for good) */
	struct seen half = { .stop_after = (NREC + NREC / 10) / 2 + 1 }; /* an events record */
	cap_read_follow = follow_one_more;
	rc = cap_read(f.path, visit, &half, err, sizeof(err));
	cap_read_follow = NULL;
	assert_int_equal(rc, 42);
	assert_int_equal(half.records, (uint64_t)half.stop_after);
	free(buf);
	unlink(f.path);
}

static void test_visitor_stops(void **state)
{
	struct fx f;
	struct seen s = { .stop_after = 5 };
	char err[256];

	(void)state;
	write_sample(&f);
	assert_int_equal(cap_read(f.path, visit, &s, err, sizeof(err)), 42);
	assert_int_equal(s.records, 5);
	unlink(f.path);
}

static uint64_t records_before(const struct frame_info *fi, size_t k)
{
	uint64_t r = 0;
	size_t i;

	for (i = 0; i < k; i++)
		r += fi[i].records;
	return r;
}

/* Cut the file at cut bytes; frames wholly before the cut must all be visited. */
static void check_cut(const char *path, const char *buf, size_t len, const struct frame_info *fi,
		      size_t nf, size_t cut)
{
	struct seen s = { 0 };
	char err[256], want[64];
	size_t whole = 0;
	int rc;

	while (whole < nf && fi[whole].end <= cut)
		whole++;
	write_file(path, buf, cut);
	rc = cap_read(path, visit, &s, err, sizeof(err));
	assert_int_equal(s.bad, 0);
	assert_int_equal(s.records, records_before(fi, whole));
	if (cut == 16 || (whole > 0 && fi[whole - 1].end == cut)) {
		assert_int_equal(rc, CAP_READ_OK); /* ends on a frame boundary */
		return;
	}
	assert_int_equal(rc, CAP_READ_DAMAGED);
	assert_non_null(strstr(err, "is truncated"));
	snprintf(want, sizeof(want), "frame %zu at byte %llu ", whole + 1,
		 (unsigned long long)fi[whole].off);
	assert_non_null(strstr(err, want));
	snprintf(want, sizeof(want), "; %zu complete frame", whole);
	assert_non_null(strstr(err, want));
	assert_null(strchr(err, '\n'));
	(void)len;
}

static void test_truncation(void **state)
{
	struct fx f;
	struct frame_info fi[64];
	char *buf, path[80];
	size_t len = 0, nf, k;

	(void)state;
	write_sample(&f);
	buf = fx_slurp(f.path, &len);
	nf = frames_of(buf, len, fi, 64);
	snprintf(path, sizeof(path), "%s.cut", f.path);
	check_cut(path, buf, len, fi, nf, 16);      /* header only: no frames, fine */
	check_cut(path, buf, len, fi, nf, 20);      /* inside the first frame header */
	check_cut(path, buf, len, fi, nf, len - 1); /* last byte missing */
	for (k = 0; k < nf; k++) {
		check_cut(path, buf, len, fi, nf, fi[k].off + 8);   /* frame header cut */
		check_cut(path, buf, len, fi, nf, fi[k].off + 16);  /* no data */
		check_cut(path, buf, len, fi, nf, (fi[k].off + fi[k].end) / 2);
		check_cut(path, buf, len, fi, nf, fi[k].end);       /* boundary: OK */
	}
	unlink(path);
	unlink(f.path);
	free(buf);
}

static void flip_and_check(const char *path, const char *orig, size_t len,
			   const struct frame_info *fi, size_t frame, size_t at, const char *what)
{
	char *buf = malloc(len), err[256];
	struct seen s = { 0 };

	memcpy(buf, orig, len);
	buf[at] ^= 0x5a;
	write_file(path, buf, len);
	assert_int_equal(cap_read(path, visit, &s, err, sizeof(err)), CAP_READ_DAMAGED);
	assert_int_equal(s.bad, 0);
	assert_int_equal(s.records, records_before(fi, frame));
	assert_non_null(strstr(err, what));
	free(buf);
}

static void test_flipped_byte(void **state)
{
	struct fx f;
	struct frame_info fi[64];
	char *buf, path[80];
	size_t len = 0, nf;

	(void)state;
	write_sample(&f);
	buf = fx_slurp(f.path, &len);
	nf = frames_of(buf, len, fi, 64);
	assert_true(nf >= 3);
	snprintf(path, sizeof(path), "%s.flip", f.path);
	/* In the middle of frame 3's compressed bytes: zstd or its checksum notices. */
	flip_and_check(path, buf, len, fi, 2, (size_t)(fi[2].off + fi[2].end) / 2, "is corrupt");
	/* Near the end, where the checksum lives. */
	flip_and_check(path, buf, len, fi, 1, (size_t)fi[1].end - 2, "is corrupt");
	/* The frame magic. */
	flip_and_check(path, buf, len, fi, 2, (size_t)fi[2].off, "bad frame magic");
	/* The raw length in the header: a size mismatch or an impossible length. */
	flip_and_check(path, buf, len, fi, 1, (size_t)fi[1].off + 9, "frame 2 at byte");
	unlink(path);
	unlink(f.path);
	free(buf);
}

/* A file with one good frame then one frame holding raw as given. */
static void write_frames(const char *path, const void *raw, size_t rawlen)
{
	struct fx f;
	char *buf, *out;
	size_t len = 0, bound = ZSTD_compressBound(rawlen), clen;
	uint32_t h[4];
	FILE *fp;

	fx_open(&f, "hand");
	fx_name(&f, 1, 1, "ok");
	fx_close(&f);
	buf = fx_slurp(f.path, &len);
	unlink(f.path);
	out = malloc(bound);
	clen = ZSTD_compress(out, bound, raw, rawlen, 1);
	assert_false(ZSTD_isError(clen));
	h[0] = CAP_FRAME_MAGIC;
	h[1] = (uint32_t)clen;
	h[2] = (uint32_t)rawlen;
	h[3] = 0;
	fp = fopen(path, "wb");
	assert_non_null(fp);
	fwrite(buf, 1, len, fp);
	fwrite(h, 1, sizeof(h), fp);
	fwrite(out, 1, clen, fp);
	fclose(fp);
	free(out);
	free(buf);
}

static void expect_bad_records(const void *raw, size_t rawlen)
{
	char path[] = "/tmp/libprof-badrec.prof", err[256];
	struct seen s = { 0 };

	write_frames(path, raw, rawlen);
	assert_int_equal(cap_read(path, visit, &s, err, sizeof(err)), CAP_READ_DAMAGED);
	assert_int_equal(s.records, 1); /* the good frame only: none of the bad one */
	assert_non_null(strstr(err, "frame 2 at byte"));
	assert_non_null(strstr(err, "; 1 complete frame read"));
	unlink(path);
}

static void test_bad_record_lengths(void **state)
{
	uint32_t raw[16];

	(void)state;
	memset(raw, 0, sizeof(raw));
	/* A string record, then a record whose length runs past the frame. */
	raw[0] = CAP_STRING;
	raw[1] = 12;
	raw[2] = 1;
	raw[3] = 7;
	raw[4] = 0x41414141;
	raw[6] = CAP_STRING;
	raw[7] = 1000;
	expect_bad_records(raw, sizeof(raw));
	/* CAP_EVENTS announcing 2 events but holding none. */
	memset(raw, 0, sizeof(raw));
	raw[0] = CAP_EVENTS;
	raw[1] = 16;
	raw[4] = 2;
	expect_bad_records(raw, 24);
	/* A payload too short for its fixed part. */
	memset(raw, 0, sizeof(raw));
	raw[0] = CAP_PROCESS;
	raw[1] = 8;
	expect_bad_records(raw, 16);
	/* Stray bytes after the last record. */
	memset(raw, 0, sizeof(raw));
	raw[0] = CAP_STRING;
	raw[1] = 8;
	expect_bad_records(raw, 20);
}

static void expect_unusable(const char *path, const char *what)
{
	struct seen s = { 0 };
	char err[256], want[300];

	assert_int_equal(cap_read(path, visit, &s, err, sizeof(err)), CAP_READ_UNUSABLE);
	assert_int_equal(s.records, 0);
	snprintf(want, sizeof(want), "%s: %s", path, what);
	assert_string_equal(err, want);
}

static void test_not_a_capture(void **state)
{
	char path[] = "/tmp/libprof-notcap.prof";
	char hdr[16] = "LIBPROF";

	(void)state;
	write_file(path, "{\"traceEvents\": []}\n", 20);
	expect_unusable(path, "not a libprof capture");
	write_file(path, "", 0);
	expect_unusable(path, "not a libprof capture");
	write_file(path, "LIBPROF", 7);
	expect_unusable(path, "not a libprof capture");
	hdr[8] = 9; /* version 9 */
	write_file(path, hdr, 16);
	expect_unusable(path,
			"capture version 9 is not supported (this reader knows versions 1 to 2)");
	unlink(path);
	expect_unusable("/tmp/libprof-no-such-file.prof", "No such file or directory");
	/* a directory is a capture in parts (test_parts.c): one with none says so */
	char dir[] = "/tmp/libprof-noparts-XXXXXX";
	assert_non_null(mkdtemp(dir));
	expect_unusable(dir, "a directory with no capture parts (part-N.prof)");
	rmdir(dir);
}

static void test_writer_full_disk(void **state)
{
	struct rlimit old, lim;
	struct fx f;
	struct seen s = { 0 };
	static struct prof_event ev[PER_REC];
	char err[256], want[128];
	int r, failed_at = -1, i;
	struct stat st;

	(void)state;
	signal(SIGXFSZ, SIG_IGN); /* a write past the limit then fails with EFBIG */
	getrlimit(RLIMIT_FSIZE, &old);
	lim = old;
	lim.rlim_cur = 600 * 1024;
	fx_open(&f, "full");
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	for (r = 0; r < NREC && failed_at < 0; r++) {
		for (i = 0; i < PER_REC; i++) {
			ev[i] = fx_range((uint64_t)r * PER_REC + (uint64_t)i, 0, 0, 0, 0);
			ev[i].a = (uint64_t)r * PER_REC + (uint64_t)i;
			ev[i].t1 = ev[i].a * 10 + 7;
			ev[i].t0 = ev[i].a * 10;
			ev[i].b = (ev[i].a * 0x9e3779b97f4a7c15ull) >> 7;
		}
		struct cap_events h = { 1, 2, PER_REC, 0 };
		if (cap_write2(f.w, CAP_EVENTS, &h, sizeof(h), ev, sizeof(ev)))
			failed_at = r;
	}
	/* Frames are written by the writer's threads: a failure may show only on a later
	 * call, at the latest on the flush (made while the limit still holds). */
	if (failed_at < 0) {
		assert_int_equal(cap_flush(f.w), -1);
		failed_at = r;
	}
	setrlimit(RLIMIT_FSIZE, &old);
	assert_true(failed_at > 0);
	assert_int_equal(errno, EFBIG);
	snprintf(want, sizeof(want), "writing %s: %s", f.path, strerror(EFBIG));
	assert_string_equal(cap_writer_error(f.w), want);
	/* Later writes fail fast with the same error. */
	errno = 0;
	assert_int_equal(cap_write(f.w, CAP_SESSION, "a=b\n", 4), -1);
	assert_int_equal(errno, EFBIG);
	assert_int_equal(cap_flush(f.w), -1);
	assert_int_equal(cap_writer_close(f.w), -1);
	/* The file ends on a frame boundary and every frame written before is readable. */
	assert_int_equal(stat(f.path, &st), 0);
	assert_true(st.st_size <= (off_t)lim.rlim_cur);
	assert_int_equal(cap_read(f.path, visit, &s, err, sizeof(err)), CAP_READ_OK);
	assert_int_equal(s.bad, 0);
	assert_true(s.records > 0);
	assert_true(s.records < (uint64_t)failed_at + 1);
	unlink(f.path);
}

/* Frames compressed by several threads (or inline) reach the file in the order they
 * were made: every event's sequence number follows the one before. */
static void test_writer_threads_keep_order(void **state)
{
	static const unsigned workers[] = { 0, 1, 4 };
	(void)state;
	for (size_t k = 0; k < sizeof(workers) / sizeof(workers[0]); k++) {
		struct fx f;
		struct seen s = { 0 };
		char err[256];
		uint64_t seq = 0;
		fx_open_workers(&f, "order", workers[k]);
		write_records(&f, 4 * NREC, &seq); /* about 50 frames */
		assert_int_equal(cap_flush(f.w), 0);
		assert_true(cap_writer_bytes(f.w) > 16);
		write_records(&f, 10, &seq); /* more after a flush */
		assert_int_equal(cap_writer_close(f.w), 0);
		assert_int_equal(cap_read(f.path, visit, &s, err, sizeof(err)), CAP_READ_OK);
		assert_int_equal(s.bad, 0);
		assert_int_equal(s.records, 4 * NREC + 4 * NREC / 10 + 10 + 1);
		assert_int_equal(s.next_seq, (4 * NREC + 10) * PER_REC);
		unlink(f.path);
	}
}

/* A copy of the file with frame k written twice (k then k again) or frames k and k+1
 * swapped: every frame keeps its good checksum, only its number tells. */
static size_t splice(char *out, const char *buf, size_t len, const struct frame_info *fi,
		     size_t nf, size_t k, int swap)
{
	size_t o = 0, i;

	memcpy(out, buf, 16);
	o = 16;
	for (i = 0; i < nf; i++) {
		size_t j = swap && i == k ? k + 1 : swap && i == k + 1 ? k : i;
		memcpy(out + o, buf + fi[j].off, fi[j].end - fi[j].off);
		o += fi[j].end - fi[j].off;
		if (!swap && i == k) { /* the duplicate */
			memcpy(out + o, buf + fi[k].off, fi[k].end - fi[k].off);
			o += fi[k].end - fi[k].off;
		}
	}
	(void)len;
	return o;
}

static void test_duplicated_and_moved_frames(void **state)
{
	struct fx f;
	struct frame_info fi[64];
	char *buf, *copy, path[80], err[256], want[96];
	size_t len = 0, nf, n;
	struct seen s = { 0 };

	(void)state;
	write_sample(&f);
	buf = fx_slurp(f.path, &len);
	nf = frames_of(buf, len, fi, 64);
	assert_true(nf >= 4);
	copy = malloc(2 * len);
	snprintf(path, sizeof(path), "%s.dup", f.path);
	/* frame 2 written twice: the copy (frame 3 of the file) is refused, its events are
	 * counted once */
	n = splice(copy, buf, len, fi, nf, 1, 0);
	write_file(path, copy, n);
	assert_int_equal(cap_read(path, visit, &s, err, sizeof(err)), CAP_READ_DAMAGED);
	assert_int_equal(s.bad, 0); /* events in order, none twice */
	assert_int_equal(s.records, records_before(fi, 2));
	snprintf(want, sizeof(want), "frame 3 at byte %llu is out of sequence (numbered 2); 2 "
		 "complete frames read", (unsigned long long)fi[2].off);
	assert_non_null(strstr(err, want));
	/* frames 3 and 4 swapped: stops before the moved one */
	memset(&s, 0, sizeof(s));
	n = splice(copy, buf, len, fi, nf, 2, 1);
	write_file(path, copy, n);
	assert_int_equal(cap_read(path, visit, &s, err, sizeof(err)), CAP_READ_DAMAGED);
	assert_int_equal(s.bad, 0);
	assert_int_equal(s.records, records_before(fi, 2));
	assert_non_null(strstr(err, "is out of sequence (numbered 4)"));
	/* a capture from before numbering (0 in every frame) is read whole, as before */
	memcpy(copy, buf, len);
	for (n = 0; n < nf; n++)
		memset(copy + fi[n].off + 12, 0, 4);
	write_file(path, copy, len);
	memset(&s, 0, sizeof(s));
	assert_int_equal(cap_read(path, visit, &s, err, sizeof(err)), CAP_READ_OK);
	assert_int_equal(s.bad, 0);
	assert_int_equal(s.records, NREC + NREC / 10);
	unlink(path);
	unlink(f.path);
	free(copy);
	free(buf);
}

static void test_writer_open_error(void **state)
{
	char err[256];

	(void)state;
	assert_null(cap_writer_open("/tmp/no-such-dir-libprof/x.prof", err, sizeof(err)));
	assert_string_equal(err, "/tmp/no-such-dir-libprof/x.prof: No such file or directory");
	assert_null(cap_writer_open("/dev/full", err, sizeof(err)));
	assert_string_equal(err, "/dev/full: No space left on device");
}

static void test_empty_capture_and_flush(void **state)
{
	struct fx f;
	struct seen s = { 0 };
	char err[256], *buf;
	size_t len;

	(void)state;
	fx_open(&f, "empty");
	assert_int_equal(cap_flush(f.w), 0); /* nothing pending: no frame */
	assert_int_equal(cap_writer_bytes(f.w), 16);
	fx_name(&f, 1, 1, "x");
	assert_int_equal(cap_flush(f.w), 0);
	assert_true(cap_writer_bytes(f.w) > 32);
	fx_close(&f);
	buf = fx_slurp(f.path, &len);
	assert_int_equal(memcmp(buf, "LIBPROF", 8), 0);
	free(buf);
	assert_int_equal(cap_read(f.path, visit, &s, err, sizeof(err)), CAP_READ_OK);
	assert_int_equal(s.records, 1);
	unlink(f.path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_writer_threads_keep_order),
		cmocka_unit_test(test_visitor_stops),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_duplicated_and_moved_frames),
		cmocka_unit_test(test_flipped_byte),
		cmocka_unit_test(test_bad_record_lengths),
		cmocka_unit_test(test_not_a_capture),
		cmocka_unit_test(test_writer_full_disk),
		cmocka_unit_test(test_writer_open_error),
		cmocka_unit_test(test_empty_capture_and_flush),
		cmocka_unit_test(test_follow_growing),
	};
	/* once as small files are read, once with every frame decompressed ahead by the
	 * reader's second thread (what files of 4 MiB and more get) */
	int failed = cmocka_run_group_tests_name("read in one thread", tests, NULL, NULL);
	cap_read_ahead_min_bytes = 0;
	return failed + cmocka_run_group_tests_name("read ahead", tests, NULL, NULL);
}
