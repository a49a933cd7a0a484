/* A capture's events as CSV, one row per event (not lost markers or stacks), for prof
 * export --format parquet (docs/FORMATS.md, "Parquet"): capture, rank, pid, tid, type
 * (X, i, C), category, name, start_ns, dur_ns, depth, bytes, value, comm_size, peer. Times
 * are on the job's clock (several captures read as one: capture 0's). */
#ifndef PROF_FORMATS_EVENTS_CSV_H
#define PROF_FORMATS_EVENTS_CSV_H

#include <stdint.h>
#include <stdio.h>

/* Writes the header and every event of capture_path to out (the launchers folded unless
 * all_processes; several captures' clocks refined by fix, nfix of them, from
 * tables_write_fixes); *events is set to the rows written. A cap_read result (damaged:
 * err names the damage), or CAP_READ_UNUSABLE with err when out of memory or a write
 * failed. */
int events_csv_write(const char *capture_path, FILE *out, int all_processes,
		     const int64_t *fix, size_t nfix, uint64_t *events, char *err,
		     size_t errlen);

#endif
