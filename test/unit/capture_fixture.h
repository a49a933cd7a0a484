/* Helpers for unit tests that write small captures with the real cap_writer. Header
 * only: each test_*.c is its own program. */
#ifndef PROF_TEST_CAPTURE_FIXTURE_H
#define PROF_TEST_CAPTURE_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/capture/capture.h"

struct fx {
	struct cap_writer *w;
	char path[64];
};

static inline void fx_open(struct fx *f, const char *tag)
{
	char err[256];

	snprintf(f->path, sizeof(f->path), "/tmp/libprof-%s-%d.prof", tag, (int)getpid());
	f->w = cap_writer_open(f->path, err, sizeof(err));
	if (!f->w) {
		fprintf(stderr, "cap_writer_open: %s\n", err);
		abort();
	}
}

/* With n compressing threads (0: inline), for the writer's own tests. */
static inline void fx_open_workers(struct fx *f, const char *tag, unsigned n)
{
	char err[256];

	snprintf(f->path, sizeof(f->path), "/tmp/libprof-%s-%d.prof", tag, (int)getpid());
	f->w = cap_writer_open_workers(f->path, n, err, sizeof(err));
	if (!f->w) {
		fprintf(stderr, "cap_writer_open_workers: %s\n", err);
		abort();
	}
}

static inline void fx_close(struct fx *f)
{
	if (cap_writer_close(f->w))
		abort();
	f->w = NULL;
}

static inline void fx_text(struct fx *f, uint32_t type, const char *text)
{
	cap_write(f->w, type, text, strlen(text));
}

static inline void fx_process(struct fx *f, uint32_t pid, uint32_t exec_seq, const char *cmd,
			      size_t cmdlen)
{
	struct cap_process p = { .pid = pid, .ppid = 1, .start_ns = 1000, .exec_seq = exec_seq };

	cap_write2(f->w, CAP_PROCESS, &p, sizeof(p), cmd, cmdlen);
}

static inline void fx_thread(struct fx *f, uint32_t pid, uint32_t tid, const char *name)
{
	struct cap_thread t = { pid, tid };

	cap_write2(f->w, CAP_THREAD, &t, sizeof(t), name, strlen(name));
}

static inline void fx_string(struct fx *f, uint32_t type, uint32_t pid, uint32_t id,
			     const char *s, size_t n)
{
	struct cap_string h = { pid, id };

	cap_write2(f->w, type, &h, sizeof(h), s, n);
}

static inline void fx_name(struct fx *f, uint32_t pid, uint32_t id, const char *s)
{
	fx_string(f, CAP_STRING, pid, id, s, strlen(s));
}

static inline void fx_events(struct fx *f, uint32_t pid, uint32_t tid,
			     const struct prof_event *e, uint32_t n)
{
	struct cap_events h = { pid, tid, n, 0 };

	cap_write2(f->w, CAP_EVENTS, &h, sizeof(h), e, n * sizeof(*e));
}

static inline struct prof_event fx_ev(uint64_t t0, uint64_t t1, uint32_t name, uint8_t cat,
				      uint8_t type, uint8_t depth)
{
	struct prof_event e;

	memset(&e, 0, sizeof(e));
	e.t0 = t0;
	e.t1 = t1;
	e.name = name;
	e.cat = cat;
	e.type = type;
	e.depth = depth;
	return e;
}

static inline struct prof_event fx_range(uint64_t t0, uint64_t t1, uint32_t name, uint8_t cat,
					 uint8_t depth)
{
	return fx_ev(t0, t1, name, cat, PROF_EV_COMPLETE, depth);
}

/* The whole of a file, NUL-terminated; NULL when it cannot be read. */
static inline char *fx_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (len)
		*len = 0;
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	if (buf) {
		buf[n] = '\0';
		if (len)
			*len = (size_t)n;
	}
	return buf;
}

/* Occurrences of needle in hay. */
static inline size_t fx_count(const char *hay, const char *needle)
{
	size_t n = 0, k = strlen(needle);

	while ((hay = strstr(hay, needle))) {
		n++;
		hay += k;
	}
	return n;
}

#endif
