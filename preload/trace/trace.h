/* Tracing functions by name (PROFILER_TRACE): stubs and the patterns that pick them. */
#ifndef PROF_PRELOAD_TRACE_H
#define PROF_PRELOAD_TRACE_H

#include <errno.h>
#include <stdint.h>

extern int prof_trace_on; /* recording and profile_api, with patterns given */

/* Called on entry with the integer argument registers (rdi, rsi, rdx, rcx, r8, r9).
 * Returns 0, or a string id + 1 that names this call's event instead of the function. */
typedef uint32_t (*prof_trace_hook)(const uint64_t *args);
/* A hook's view of the arguments passed on the stack (the first, k = 0, at the caller's
 * rsp + 8): trace_x86_64.S saves the registers in 200 bytes below the return address, so
 * they start 208 bytes past args. */
static inline uint64_t prof_trace_stack_arg(const uint64_t *args, unsigned k)
{
	return args[(200 + 8) / 8 + k];
}
/* Or'd into a hook's result: resume recording when this call returns (a profiler's
 * start function: what it runs itself is not the program's work). */
#define PROF_HOOK_RESUME_AFTER 0x80000000u
/* Or'd into a hook's result: record this call at entry only and leave its return address
 * alone (trace_policy.c: functions that return twice, never, or walk the stack). */
#define PROF_HOOK_ENTRY_ONLY 0x40000000u
/* Or'd into a hook's result: no event for this call, which only ran the hook (a
 * framework's completion callback, ending the call it completes: prof_trace_end_now). */
#define PROF_HOOK_PASS 0x20000000u
/* Gives the innermost call open on this thread, when it is of category cat and has none
 * yet, a detail, string id: its event carries it (PROF_EVF_DETAIL). */
void prof_trace_set_detail(uint32_t id, uint8_t cat);
/* From a hook, for the call it runs for: its event is a message (PROF_EVF_COMM, b = bytes,
 * c = where) with detail string id + 1 (0: none). */
void prof_trace_set_comm(uint64_t bytes, uint64_t where, uint32_t detail);
/* Ends now, as far as its event says, the innermost call open on this thread that was
 * made through a stub with this hook and with arg1 as its second integer argument; its
 * return still comes (and is not timed). */
void prof_trace_end_now(prof_trace_hook hook, uint64_t arg1);
/* The hook of those functions; the second also puts back the real return addresses of
 * the thread's traced frames (for functions that unwind the stack from there). */
uint32_t prof_trace_entry_only_hook(const uint64_t *args);
uint32_t prof_trace_unwind_hook(const uint64_t *args);

/* A stub that traces real under name in category cat (one per real function), calling
 * hook first when there is one. NULL when none can be made, errno set: ENOSPC when
 * PROF_TRACE_MAX_TARGETS functions are traced already, else mmap's (no executable memory). */
#define PROF_TRACE_MAX_TARGETS (1u << 16)
void *prof_trace_stub(void *real, uint32_t name, uint8_t cat, prof_trace_hook hook);
/* Why prof_trace_stub gave none, from its errno: for the PROFILER_DEBUG=trace line. */
static inline const char *prof_trace_stub_why(int err)
{
	return err == ENOSPC ? "the table of traced functions is full"
			     : "no executable memory for its stub";
}
int prof_trace_is_stub(const void *addr);
void prof_trace_after_fork_child(void); /* the locks a fork may have caught held */
/* The thread's exit hook: its shadow stack unmapped (trace.c: trace_thread). */
void prof_trace_thread_exit(void);
void prof_trace_patch_after_fork(void);

/* got.c: parses PROFILER_TRACE ("glob[,glob...]", a glob may be "CATEGORY=glob"), adds
 * the PROFILER_FRAMEWORK preset's patterns, and with follow the hooks that start and
 * stop recording with the framework's own profiler. */
int prof_trace_configure(const char *patterns, const char *framework, int follow);
/* The PROFILER_TRACE setting, read without the program's getenv. */
const char *prof_trace_env(void);
/* Patches the GOT of every loaded object not patched yet. */
void prof_trace_patch_loaded(void);
/* The stub for a symbol looked up by name (dlsym), or real when it is not traced. */
void *prof_trace_lookup(const char *name, void *real);
int prof_trace_enabled(void);

#endif
