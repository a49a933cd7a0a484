/* The wrappers of CPython's GIL calls (preload/stacks/gil.c) against stand-ins for
 * CPython's functions: after each, whether the thread is in a release (and with which
 * thread state) and that every call moved the generation on; which names are
 * redirected, to what, and when every entry is taken as seen. Compiled in here: a
 * libprof.so source, not part of libprofcore. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "preload/stacks/gil.c"

/* CPython as the wrappers reach it: what each was called with, and whether the thread
 * holds the GIL by its account */
static char thread_state[64];
static int holding = 1, fake_calls;
static void *last_ts;

static void *fake_save_thread(void)
{
	fake_calls++;
	holding = 0;
	return thread_state;
}
static void fake_restore_thread(void *ts)
{
	fake_calls++;
	last_ts = ts;
	holding = 1;
}
static void fake_release_thread(void *ts)
{
	fake_calls++;
	last_ts = ts;
	holding = 0;
}
static void fake_acquire_thread(void *ts)
{
	fake_calls++;
	last_ts = ts;
	holding = 1;
}
static int fake_ensure(void)
{
	fake_calls++;
	int had = holding;
	holding = 1;
	return had ? 0 : PY_GILSTATE_UNLOCKED;
}
static void fake_gilstate_release(int state)
{
	fake_calls++;
	if (state == PY_GILSTATE_UNLOCKED)
		holding = 0;
}
static void fake_acquire_lock(void)
{
	fake_calls++;
	holding = 1;
}
static void fake_release_lock(void)
{
	fake_calls++;
	holding = 0;
}
static void *fake_this_thread_state(void)
{
	return thread_state;
}

static int interpreter_here = 1;

void *prof_real_dlsym(void *handle, const char *name)
{
	(void)handle;
	static const struct {
		const char *name;
		void *fn;
	} fakes[] = {
		{"PyGILState_GetThisThreadState", (void *)fake_this_thread_state},
		{"PyEval_SaveThread", (void *)fake_save_thread},
		{"PyEval_RestoreThread", (void *)fake_restore_thread},
		{"PyEval_ReleaseThread", (void *)fake_release_thread},
		{"PyEval_AcquireThread", (void *)fake_acquire_thread},
		{"PyGILState_Ensure", (void *)fake_ensure},
		{"PyGILState_Release", (void *)fake_gilstate_release},
		{"PyEval_AcquireLock", (void *)fake_acquire_lock},
		{"PyEval_ReleaseLock", (void *)fake_release_lock},
	};
	if (!interpreter_here)
		return 0;
	for (size_t i = 0; i < sizeof fakes / sizeof fakes[0]; i++)
		if (!strcmp(name, fakes[i].name))
			return fakes[i].fn;
	return 0;
}

/* The wrapper libprof would point name's entries at (what it leads to checked). */
static void *wrapper(const char *name, void *real_wanted)
{
	void *ours = 0, *real = 0;
	assert_int_equal(prof_gil_targets(name, &ours, &real), 0);
	assert_ptr_equal(real, real_wanted);
	assert_non_null(ours);
	return ours;
}

static void not_a_target(void **state)
{
	(void)state;
	void *ours, *real;
	assert_int_equal(prof_gil_targets("malloc", &ours, &real), -1);
	assert_int_equal(prof_gil_targets("PyEval_SaveThreadX", &ours, &real), -1);
	assert_int_equal(prof_gil_targets("Py_Initialize", &ours, &real), -1);
}

/* Before CPython is there: a target without a function to lead to (not redirected). */
static void no_interpreter_yet(void **state)
{
	(void)state;
	interpreter_here = 0;
	void *ours = 0, *real = (void *)1;
	assert_int_equal(prof_gil_targets("PyEval_SaveThread", &ours, &real), 0);
	assert_null(real);
	interpreter_here = 1;
}

static void release_then_take(void **state)
{
	(void)state;
	void *(*save)(void) = (void *(*)(void))wrapper("PyEval_SaveThread", fake_save_thread);
	void (*restore)(void *) =
		(void (*)(void *))wrapper("PyEval_RestoreThread", fake_restore_thread);
	holding = 1;
	prof_gil_released_ts = 0;
	uint32_t g0 = prof_gil_gen;
	void *ts = save();
	assert_ptr_equal(ts, thread_state);
	assert_int_equal(holding, 0);
	assert_int_equal(prof_gil_released_ts, (uintptr_t)thread_state);
	uint32_t g1 = prof_gil_gen;
	assert_true(g1 != g0 && g1 != 0);
	restore(ts);
	assert_ptr_equal(last_ts, thread_state);
	assert_int_equal(holding, 1);
	assert_int_equal(prof_gil_released_ts, 0);
	assert_true(prof_gil_gen != g1 && prof_gil_gen != 0);
}

static void release_and_acquire_thread(void **state)
{
	(void)state;
	void (*rel)(void *) =
		(void (*)(void *))wrapper("PyEval_ReleaseThread", fake_release_thread);
	void (*acq)(void *) =
		(void (*)(void *))wrapper("PyEval_AcquireThread", fake_acquire_thread);
	holding = 1;
	uint32_t g = prof_gil_gen;
	rel(thread_state);
	assert_int_equal(prof_gil_released_ts, (uintptr_t)thread_state);
	assert_true(prof_gil_gen != g);
	g = prof_gil_gen;
	acq(thread_state);
	assert_int_equal(holding, 1);
	assert_int_equal(prof_gil_released_ts, 0);
	assert_true(prof_gil_gen != g);
}

/* A callback inside a release: Ensure takes the GIL (the thread's frames may change),
 * the outer Release gives it up again (back in a release, a new generation); an inner
 * Ensure/Release pair keeps it held. */
static void gilstate_nested(void **state)
{
	(void)state;
	void *(*save)(void) = (void *(*)(void))wrapper("PyEval_SaveThread", fake_save_thread);
	int (*ensure)(void) = (int (*)(void))wrapper("PyGILState_Ensure", fake_ensure);
	void (*release)(int) = (void (*)(int))wrapper("PyGILState_Release", fake_gilstate_release);
	holding = 1;
	save();
	uint32_t g = prof_gil_gen;
	int outer = ensure();
	assert_int_equal(outer, PY_GILSTATE_UNLOCKED);
	assert_int_equal(prof_gil_released_ts, 0);
	assert_true(prof_gil_gen != g);
	int inner = ensure();
	assert_int_equal(inner, 0);
	g = prof_gil_gen;
	release(inner);
	assert_int_equal(holding, 1);
	assert_int_equal(prof_gil_released_ts, 0);
	assert_true(prof_gil_gen != g);
	g = prof_gil_gen;
	release(outer);
	assert_int_equal(holding, 0);
	assert_int_equal(prof_gil_released_ts, (uintptr_t)thread_state);
	assert_true(prof_gil_gen != g);
}

/* The lock without its thread state: never taken as a release. */
static void lock_calls(void **state)
{
	(void)state;
	void (*acquire)(void) = (void (*)(void))wrapper("PyEval_AcquireLock", fake_acquire_lock);
	void (*release)(void) = (void (*)(void))wrapper("PyEval_ReleaseLock", fake_release_lock);
	prof_gil_released_ts = (uintptr_t)thread_state;
	uint32_t g = prof_gil_gen;
	acquire();
	assert_int_equal(holding, 1);
	assert_int_equal(prof_gil_released_ts, 0);
	assert_true(prof_gil_gen != g);
	g = prof_gil_gen;
	release();
	assert_int_equal(holding, 0);
	assert_int_equal(prof_gil_released_ts, 0);
	assert_true(prof_gil_gen != g);
}

/* Each wrapper calls CPython's function once, errno untouched. */
static void one_call_each_errno_kept(void **state)
{
	(void)state;
	void *(*save)(void) = (void *(*)(void))wrapper("PyEval_SaveThread", fake_save_thread);
	void (*restore)(void *) =
		(void (*)(void *))wrapper("PyEval_RestoreThread", fake_restore_thread);
	fake_calls = 0;
	errno = 1234;
	restore(save());
	assert_int_equal(fake_calls, 2);
	assert_int_equal(errno, 1234);
}

/* Every entry seen only after a pass that left none unsettled, and never again once one
 * was refused. */
static void seen_whole(void **state)
{
	(void)state;
	prof_gil_pass_done(1);
	assert_false(prof_gil_seen_whole());
	prof_gil_pass_done(0);
	assert_true(prof_gil_seen_whole());
	prof_gil_entry_refused();
	assert_false(prof_gil_seen_whole());
	prof_gil_pass_done(0);
	assert_false(prof_gil_seen_whole());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(not_a_target),
		cmocka_unit_test(no_interpreter_yet),
		cmocka_unit_test(release_then_take),
		cmocka_unit_test(release_and_acquire_thread),
		cmocka_unit_test(gilstate_nested),
		cmocka_unit_test(lock_calls),
		cmocka_unit_test(one_call_each_errno_kept),
		cmocka_unit_test(seen_whole),
	};
	return cmocka_run_group_tests(tests, 0, 0);
}
