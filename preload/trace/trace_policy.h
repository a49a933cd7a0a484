/* The functions traced at entry only (trace_policy.c). */
#ifndef PROF_PRELOAD_TRACE_POLICY_H
#define PROF_PRELOAD_TRACE_POLICY_H

/* 1 when a traced call of name must leave its return address alone (it returns twice,
 * never returns, switches stacks or unwinds them), 2 when it also starts unwinding the
 * thread's stack itself (pthread_exit: the real return addresses go back first), else
 * 0. */
int prof_trace_entry_only(const char *name);

#endif
