/* A progress line on standard error, when it is a terminal, for what takes longer than a
 * second (reading big captures, many ranks), as nsys shows its processing. */
#ifndef PROF_COLLECTOR_PROGRESS_H
#define PROF_COLLECTOR_PROGRESS_H

#include <stdint.h>

/* Shows "WHAT: reading NN%" while captures are read (cap_read_progress); a read that
 * starts over counts as the next pass. Nothing when standard error is not a terminal,
 * nor before a second has gone. */
void progress_start(const char *what);
/* Shows a fraction of the work (at of total) directly. */
void progress_show(uint64_t at, uint64_t total, const char *doing);
/* Clears the line. */
void progress_end(void);

#endif
