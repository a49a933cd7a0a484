/* Settings: PROFILER_* environment variables and prof_set_config keys (MXNet's names
 * where they make sense). Pure parsing, no allocation: it runs before the allocator is
 * known. */
#ifndef PROF_PRELOAD_CONFIG_H
#define PROF_PRELOAD_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "preload/common/shm_layout.h"

#define PROF_DEFAULT_RING_BYTES (4ull << 20) /* 65,536 events */
#define PROF_MIN_RING_BYTES (4ull << 10)
#define PROF_MAX_RING_BYTES (1ull << 30)

struct prof_config {
	int autostart;
	int quiet;
	int block;
	int profile_memory;
	int profile_api;
	int aggregate_stats;
	int continuous_dump;
	int overwrite;            /* outputs replace files at their names (else: -2, -3...) */
	uint32_t dump_period_ms;
	uint64_t ring_bytes;
	uint64_t max_json_events; /* 0: the exporter's default */
	char output[PROF_PATH_MAX]; /* prefix before %-expansion */
	char clock[8];              /* "", "tsc" or "mono" */
	int follow;                 /* record only while the framework's own profiler runs */
	char framework[16];         /* "", mxnet, torch, tensorflow, onnxruntime, auto */
	int stack_mode;             /* enum prof_stack_mode */
	uint32_t stack_depth;       /* native frames per stack (and Python frames) */
	uint64_t stack_min_ns;      /* traced calls shorter than this get no stack */
	int cupti;                  /* claim CUPTI for the GPU timeline (0: leave it to others) */
	/* PROFILER_CUDA=0: CUDA's API calls not wrapped. 0 means on: dlsym can hand out
	 * CUDA wrappers before libprof's constructor has read the settings. */
	int no_cuda;
};

enum prof_stack_mode { PROF_STACK_OFF = 0, PROF_STACK_ALLOC = 1, PROF_STACK_ALL = 2 };
#define PROF_DEFAULT_STACK_DEPTH 64
#define PROF_MAX_STACK_DEPTH 128
/* frames of one stack: up to the depth of native frames, then as many Python ones */
#define PROF_MAX_STACK_FRAMES (2 * PROF_MAX_STACK_DEPTH)

void prof_config_defaults(struct prof_config *c);

/* Applies one key (prof_set_config's lowercase names). Returns 0, or -1 with a one-line
 * reason in err; c is unchanged then. */
int prof_config_set(struct prof_config *c, const char *key, const char *value, char *err,
		    size_t errlen);

/* Applies every PROFILER_* variable of env. Each unknown or bad one is reported through
 * warn (one line, no newline) and skipped. Returns the number of problems. */
int prof_config_from_env(struct prof_config *c, char *const *env, void (*warn)(const char *));

/* Expands %p %h %t %r %% in pattern. Returns 0, or -1 if it does not fit or has an
 * unknown % sequence (err says which). */
int prof_expand_prefix(const char *pattern, char *out, size_t outlen, pid_t pid, time_t start,
		       char *err, size_t errlen);

/* Parses "4M", "65536", "1G"... Returns 0 or -1. */
int prof_parse_size(const char *s, uint64_t *out);

#endif
