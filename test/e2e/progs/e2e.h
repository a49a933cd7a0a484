/* Shared helpers of the end-to-end programs. The libprof API is weak: every program also
 * runs without libprof (the calls are skipped then). */
#ifndef E2E_H
#define E2E_H
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "prof.h"

#pragma weak prof_range_push
#pragma weak prof_range_pop
#pragma weak prof_mark
#pragma weak prof_step
#pragma weak prof_counter
#pragma weak prof_set_config
#pragma weak prof_set_state
#pragma weak prof_pause
#pragma weak prof_resume
#pragma weak prof_dump
#pragma weak prof_dumps

/* Makes the compiler keep an allocation it could otherwise elide. */
static inline void keep(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

/* n malloc/free pairs of one size: the marked allocations most programs count. */
static inline void many(size_t size, long n)
{
	for (long i = 0; i < n; i++) {
		void *p = malloc(size);
		keep(p);
		free(p);
	}
}

static inline long e2e_tid(void)
{
	return syscall(SYS_gettid);
}

static inline long arg(int argc, char **argv, int i, long def)
{
	return i < argc ? strtol(argv[i], 0, 0) : def;
}

static inline void die(const char *what)
{
	fprintf(stderr, "e2e program: %s: %s\n", what, strerror(errno));
	exit(99);
}

/* Spins without calling anything (no allocation, no system call). */
/* CLOCK_MONOTONIC in ns, the clock libprof's times are on. */
static inline uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void spin(long n)
{
	for (volatile long i = 0; i < n; i++)
		;
}
#endif
