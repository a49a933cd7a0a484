/* The raw capture (profile.prof): the source of truth every output is made from.
 *
 * File:  "LIBPROF\0" (8 bytes) | u32 version | u32 reserved | frames...
 * Frame: u32 magic 'LPF1' | u32 compressed length | u32 raw length | u32 sequence |
 *        one zstd frame (with content checksum) holding raw-length bytes of records.
 * Record: struct cap_rec_hdr then payload, payload padded to a multiple of 8 bytes.
 * All integers little-endian (the machines this runs on). */
#ifndef PROF_FORMATS_CAPTURE_H
#define PROF_FORMATS_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "preload/common/event.h"

#define CAP_FILE_MAGIC "LIBPROF"  /* 8 bytes with its NUL */
#define CAP_VERSION 2        /* 2: events may come packed (CAP_EVENTS_PACKED) */
#define CAP_VERSION_OLDEST 1 /* still read */
#define CAP_FRAME_MAGIC 0x3146504cu /* "LPF1" */
#define CAP_MAX_FRAME_RAW (64u << 20)

enum cap_type {
	CAP_SESSION = 1,     /* text "key=value\n" lines: command, host, clock, start_ns, ... */
	CAP_PROCESS = 2,     /* struct cap_process + command line (NUL-separated args) */
	CAP_PROCESS_END = 3, /* struct cap_process_end */
	CAP_THREAD = 4,      /* struct cap_thread + name bytes */
	CAP_STRING = 5,      /* struct cap_string + bytes (no NUL) */
	CAP_CATEGORY = 6,    /* struct cap_string (id = category index) + name bytes */
	CAP_EVENTS = 7,      /* struct cap_events + n * struct prof_event (times in ns) */
	CAP_SESSION_END = 8, /* text "key=value\n" lines: end_ns, events, lost, ... */
	CAP_STACK = 9,       /* struct cap_stack + nframes * u64 (return addresses) */
	CAP_MODULE = 10,     /* struct cap_module + path bytes (as /proc/<pid>/maps names it) */
	CAP_FRAME_NAME = 11, /* struct cap_frame_name + the frame's name, given at the end */
	CAP_PART = 12,       /* text "part=N\nstart_ns=T\n": a part of a capture in parts */
	CAP_FOLD = 13,       /* struct cap_fold + n bytes: the collector's fold, alone in the
				last frame (formats/model/fold.c) */
	CAP_JOB = 14,        /* struct cap_job + "key=value\n" lines: the launcher's facts of
				the image announced just before (launcher, rank, local_rank,
				world_size, job) */
	CAP_EVENTS_PACKED = 15, /* struct cap_events + the count events packed
				   (event_pack.h); readers are handed them as CAP_EVENTS */
	CAP_DRAINED = 16,    /* struct cap_drained: how far the events before it go */
};

/* Written after a drain pass: every event stamped on the session clock before before_ns
 * (CUPTI's records aside: they come in buffers, late) was written before this record,
 * but for one whose writer took its time more than CAP_DRAINED_MARGIN_NS before
 * publishing it (preempted in the middle of a record). What lets a reader merge the
 * threads' allocator calls in time order holding milliseconds of them, not seconds
 * (formats/model/memtrack.h). */
#define CAP_DRAINED_MARGIN_NS 100000000ull /* 100 ms: a cgroup's CPU period */
struct cap_drained {
	uint64_t before_ns;
};

/* Which images the outputs fold away (formats/model/fold.c's rule), decided by the
 * collector over the records it wrote: folded[i] (1 or 0) for the i-th CAP_PROCESS
 * record. Alone in the capture's last frame, so readers find it without a pass. */
struct cap_fold {
	uint32_t n, images, helpers, reserved;
	/* followed by n bytes */
};

/* A capture in parts (PROFILER_ROTATE, PROFILER_FLIGHT) is a directory of files
 * part-NNNNNN.prof, each a whole capture: CAP_SESSION, CAP_PART, then again the records
 * of every process still running that its events need (CAP_PROCESS with
 * CAP_PROCESS_CONTINUED, threads, strings, categories, stacks, modules), then its events.
 * Read in order they are one capture; the last holds CAP_SESSION_END. */
#define CAP_PART_PREFIX "part-"
#define CAP_PART_SUFFIX ".prof"

struct cap_rec_hdr {
	uint32_t type; /* enum cap_type */
	uint32_t len;  /* payload bytes, before padding */
};

struct cap_process {
	uint32_t pid;
	uint32_t ppid;
	uint64_t start_ns; /* session clock */
	uint32_t exec_seq; /* 0 for the first image of this pid, +1 per exec */
	uint32_t flags;    /* CAP_PROCESS_CONTINUED */
	/* followed by the command line, args separated by NUL */
};

struct cap_job {
	uint32_t pid;
	uint32_t exec_seq;
	/* followed by the lines */
};

/* Repeated at the start of a later part: a reader that has this image (same pid and
 * exec_seq, not ended) goes on with it; one reading the part alone starts it here. */
#define CAP_PROCESS_CONTINUED 1u

struct cap_process_end {
	uint32_t pid;
	int32_t status;  /* exit code, or -signal, or INT32_MIN when unknown */
	uint64_t end_ns;
	uint64_t lost;   /* events this process dropped in total */
	/* the image's CPU time, user + system of every thread (0: not known: it was killed,
	 * or an older capture, whose record ends before this field) */
	uint64_t cpu_ns;
};

struct cap_thread {
	uint32_t pid;
	uint32_t tid;
	/* followed by the thread name */
};

struct cap_string {
	uint32_t pid;
	uint32_t id;
	/* followed by the bytes */
};

struct cap_events {
	uint32_t pid;
	uint32_t tid;
	uint32_t count;
	uint32_t reserved;
	/* followed by count * struct prof_event */
};

/* A distinct call stack of a process (PROF_EV_STACK events name it by id). Frames are
 * innermost first: the first a program address, the rest return addresses; bit 63 set
 * marks a Python frame whose low 32 bits are a string id of that process. */
struct cap_stack {
	uint32_t pid;
	uint32_t id;
	uint32_t nframes;
	uint32_t reserved;
	/* followed by nframes * u64 */
};

/* An executable mapping of a process: [start, end) maps the module from file offset
 * offset. */
struct cap_module {
	uint32_t pid;
	uint32_t reserved;
	uint64_t start;
	uint64_t end;
	uint64_t offset;
	/* followed by the path */
};

/* The name of a native frame of a process ("function (file:line)", "function (module)",
 * "0xOFFSET (module)"), symbolized by the collector when the session ended, from the
 * modules that ran. */
struct cap_frame_name {
	uint32_t pid;
	uint32_t exec_seq; /* the process image (CAP_PROCESS's exec_seq) */
	uint64_t pc;
	/* followed by the name */
};

/* ---- writer ---- */
struct cap_writer;

/* Creates (truncates) path and writes the file header. NULL on error, with a one-line
 * reason in err. */
struct cap_writer *cap_writer_open(const char *path, char *err, size_t errlen);
/* The same with n compressing threads (at most 4; 0: frames are compressed and written
 * by the calling thread). cap_writer_open picks a quarter of the CPUs, 1 to 4. */
struct cap_writer *cap_writer_open_workers(const char *path, unsigned n, char *err,
					   size_t errlen);
/* The same on fd, a new empty file opened for writing (the writer owns it from here,
 * even on failure); path names it in messages. */
struct cap_writer *cap_writer_fdopen(int fd, const char *path, unsigned n, char *err,
				     size_t errlen);
/* The compressing threads cap_writer_open would start. */
unsigned cap_writer_workers(void);
/* Appends one record to the current frame; a full frame is handed to be compressed and
 * written (in order; a failure shows on a later call at the latest on cap_flush).
 * Returns 0, or -1 with errno set (the reason is kept for cap_writer_error). */
int cap_write(struct cap_writer *w, uint32_t type, const void *payload, size_t len);
/* The same with the payload in two pieces (a fixed struct then variable bytes). */
int cap_write2(struct cap_writer *w, uint32_t type, const void *head, size_t head_len,
	       const void *tail, size_t tail_len);
/* The same with a payload in n pieces, written one after the other. */
struct cap_piece;
int cap_writev(struct cap_writer *w, uint32_t type, const struct cap_piece *pieces, int n);
/* Hands the pending records over as one frame (nothing when empty) and waits until
 * every frame is written. */
int cap_flush(struct cap_writer *w);
/* Someone waits for what was written so far (the program held while a reader catches
 * up): the compressing threads leave SCHED_IDLE while on is set, and turning it on hands
 * the current frame over (a reader would wait for it). 0, or -1 as cap_write. */
int cap_writer_hurry(struct cap_writer *w, int on);
/* The caller compresses one frame no worker has taken yet, having nothing else to do
 * (the drain loop while it holds the program: the workers may be idle-only and starved).
 * 1 if it did, else 0. */
int cap_writer_help(struct cap_writer *w);
/* For the caller when it has time (the drain loop, idle): frees the frames written
 * beyond the spares kept and makes spare frames ahead of a burst. Neither is done by
 * the compressing threads (see capture_write.c, SPARES_AHEAD). */
void cap_writer_tidy(struct cap_writer *w);
/* Flushes and closes. Returns 0 or -1. */
int cap_writer_close(struct cap_writer *w);
const char *cap_writer_error(const struct cap_writer *w);
uint64_t cap_writer_bytes(const struct cap_writer *w); /* compressed bytes written */
/* Bytes of the file so far, the raw bytes of the frames in it, and the raw bytes handed
 * over and not written yet (to estimate what the file will hold). */
void cap_writer_sizes(const struct cap_writer *w, uint64_t *written, uint64_t *raw_written,
		      uint64_t *raw_pending);

/* ---- reader ---- */

/* Called for every record of every complete frame, in file order. Return non-zero to
 * stop reading (cap_read then returns that value). */
typedef int (*cap_visit_fn)(void *ctx, uint32_t type, const void *payload, uint32_t len);

enum cap_read_result {
	CAP_READ_OK = 0,
	CAP_READ_DAMAGED = 1,  /* every complete frame before the damage was visited */
	CAP_READ_UNUSABLE = 2, /* cannot open, not a capture, unsupported version */
};

/* Reads path, visiting each record. Returns an enum cap_read_result (or the visitor's
 * non-zero value); err gets one line naming the problem and where it is. A directory is
 * read as a capture in parts: its parts in order, as one capture (a damaged part is
 * reported and the next ones still read; a part gone meanwhile is skipped). */
int cap_read(const char *path, cap_visit_fn visit, void *ctx, char *err, size_t errlen);
/* Files of at least this size are decompressed a frame ahead by a second thread (tests
 * set it to read small files both ways). */
extern uint64_t cap_read_ahead_min_bytes;
/* When set, a file is read as if it ended there: a dump reads the capture being written
 * up to the size its complete frames had (0: to its end). */
extern uint64_t cap_read_size_limit;
/* When set, a file is read as it is being written (the collector's live tables,
 * collector/drain/live.c): at the end of the bytes known to be complete frames, the
 * reader calls it with that size; it waits until more are, and returns the new size, or
 * returns the same size once the capture is finished. */
extern uint64_t (*cap_read_follow)(uint64_t known);
/* When set, called on the thread that visits the records: after each frame's, with the
 * file offset the frames visited reach, and about every 20 ms while that thread waits for
 * the next frame of a capture being followed (the live outputs' dumps, live.c: the
 * visitor's state there holds every record up to that offset, and nothing after). */
extern void (*cap_read_between)(uint64_t end);
/* When set, called on the thread that visits after each frame's records, with how far
 * the frames visited reach and the file's size (prof's progress line). */
extern void (*cap_read_progress)(uint64_t at, uint64_t size);
/* The same for one file only. */
int cap_read_file(const char *path, cap_visit_fn visit, void *ctx, char *err, size_t errlen);
/* The same, decompressing ahead whatever the file's size when ahead is set (the parts
 * of a large capture in parts). */
int cap_read_file_ahead(const char *path, cap_visit_fn visit, void *ctx, char *err,
			size_t errlen, int ahead);

/* The parts of a capture directory, sorted: *names holds n malloc'd "DIR/part-..." paths
 * (free with cap_parts_free). 0, or -1 with errno (ENOTDIR: not a directory). */
int cap_parts(const char *dir, char ***names, size_t *n);
void cap_parts_free(char **names, size_t n);
/* Whether path is a directory (a capture in parts). */
int cap_is_parts(const char *path);

#endif
