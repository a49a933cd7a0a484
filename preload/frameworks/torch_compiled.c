/* torch.compile's own ranges, which the RecordFunction callbacks (torch_callbacks.c) do
 * not see while torch's profiler is off: they are FUNCTION-scope RecordFunctions, and
 * libprof keeps its FUNCTION callback off then because it makes the dispatcher build a
 * RecordFunction for every operator (+12% on a dispatch-bound step). These few are made
 * whether or not a callback wants them, through exported calls that the GOT hooks see:
 *
 * - dynamo's "TorchDynamo Cache Lookup" and "Torch-Compiled Region: F/N" (its C shim,
 *   in libtorch_python): RecordFunction(RecordScope::FUNCTION), then before(name) even
 *   when no callback is active, then the destructor at the end;
 *   while a compiled region runs, a FUNCTION callback on its thread names the few
 *   RecordFunctions inside (CompiledFunction: its autograd.Function's forward);
 * - inductor's generated CPU kernels, with TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE=1
 *   (libprof sets it at load: PROFILER_INDUCTOR_KERNELS): each calls
 *   aoti_record_function_start("graph_G_cpp_fused_...", ...) on entry and
 *   aoti_record_function_end when it returns.
 *
 * A range is opened once per RecordFunction: by whichever of these hooks and the FUNCTION
 * callback (on while torch's profiler runs) comes first, the hooks coming first; none
 * inside an inductor kernel's (its own RecordFunction, when active, is that range). Every
 * hook returns PROF_HOOK_PASS: the calls are not events of their own. */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>

#include "preload/core/env_set.h"
#include "preload/core/state.h"
#include "preload/frameworks/torch_callbacks.h"
#include "preload/frameworks/torch_compiled.h"
#include "preload/trace/trace.h"

enum { SCOPE_FUNCTION = 0 };

/* The RecordFunction this thread constructed last (through a hooked call) and its scope:
 * before() says nothing of the scope, and a USER or BACKWARD_FUNCTION one is the
 * callbacks' to record. */
static __thread const void *constructed;
static __thread uint64_t constructed_scope;

/* Any address: the key of the aoti ranges, which end by the handle the start returned
 * through its last argument, not by anything the start was given. */
static const char aoti_key;

/* The outermost compiled region open on this thread ("Torch-Compiled Region: F/N"): its
 * RecordFunction, the callback on this thread on till it ends. */
static __thread const void *region;
#define REGION_PREFIX "Torch-Compiled Region"

uint32_t prof_torch_rf_constructed(const uint64_t *args)
{
	constructed = (const void *)args[0];
	constructed_scope = args[1];
	return PROF_HOOK_PASS;
}

int prof_torch_compiled_opened(const void *rf)
{
	const void *in = prof_torch_range_innermost();
	return in && (in == rf || in == &aoti_key);
}

/* before(std::variant<std::string_view, std::reference_wrapper<const FunctionSchema>>,
 * int64_t sequence_nr): the 24-byte variant goes on the stack (libstdc++: the view's
 * length and pointer, then the index; 0 = a name, 1 = the dispatcher's schema: an
 * operator, recorded at its entry point); this and the number in registers. */
uint32_t prof_torch_rf_before(const uint64_t *args)
{
	const void *rf = (const void *)args[0];
	if (rf != constructed || constructed_scope != SCOPE_FUNCTION ||
	    !__atomic_load_n(&prof_on, __ATOMIC_RELAXED) || prof_thr.busy ||
	    prof_torch_compiled_opened(rf))
		return PROF_HOOK_PASS;
	constructed = 0;
	uint64_t len = prof_trace_stack_arg(args, 0), index = prof_trace_stack_arg(args, 2) & 0xff;
	const char *p = (const char *)prof_trace_stack_arg(args, 1);
	char name[256];
	if (index != 0 || !p || !len || (len > 6 && !memcmp(p, "aten::", 6)))
		return PROF_HOOK_PASS;
	if (len >= sizeof name)
		len = sizeof name - 1;
	memcpy(name, p, len);
	name[len] = 0;
	prof_torch_range_open(rf, name);
	if (!region && len >= sizeof REGION_PREFIX - 1 &&
	    !memcmp(name, REGION_PREFIX, sizeof REGION_PREFIX - 1)) {
		region = rf;
		prof_torch_region_rows(1);
	}
	return PROF_HOOK_PASS;
}

uint32_t prof_torch_rf_destroyed(const uint64_t *args)
{
	const void *rf = (const void *)args[0];
	prof_torch_range_end(rf);
	if (rf == region) {
		region = 0;
		prof_torch_region_rows(0);
	}
	return PROF_HOOK_PASS;
}

/* aoti_record_function_start(const char *name, IValueMapHandle kwargs,
 * const C10IValueHandle *inputs, uint64_t n_inputs, AtenRecordFunctionHandle *guard) */
uint32_t prof_torch_aoti_start(const uint64_t *args)
{
	const char *name = (const char *)args[0];
	if (name && !prof_thr.busy && __atomic_load_n(&prof_on, __ATOMIC_RELAXED))
		prof_torch_range_open(&aoti_key, name);
	return PROF_HOOK_PASS;
}

uint32_t prof_torch_aoti_end(const uint64_t *args)
{
	(void)args;
	prof_torch_range_end(&aoti_key);
	return PROF_HOOK_PASS;
}

/* PROFILER_INDUCTOR_KERNELS=1: inductor's config reads the variable when torch._inductor
 * is imported; a value the user set wins. */
void prof_torch_inductor_kernel_names(void)
{
	prof_setenv("TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE", "1", 0);
}
