/* Creating, finding and mapping the shared-memory segments of a session; process
 * liveness as the collector sees it. Shared by libprof.so and the collector. */
#ifndef PROF_PRELOAD_SESSION_H
#define PROF_PRELOAD_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "preload/common/config.h"
#include "preload/common/shm_layout.h"

#define PROF_SID_LEN 16
#define PROF_DEFAULT_SLOTS 256
#define PROF_MIN_SLOTS 8
/* committed at the process's start (populating 2 MiB was ~2.6 ms of every process's
 * start here: a shell loop's /bin/true took 5 ms); the area grows by chunks past it,
 * up to 2^15 times this: the ids' 4 GiB */
#define PROF_STRINGS_BYTES (128u << 10)
#define PROF_STACKS_BYTES (32u << 20) /* touched as stacks are added */

void prof_session_shm_name(char *buf, size_t len, const char *sid);
/* "libprof-<uid>-<sid>-" : the start of every process segment's name in /dev/shm. */
void prof_proc_shm_prefix(char *buf, size_t len, const char *sid);

/* A fresh, unguessable session id (PROF_SID_LEN hex digits). */
void prof_new_sid(char sid[PROF_SID_LEN + 1]);

/* Creates the session segment (mode 0600, exclusive). NULL on error (errno set). */
struct prof_session_shm *prof_session_create(const char *sid);
/* Fills a new session from the settings: clock, ring size, options, the command line of
 * this process, and the output prefix expanded for root (absolute). Returns 0, or -1
 * with the reason in err when the output name is unusable. The session's root_pid (the
 * process that waits for the outputs at its exit) is the caller's to set. */
int prof_session_configure(struct prof_session_shm *s, const struct prof_config *c, pid_t root,
			   char *err, size_t errlen);
/* The output prefix alone, expanded for pid (%p): prof record's, once the command's pid
 * is known; nothing else of a session its command may already be reading changes. */
int prof_session_output_for(struct prof_session_shm *s, const struct prof_config *c, pid_t pid,
			    char *err, size_t errlen);
/* Maps an existing session segment; NULL when it does not exist or is not valid. */
struct prof_session_shm *prof_session_open(const char *sid);
void prof_session_unlink(const char *sid);

/* Creates this process image's segment. NULL on error (errno set); name gets its name. */
/* Ring slots of a new process segment: PROF_DEFAULT_SLOTS, fewer under an address-space
 * limit (ulimit -v, as batch systems set): the process and the collector each map the
 * segment whole, and 256 rings of 4 MiB filled a 1 GB limit, so that the collector could
 * not map an exec'd image's segment beside its parent's (the program then waited for it
 * at exit for good). An eighth of the limit, PROF_MIN_SLOTS at least; threads beyond
 * the slots are counted as lost (lost_no_slot). */
unsigned prof_proc_slots(uint64_t ring_bytes);
/* The session's ring size: PROFILER_RING_SIZE as set by hand, or the default made to fit
 * where it would not (shm_total: /dev/shm's size, as_limit: RLIMIT_AS; 0: none). A
 * container's 64 MiB /dev/shm holds 16 rings of 4 MiB, not 5 of the default's 12 MiB;
 * under an address-space limit the rings shrink toward 4 MiB (the old default) before
 * the slots go below 256. */
uint64_t prof_ring_bytes_fitting(uint64_t ring_bytes, uint64_t shm_total, uint64_t as_limit);
struct prof_proc_shm *prof_proc_create(const char *sid, uint64_t ring_bytes, unsigned nslots,
				       char *name, size_t namelen);
/* Maps a process segment by its /dev/shm name (for the collector). */
struct prof_proc_shm *prof_proc_open(const char *name);
/* The same, with the bytes mapped (the segment's size when opened: what the collector
 * checks the header against and unmaps, never the header's own word). */
struct prof_proc_shm *prof_proc_open_sized(const char *name, size_t *mapped);
void prof_proc_unmap(struct prof_proc_shm *p);

/* Commits the memory of a range of a mapped segment now, so a full /dev/shm fails here
 * with an error instead of a SIGBUS at the first store. Returns 0 or -1. */
int prof_commit_memory(void *addr, size_t len);

/* Start time of a process (field 22 of /proc/<pid>/stat), 0 if it is gone. */
/* State (field 3) and start time (field 22) of a /proc/.../stat file: the start time
 * (1 when it reads 0), or 0 when unreadable. No stdio, no heap. */
uint64_t prof_proc_stat(const char *path, char *state);
uint64_t prof_proc_start_ticks(pid_t pid);

/* Calls each(name, dir_fd, arg) for every entry of a /proc directory, by getdents64: no
 * allocation, so it is safe inside the allocator's wrappers and after fork. Stops when
 * each returns non-zero. Returns what each returned last (0 when it never stopped the
 * walk), or -1 when the directory cannot be opened. */
int prof_proc_dir_each(const char *dir, int (*each)(const char *name, int dir_fd, void *arg),
		       void *arg);
/* 1 while pid runs as the same process that had start_ticks (zombies count as gone). */
int prof_proc_alive(pid_t pid, uint64_t start_ticks);

/* futex wait with a timeout in ms; returns when *word != val or on timeout. */
void prof_futex_wait(_Atomic uint32_t *word, uint32_t val, int timeout_ms);
void prof_futex_wake(_Atomic uint32_t *word);

#endif
