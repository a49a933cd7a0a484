/* PyTorch's own ranges, through the API torch.profiler itself is built on: a global
 * RecordFunction callback (at::addGlobalCallback). Its USER_SCOPE calls are the
 * record_function labels and the framework's own (ProfilerStep#N, Optimizer.step#SGD.step,
 * enumerate(DataLoader)#...); BACKWARD_FUNCTION calls are the autograd nodes
 * (AddmmBackward0, torch::autograd::AccumulateGrad); FUNCTION calls are the dispatcher's
 * operators, of which the ATen ones are already recorded at their entry points (the
 * preset's at::_ops::*::call) and are skipped here, leaving the engine's
 * "autograd::engine::evaluate_function: X" and operators of other namespaces. That one is
 * on only while torch's own profiler runs (prof_torch_engine_rows, from the hooks on its
 * start and stop): a FUNCTION callback makes the dispatcher build a RecordFunction for
 * every operator, +13% on a dispatch-bound training step where the other two cost 1%
 * (docs/BENCHMARKS.md); while torch.profiler runs that cost is paid already, and those
 * are the runs whose tables are compared with torch's.
 *
 * Why this and not symbols: these names exist only as strings built at run time, and the
 * callback API has kept its layout from 1.13 to 2.15 (RecordFunctionCallback: two function
 * pointers, a double, a bool per RecordScope, three bools; 40 bytes; RecordScope has had
 * the same ten values); the calls are exported C++ functions, found in libtorch_cpu's
 * symbol table. One callback per scope, so that the scope is known without reading
 * RecordFunction's fields. Measured in docs/BENCHMARKS.md (bench/torch_callbacks.py). */
#define _GNU_SOURCE
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "preload/common/debug.h"
#include "preload/common/event.h"
#include "preload/core/state.h"
#include "preload/frameworks/torch_callbacks.h"
#include "preload/trace/elf_sym.h"

enum { SCOPE_FUNCTION = 0, SCOPE_BACKWARD_FUNCTION = 1, SCOPE_USER = 7, NUM_SCOPES = 10 };

/* at::RecordFunctionCallback, as laid out by torch 1.13 to 2.15 (ATen/record_function.h);
 * passed by value in memory, as this struct of the same layout is. */
struct record_function_callback {
	void *start, *end;
	double sampling_prob;
	bool scopes[NUM_SCOPES];
	bool needs_inputs, needs_outputs, needs_ids;
};
_Static_assert(sizeof(struct record_function_callback) == 40, "torch's layout");

typedef uint64_t (*add_global_callback_fn)(struct record_function_callback);
typedef const char *(*record_function_name_fn)(const void *record_function);
typedef void (*callback_switch_fn)(uint64_t handle);

static record_function_name_fn record_function_name;
static callback_switch_fn disable_callback, reenable_callback;
static uint64_t function_handle; /* the FUNCTION callback's, 0: none */
static int installed;
static uint8_t operator_cat;
static int have_operator_cat;

/* FUNCTION calls this thread opened a range for: a bit per nesting level (LIFO: the
 * RecordFunction is a scope guard), so that the end callback closes only those. */
static __thread uint64_t function_opened __attribute__((tls_model("initial-exec")));
static __thread uint32_t function_depth __attribute__((tls_model("initial-exec")));

static uint8_t op_category(void)
{
	if (unlikely(!__atomic_load_n(&have_operator_cat, __ATOMIC_ACQUIRE))) {
		operator_cat = prof_category(PROF_CATNAME_OPERATOR);
		__atomic_store_n(&have_operator_cat, 1, __ATOMIC_RELEASE);
	}
	return operator_cat;
}

/* The start callbacks return std::unique_ptr<ObserverContext>, a class with a destructor:
 * returned through the hidden pointer in the first argument (an empty one: no context). */
static const char *name_of(const void *fn)
{
	const char *name = record_function_name(fn);
	return name ? name : "(unnamed)";
}

static void **user_start(void **ret, const void *fn)
{
	*ret = 0;
	prof_range_open(PROF_CAT_USER, name_of(fn));
	return ret;
}

static void **backward_start(void **ret, const void *fn)
{
	*ret = 0;
	prof_range_open(op_category(), name_of(fn));
	return ret;
}

static void range_end(const void *fn, void *ctx)
{
	(void)fn;
	(void)ctx;
	prof_range_close();
}

static void **function_start(void **ret, const void *fn)
{
	*ret = 0;
	uint32_t level = function_depth++;
	if (level >= 64)
		return ret;
	uint64_t bit = 1ull << level;
	function_opened &= ~bit;
	if (!__atomic_load_n(&prof_on, __ATOMIC_RELAXED))
		return ret;
	const char *name = record_function_name(fn);
	if (!name || !strncmp(name, "aten::", 6))
		return ret; /* recorded at its entry point */
	function_opened |= bit;
	prof_range_open(op_category(), name);
	return ret;
}

static void function_end(const void *fn, void *ctx)
{
	(void)fn;
	(void)ctx;
	if (!function_depth)
		return;
	uint32_t level = --function_depth;
	if (level < 64 && (function_opened >> level & 1)) {
		function_opened &= ~(1ull << level);
		prof_range_close();
	}
}

static uint64_t add(add_global_callback_fn add_global, void *start, void *end, unsigned scope)
{
	struct record_function_callback cb = {.start = start, .end = end, .sampling_prob = 1.0};
	cb.scopes[scope] = true;
	return add_global(cb);
}

void prof_torch_engine_rows(int on)
{
	uint64_t h = __atomic_load_n(&function_handle, __ATOMIC_ACQUIRE);
	if (!h)
		return;
	prof_thr.busy++; /* what torch allocates here is libprof's doing */
	(on ? reenable_callback : disable_callback)(h);
	prof_thr.busy--;
}

void prof_torch_callbacks_install(const struct dl_phdr_info *libtorch_cpu)
{
	if (__atomic_exchange_n(&installed, 1, __ATOMIC_ACQ_REL))
		return;
	add_global_callback_fn add_global = (add_global_callback_fn)prof_elf_symbol(
		libtorch_cpu, "_ZN2at17addGlobalCallbackENS_22RecordFunctionCallbackE");
	record_function_name = (record_function_name_fn)prof_elf_symbol(
		libtorch_cpu, "_ZNK2at14RecordFunction4nameEv");
	if (!add_global || !record_function_name) {
		prof_debug(PROF_DEBUG_TRACE, "torch: no RecordFunction callback API in %s",
			   libtorch_cpu->dlpi_name);
		return;
	}
	disable_callback = (callback_switch_fn)prof_elf_symbol(libtorch_cpu,
							     "_ZN2at15disableCallbackEm");
	reenable_callback = (callback_switch_fn)prof_elf_symbol(libtorch_cpu,
							      "_ZN2at16reenableCallbackEm");
	int ok = add(add_global, (void *)user_start, (void *)range_end, SCOPE_USER) &&
		 add(add_global, (void *)backward_start, (void *)range_end,
		     SCOPE_BACKWARD_FUNCTION);
	/* off until torch's own profiler turns the dispatcher's RecordFunction on */
	if (ok && disable_callback && reenable_callback) {
		uint64_t h = add(add_global, (void *)function_start, (void *)function_end,
				 SCOPE_FUNCTION);
		if (h)
			disable_callback(h);
		__atomic_store_n(&function_handle, h, __ATOMIC_RELEASE);
	}
	prof_debug(PROF_DEBUG_TRACE, "torch: RecordFunction callbacks %s in %s",
		   ok ? "added" : "refused", libtorch_cpu->dlpi_name);
}
