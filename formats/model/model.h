/* What every output needs from a raw capture besides the events themselves: session
 * facts, processes (one "image" per exec), threads, names and categories resolved per
 * process, lost gaps, and the memory operations for the live-heap analysis.
 *
 * Names are per process image: a CAP_PROCESS record for a pid already seen starts a new
 * image whose string and category ids replace the old ones. All strings are interned in
 * one table (ids called gid here), so outputs key rows by integers. */
#ifndef PROF_FORMATS_MODEL_H
#define PROF_FORMATS_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "formats/capture/capture.h"
#include "formats/capture/capture_source.h"
#include "formats/util/strtab.h"
#include "formats/util/u64map.h"

#define MODEL_MAX_DEPTH PROF_EVENT_DEPTH_MAX /* an event's depth is at most this */
#define MODEL_GPUS 8 /* device ordinals tracked; higher ones are counted as the last */
/* Memory the CUDA calls manage, per domain: GPUs 0..MODEL_GPUS-1, then the page-locked
 * host memory they allocate (cudaMallocHost, cudaHostAlloc: MXNet's cpu_pinned/0). */
#define MODEL_PINNED MODEL_GPUS
/* then MXNet's storage manager's allocations (its profiler's "Device Storage"), host and
 * GPU: the category mxnet_memory, tabled like a device's */
#define MODEL_MXNET_CPU (MODEL_GPUS + 1)
#define MODEL_MXNET_GPU (MODEL_GPUS + 2)
#define MODEL_DEVICES (MODEL_GPUS + 3)
/* Domain d holds a GPU's memory (not pinned host memory, not MXNet's). */
#define MODEL_IS_GPU(d) ((d) >= 0 && (d) < MODEL_GPUS)
/* An image's memory domain d: its heap (d < 0), else device d (const or not). */
#define MODEL_DOMAIN(im, d) ((d) < 0 ? &(im)->mem : &(im)->gpu[d])

/* One allocation or release on the live-heap timeline; see memtrack.h. */
struct mem_op {
	uint64_t t;
	uint64_t ptr;
	uint64_t size; /* bytes of an allocation; MEM_OP_FREE for a release */
	uint32_t stack; /* an allocation's call stack: model stack index + 1, or 0 */
	uint32_t reserved;
};
#define MEM_OP_FREE UINT64_MAX

#define MEM_SIZE_BUCKETS 65

/* Allocations of one call stack (kept by memtrack.c when stacks were captured). */
struct mem_site {
	uint32_t stack;            /* model stack index + 1; 0: allocations without one */
	uint32_t peak_epoch;       /* memtrack.c: peak_bytes holds the value at this peak */
	uint64_t allocs, bytes;
	uint64_t peak_bytes;       /* its blocks live at the image's peak */
	uint64_t live_bytes, live_count; /* still live at the end: leaks */
};

struct mem_stream; /* memtrack.c: operations in flight, the live blocks */
struct mem_curve;  /* memcurve.c: the live bytes over time, bounded */

struct mem_image {
	struct mem_stream *stream; /* while operations arrive (track_memory) */
	struct mem_curve *curve;   /* when the model keeps curves (keep_curves) */
	uint64_t allocs, frees, bytes; /* counted as the events arrive */
	uint64_t peak, peak_t, live_end; /* set by memtrack_finish */
	uint64_t frees_unmatched;  /* releases of blocks never seen allocated (allocated
				      before recording began, or outside the interposed
				      allocator): set, and taken out of frees, by
				      memtrack_finish */
	uint64_t late;             /* operations that reached the analysis after later
				      ones had been applied (memtrack.h) */
	struct mem_site *sites;    /* when any allocation had a stack */
	size_t nsites;
	/* allocations by requested size: bucket 0 holds size 0, bucket k >= 1 sizes in
	 * (2^(k-2), 2^(k-1)] */
	uint64_t size_count[MEM_SIZE_BUCKETS], size_bytes[MEM_SIZE_BUCKETS];
};

struct image {
	uint32_t pid, ppid, exec_seq;
	uint32_t source;    /* the capture it came from, of several read as one (0: the first) */
	uint32_t tpid;      /* its pid in the trace: pid, unless an earlier capture's process
			     * had it (MODEL_TPID_FIRST + N then: trace viewers key processes
			     * by pid alone) */
	uint32_t command;   /* gid of the command line, args joined by spaces; STR_NONE */
	uint32_t label;     /* gid of "basename args", shortened, for trace viewers; with a
			     * rank, "rank R (host) basename args" */
	/* the launcher's facts (CAP_JOB): -1 and STR_NONE when not given */
	int32_t rank, local_rank, world_size;
	uint32_t launcher, job, host;
	uint32_t pid_order; /* rank of this pid among the pids in order of appearance */
	int announced;      /* a CAP_PROCESS record was seen (else made up for its events) */
	int ended;          /* a CAP_PROCESS_END record was seen */
	int folded;         /* a launcher folded away (model_fold); its events are skipped */
	int32_t status;
	uint64_t start_ns, end_ns, lost_reported;
	uint64_t cpu_ns;    /* CPU time, user + system (CAP_PROCESS_END); 0: not known */
	uint32_t cat[256];  /* category gid per index; STR_NONE until resolved */
	struct mem_image mem;
	/* device memory (category gpu_memory) per device ordinal: from the CUDA calls
	 * libprof wraps, or, when CUPTI's memory records saw more in this process, from
	 * those (gpu_from_cupti; gpu_wrapped_calls: what the wrappers saw then, allocations
	 * and releases); see model_read. MODEL_DEVICES of each, allocated at
	 * the image's first device memory event; until then model_no_gpu (all zero, read
	 * only): 20 KiB per image would let a capture of bare CAP_PROCESS records (32
	 * bytes each) take gigabytes. */
	struct mem_image *gpu;
	struct mem_image *gpu_cupti; /* CUPTI's, until model_read picks */
	int gpu_from_cupti;
	uint64_t gpu_wrapped_calls;
	int gpu_cat;        /* the image's category index of gpu_memory, or -1 */
	int mxnet_cat;      /* of mxnet_memory, or -1 */
};

extern const struct mem_image model_no_gpu[MODEL_DEVICES];

struct thread {
	uint32_t image, tid;
	uint32_t name; /* gid, STR_NONE when never named */
	/* A PROF_EV_STACK seen, waiting for the event it belongs to (same t0). */
	uint32_t pending_stack;
	uint64_t pending_t0;
	/* Time spent in completed children, per depth: the streaming self-time state.
	 * ndepth entries each (stats.c grows them as deep as the thread's events go, up to
	 * MODEL_MAX_DEPTH + 2: a fixed 257 made every row 6 KiB, and a capture of many
	 * short threads, or of CUPTI-style records naming many tids, gigabytes). */
	uint64_t *child;
	/* Net bytes per depth: of allocator calls made there, of completed calls there. */
	int64_t *mem_direct;
	int64_t *mem_nested;
	/* Per depth: the calls completed there since the level above last completed, and
	 * the first of them (stats.c: a call whose only child has its name is one call). */
	struct only_child {
		uint64_t t0, dur;
		int64_t mem;
		size_t row, dur_ix;
		uint32_t n;
	} *kids;
	/* Per depth: the time of calls completed there and not (yet) inside a call of their
	 * own category, for up to three categories (stats.c: "% of cat" counts a call nested
	 * in one of its category once). */
	struct cat_time {
		uint32_t cat[3];
		uint64_t t[3];
		uint64_t t0[3]; /* the earliest start among them */
	} *cat_time;
	size_t ndepth;
};

struct lost_gap {
	uint32_t pid, tid;
	uint64_t count, t0, t1;
	int startup; /* made before libprof's constructor ran (PROF_LOST_STARTUP), not a full ring */
};

struct session_kv {
	uint32_t key, val; /* gids */
};

/* Pids the trace gives to processes of later captures whose pid an earlier capture's
 * process has: above any Linux pid (pid_max is at most 2^22). */
#define MODEL_TPID_FIRST (1u << 22)

enum model_clock_method {
	MODEL_CLOCK_SAME,        /* the first capture's clock (same host and boot) */
	MODEL_CLOCK_ANCHORS,     /* moved by the captures' CLOCK_REALTIME anchors */
	MODEL_CLOCK_COLLECTIVES, /* and refined from collectives' end times */
	MODEL_CLOCK_NONE,        /* no anchors to go by: left on its own clock */
};

/* One session of several read as one (formats/capture/capture_source.h): where it ran
 * and how its times were put on the first capture's clock. */
struct model_source {
	uint32_t host, boot, command; /* gids; STR_NONE where the capture has none */
	uint64_t anchor_mono, anchor_real; /* its CLOCK_MONOTONIC/REALTIME pair; 0: none */
	uint64_t start_ns;    /* its session's start, on its own clock */
	uint32_t domain;      /* the first source on the same clock (same boot) */
	enum model_clock_method method;
	int64_t offset_ns;    /* added to its times: from the anchors */
	int64_t fix_ns;       /* added as well: the collectives' refinement */
	uint64_t fix_err_ns;  /* the refinement's estimated error (robust spread) */
	uint64_t fix_pairs;   /* end times compared for it */
};

/* A distinct call stack of an image: frames[at .. at + nframes) in model.frames,
 * innermost first (see struct cap_stack). */
struct model_stack {
	uint32_t image;
	uint32_t nframes;
	size_t at;
};

/* An executable mapping of an image (CAP_MODULE). */
struct model_module {
	uint32_t image;
	uint32_t path; /* gid */
	uint64_t start, end, offset;
};

/* The launcher images a capture's outputs fold away by default (fold.c has the rule):
 * folded[i] for the i-th CAP_PROCESS record. */
struct model;
struct model_fold {
	uint8_t *folded;
	size_t n;
	size_t images;  /* exec'd images folded into the image their pid became */
	size_t helpers; /* helper processes (all their images) folded into their launcher */
};
/* Reads the fold of a capture (only its process records and event times). A cap_read
 * result: a damaged capture folds by its complete frames (CAP_READ_OK). */
int model_fold_read(struct model_fold *f, const char *path, char *err, size_t errlen);
void model_fold_free(struct model_fold *f);
/* The fold the collector recorded in a capture's last frame (CAP_FOLD): 0, or -1 when it
 * has none (an older capture, a damaged or unfinished one, a dump's snapshot). */
int model_fold_from_end(struct model_fold *f, const char *path);
/* The collector's side: every record it writes, then the CAP_FOLD payload (malloc'd) of
 * the fold a reader of those records would decide; -1 when out of memory. */
struct fold_live;
struct fold_live *fold_live_new(void);
void fold_live_record(struct fold_live *l, uint32_t type, const void *head, size_t hlen,
		      const void *tail);
/* An events record of pid whose latest time (t0 or t1) is last, with count events that
 * fold_event_counts, some fold_event_is_work when work: what fold_live_record of the
 * record would take from it, for a writer that never held the events whole. */
void fold_live_events(struct fold_live *l, uint32_t pid, uint64_t last, uint64_t count,
		      int work);
/* Whether the fold counts an event (not a stack, not a loss), and whether it is work no
 * launcher does (not an allocator call): such an image is never folded. */
int fold_event_counts(const struct prof_event *e);
int fold_event_is_work(const struct prof_event *e);
int fold_live_payload(struct fold_live *l, void **payload, size_t *len);
/* The fold of the records seen so far, into f (model_fold_free it). 0, or -1 when out of
 * memory. */
int fold_live_decide(struct fold_live *l, struct model_fold *f);
/* Whether the image of the i-th CAP_PROCESS record seen has worked (fold.c: more than a
 * launcher does): the fold never hides it, whatever comes later. */
int fold_live_worked(const struct fold_live *l, size_t i);
void fold_live_free(struct fold_live *l);
/* model_fold_read into f, then model_read of m folding by it (f outlives m's use). */
int model_read_folded(struct model *m, struct model_fold *f, const char *path, char *err,
		      size_t errlen);

struct model;
/* Called for each CAP_EVENTS record after the model's own bookkeeping. 0, or -1 when out
 * of memory. */
typedef int (*model_events_fn)(void *ctx, struct model *m, uint32_t image, uint32_t thread,
			       const struct prof_event *ev, uint32_t n);

struct model {
	int track_memory; /* set before model_read: the live-heap analysis per image */
	int keep_curves;  /* with it: each domain's live bytes over time (memcurve.h) */
	/* set before model_read to fold launchers: their images are marked folded, and
	 * their events counted (events, folded_events) but given to no one */
	const struct model_fold *fold;
	size_t nannounced;      /* CAP_PROCESS records read */
	uint64_t folded_events; /* events of folded images */
	struct strtab str;
	struct u64map names;     /* image << 32 | string id -> gid */
	/* names found lately (an id names one string for good): key + 1, 0 empty */
	struct {
		uint64_t key;
		uint32_t gid;
	} name_cache[256];
	struct u64map pid_image; /* source << 32 | pid -> its current image */
	struct u64map pid_exec;  /* pid_order << 32 | exec_seq -> the latest such image + 1 */
	struct u64map thread_ix; /* image << 32 | tid -> thread index */
	struct image *img;
	size_t nimg, img_cap;
	struct thread *thr;
	size_t nthr, thr_cap;
	struct lost_gap *gaps;
	size_t ngaps, gaps_cap;
	/* the sessions read (one, or several captures read as one); times of each are put
	 * on the first's clock as they are read */
	struct cap_sources sources;
	struct model_source *src;
	size_t src_cap;
	/* set before model_read: each source's fix_ns, from an earlier read's ranks
	 * (prof export's second pass); given_fix[source] for source < ngiven_fix */
	const int64_t *given_fix;
	size_t ngiven_fix;
	struct u64map tpids;     /* trace pids given */
	struct prof_event *shift_buf; /* a later source's events, moved onto the clock */
	size_t shift_cap;
	struct session_kv *session, *session_end;
	size_t nsession, session_cap, nsession_end, session_end_cap;
	int have_session, have_session_end, have_start, have_end;
	uint64_t start_ns, end_ns;   /* from the session records */
	uint64_t end_events, end_lost; /* what CAP_SESSION_END says */
	uint64_t first_t, last_t;    /* over every event */
	uint64_t events, lost;       /* event records (not LOST ones); sum of LOST counts */
	uint64_t lost_startup;       /* of lost: the LOST records of PROF_LOST_STARTUP */
	struct model_stack *stacks;
	size_t nstacks, stacks_cap;
	uint64_t *frames;
	size_t nframes, frames_cap;
	struct u64map stack_ix; /* image << 32 | stack id -> stack index + 1 */
	struct u64map_slot *stack_front; /* stack_ix's front (u64map.h), or NULL */
	struct model_module *mods;
	size_t nmods, mods_cap;
	/* mods by (image, start, index), made when the capture is read (model_read): a
	 * frame's module is found by binary search, not a walk over every module */
	uint32_t *mod_order;
	size_t nmod_order;
	struct u64map frame_names; /* image << 47 | pc -> gid (CAP_FRAME_NAME) */
	struct u64map gpu_blocks;  /* image << 47 | device pointer -> device (live blocks) */
	struct u64map gpu_cupti_blocks; /* the same, of CUPTI's memory records */
	struct u64map mxnet_blocks;     /* the same, of MXNet's storage manager (its blocks
					 * are often CUDA's own: a map of their own) */
	/* a capture in parts: how many parts were read, the first and last part number */
	uint32_t parts, part_first, part_last;
	/* the flight recorder's start (model_read sets it from the session's flight_ms and
	 * the capture's end): events before it are left out, and counted in kept_out */
	uint64_t keep_from, kept_out;
	struct u64map mod_seen; /* image << 47 | start -> module index + 1 (parts repeat) */
	struct prof_event *keep_buf; /* the kept events of one record */
	size_t keep_cap;
	model_events_fn on_events;
	/* During on_events: per event, its call stack (stack index + 1) or 0; NULL when
	 * the record has none. The events handed over never include PROF_EV_STACK
	 * records themselves. */
	const uint32_t *ev_stacks;
	/* During on_events, set by model_live.c only: the events record's place among the
	 * capture's CAP_EVENTS records (it gives some later than they come). */
	uint64_t events_record;
	/* During on_events: the index in its record of the first event given (a record
	 * routed to several rows is given in runs), else 0. */
	uint32_t ev_first;
	uint32_t *ev_stacks_buf;
	struct prof_event *ev_buf;
	size_t ev_buf_cap;
	void *ctx;
};

void model_init(struct model *m);
void model_free(struct model *m);
/* Reads a capture into m, calling m->on_events for each events record. Returns a
 * cap_read result; err names the damage or the reason the capture is unusable (out of
 * memory included). */
int model_read(struct model *m, const char *path, char *err, size_t errlen);
/* A memory domain's name, "gpu/N" or "cpu_pinned/0" (d < MODEL_DEVICES), in buf. */
const char *model_device_name(int d, char *buf, size_t len);

/* The name the capture gives a native frame of an image (CAP_FRAME_NAME), or STR_NONE. */
uint32_t model_frame_name(const struct model *m, uint32_t image, uint64_t pc);
/* The module holding pc in an image (a native frame), or NULL. */
const struct model_module *model_module_of(const struct model *m, uint32_t image, uint64_t pc);

/* The origin of the timeline: the session start, else the first event. */
uint64_t model_origin(const struct model *m);
/* The end of the timeline: the session end, else the last event. */
uint64_t model_end(const struct model *m);
/* Events lost: the larger of the LOST records' sum and what the session end says (in
 * parts: the LOST records of the parts read). */
uint64_t model_lost(const struct model *m);
/* Events recorded without their name ("<unnamed>") or stack: a process's names or stacks
 * could not grow (PROFILER_AREA_MAX, a full /dev/shm); 0 in captures before they were
 * counted. */
uint64_t model_names_lost(const struct model *m);
uint64_t model_stacks_lost(const struct model *m);
/* events a process wrote after its shared memory was found corrupt (never read; in lost) */
uint64_t model_corrupt_lost(const struct model *m);
/* The collector's longest wait between two drain passes (for a CPU, or for its
 * compressing): what the rings had to hold then; 0 in captures before it was kept. */
uint64_t model_drain_waited_max(const struct model *m);
/* Said beside lost events from this wait on: the wait is the pass's wall time less the
 * loop's own CPU and the sleep it asked for, so a quiet machine's is tens of us. At 10 ms
 * a loss under a busy loop per core went unexplained: a thread writing ~9 M events/s
 * fills a 4 MiB ring (65,536 events) in ~7 ms, and the collector had been held 8.8 ms. */
#define MODEL_DRAIN_WAIT_SAID_NS 2000000ull
/* Of model_lost: events made before libprof's constructor ran that did not reach the
 * capture (the early buffer's, PROF_LOST_STARTUP), not dropped by a full ring. */
uint64_t model_lost_startup(const struct model *m);
/* Distinct pids. */
static inline size_t model_npids(const struct model *m) { return m->pid_image.len; }
/* An image's key in pid_image. */
static inline uint64_t model_pid_key(const struct image *im)
{
	return (uint64_t)im->source << 32 | im->pid;
}
/* Sessions read: 1 for a capture (in parts or not), more for several read as one. */
static inline size_t model_nsources(const struct model *m) { return m->sources.n; }
const char *model_clock_method_name(enum model_clock_method k);
/* Once the sources' clocks were refined (fix_ns): the timeline's start again. */
void model_sources_refined(struct model *m);
struct jw;
/* The sources as JSON: [{"capture", "host", "command", "clock", "offset_ns",
 * "error_ns", "collectives"}], or null for one capture. */
void model_sources_json(struct jw *w, const struct model *m);
/* Distinct pids whose latest image is shown (not folded). */
size_t model_shown_pids(const struct model *m);
/* A session fact (from CAP_SESSION, else CAP_SESSION_END), or NULL. */
const char *model_fact(const struct model *m, const char *key);
/* 1 when allocator calls carry durations (PROFILER_ALLOC_TIMING=1, and every capture
 * made before that setting); 0 when each has its start time only (t1 == t0). */
int model_alloc_timed(const struct model *m);
/* PROFILER_DELAY / PROFILER_DURATION's window: 1 and its bounds (end 0: to the end) and
 * the events it left out, or 0 when the session kept everything. */
int model_window(const struct model *m, uint64_t *start, uint64_t *end, uint64_t *left_out);
struct jw;
/* The same as JSON: {"start_ns", "end_ns" (null: to the end), "left_out"}, or null. */
void model_window_json(struct jw *w, const struct model *m);
/* A capture in parts: what the session asked for (0 where not) and what was read. */
struct model_parts {
	uint64_t rotate_ns, rotate_bytes, flight_ns, flight_bytes;
	uint32_t parts, first, last;
	uint64_t kept_from, left_out; /* the flight recorder's start, the events before it */
};
int model_parts(const struct model *m, struct model_parts *p); /* 0: not in parts */
/* {"parts", "first", "last", "rotate_ns", "rotate_bytes", "flight_ns", "flight_bytes",
 * "kept_from_ns", "left_out"}, or null. */
void model_parts_json(struct jw *w, const struct model *m);
/* The session's command: the session fact, else the first process's command line. */
const char *model_command(const struct model *m);

/* Name of string id of an image, "<unknown:ID>" when undefined; STR_NONE when out of
 * memory. */
uint32_t model_name(struct model *m, uint32_t image, uint32_t id);
/* Name of category index cat in an image; STR_NONE when out of memory. */
uint32_t model_category(struct model *m, uint32_t image, unsigned cat);
static inline const char *model_str(const struct model *m, uint32_t gid, size_t *len)
{
	return strtab_get(&m->str, gid, len);
}

#endif
