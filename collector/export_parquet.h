/* prof export --format parquet (export_parquet.c). */
#ifndef PROF_COLLECTOR_EXPORT_PARQUET_H
#define PROF_COLLECTOR_EXPORT_PARQUET_H

/* Writes the Parquet files of capture (named shown in messages) into the directory out
 * (made; an existing one only with force). The exit status: 0, 1 (a damaged capture:
 * the files cover its complete frames), 2 (after one line). */
int export_parquet(const char *capture, const char *shown, const char *out, int force,
		   int all_processes);

#endif
