/* Tracing's helpers that need no running profiler: which functions are traced at entry
 * only (preload/trace/trace_policy.c) and finding a function in one loaded object from its
 * own symbol table (preload/trace/elf_sym.c). Both are compiled in here: they are libprof.so
 * sources, not part of libprofcore. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "preload/trace/elf_sym.c"
#include "preload/trace/glob.c"
#include "preload/trace/trace_policy.c"

static void entry_only_table(void **state)
{
	(void)state;
	/* return twice, switch stacks */
	assert_int_equal(prof_trace_entry_only("__sigsetjmp"), 1);
	assert_int_equal(prof_trace_entry_only("_setjmp"), 1);
	assert_int_equal(prof_trace_entry_only("getcontext"), 1);
	assert_int_equal(prof_trace_entry_only("swapcontext"), 1);
	assert_int_equal(prof_trace_entry_only("vfork"), 1);
	/* never return */
	assert_int_equal(prof_trace_entry_only("siglongjmp"), 1);
	assert_int_equal(prof_trace_entry_only("__longjmp_chk"), 1);
	assert_int_equal(prof_trace_entry_only("_exit"), 1);
	assert_int_equal(prof_trace_entry_only("execve"), 1);
	assert_int_equal(prof_trace_entry_only("execvpe"), 1);
	assert_int_equal(prof_trace_entry_only("_Unwind_Resume"), 1);
	assert_int_equal(prof_trace_entry_only("__cxa_throw"), 1);
	/* unwind the thread with glibc's own unwinder */
	assert_int_equal(prof_trace_entry_only("pthread_exit"), 2);
	assert_int_equal(prof_trace_entry_only("__pthread_unwind_next"), 2);
	/* ordinary functions are traced whole */
	assert_int_equal(prof_trace_entry_only("fork"), 0);
	assert_int_equal(prof_trace_entry_only("makecontext"), 0);
	assert_int_equal(prof_trace_entry_only("qsort"), 0);
	assert_int_equal(prof_trace_entry_only("execute_plan"), 0);
	assert_int_equal(prof_trace_entry_only("exit_handler"), 0);
	assert_int_equal(prof_trace_entry_only("_ZN5torch8autograd8profiler15disableProfilerEv"),
			 0);
}

static void symbol_from_the_object(void **state)
{
	(void)state;
	/* qsort is a plain function of libc: the loader and the table agree (asked of libc
	 * itself: under ASan the global scope finds ASan's qsort first) */
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	assert_non_null(libc);
	void *want = dlsym(libc, "qsort");
	dlclose(libc);
	assert_non_null(want);
	assert_ptr_equal(prof_elf_symbol_in("libc.so.6", "qsort"), want);
	/* an undefined reference is not a definition; a missing name or object is NULL */
	assert_null(prof_elf_symbol_in("libc.so.6", "no_such_function_in_libc"));
	assert_null(prof_elf_symbol_in("libnot-loaded.so.1", "qsort"));
	/* data is not a function */
	assert_null(prof_elf_symbol_in("libc.so.6", "environ"));
}

/* libc keeps old versions of some functions beside the current one
 * (sched_setaffinity@GLIBC_2.3.3, hidden, and @@GLIBC_2.3.4): the table must give the one
 * dlsym gives, never the compatibility copy (that one fails with EFAULT). */
static void symbol_default_version(void **state)
{
	(void)state;
	static const char *const names[] = {"sched_setaffinity", "glob64", "pthread_cond_wait",
					    "realpath"};
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	assert_non_null(libc);
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		void *want = dlsym(libc, names[i]);
		assert_non_null(want);
		assert_ptr_equal(prof_elf_symbol_in("libc.so.6", names[i]), want);
	}
	dlclose(libc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(entry_only_table),
		cmocka_unit_test(symbol_from_the_object),
		cmocka_unit_test(symbol_default_version),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
