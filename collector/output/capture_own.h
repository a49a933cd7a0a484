/* The capture is this session's file, not a name: with PROFILER_OVERWRITE, another
 * session with the same prefix renames its own capture over ours. Reads and the final
 * unlink go through checks against the descriptor the collector keeps. */
#ifndef PROF_COLLECTOR_CAPTURE_OWN_H
#define PROF_COLLECTOR_CAPTURE_OWN_H

#include <stddef.h>

/* Whether path still names the file open at fd (same device and inode). */
int capture_is_ours(int fd, const char *path);

/* A path that reads the file at fd whatever its name now: path itself while it is
 * ours, else /proc/self/fd/FD. out has len bytes. */
const char *capture_source(int fd, const char *path, char *out, size_t len);

/* Our capture lost its name: claims a new prefix from prefix (the next free suffix,
 * never replacing anything), copies the file at fd to its .prof, updates prefix and
 * path (len bytes each). 0, or -1 with a reason in err. */
int capture_keep_elsewhere(int fd, char *prefix, size_t plen, char *path, size_t len,
			   char *err, size_t errlen);

#endif
