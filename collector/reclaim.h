/* Segments left in /dev/shm by sessions that died whole (program and collector killed):
 * found and removed by `prof clean` and by every collector as it starts. */
#ifndef PROF_COLLECTOR_RECLAIM_H
#define PROF_COLLECTOR_RECLAIM_H

#include <stdint.h>

/* A session younger than this is never taken for dead: it may be being made. */
#define RECLAIM_MIN_AGE_S 10

/* Called once per dead session found, with its segments and their bytes. */
typedef void (*reclaim_fn)(void *ctx, const char *sid, unsigned segments, uint64_t bytes);

/* Removes (unless dry_run) the segments of this user's dead sessions: every segment owned
 * by this uid, older than RECLAIM_MIN_AGE_S, whose collector and processes are all gone.
 * Returns the sessions found, or -1 when /dev/shm cannot be read. */
int reclaim_dead_sessions(int dry_run, reclaim_fn fn, void *ctx);

#endif
