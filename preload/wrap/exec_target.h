/* Will an image exec'd from this path load libprof? Asked by the exec and spawn wrappers
 * before they count the new image as one the session waits for. */
#ifndef PROF_PRELOAD_EXEC_TARGET_H
#define PROF_PRELOAD_EXEC_TARGET_H

#include <stddef.h>

/* NULL when the image can join; else why it cannot ("statically linked", ...). Makes
 * system calls only (no heap, no lock): safe in a vfork child. */
const char *prof_exec_target_refuses(const char *path);

/* The file execvp/posix_spawnp would run: file itself when it holds a '/', else the
 * first executable regular file on PATH. 0, or -1 when none is found. */
int prof_exec_resolve(const char *file, char *out, size_t len);

#endif
