/* The calls that give CPython's GIL up and take it back, seen through wrappers that
 * alloc_got.c points every object's GOT entries at (gil.h says what for). A statically
 * linked interpreter (Debian's python3, pyenv's) defines these functions in the
 * executable, ahead of any preloaded library in the lookup scope, so exporting them from
 * libprof.so would not be reached: the entries are written instead.
 *
 * A wrapper only stores to thread-local words around the real call: no lock, system call
 * or allocation, and errno untouched (CPython keeps errno across these calls: callers
 * rely on it around Py_BEGIN_ALLOW_THREADS). The word that says the thread is inside a
 * release is cleared before a take and set only after a release has returned, so a
 * signal handler on the thread never reads it set while the thread may hold the GIL. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#include "preload/stacks/gil.h"
#include "preload/wrap/dl.h"

__thread uint32_t prof_gil_gen __attribute__((tls_model("initial-exec")));
__thread uintptr_t prof_gil_released_ts __attribute__((tls_model("initial-exec")));

/* CPython's own functions, stored before any entry is pointed at a wrapper. */
static void *(*real_save_thread)(void);
static void (*real_restore_thread)(void *);
static void (*real_release_thread)(void *);
static void (*real_acquire_thread)(void *);
static int (*real_gilstate_ensure)(void);
static void (*real_gilstate_release)(int);
static void (*real_acquire_lock)(void);
static void (*real_release_lock)(void);
static void *(*real_this_thread_state)(void);
static int resolved;

/* refused: an entry that can never be redirected; pass_unsettled: the last pass left one
 * not redirected, or an object was loaded since (none before the first pass) */
static int refused, pass_unsettled = 1;

#define PY_GILSTATE_UNLOCKED 1 /* PyGILState_STATE: Ensure took the GIL, Release gives it up */

static inline void bump(void)
{
	uint32_t g = prof_gil_gen + 1;
	prof_gil_gen = g ? g : 1;
}

/* Before a call that may take the GIL: the thread's frames may change from now on. */
static inline void taking(void)
{
	prof_gil_released_ts = 0;
	atomic_signal_fence(memory_order_seq_cst);
	bump();
}

/* After a call that gave the GIL up with thread state ts (0: not known). */
static inline void released(void *ts)
{
	bump();
	atomic_signal_fence(memory_order_seq_cst);
	prof_gil_released_ts = (uintptr_t)ts;
}

static void *gil_save_thread(void)
{
	void *ts = __atomic_load_n(&real_save_thread, __ATOMIC_ACQUIRE)();
	released(ts);
	return ts;
}

static void gil_restore_thread(void *ts)
{
	taking();
	__atomic_load_n(&real_restore_thread, __ATOMIC_ACQUIRE)(ts);
}

static void gil_release_thread(void *ts)
{
	__atomic_load_n(&real_release_thread, __ATOMIC_ACQUIRE)(ts);
	released(ts);
}

static void gil_acquire_thread(void *ts)
{
	taking();
	__atomic_load_n(&real_acquire_thread, __ATOMIC_ACQUIRE)(ts);
}

static int gil_gilstate_ensure(void)
{
	taking();
	return __atomic_load_n(&real_gilstate_ensure, __ATOMIC_ACQUIRE)();
}

static void gil_gilstate_release(int state)
{
	__atomic_load_n(&real_gilstate_release, __ATOMIC_ACQUIRE)(state);
	/* an outer Ensure's Release gives the GIL up: the thread is back in the release it
	 * was in before (its state, unless Ensure made one for it and this dropped it);
	 * an inner one keeps the GIL held */
	if (state == PY_GILSTATE_UNLOCKED)
		released(__atomic_load_n(&real_this_thread_state, __ATOMIC_ACQUIRE)());
	else
		taking();
}

static void gil_acquire_lock(void)
{
	taking();
	__atomic_load_n(&real_acquire_lock, __ATOMIC_ACQUIRE)();
}

static void gil_release_lock(void)
{
	__atomic_load_n(&real_release_lock, __ATOMIC_ACQUIRE)();
	taking(); /* the GIL given up without its thread state: not known as a release */
}

struct gil_call {
	const char *name;
	void *wrapper;
	void *real_slot; /* where the real function is kept */
};

static const struct gil_call calls[] = {
	{"PyEval_SaveThread", (void *)gil_save_thread, &real_save_thread},
	{"PyEval_RestoreThread", (void *)gil_restore_thread, &real_restore_thread},
	{"PyEval_ReleaseThread", (void *)gil_release_thread, &real_release_thread},
	{"PyEval_AcquireThread", (void *)gil_acquire_thread, &real_acquire_thread},
	{"PyGILState_Ensure", (void *)gil_gilstate_ensure, &real_gilstate_ensure},
	{"PyGILState_Release", (void *)gil_gilstate_release, &real_gilstate_release},
	{"PyEval_AcquireLock", (void *)gil_acquire_lock, &real_acquire_lock},
	{"PyEval_ReleaseLock", (void *)gil_release_lock, &real_release_lock},
};
#define NCALLS (sizeof calls / sizeof calls[0])

/* CPython's functions, from the global scope, all from the object that holds
 * PyGILState_GetThisThreadState (as pyframes.c reads it); nothing until that one, which
 * the Release wrapper needs, is there. */
static int resolve(void)
{
	void *gts = prof_real_dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
	Dl_info home;
	if (!gts || !dladdr(gts, &home))
		return -1;
	for (unsigned i = 0; i < NCALLS; i++) {
		void *p = prof_real_dlsym(RTLD_DEFAULT, calls[i].name);
		Dl_info info;
		if (p && (!dladdr(p, &info) || info.dli_fbase != home.dli_fbase))
			p = 0; /* a second copy of CPython: its calls are not redirected */
		__atomic_store_n((void **)calls[i].real_slot, p, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&real_this_thread_state, (void *(*)(void))gts, __ATOMIC_RELEASE);
	return 0;
}

int prof_gil_targets(const char *name, void **ours, void **real)
{
	if (name[0] != 'P' || name[1] != 'y')
		return -1;
	for (unsigned i = 0; i < NCALLS; i++) {
		if (strcmp(name, calls[i].name))
			continue;
		if (!resolved && !resolve())
			resolved = 1;
		*ours = calls[i].wrapper;
		*real = resolved ? __atomic_load_n((void **)calls[i].real_slot, __ATOMIC_ACQUIRE) : 0;
		return 0;
	}
	return -1;
}

void prof_gil_pass_done(int unsettled)
{
	__atomic_store_n(&pass_unsettled, unsettled, __ATOMIC_RELEASE);
}

void prof_gil_entry_refused(void)
{
	__atomic_store_n(&refused, 1, __ATOMIC_RELEASE);
}

int prof_gil_seen_whole(void)
{
	return !__atomic_load_n(&pass_unsettled, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&refused, __ATOMIC_ACQUIRE);
}
