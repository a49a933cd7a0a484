#ifndef PROF_PRELOAD_LAUNCH_H
#define PROF_PRELOAD_LAUNCH_H
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
/* The path of the `prof` collector to start, or -1 when none is found. */
int prof_find_collector(char *out, size_t len);
/* Starts `prof collect --session sid` detached. Returns 0 or -1. */
int prof_spawn_collector(const char *path, const char *sid, _Atomic uint32_t *pid_out);
#endif
