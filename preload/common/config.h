/* Settings: PROFILER_* environment variables and prof_set_config keys (MXNet's names
 * where they make sense), all described by one table (preload/common/settings.c) from
 * which the environment parser, prof_config_set, the defaults and README's settings table
 * are made. Pure parsing, no allocation: it runs before the allocator is known. */
#ifndef PROF_PRELOAD_CONFIG_H
#define PROF_PRELOAD_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "preload/common/shm_layout.h"

/* 262,144 events of 48 bytes (12 MiB): at 2 M events/s, 131 ms of a collector held up on
 * a busy machine (4M, 65,536 events, lost 4% of such a run behind a 188 ms hold).
 * Committed only as a thread writes (ring_writer_commit_lazily): a quiet thread costs
 * 64 KiB. */
#define PROF_DEFAULT_RING_BYTES (16ull << 20)
#define PROF_MIN_RING_BYTES (4ull << 10)
#define PROF_MAX_RING_BYTES (1ull << 30)
#define PROF_TRACE_MAX 4096 /* bytes of PROFILER_TRACE, its NUL included */

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
	uint32_t delay_ms;        /* PROFILER_DELAY: events before it are left out */
	uint32_t duration_ms;     /* PROFILER_DURATION: and after delay + it (0: none) */
	char schedule[96];        /* PROFILER_SCHEDULE (schedule.h), "" for none */
	char rotate[64];          /* PROFILER_ROTATE (span.h), "" for none */
	char flight[64];          /* PROFILER_FLIGHT (span.h), "" for none */
	uint64_t ring_bytes;
	uint64_t area_max;        /* PROFILER_AREA_MAX: bytes of names, and of stacks, per process */
	uint64_t max_json_events; /* cap on the Chrome trace's events (default 4000000) */
	int trace_alloc;          /* PROFILER_TRACE_ALLOC: 0 auto, 1 all (chrome_alloc.h) */
	int alloc_timing;         /* PROFILER_ALLOC_TIMING: allocator calls get a duration */
	char output[PROF_PATH_MAX]; /* prefix before %-expansion */
	char clock[8];              /* "", "tsc" or "mono" */
	int follow;                 /* record only while the framework's own profiler runs */
	int mxnet_bulk;             /* 0: MXNet's bulk execution off (its operators named) */
	int inductor_kernels;       /* 1: inductor's CPU kernels name themselves */
	int record_shapes;          /* PyTorch operators' input shapes */
	char framework[16];         /* detect, mxnet, torch, tensorflow, onnxruntime, auto, none */
	int stack_mode;             /* enum prof_stack_mode */
	uint32_t stack_depth;       /* native frames per stack (and Python frames) */
	int stack_unwind;           /* 0: frame pointers where code keeps them, 1: libunwind */
	uint64_t stack_min_ns;      /* traced calls shorter than this get no stack */
	int cupti;                  /* claim CUPTI for the GPU timeline (0: leave it to others) */
	/* PROFILER_CUDA=0: CUDA's API calls not wrapped. 0 means on: dlsym can hand out
	 * CUDA wrappers before libprof's constructor has read the settings. */
	int no_cuda;
	char trace[PROF_TRACE_MAX]; /* functions to trace by name (preload/trace/) */
	char debug[64];             /* PROFILER_DEBUG: comma list of domains, validated */
};

enum prof_stack_mode { PROF_STACK_OFF = 0, PROF_STACK_ALLOC = 1, PROF_STACK_ALL = 2 };
#define PROF_DEFAULT_STACK_DEPTH 64
#define PROF_MAX_STACK_DEPTH 128
/* frames of one stack: up to the depth of native frames, then as many Python ones */
#define PROF_MAX_STACK_FRAMES (2 * PROF_MAX_STACK_DEPTH)

/* ---- the table (preload/common/settings.c) ---- */

enum prof_setting_type {
	PROF_SETTING_BOOL,    /* int: 1 true yes on / 0 false no off */
	PROF_SETTING_UINT,    /* decimal integer in [min, max], stored times scale (u32 or u64) */
	PROF_SETTING_SIZE,    /* bytes ("64K", "4M") in [min, max], rounded down to a power of 2 */
	PROF_SETTING_SECONDS, /* decimal seconds in (0, max] ([0, max] with _ZERO_OK), stored
				 as milliseconds (u32) */
	PROF_SETTING_ENUM,    /* one of values: its index (int) or, with _TEXT, a copy */
	PROF_SETTING_STRING,  /* text shorter than the field */
	PROF_SETTING_LIST,    /* comma list of values, or nothing; kept as text */
};

/* When a value takes effect, so prof_set_config can say when it cannot. */
enum prof_setting_when {
	PROF_WHEN_ANY,   /* at once */
	PROF_WHEN_START, /* when the session starts (prof_set_state(PROF_RUN), autostart) */
	PROF_WHEN_LOAD,  /* read from the environment when libprof loads */
};

#define PROF_SETTING_INVERT 1u     /* BOOL: the field holds the opposite (no_cuda) */
#define PROF_SETTING_TEXT 2u       /* ENUM: the field is a copy of the value, not an index */
#define PROF_SETTING_NONEMPTY 4u   /* STRING: "" is refused */
#define PROF_SETTING_STRIP_JSON 8u /* STRING: "out.json" -> "out" (MXNet's filename) */
#define PROF_SETTING_ZERO_OK 16u   /* SECONDS: 0 is a value (none) */

struct prof_setting {
	const char *name; /* prof_set_config key */
	const char *env;  /* PROFILER_ + name in capitals */
	enum prof_setting_type type;
	enum prof_setting_when when;
	size_t off, size; /* the field in struct prof_config (alias: unused) */
	const char *def;  /* default, parsed like any value; NULL: the field stays zero */
	const char *shown_default; /* README's default where def is NULL */
	uint64_t min, max;  /* UINT, SIZE; SECONDS: max only */
	uint32_t scale;     /* UINT: stored = value * scale (0: 1) */
	const char *values; /* ENUM, LIST: "a,b,c" */
	unsigned flags;     /* PROF_SETTING_* */
	const char *sets;   /* an alias: the rows it sets instead ("output", "a,b") */
	const char *why;    /* why a bad value is refused (NULL: the type's reason) */
	const char *range_why; /* why a well-formed value out of range is (NULL: why) */
	/* prof record's option: --flag [ARG], -short; a switch (no arg) sets record_value */
	const char *record_flag, *record_arg, *record_value;
	char record_short;
	const char *record_help;  /* the option's text in prof record --help ('\n': a line) */
	const char *record_needs; /* what a missing ARG should be: "--output needs <this>" */
	const char *help;
	/* STRING: NULL when the value is well formed, else why not */
	const char *(*check)(const char *value);
};

extern const struct prof_setting prof_settings[];
extern const size_t prof_nsettings;

/* The row of a key (prof_set_config's name), or NULL. */
const struct prof_setting *prof_setting_find(const char *key);

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
/* Decimal digits only, no sign, no overflow: 0, or -1. */
int prof_parse_uint(const char *s, uint64_t *out);

#endif
