/* Which functions must not have their return address replaced when traced: the one table
 * of them. A traced call normally gets prof_trace_exit as its return address; a function
 * that reads its own return address (setjmp, getcontext: it comes back through it a
 * second time, after the entry is gone), returns twice, never returns, or walks or
 * unwinds the stack would break or be broken by that. These are recorded at entry only
 * (a zero-length event, PROF_HOOK_ENTRY_ONLY): the stub still records the call but leaves
 * the caller's stack exactly as it was. Matched on the symbol name as the GOT or dlsym
 * gives it (C names, mangled C++ names).
 *
 * UNWINDS marks the ones that start unwinding this thread's stack with glibc's own
 * unwinder (found by glibc in libgcc_s, past libprof's wrappers): the return addresses
 * traced frames had replaced are put back first, as the wrappers do for C++ throws. */
#define _GNU_SOURCE
#include <stddef.h>

#include "preload/trace/glob.h"
#include "preload/trace/trace_policy.h"

#define UNWINDS 2

static const struct {
	const char *glob;
	const char *why; /* the reason, for readers of this table */
	int kind;        /* 1, or UNWINDS */
} entry_only[] = {
	/* return twice: the saved context holds the return address */
	{"setjmp", "returns twice", 1},
	{"_setjmp", "returns twice", 1},
	{"__sigsetjmp", "returns twice", 1},
	{"sigsetjmp", "returns twice", 1},
	{"getcontext", "returns twice", 1},
	{"swapcontext", "switches stacks; returns when switched back to", 1},
	{"vfork", "the child returns first, on the parent's stack", 1},
	{"__vfork", "the child returns first, on the parent's stack", 1},
	/* a raw clone's child may share this thread's memory (CLONE_VM without a new TLS) */
	{"clone", "the child may share the shadow stack", 1},
	{"__clone", "the child may share the shadow stack", 1},
	{"clone3", "the child may share the shadow stack", 1},
	/* never return: their event could never end */
	{"longjmp", "never returns", 1},
	{"_longjmp", "never returns", 1},
	{"siglongjmp", "never returns", 1},
	{"__longjmp_chk", "never returns", 1},
	{"setcontext", "never returns", 1},
	{"exit", "never returns", 1},
	{"_exit", "never returns", 1},
	{"_Exit", "never returns", 1},
	{"quick_exit", "never returns", 1},
	{"pthread_exit", "never returns; unwinds the thread's stack", UNWINDS},
	{"__pthread_unwind*", "never returns; unwinds the thread's stack", UNWINDS},
	{"thrd_exit", "never returns; unwinds the thread's stack", UNWINDS},
	{"abort", "never returns", 1},
	{"__assert_fail", "never returns", 1},
	{"__stack_chk_fail", "never returns", 1},
	{"__fortify_fail", "never returns", 1},
	{"__chk_fail", "never returns", 1},
	{"__libc_start_main", "never returns", 1},
	{"__libc_start_call_main", "never returns", 1},
	{"sigreturn", "a signal's return path", 1},
	/* replace the process: the entry is the last thing recorded when they succeed */
	{"exec[lv]*", "replaces the process", 1},
	{"fexecve", "replaces the process", 1},
	/* the exception runtime walks the stack by its return addresses (_Unwind_Resume
	 * is called from a landing pad and unwinds from its own return address) */
	{"_Unwind_*", "unwinds the stack", 1},
	{"__cxa_*", "the exception runtime", 1},
	{"__gxx_personality_*", "the exception runtime", 1},
	{"_ZSt9terminatev", "never returns", 1},
	{"_ZSt17rethrow_exception*", "never returns", 1},
};

int prof_trace_entry_only(const char *name)
{
	for (size_t i = 0; i < sizeof entry_only / sizeof *entry_only; i++)
		if (prof_glob(entry_only[i].glob, name))
			return entry_only[i].kind;
	return 0;
}
