/* Starting another program of the session, shared by libprof.so (the collector it
 * starts, the images the program execs) and prof (`prof record`'s command, the
 * collector's own start): where the sibling binary is, the environment the child gets,
 * and the descriptors it must not keep. No heap and only async-signal-safe calls: these
 * run inside the profiled program, in fork (even vfork) children. */
#ifndef PROF_COMMON_CHILD_SETUP_H
#define PROF_COMMON_CHILD_SETUP_H

#include <stddef.h>

/* The first of dir(self)/rel, for each rel of rels (NULL-terminated, e.g. "prof" then
 * "../bin/prof"), that access(mode) allows, written to out. override, when set and not
 * empty (a PROFILER_* variable naming the file), is taken instead and must be allowed.
 * 0, or -1 when none is (or out is too short). */
int prof_find_sibling(const char *self, const char *const *rels, int mode,
		      const char *override, char *out, size_t len);

/* Copies the pointers of env to out (room for as many and a NULL), leaving out the
 * variables named in drop (NULL-terminated names, without '='); NULL-terminates out and
 * returns how many were kept. */
size_t prof_env_drop(char *const *env, const char *const *drop, char **out);

/* "LD_PRELOAD=..." for a child of the session, into out: lib first, before the entries
 * of old (the LD_PRELOAD value the child would have had, NULL if none), unless old names
 * lib already (or lib is unknown: ""). 0, or -1 when out is too short (cut there). */
int prof_preload_entry(char *out, size_t len, const char *lib, const char *old);

/* "GLIBC_TUNABLES=..." for libprof's own processes (the collector, its tables child):
 * old (the value they would have had, NULL if none) with glibc's malloc asked to put its
 * memory on transparent huge pages, unless old sets that already. Their tables and queues
 * grow by hundreds of MiB in a busy run, and the page faults of 4 KiB pages were a third
 * of the tables child's CPU (glibc before 2.35 ignores the name). 0, or -1 when out is
 * too short (cut there). */
#define PROF_HUGE_MALLOC_TUNABLE "glibc.malloc.hugetlb"
int prof_tunables_entry(char *out, size_t len, const char *old);

/* Closes every descriptor from low up (close_range; before Linux 5.9, each one listed
 * in /proc/self/fd; without /proc, every number below RLIMIT_NOFILE). */
void prof_close_from(int low);
/* The /proc/self/fd walk alone (the fallback, for the tests). -1 when /proc cannot be
 * read. */
int prof_close_from_listed(int low);

#endif
