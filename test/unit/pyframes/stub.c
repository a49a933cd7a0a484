/* preload/stacks/pyframes.c on its own, for test/unit/pyframes/driver.py: this file includes it
 * (so the test also sees its static layout table) and stands in for what it takes from
 * the rest of libprof (prof_intern, prof_proc, prof_warn, prof_real_dlsym). The driver
 * loads the result with ctypes and calls the exported functions below from Python.
 * Build and run: test/unit/pyframes/run.sh. */
#include "preload/stacks/pyframes.c"

#include <dlfcn.h>

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

/* Non-null: "profiling" (pyframes.c only compares the pointer). */
static char fake_segment;
struct prof_proc_shm *prof_proc = (struct prof_proc_shm *)&fake_segment;

/* Strings in a static pool, id = index; 0 is "<unnamed>" as in libprof. No malloc; a
 * signal handler that finds the lock taken gets 0 (it may have interrupted the holder). */
#define MAX_STRINGS 4096
static char pool[1 << 20];
static uint32_t pool_used;
static uint32_t string_at[MAX_STRINGS];
static uint32_t nstrings;
static atomic_flag pool_lock = ATOMIC_FLAG_INIT;
static _Atomic long interned_calls;
static __thread int in_handler;

uint32_t prof_intern(const char *s)
{
	if (!prof_proc)
		return 0;
	atomic_fetch_add(&interned_calls, 1);
	while (atomic_flag_test_and_set(&pool_lock))
		if (in_handler)
			return 0;
	if (!nstrings) {
		memcpy(pool, "<unnamed>", 10);
		pool_used = 10;
		nstrings = 1;
	}
	uint32_t id = 0;
	for (uint32_t i = 1; i < nstrings; i++)
		if (!strcmp(pool + string_at[i], s)) {
			id = i;
			break;
		}
	size_t n = strlen(s) + 1;
	if (!id && nstrings < MAX_STRINGS && pool_used + n <= sizeof pool) {
		memcpy(pool + pool_used, s, n);
		string_at[nstrings] = pool_used;
		pool_used += (uint32_t)n;
		id = nstrings++;
	}
	atomic_flag_clear(&pool_lock);
	return id;
}

void prof_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("libprof: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void prof_thread_want_exit_hook(void)
{
}

void *prof_real_dlsym(void *handle, const char *name)
{
	return dlsym(handle, name);
}

/* gil.c's state, set by hand: the stub's calls are not seen (release_seen does what the
 * wrapper of a release does after it, taken_seen what the wrapper of a take does) */
__thread uint32_t prof_gil_gen;
__thread uintptr_t prof_gil_released_ts;
static int seen_whole = 1;

int prof_gil_seen_whole(void)
{
	return seen_whole;
}

EXPORT void release_seen(void)
{
	void *(*gts)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
	prof_gil_gen++;
	prof_gil_released_ts = (uintptr_t)gts();
}

EXPORT void taken_seen(void)
{
	prof_gil_released_ts = 0;
	prof_gil_gen++;
}

EXPORT void set_seen_whole(int on)
{
	seen_whole = on;
}

EXPORT long probe_kept_walks(void)
{
	return (long)prof_py_kept_walks();
}

/* The frames as text, one a line, innermost first, as the readers name them
 * (formats/symbols/stack_names.c): the code object's "function (file)" with the frame's
 * line put before the ')'. Returns how many (-1: a frame without the tag, without a
 * line, or with an unknown id). */
static int format_frames(const uint64_t *f, int n, char *buf, int len)
{
	int at = 0;
	buf[0] = 0;
	for (int i = 0; i < n; i++) {
		uint32_t id = (uint32_t)f[i], line1 = (uint32_t)(f[i] >> 32) & 0x7fffffff;
		if (!(f[i] & PROF_PYFRAME_TAG) || !line1 || id >= nstrings)
			return -1;
		const char *name = pool + string_at[id];
		size_t nlen = strlen(name);
		if (!nlen || name[nlen - 1] != ')')
			return -1;
		int w = snprintf(buf + at, (size_t)(len - at), "%.*s:%u)\n", (int)(nlen - 1), name,
				 line1 - 1);
		if (w < 0 || w >= len - at)
			break;
		at += w;
	}
	return n;
}

/* The caller's stack. seen 1: the call came through ctypes.CDLL, which gave the GIL up,
 * as libprof sees such a call (_ctypes' PyEval_SaveThread is redirected to gil.c), and
 * the stack is read a second time, which must give the same frames (the walk kept for
 * the release: probe_kept_walks counts it; -2 when they differ); 0: through PyDLL, the
 * GIL held (a take seen); 2: nothing seen (a take libprof's wrappers miss). */
EXPORT int probe(char *buf, int len, int max, int seen)
{
	uint64_t f[256], again[256];
	int released = seen == 1;
	prof_py_init();
	if (seen == 1)
		release_seen();
	else if (seen == 0)
		taken_seen();
	int cap = max < 256 ? max : 256;
	uint64_t hash, kept_hash;
	int n = prof_py_stack_hashed(f, cap, &hash);
	if (released && (prof_py_stack(again, cap) != n || memcmp(f, again, (size_t)(n > 0 ? n : 0) * 8)))
		return -2;
	/* what the kept walk says without its frames (when there is one: a walk cut at max
	 * is not kept): the same count and hash */
	int kept = released ? prof_py_kept(cap, &kept_hash) : -1;
	if (kept >= 0 && (kept != n || kept_hash != hash))
		return -2;
	return format_frames(f, n, buf, len);
}

/* Inside one release (the caller's CDLL call has given the GIL up): the stack read,
 * then cb called (a ctypes callback takes the GIL back through a path the stub does not
 * see, as one libprof's wrappers miss would), then the stack read again: the second
 * read must be the first, in buf_after. */
EXPORT int probe_around(char *buf, char *buf_after, int len, void (*cb)(void))
{
	uint64_t f[256];
	prof_py_init();
	release_seen();
	int n = prof_py_stack(f, 256); /* read()'s max: a kept walk is given for its own */
	format_frames(f, n, buf, len);
	cb();
	int m = prof_py_stack(f, 256);
	format_frames(f, m, buf_after, len);
	return n == m ? n : -1;
}

EXPORT void set_profiling(int on)
{
	prof_proc = on ? (struct prof_proc_shm *)&fake_segment : 0;
}

EXPORT long distinct_names(void)
{
	return (long)nstrings;
}

EXPORT long intern_calls(void)
{
	return atomic_load(&interned_calls);
}

__attribute__((constructor)) static void count_kept_walks(void)
{
	prof_py_count_kept(1);
}

static void *foreign(void *arg)
{
	uint64_t f[64];
	*(int *)arg = prof_py_stack(f, 64);
	return 0;
}

/* From a thread Python has never seen: expects 0. */
EXPORT int probe_foreign_thread(void)
{
	pthread_t t;
	int n = -1;
	if (pthread_create(&t, 0, foreign, &n))
		return -2;
	pthread_join(t, 0);
	return n;
}

/* ns per prof_py_stack call, after one call has warmed the cache; *depth: frames seen.
 * kept: inside a release (the walk kept), else walked each time. */
EXPORT double bench(long iters, int max, int *depth, int kept)
{
	uint64_t f[256];
	struct timespec a, b;
	prof_py_init();
	if (kept)
		release_seen();
	else
		taken_seen();
	*depth = prof_py_stack(f, max);
	long sum = 0;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < iters; i++) {
		sum += prof_py_stack(f, max);
		__asm__ volatile("" : : "r"(f) : "memory");
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	if (sum != (long)*depth * iters)
		return -1;
	return ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) /
	       (double)iters;
}

/* Walks the stack iters times: daemon threads sit here while the interpreter finalizes. */
EXPORT long spin(long iters)
{
	uint64_t f[64];
	long total = 0;
	for (long i = 0; i < iters; i++)
		total += prof_py_stack(f, 64);
	return total;
}

/* SIGPROF every usec of CPU time; the handler walks the interrupted thread's stack (which
 * may be in the middle of pushing or popping a frame). */
static _Atomic long sig_calls, sig_frames;

static void on_sigprof(int sig)
{
	(void)sig;
	uint64_t f[64];
	in_handler = 1;
	int n = prof_py_stack(f, 64);
	in_handler = 0;
	atomic_fetch_add(&sig_calls, 1);
	atomic_fetch_add(&sig_frames, n);
}

EXPORT void sigprof_start(int usec)
{
	prof_py_init();
	signal(SIGPROF, on_sigprof);
	struct itimerval it = { { 0, usec }, { 0, usec } };
	setitimer(ITIMER_PROF, &it, 0);
}

EXPORT long sigprof_stop(long *frames)
{
	struct itimerval it = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &it, 0);
	signal(SIGPROF, SIG_DFL);
	*frames = atomic_load(&sig_frames);
	return atomic_load(&sig_calls);
}

/* The table compiled into pyframes.c, in layout_probe.c's format. */
EXPORT int layout_describe(int minor, char *buf, int len)
{
	for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++) {
		const struct py_layout *L = &layouts[i];
		if (L->minor != minor)
			continue;
		int at = snprintf(buf, (size_t)len, "minor=%d", L->minor);
		if (L->ts_cframe >= 0)
			at += snprintf(buf + at, (size_t)(len - at),
				       " ts_cframe=%d cf_current_frame=%d", L->ts_cframe, L->ts_frame);
		else
			at += snprintf(buf + at, (size_t)(len - at), " ts_current_frame=%d",
				       L->ts_frame);
		snprintf(buf + at, (size_t)(len - at),
			 " fr_code=%d fr_instr=%d fr_previous=%d fr_owner=%d ob_type=%d co_size=%d"
			 " co_firstlineno=%d co_firsttraceable=%d co_filename=%d co_qualname=%d"
			 " co_code=%d str_length=%d str_state=%d str_data=%d"
			 " compact_bit=%d ascii_bit=%d owner_cstack=%d owner_generator=%d",
			 L->fr_code, L->fr_instr, L->fr_previous, L->fr_owner, OB_TYPE, OB_SIZE,
			 L->co_firstlineno, L->co_firsttraceable, L->co_filename, L->co_qualname,
			 L->co_code, STR_LENGTH, STR_STATE, L->str_data, STR_COMPACT_BIT,
			 STR_ASCII_BIT, L->owner_cstack, OWNER_GENERATOR);
		return 0;
	}
	return -1;
}
