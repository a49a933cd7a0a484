/* The shared-memory ABI between profiled processes and the collector, in one place.
 *
 * Session segment  /libprof-<uid>-<sid>               created by the first process (or
 *                                                     `prof record`), read by everyone
 * Process segment  /libprof-<uid>-<sid>-<pid>-<nonce> one per process image (fork, exec),
 *                                                     found by the collector by name
 *
 * Discovery goes through the names in /dev/shm, not through a descriptor held in the
 * program: daemons that close every descriptor cannot cut the session, and nothing needs
 * to be announced before the first event. No lock is shared across processes; every
 * field written by one side and read by the other is an atomic with acquire/release. */
#ifndef PROF_PRELOAD_SHM_LAYOUT_H
#define PROF_PRELOAD_SHM_LAYOUT_H

#include <stdatomic.h>
#include <stdint.h>

#include "preload/common/event.h"

#define PROF_SHM_MAGIC 0x314d48534650524cull /* "LRPFSHM1" */
#define PROF_SHM_VERSION 8
#define PROF_PATH_MAX 4096
#define PROF_CMDLINE_MAX 2048
#define PROF_JOB_MAX 256
#define PROF_MAX_CATEGORIES 64
#define PROF_CATEGORY_NAME_MAX 32
#define PROF_CHILD_SLOTS 64
#define PROF_LOST_THREADS 2048 /* threads beyond the rings, each named with its losses */
#define PROF_AREA_CHUNKS 16 /* first chunk, then 15 doublings: 32 Ki times the first */

/* The frameworks libprof knows (preload/frameworks/presets.c), as bits of a process
 * segment's `frameworks`, named as PROFILER_FRAMEWORK names their presets; the collector
 * names those found on its summary line. */
enum {
	PROF_FW_MXNET = 1,
	PROF_FW_TORCH = 2,
	PROF_FW_TENSORFLOW = 4,
	PROF_FW_ONNXRUNTIME = 8,
	PROF_FW_MPI = 16
};
#define PROF_NFRAMEWORKS 5
#define PROF_FRAMEWORK_NAMES {"mxnet", "torch", "tensorflow", "onnxruntime", "mpi"}

enum prof_clock_kind { PROF_CLOCK_MONO = 1, PROF_CLOCK_TSC = 2 };

#define PROF_RECORD_EXITED 0x10000u /* record_exit: the wait status is in the low 16 bits */

enum prof_session_state {
	SESSION_RUNNING = 0,
	SESSION_DONE = 1,   /* outputs written */
	SESSION_FAILED = 2, /* the collector gave up; see its stderr */
	SESSION_CLOSING = 3, /* every process is gone: no new one may join */
};

/* Requests a process can make of the collector (dump_kind). */
enum prof_dump_kind { DUMP_OUTPUTS = 1, DUMP_TABLES = 2 };

struct prof_session_shm {
	uint64_t magic;
	uint32_t version;
	uint32_t clock_kind;         /* enum prof_clock_kind, the same for every process */
	uint32_t root_pid;           /* the process whose exit waits for the outputs */
	/* prof record: its command's pid, and its wait status | PROF_RECORD_EXITED once
	 * reaped (0 until then), for the collector, a process of its own (cmd_record.c) */
	_Atomic uint32_t record_child;
	uint64_t clock_tsc, clock_ns; /* a clock pair read when the session was made: the
					 collector's first slope baseline */
	_Atomic uint32_t collector_pid;
	_Atomic uint32_t state;      /* enum prof_session_state; futex word */
	_Atomic uint32_t root_release; /* futex word: set when the root may exit at once */
	_Atomic uint32_t collector_ready; /* futex word: the drain loop runs */
	_Atomic uint32_t record_exit;
	_Atomic uint64_t forks_started;    /* fork() calls in progress or done */
	_Atomic uint64_t forks_registered; /* children that made their segment */
	uint64_t ring_bytes;         /* per-thread ring size */
	uint32_t block;              /* PROFILER_BLOCK: writers wait instead of dropping */
	uint32_t quiet;
	uint64_t max_json_events;
	uint32_t continuous_dump;    /* rewrite the outputs every dump_period_ms */
	uint32_t dump_period_ms;
	uint32_t aggregate_stats;    /* write the tables (profile.txt) */
	uint32_t stacks;             /* PROFILER_STACK is on: the collector reads maps */
	uint32_t follow;             /* PROFILER_FOLLOW: recording waits for a framework's
					profiler */
	_Atomic uint32_t prefix_seq; /* bumped when output_prefix changes */
	char output_prefix[PROF_PATH_MAX]; /* absolute, %-expanded */
	/* prof_dump / prof_dumps: one request at a time, guarded by dump_lock */
	_Atomic uint32_t dump_lock;
	_Atomic uint32_t dump_request; /* futex word for the collector */
	_Atomic uint32_t dump_done;    /* futex word for the requester */
	_Atomic int32_t dump_status;
	uint32_t dump_kind;
	char dump_path[PROF_PATH_MAX]; /* DUMP_TABLES writes here */
	char command[PROF_CMDLINE_MAX];  /* the root's command line, spaces between args */
	/* Liveness (issue 12: no hang at exit). The collector bumps heartbeat every drain
	 * pass, so a blocked writer tells a stopped or dead collector from a busy one. */
	_Atomic uint64_t heartbeat;
	uint32_t uid, euid;          /* the session's user: segment names and owner */
	/* Children counted in forks_started, by pid (the last PROF_CHILD_SLOTS): the
	 * collector waits only for one that is alive and has no segment yet. */
	_Atomic uint32_t children_next;
	_Atomic uint32_t children[PROF_CHILD_SLOTS];
	uint32_t overwrite;          /* PROFILER_OVERWRITE: outputs replace what is there */
	/* follow: a framework's profiler started in some process (recording turned on);
	 * without it the collector says why the capture is empty */
	_Atomic uint32_t follow_started;
	/* the collector's /proc start time (0: not known yet): its pid alone may be reused */
	_Atomic uint64_t collector_start_ticks;
	/* PROFILER_DELAY / PROFILER_DURATION: the collector keeps the events of that window
	 * of the session (0 / 0: all) */
	uint32_t delay_ms, duration_ms;
	uint32_t trace_alloc; /* PROFILER_TRACE_ALLOC: 1 every allocator call in the trace */
	/* PROFILER_ALLOC_TIMING: allocator calls carry a duration (0: their start only) */
	uint32_t alloc_timing;
	char schedule[96];    /* PROFILER_SCHEDULE as set, for the tables */
	/* PROFILER_ROTATE / PROFILER_FLIGHT (span.h): the capture is a directory of parts,
	 * a new one every rotate_ms or rotate_bytes; the flight recorder keeps the parts of
	 * the last flight_ms or flight_bytes. At most one of the four is set per pair. */
	uint64_t rotate_ms, rotate_bytes, flight_ms, flight_bytes;
};

enum prof_proc_state {
	PROC_STARTING = 0,
	PROC_LIVE = 1,
	PROC_EXITED = 2,  /* normal exit: everything is in the rings */
	PROC_EXECING = 3, /* exec in progress; a newer image of this pid supersedes it */
};

enum prof_slot_state { SLOT_FREE = 0, SLOT_OWNED = 1, SLOT_RETIRED = 2 };

/* A thread that found every ring slot taken: its events are dropped and counted here
 * (by that thread alone, no system call), and the collector reports them on it. */
struct prof_lost_thread {
	_Atomic uint32_t tid;   /* set (release) once the name is in place */
	uint32_t pad;
	_Atomic uint64_t lost;  /* events dropped */
	uint64_t first, last;   /* clock ticks of the first and latest drop */
	char name[16];          /* the thread's name when it first dropped one */
};

/* One per thread. Writer and reader fields live on separate cache lines. */
struct prof_slot {
	_Atomic uint32_t state; /* enum prof_slot_state; FREE->OWNED by a thread (CAS),
				   OWNED->RETIRED at thread exit, RETIRED->FREE by the
				   collector once drained */
	uint32_t tid;
	_Atomic uint32_t gen;   /* +1 per claim, so the collector notices reuse */
	_Atomic uint32_t orphan; /* claimed during thread teardown, after the exit hook:
				    the collector retires it once the thread is gone */
	_Atomic uint32_t name_id; /* string id + 1 of a name libprof gave the thread (an
				     MXNet engine worker); 0: its own. Reset at each claim */
	_Atomic uint32_t prepared; /* the ring's memory is allocated in the segment (by the
				      collector ahead of need, or by a claim): a claim need not
				      commit it, and no store can meet a full /dev/shm */
	_Atomic uint64_t committed; /* bytes from the ring's start a claim committed as its
				       writer reached them (ring_writer_commit_lazily) */
	char pad1[32];
	/* writer's line */
	_Atomic uint64_t head;       /* events written */
	_Atomic uint64_t lost_pending;  /* dropped, not yet reported by a LOST event */
	_Atomic uint64_t lost_first;    /* ticks of the first/last drop of that gap */
	_Atomic uint64_t lost_last;
	_Atomic uint64_t lost_total;
	uint64_t produced_unused;
	char pad2[16];
	/* reader's line */
	_Atomic uint64_t tail;  /* events consumed */
	char pad3[56];
};

_Static_assert(sizeof(struct prof_slot) == 192, "slot layout is ABI");

struct prof_proc_shm {
	uint64_t magic;
	uint32_t version;
	uint32_t pid;
	uint32_t ppid;
	uint32_t nslots;
	uint64_t proc_start_ticks;   /* /proc/<pid>/stat field 22: tells pid reuse apart */
	uint64_t created_ns;         /* CLOCK_MONOTONIC when the segment was made */
	uint64_t ring_cap;           /* events per ring, a power of two */
	uint64_t strings_off;        /* byte offsets from the segment start */
	uint64_t strings_size;
	uint64_t slots_off;
	uint64_t rings_off;
	uint64_t segment_size;
	_Atomic uint32_t state;      /* enum prof_proc_state */
	_Atomic uint32_t ncategories;
	_Atomic uint64_t strings_used; /* bytes of committed string entries */
	_Atomic uint64_t lost_no_slot; /* events dropped: no free slot or ring memory */
	uint64_t stacks_off;         /* the stack area (see struct prof_stack_entry) */
	uint64_t stacks_size;
	_Atomic uint64_t stacks_reserved; /* bytes handed out; entries become ready later */
	/* The strings and stack areas grow (issue 29): past the first chunk above, further
	 * chunks are appended to this same file and mapped apart (prof_area_* below).
	 * chunk_off[k] is chunk k's file offset, stored (release) once the chunk is
	 * allocated and before any entry in it is published; 0 until then. Entry [0] is
	 * unused (the first chunk is strings_off / stacks_off). */
	_Atomic uint64_t strings_chunk_off[PROF_AREA_CHUNKS];
	_Atomic uint64_t stacks_chunk_off[PROF_AREA_CHUNKS];
	/* Events that lost their name ("<unnamed>") or stack ("(no stack)") because an
	 * area could not grow (PROFILER_AREA_MAX, or /dev/shm full): said in the tables. */
	_Atomic uint64_t names_lost;
	_Atomic uint64_t stacks_lost;
	/* The image's CPU time (user + system, every thread), for the rank tables: the
	 * process's CPU clock when the segment was made, and the time from then to the
	 * image's end (exit or exec), set there; 0 until then, and for a killed process */
	uint64_t cpu_start_ns;
	_Atomic uint64_t cpu_ns;
	char cmdline[PROF_CMDLINE_MAX]; /* NUL-separated args, as /proc/<pid>/cmdline */
	uint32_t cmdline_len;
	char job[PROF_JOB_MAX];      /* prof_job_describe's lines: launcher, rank, ... */
	uint32_t job_len;
	_Atomic uint32_t frameworks; /* PROF_FW_* bits: the frameworks found loaded here */
	char categories[PROF_MAX_CATEGORIES][PROF_CATEGORY_NAME_MAX]; /* dynamic ones */
	/* entries handed out (by atomic add; beyond the table, lost_no_slot counts) */
	_Atomic uint32_t lost_threads_used;
	uint32_t pad2;
	struct prof_lost_thread lost_threads[PROF_LOST_THREADS];
};

/* A string entry in the strings area: u32 length, then the bytes, padded to 4. The
 * string id is the entry's offset in the area (its logical offset, see below). An entry
 * never spans two chunks: a length of PROF_AREA_PAD says the rest of its chunk is
 * unused, and the area goes on at the next chunk's start. */
struct prof_string_entry {
	uint32_t len;
	char bytes[];
};

/* A distinct call stack in the stack area: written once, never changed. Space is
 * reserved with an atomic add and the entry published by storing nframes last (0 until
 * then), so writers take no lock and the collector reads entries in order, stopping at
 * the first one not ready yet. The stack id is the entry's offset / 8 + 1 (0: none).
 * Frames are return addresses, innermost first; bit 63 set marks a Python frame whose
 * low 32 bits are a string id ("function (file)", one per code object) and bits 32-62
 * its line + 1 (0: the name holds the line, "function (file:line)", as before version
 * 7). An nframes of PROF_AREA_PAD is a reservation that crossed its chunk's end,
 * `hash` bytes long: the next entry starts that far on, in the next chunk. */
struct prof_stack_entry {
	_Atomic uint32_t nframes;
	uint32_t hash;
	uint64_t frames[];
};

#define PROF_AREA_PAD UINT32_MAX

/* An area's logical offsets (string ids, stack ids) over its chunks: chunk 0 is
 * [0, first), chunk k >= 1 is [first << (k - 1), first << k); first is a power of two.
 * So ids never move when an area grows, and each side finds a chunk in a few
 * instructions. */
static inline unsigned prof_area_chunk(uint64_t first, uint64_t at)
{
	return at < first ? 0 : 64u - (unsigned)__builtin_clzll(at >> __builtin_ctzll(first));
}

static inline uint64_t prof_area_chunk_start(uint64_t first, unsigned k)
{
	return k ? first << (k - 1) : 0;
}

static inline uint64_t prof_area_chunk_size(uint64_t first, unsigned k)
{
	return k ? first << (k - 1) : first;
}

static inline struct prof_slot *prof_proc_slot(struct prof_proc_shm *p, unsigned i)
{
	return (struct prof_slot *)((char *)p + p->slots_off) + i;
}

static inline struct prof_event *prof_proc_ring(struct prof_proc_shm *p, unsigned i)
{
	return (struct prof_event *)((char *)p + p->rings_off + (uint64_t)i * p->ring_cap *
				     sizeof(struct prof_event));
}

static inline char *prof_proc_strings(struct prof_proc_shm *p)
{
	return (char *)p + p->strings_off;
}

static inline char *prof_proc_stacks(struct prof_proc_shm *p)
{
	return (char *)p + p->stacks_off;
}

#endif
