/* Inside the drain (collector/drain/): a session's collector and the process segments it
 * drains, shared by the files of this folder only. drain.c: rings into the capture;
 * discovery.c: new segments; liveness.c: exits, deaths, execs, children; dump_request.c:
 * prof_dump and continuous dumps; session_end.c: the outputs; loop.c: the loop itself. */
#ifndef PROF_COLLECTOR_DRAIN_INTERNAL_H
#define PROF_COLLECTOR_DRAIN_INTERNAL_H

#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

#include "formats/capture/capture.h"
#include "formats/capture/event_pack.h"
#include "formats/model/model.h"
#include "preload/common/clock.h"
#include "preload/common/ring.h"
#include "collector/drain/collector.h"
#include "collector/drain/dump.h"
#include "collector/drain/live.h"
#include "collector/drain/areas.h"
#include "collector/drain/stacks.h"
#include "collector/shm/shm_check.h"

#define EVENT_CHUNK 4096
#define PENDING_FORK_GRACE_NS 2000000000ull /* the longest wait for a child to join */
#define UNNOTED_CHILD_GRACE_NS 50000000ull /* 50 ms */

struct proc_entry {
	struct proc_entry *next;
	char name[264];
	struct prof_proc_shm *shm;
	pid_t pid;
	uint64_t strings_read;
	uint32_t categories_read;
	struct proc_stacks stacks;
	struct shm_area strings_area, stack_area; /* its areas, chunks mapped as they come */
	pid_t ppid;
	uint32_t exec_seq;
	/* per ring slot: the claim (gen) and the libprof-given thread name (string id + 1)
	 * last put in the capture */
	struct slot_seen { uint32_t gen, name_id, tid; char name[20]; } *slot_seen;
	/* its CAP_PROCESS record, repeated at the start of each later capture part */
	struct cap_process announce;
	char *cmdline;
	uint32_t cmdline_len;
	char job[PROF_JOB_MAX]; /* its CAP_JOB lines, repeated with announce */
	uint32_t job_len;
	int finished;
	uint64_t lost;
	struct shm_geom g;   /* checked when found; addresses come from here only */
	size_t map_size;     /* bytes mapped */
	uint64_t *slot_tail; /* the collector's own tail of each ring */
	int corrupt;         /* quarantined: not drained any more */
	volatile int shrunk; /* a read hit a page the file no longer has (shm_guard) */
	int pool_failed;     /* a ring could not be prepared ahead (ring_pool.c): no more
				tries, the claims commit their own rings */
	uint64_t exited_since; /* marked EXITED while its pid still ran (liveness.c) */
};

struct collector {
	struct collector_options *o;
	struct prof_session_shm *s;
	struct cap_writer *w;
	int write_failed;
	struct prof_clock_map clock;
	struct proc_entry *procs;
	char shm_prefix[128];
	char capture_path[PROF_PATH_MAX + 8];
	int capture_fd; /* the capture itself: its name may be taken over (capture_own.h) */
	uint64_t events, lost, processes;
	/* events that kept no name or no stack: their process's area could not grow */
	uint64_t names_lost, stacks_lost;
	uint64_t corrupt_lost; /* written after their segment was found corrupt: never read */
	/* PROFILER_DELAY / PROFILER_DURATION: events outside [window_lo, window_hi] (ns) are
	 * left out, and counted */
	uint64_t window_lo, window_hi, left_out;
	uint32_t frameworks; /* PROF_FW_* bits the processes found loaded */
	/* A capture in parts (PROFILER_ROTATE, PROFILER_FLIGHT; parts.c): capture_path is
	 * the directory, capture_fd its descriptor, part the number being written. */
	int parts;
	uint32_t part;
	uint64_t part_start_ns, rotate_ns, rotate_bytes, flight_ns, flight_bytes;
	uint64_t part_base; /* bytes of the part's repeated records: not counted in its size */
	uint64_t done_bytes, done_raw; /* the finished parts': their compression ratio */
	int said_base;      /* the warning that they alone reach the size, given */
	struct part_kept { uint32_t n; uint64_t start_ns, bytes; } *kept; /* parts on disk */
	size_t nkept, kept_cap;
	char *session_text; /* CAP_SESSION's, repeated in each part */
	/* the launchers' fold decided over the records written, put at the capture's end
	 * (CAP_FOLD) so readers need no pass for it; NULL in parts or out of memory */
	struct fold_live *fold;
	struct live_outputs live; /* the outputs kept as the capture is written (live.h) */
	int held; /* the rings left undrained for the live outputs (live_outputs_behind) */
	uint64_t last_scan, last_live, last_clock, last_dump, all_gone_since, last_touch;
	/* How long the drain loop was held up between passes (for a CPU on a busy machine,
	 * or for its compressing to make room): each pass's wall time less the loop's own
	 * CPU and the sleep it asked for. The longest is what the rings had to hold; said
	 * beside lost events (CAP_SESSION_END drain_waited_max_ns). */
	uint64_t pass_start_ns, pass_cpu_ns, pass_slept_ns, waited_max_ns;
	uint64_t child_gone_since; /* prof record's command gone, its status not given yet */
	/* complete segments whose mapping failed, since when (discovery.c: map_refused) */
	struct { char name[256]; uint64_t since; } map_failing[8];
	unsigned nmap_failing;
	uint64_t refused; /* processes named as not profiled: their segment could not be mapped */
	int root_released;
	int liveness_pass; /* this pass also checks orphan slots' threads */
	struct dump_job dump;
	/* a dump the live outputs' child makes (live_dump_start): its request (0: a
	 * continuous or signalled one), and that one is asked */
	uint32_t live_dump_request;
	int live_dump;
	uint64_t live_dump_since;
	struct dump_request live_dump_fallback; /* made from the capture if it declines */
	/* the events of one drain call, converted and packed as they are read (one pass,
	 * no copy of the 48-byte records: event_pack.h); undo is the state before the
	 * last event when that was a STACK, so that it can be taken back */
	uint8_t packed[CAP_PACKER_AREA(EVENT_CHUNK)];
	struct packed_batch {
		struct cap_packer k;
		uint64_t last_t; /* the latest time packed: the launchers' fold wants it */
		uint64_t fold_counted; /* and how many events, whether any is work */
		int fold_work;
	} batch, undo;
	uint64_t last_stack_t0; /* t0 of the last event packed when a STACK, else 0 */
	uint32_t buf_pid, buf_tid;
	uint64_t buf_lost;
	uint64_t lost_bound; /* the most one LOST event may count (shm_check_lost) */
	/* CAP_DRAINED: how far this pass's events go (lowered by the rings it left events
	 * in), and the last one written */
	uint64_t drained_before, drained_put;
	char bad_event[160]; /* why a ring's batch stopped, set by on_ring_events */
	/* A program process can truncate the session segment too: its reads are guarded
	 * (shm_guard) and, on a hit, c->s points here, the settings as they were at start. */
	volatile int session_shrunk;
	struct prof_session_shm session_copy;
};

/* drain.c: rings, strings and stacks into the capture */
void write_failed(struct collector *c);
static inline void put(struct collector *c, uint32_t type, const void *head, size_t hlen,
		       const void *tail, size_t tlen)
{
	if (c->write_failed)
		return;
	if (c->fold)
		fold_live_record(c->fold, type, head, hlen, tail);
	if (cap_write2(c->w, type, head, hlen, tail, tlen))
		write_failed(c);
}
/* put() for stacks.c's callbacks (ctx is the collector) */
void put_record(void *ctx, uint32_t type, const void *head, size_t hlen, const void *tail,
		size_t tlen);
void quarantine(struct proc_entry *p, const char *why);
/* One pass over every live process: how full the fullest ring was, in sixteenths. */
uint64_t drain_all(struct collector *c);
/* Drains what is left, reports its losses and writes PROCESS_END; unmaps the segment. */
void finish_process(struct collector *c, struct proc_entry *p, int32_t status);
/* Frees every process entry (unmapping a segment still mapped) and c itself. */
void free_collector(struct collector *c);

/* parts.c: a capture in parts */
/* Opens part 1 in the directory at capture_fd; 0, or -1 with a reason in err. */
int parts_open_first(struct collector *c, char *err, size_t errlen);
/* Between passes: a new part when the current one is due (time or size), then the
 * flight recorder's oldest parts dropped. */
void parts_rotate_if_due(struct collector *c, uint64_t now);
/* The part being written, as a path ("DIR/part-N.prof"). */
void parts_current(const struct collector *c, char *out, size_t len);
/* At the end: the flight recorder's parts wholly older than its span dropped. */
void parts_finish(struct collector *c);
/* A session that profiled nothing: its parts and their directory removed. */
void parts_remove(struct collector *c);
/* A process's records that a part's events need, repeated (drain.c). */
/* The image's CAP_JOB record, after its CAP_PROCESS (none when no launcher set it). */
void put_job(struct collector *c, const struct proc_entry *p);
void replay_process(struct collector *c, struct proc_entry *p);

/* discovery.c: segments in /dev/shm */
void add_process(struct collector *c, const char *name, struct prof_proc_shm *shm,
		 size_t mapped);
int scan_segments(struct collector *c); /* how many were added */
/* ring_pool.c: the next free slots' rings allocated ahead of their threads */
void ring_pool_refill(struct collector *c);
void sweep_segments(struct collector *c);
int has_segment(struct collector *c, pid_t pid);

/* liveness.c: exits, deaths, execs, the command's child and unjoined children */
int32_t child_status(struct collector *c, pid_t pid);
void check_liveness(struct collector *c);
void release_root_if_alone(struct collector *c);
int session_over(struct collector *c, uint64_t now);

/* dump_request.c: prof_dump, prof_dumps and continuous dumps; SIGUSR2 to the collector
 * (and `prof dump`) sets this for one dump of the outputs */
extern volatile sig_atomic_t collector_dump_signalled;
void answer_dump(struct collector *c);
void finish_dump(struct collector *c); /* waits for a dump still running, answers it */

/* session_end.c: the capture's end and the outputs; returns collector_run's result */
int end_session(struct collector *c);

#endif
