/* The functions traced at entry only (trace_policy.c). */
#ifndef PROF_PRELOAD_TRACE_POLICY_H
#define PROF_PRELOAD_TRACE_POLICY_H

/* 1 when a traced call of name must leave its return address alone (it returns twice,
 * never returns, switches stacks or unwinds them), else 0. */
int prof_trace_entry_only(const char *name);

#endif
