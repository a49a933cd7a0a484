/* prof's own malloc on transparent huge pages (preload/common/child_setup.h says why):
 * `prof record` and `prof collect` run again with glibc's tunable set, and the command
 * `prof record` runs gets the environment it was given. */
#ifndef PROF_COLLECTOR_HUGE_MALLOC_H
#define PROF_COLLECTOR_HUGE_MALLOC_H

/* Runs this prof again (/proc/self/exe, argv) with the tunable, unless it is set or this
 * is the run again; returns when it cannot (nothing changed then). */
void huge_malloc_reexec(char **argv);

/* The environment's GLIBC_TUNABLES as it was before huge_malloc_reexec: for a command
 * prof runs. */
void huge_malloc_restore(void);

#endif
