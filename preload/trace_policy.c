/* Which functions must not have their return address replaced when traced: the one table
 * of them. A traced call normally gets prof_trace_exit as its return address; a function
 * that reads its own return address (setjmp, getcontext: it comes back through it a
 * second time, after the entry is gone), returns twice, never returns, or walks or
 * unwinds the stack would break or be broken by that. These are recorded at entry only
 * (a zero-length event, PROF_HOOK_ENTRY_ONLY): the stub still records the call but leaves
 * the caller's stack exactly as it was. Matched on the symbol name as the GOT or dlsym
 * gives it (C names, mangled C++ names). */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <stddef.h>

#include "trace_policy.h"

static const struct {
	const char *glob;
	const char *why; /* the reason, for readers of this table */
} entry_only[] = {
	/* return twice: the saved context holds the return address */
	{"setjmp", "returns twice"},
	{"_setjmp", "returns twice"},
	{"__sigsetjmp", "returns twice"},
	{"sigsetjmp", "returns twice"},
	{"getcontext", "returns twice"},
	{"swapcontext", "switches stacks; returns when switched back to"},
	{"vfork", "the child returns first, on the parent's stack"},
	{"__vfork", "the child returns first, on the parent's stack"},
	/* a raw clone's child may share this thread's memory (CLONE_VM without a new TLS) */
	{"clone", "the child may share the shadow stack"},
	{"__clone", "the child may share the shadow stack"},
	{"clone3", "the child may share the shadow stack"},
	/* never return: their event could never end */
	{"longjmp", "never returns"},
	{"_longjmp", "never returns"},
	{"siglongjmp", "never returns"},
	{"__longjmp_chk", "never returns"},
	{"setcontext", "never returns"},
	{"exit", "never returns"},
	{"_exit", "never returns"},
	{"_Exit", "never returns"},
	{"quick_exit", "never returns"},
	{"pthread_exit", "never returns"},
	{"thrd_exit", "never returns"},
	{"abort", "never returns"},
	{"__assert_fail", "never returns"},
	{"__stack_chk_fail", "never returns"},
	{"__fortify_fail", "never returns"},
	{"__chk_fail", "never returns"},
	{"__libc_start_main", "never returns"},
	{"__libc_start_call_main", "never returns"},
	{"sigreturn", "a signal's return path"},
	/* replace the process: the entry is the last thing recorded when they succeed */
	{"exec[lv]*", "replaces the process"},
	{"fexecve", "replaces the process"},
	/* the exception runtime walks the stack by its return addresses (_Unwind_Resume
	 * is called from a landing pad and unwinds from its own return address) */
	{"_Unwind_*", "unwinds the stack"},
	{"__cxa_*", "the exception runtime"},
	{"__gxx_personality_*", "the exception runtime"},
	{"_ZSt9terminatev", "never returns"},
	{"_ZSt17rethrow_exception*", "never returns"},
};

int prof_trace_entry_only(const char *name)
{
	for (size_t i = 0; i < sizeof entry_only / sizeof *entry_only; i++)
		if (!fnmatch(entry_only[i].glob, name, 0))
			return 1;
	return 0;
}
