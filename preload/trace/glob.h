/* Shell-style name patterns (PROFILER_TRACE, the presets' symbols), matched byte by byte. */
#ifndef PROF_PRELOAD_GLOB_H
#define PROF_PRELOAD_GLOB_H

/* Whether name matches pattern as fnmatch(pattern, name, 0) in the C locale would: `*`,
 * `?`, `[...]` (ranges, `!` or `^` to negate), `\` quoting. Not fnmatch itself: in a
 * UTF-8 locale (Python sets one) glibc's converts both strings to wide characters at
 * every call, and patching libtorch tries tens of thousands of symbol names. */
int prof_glob(const char *pattern, const char *name);

#endif
