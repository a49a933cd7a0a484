/* Writes a capture with the real writer (formats/capture/capture_write.c): a sound process (pid
 * 100: three "good_range" ranges and a malloc on thread 101), followed by damage of one
 * kind, as a corrupted segment or a hostile file could hold it. capture.py gives the
 * result to prof report and prof export.
 * usage: damaged_capture OUT KIND
 * KIND: undefined_ids, unknown_pid, end_before_start, huge_values, dangling_stacks,
 *       many_images, many_tids, many_modules, none */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/capture/capture.h"

static struct cap_writer *w;

static void rec(uint32_t type, const void *head, size_t hlen, const void *tail, size_t tlen)
{
	if (cap_write2(w, type, head, hlen, tail, tlen)) {
		fprintf(stderr, "damaged_capture: %s\n", cap_writer_error(w));
		exit(2);
	}
}

static void process(uint32_t pid, uint64_t start)
{
	struct cap_process p = {.pid = pid, .ppid = 1, .start_ns = start};
	rec(CAP_PROCESS, &p, sizeof p, "prog\0arg", 9);
}

static void process_end(uint32_t pid, uint64_t end, uint64_t lost)
{
	struct cap_process_end e = {.pid = pid, .status = 0, .end_ns = end, .lost = lost};
	rec(CAP_PROCESS_END, &e, sizeof e, NULL, 0);
}

static void string(uint32_t type, uint32_t pid, uint32_t id, const char *s)
{
	struct cap_string h = {.pid = pid, .id = id};
	rec(type, &h, sizeof h, s, strlen(s));
}

static void events(uint32_t pid, uint32_t tid, const struct prof_event *ev, uint32_t n)
{
	struct cap_events h = {.pid = pid, .tid = tid, .count = n};
	rec(CAP_EVENTS, &h, sizeof h, ev, n * sizeof *ev);
}

static struct prof_event ev(uint64_t t0, uint64_t t1, uint32_t name, uint8_t cat,
			    uint8_t type, uint8_t depth)
{
	return (struct prof_event){.t0 = t0, .t1 = t1, .name = name, .cat = cat, .type = type,
				   .depth = depth};
}

int main(int argc, char **argv)
{
	char err[512];
	if (argc != 3) {
		fprintf(stderr, "usage: damaged_capture OUT KIND\n");
		return 2;
	}
	const char *kind = argv[2];
	w = cap_writer_open_workers(argv[1], 0, err, sizeof err);
	if (!w) {
		fprintf(stderr, "damaged_capture: %s\n", err);
		return 2;
	}
	const char *session = "command=damaged\nhost=test\nclock=monotonic\nstart_ns=1000\n";
	rec(CAP_SESSION, session, strlen(session), NULL, 0);

	/* the sound part */
	process(100, 1000);
	struct cap_thread th = {.pid = 100, .tid = 101};
	rec(CAP_THREAD, &th, sizeof th, "main", 4);
	string(CAP_STRING, 100, 1, "good_range");
	string(CAP_STRING, 100, 2, "malloc");
	struct prof_event good[4];
	for (int i = 0; i < 3; i++)
		good[i] = ev(2000 + 1000 * i, 2500 + 1000 * i, 1, PROF_CAT_USER, PROF_EV_COMPLETE, 0);
	good[3] = ev(6000, 6100, 2, PROF_CAT_MEMORY, PROF_EV_COMPLETE, 0);
	good[3].flags = PROF_EVF_ALLOCS;
	good[3].a = 0x1000;
	good[3].b = 64;
	events(100, 101, good, 4);

	if (!strcmp(kind, "undefined_ids")) {
		/* a name id and a dynamic category never defined, a category index past the
		 * fixed ones that no CAP_CATEGORY names */
		struct prof_event e[3] = {
			ev(7000, 7100, 999999, PROF_CAT_USER, PROF_EV_COMPLETE, 0),
			ev(7200, 7300, 1, 200, PROF_EV_COMPLETE, 0),
			ev(7400, 7400, 0xffffffffu, 255, PROF_EV_INSTANT, 0),
		};
		events(100, 101, e, 3);
	} else if (!strcmp(kind, "unknown_pid")) {
		/* a thread and events of a pid no CAP_PROCESS announced, a PROCESS_END of
		 * another */
		struct cap_thread t = {.pid = 777, .tid = 778};
		rec(CAP_THREAD, &t, sizeof t, "ghost", 5);
		struct prof_event e = ev(7000, 7100, 5, PROF_CAT_USER, PROF_EV_COMPLETE, 3);
		events(777, 778, &e, 1);
		process_end(888, 9000, 0);
	} else if (!strcmp(kind, "end_before_start")) {
		/* a process ended before it started, its event ending before it began */
		process_end(200, 1500, 0);
		process(200, 8000);
		string(CAP_STRING, 200, 1, "backwards");
		struct prof_event e = ev(9000, 8500, 1, PROF_CAT_USER, PROF_EV_COMPLETE, 0);
		events(200, 201, &e, 1);
		process_end(200, 100, 0);
	} else if (!strcmp(kind, "huge_values")) {
		/* counts, sizes, times and depths at their limits */
		struct prof_event e[6] = {
			ev(7000, UINT64_MAX, 1, PROF_CAT_USER, PROF_EV_COMPLETE, 255),
			ev(7000, 7100, 2, PROF_CAT_MEMORY, PROF_EV_COMPLETE, 254),
			ev(7100, 7200, 0, PROF_CAT_LOST, PROF_EV_LOST, 0),
			ev(UINT64_MAX, UINT64_MAX, 1, PROF_CAT_STEP, PROF_EV_INSTANT, 0),
			ev(7300, 7300, 1, PROF_CAT_COUNTER, PROF_EV_COUNTER, 0),
			ev(0, 0, 1, PROF_CAT_STEP, PROF_EV_INSTANT, 0),
		};
		e[1].flags = PROF_EVF_ALLOCS | PROF_EVF_FREES;
		e[1].a = 0x2000;
		e[1].b = UINT64_MAX;
		e[1].c = 0x1000;
		e[2].a = UINT64_MAX;
		e[4].a = 0x7ff8000000000001ull; /* a NaN as a double */
		e[4].flags = PROF_EVF_DOUBLE;
		events(100, 101, e, 6);
		process_end(100, UINT64_MAX, UINT64_MAX);
	} else if (!strcmp(kind, "dangling_stacks")) {
		/* a stack event naming a stack never written, a stack whose Python frame names
		 * a string never defined, frame names for a process never seen */
		struct cap_stack s = {.pid = 100, .id = 7, .nframes = 2};
		uint64_t frames[2] = {PROF_STACK_FRAME_PYTHON | 4242, 0x401000};
		rec(CAP_STACK, &s, sizeof s, frames, sizeof frames);
		struct prof_event e[4] = {
			ev(7000, 7000, 0, 0, PROF_EV_STACK, 0),
			ev(7000, 7100, 2, PROF_CAT_MEMORY, PROF_EV_COMPLETE, 0),
			ev(7200, 7200, 0, 0, PROF_EV_STACK, 0),
			ev(7200, 7300, 2, PROF_CAT_MEMORY, PROF_EV_COMPLETE, 0),
		};
		e[0].a = 99999;
		e[1].flags = e[3].flags = PROF_EVF_ALLOCS;
		e[1].a = 0x3000;
		e[3].a = 0x4000;
		e[1].b = e[3].b = 32;
		e[2].a = 7;
		events(100, 101, e, 4);
		struct cap_frame_name fn = {.pid = 4321, .exec_seq = 9, .pc = 0x401000};
		rec(CAP_FRAME_NAME, &fn, sizeof fn, "nowhere", 7);
	} else if (!strcmp(kind, "many_images")) {
		/* 40,000 processes announced and nothing else: 32 bytes each on disk */
		for (uint32_t i = 0; i < 40000; i++)
			process(1000 + i, 1000);
	} else if (!strcmp(kind, "many_tids")) {
		/* 100,000 API records (PROF_EVF_TID) of pid 100, each naming another thread */
		static struct prof_event e[100000];
		for (uint32_t i = 0; i < 100000; i++) {
			e[i] = ev(7000 + i, 7001 + i, 1, PROF_CAT_USER, PROF_EV_COMPLETE, 0);
			e[i].flags = PROF_EVF_TID;
			e[i].c = 5000 + i;
		}
		events(100, 102, e, 100000);
	} else if (!strcmp(kind, "many_modules")) {
		/* 120,000 modules of pid 100 and a stack of 120,000 frames outside them all;
		 * 20,000 processes and 300,000 frame names of an image never seen */
		struct cap_module mod = {.pid = 100};
		for (uint64_t i = 0; i < 120000; i++) {
			mod.start = 0x10000000ull + i * 0x1000;
			mod.end = mod.start + 0x1000;
			rec(CAP_MODULE, &mod, sizeof mod, "/nonexistent/lib.so", 19);
		}
		static uint64_t frames[120000];
		for (size_t i = 0; i < 120000; i++)
			frames[i] = 0x7000000000ull + i * 16;
		struct cap_stack st = {.pid = 100, .id = 1, .nframes = 120000};
		rec(CAP_STACK, &st, sizeof st, frames, sizeof frames);
		struct prof_event e[2] = {
			ev(7000, 7000, 0, 0, PROF_EV_STACK, 0),
			ev(7000, 7100, 2, PROF_CAT_MEMORY, PROF_EV_COMPLETE, 0),
		};
		e[0].a = 1;
		e[1].flags = PROF_EVF_ALLOCS;
		e[1].a = 0x5000;
		e[1].b = 16;
		events(100, 101, e, 2);
		for (uint32_t i = 0; i < 20000; i++)
			process(1000 + i, 1000);
		struct cap_frame_name fn = {.pid = 4321, .exec_seq = 9};
		for (uint32_t i = 0; i < 300000; i++) {
			fn.pc = 0x401000 + i;
			rec(CAP_FRAME_NAME, &fn, sizeof fn, "f", 1);
		}
	} else if (strcmp(kind, "none")) {
		fprintf(stderr, "damaged_capture: unknown kind %s\n", kind);
		return 2;
	}
	const char *end = "end_ns=10000\nevents=4\nlost=0\n";
	rec(CAP_SESSION_END, end, strlen(end), NULL, 0);
	if (cap_writer_close(w)) {
		fprintf(stderr, "damaged_capture: cannot write %s\n", argv[1]);
		return 2;
	}
	return 0;
}
