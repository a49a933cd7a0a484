/* Segments left in /dev/shm by sessions that died whole (program and collector killed):
 * found and removed by `prof clean` and by every collector as it starts. */
#ifndef PROF_COLLECTOR_RECLAIM_H
#define PROF_COLLECTOR_RECLAIM_H

#include <stdint.h>

/* A session with a segment younger than this is never taken for dead: it may be being
 * made. */
#define RECLAIM_MIN_AGE_S 60

/* Called once per dead session found, with its segments, their bytes and the memory
 * they hold (their pages in /dev/shm). */
typedef void (*reclaim_fn)(void *ctx, const char *sid, unsigned segments, uint64_t bytes,
			   uint64_t memory);

/* Removes (unless dry_run) the segments of this user's dead sessions: every segment owned
 * by this uid, older than min_age_s, whose collector and processes are all gone; only
 * the sessions named in only (nonly of them) when nonly > 0. Returns the sessions found,
 * or -1 when /dev/shm cannot be read. */
int reclaim_dead_sessions(int dry_run, unsigned min_age_s, char *const *only, int nonly,
			  reclaim_fn fn, void *ctx);

/* Removes every process segment of session sid (its processes are done with the names:
 * they keep their mappings). For a collector that ended without draining them. */
void reclaim_session(const char *sid);

#endif
