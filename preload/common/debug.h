/* PROFILER_DEBUG=domain,...: one line on stderr for each thing libprof gives up on, and
 * why (a GOT slot it cannot write, an object table full, a process the collector cannot
 * follow, CUPTI refusing). Compiled into both libprof.so and prof. Only places that give
 * something up call it, never the hot path; a domain that is off costs one test of a
 * global. */
#ifndef PROF_COMMON_DEBUG_H
#define PROF_COMMON_DEBUG_H

#include <stddef.h>

enum prof_debug_domain {
	PROF_DEBUG_GOT = 1u << 0,   /* GOT slots that cannot be written */
	PROF_DEBUG_TRACE = 1u << 1, /* functions not traced: tables full, no stub */
	PROF_DEBUG_DRAIN = 1u << 2, /* the collector: processes or data it drops */
	PROF_DEBUG_CUPTI = 1u << 3, /* CUPTI calls whose failure loses the GPU timeline */
	PROF_DEBUG_SHM = 1u << 4,   /* segments the collector will not read */
	PROF_DEBUG_ALLOC = 1u << 5, /* allocator entries not redirected */
	PROF_DEBUG_STACK = 1u << 6, /* how each call stack was found, counted, at exit */
};

/* The domains on: set by prof_debug_init at start, and by prof_set_config("debug") from
 * any thread (a word-sized store; a reader sees the old or the new set). */
extern unsigned prof_debug_mask;

#define prof_debug(domain, ...)                                                            \
	do {                                                                               \
		if (__builtin_expect((prof_debug_mask & (domain)) != 0, 0))                 \
			prof_debug_say((domain), __VA_ARGS__);                             \
	} while (0)

/* "libprof[debug DOMAIN]: message\n", formatted on the stack and written in one write(2):
 * no allocation (it may run inside the allocator's wrappers or a signal handler); errno
 * is kept. */
void prof_debug_say(unsigned domain, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), cold));

/* The domains text names ("got,trace", "all"); the unknown ones, comma-separated, go to
 * unknown (empty when none). */
unsigned prof_debug_parse(const char *text, char *unknown, size_t len);

/* Reads PROFILER_DEBUG from env (the process's environ: getenv may be the program's
 * own) into prof_debug_mask. A value with an unknown domain turns nothing on; the settings
 * parser (the `debug` row of preload/common/settings.c) names it in one line, and takes
 * prof_set_config("debug", ...) at run time. */
void prof_debug_init(char *const *env);

#endif
