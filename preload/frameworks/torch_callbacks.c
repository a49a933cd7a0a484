/* PyTorch's own ranges, through the API torch.profiler itself is built on: a global
 * RecordFunction callback (at::addGlobalCallback). Its USER_SCOPE calls are the
 * record_function labels and the framework's own (ProfilerStep#N, Optimizer.step#SGD.step,
 * enumerate(DataLoader)#...); BACKWARD_FUNCTION calls are the autograd nodes
 * (AddmmBackward0, torch::autograd::AccumulateGrad); FUNCTION calls are the dispatcher's
 * operators, of which the ATen ones are already recorded at their entry points (the
 * preset's at::_ops::*::call) and are skipped here, leaving the engine's
 * "autograd::engine::evaluate_function: X" and operators of other namespaces. That one is
 * on only while torch's own profiler runs (prof_torch_engine_rows, from the hooks on its
 * start and stop) or with PROFILER_RECORD_SHAPES (it then reads the ATen operators'
 * inputs): a FUNCTION callback makes the dispatcher build a RecordFunction for every
 * operator, +12% on a dispatch-bound training step where the other two cost 1%
 * (docs/BENCHMARKS.md); while torch.profiler runs that cost is paid already, and those
 * are the runs whose tables are compared with torch's.
 *
 * Why this and not symbols: these names exist only as strings built at run time, and the
 * callback API has kept its layout from 1.13 to 2.15 (RecordFunctionCallback: two function
 * pointers, a double, a bool per RecordScope, three bools; 40 bytes; RecordScope has had
 * the same ten values); the calls are exported C++ functions, found in libtorch_cpu's
 * symbol table. One callback per scope, so that the scope is known without reading
 * RecordFunction's fields. Measured in docs/BENCHMARKS.md (bench/torch_step.py). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "preload/common/debug.h"
#include "preload/common/event.h"
#include "preload/core/state.h"
#include "preload/frameworks/torch_callbacks.h"
#include "preload/frameworks/torch_compiled.h"
#include "preload/trace/elf_sym.h"
#include "preload/trace/trace.h"
#include "preload/wrap/dl.h"

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
/* std::vector<T>: begin, end, end of storage */
struct cxx_vector {
	char *begin, *end, *cap;
};
/* torch::profiler::impl::inputSizes(const RecordFunction &, bool flatten_list_enabled):
 * std::vector<std::vector<int64_t>>, returned through the hidden pointer */
typedef void (*input_sizes_fn)(struct cxx_vector *ret, const void *record_function,
			       bool flatten);
typedef void (*cxx_delete_fn)(void *);
/* libstdc++'s std::string: its text, length, then a local buffer for short ones */
struct cxx_string {
	char *p;
	size_t len;
	char local[16];
};
_Static_assert(sizeof(struct cxx_string) == 32, "libstdc++'s std::string (the cxx11 ABI)");
/* torch::profiler::impl::inputTypes(const RecordFunction &): std::vector<std::string>, a
 * tensor's dtype name ("float", "c10::Half", ...) per input */
typedef void (*input_types_fn)(struct cxx_vector *ret, const void *record_function);

static record_function_name_fn record_function_name;
static callback_switch_fn disable_callback, reenable_callback;
static uint64_t function_handle; /* the FUNCTION callback's, 0: none */
static int shapes;                /* PROFILER_RECORD_SHAPES: the FUNCTION callback stays on */
static input_sizes_fn input_sizes;
static input_types_fn input_types; /* with input_sizes: a collective's bytes */
static cxx_delete_fn cxx_delete;
static int installed;
static uint32_t operator_cat_once;

/* The RecordFunctions this thread opened a range for, innermost last, each with its
 * range's level in the thread's range stack. An end closes the range of its own
 * RecordFunction only: one torch ends on another thread (an async operator, c10d work, an
 * RPC) is not found there, and ranges that do not nest (a ProfilerStep begun inside a
 * label) end where they end. A thread full of ranges that never end here forgets its
 * oldest. */
#define OPEN_MAX 64
struct open_rf {
	const void *fn;
	uint32_t level;
	uint16_t step;   /* an optimizer.step(): its end is a step boundary */
	uint16_t hooked; /* opened by torch_compiled.c's hooks: ends at its destructor */
};
/* The text's string id by the shapes' hash, per thread: formatting and interning the
 * same shapes again was a third of what recording them cost. */
#define SHAPE_CACHE 256
struct shape_entry {
	uint64_t hash;
	const void *proc; /* the process segment whose string table the id is of */
	uint32_t id;
};
/* Both per thread, 7 KiB: mapped at the thread's first RecordFunction rather than kept
 * in static TLS, which glibc takes from every thread's stack (prof_thread_block). */
struct torch_thread {
	struct open_rf open_rf[OPEN_MAX];
	uint32_t nopen;
	struct shape_entry shape_cache[SHAPE_CACHE];
};
static __thread struct torch_thread *torch_thr __attribute__((tls_model("initial-exec")));

static struct torch_thread *torch_thread(void)
{
	return prof_thread_block((void **)&torch_thr, sizeof *torch_thr);
}

/* An optimizer.step() whose end is a step boundary: the outermost on the thread (a
 * wrapping optimizer's step calls its inner one's), and of the first optimizer seen (a
 * loop stepping two optimizers, or one per parameter, is still one step an iteration). */
static int step_boundary(const struct torch_thread *tt, const char *name)
{
	static char first[96];
	static _Atomic int have; /* 0 none yet, 1 being set, 2 set */
	if (strncmp(name, "Optimizer.step#", 15))
		return 0;
	for (uint32_t i = 0; i < tt->nopen; i++)
		if (tt->open_rf[i].step)
			return 0;
	int expect = 0;
	if (atomic_compare_exchange_strong(&have, &expect, 1)) {
		snprintf(first, sizeof first, "%s", name);
		atomic_store(&have, 2);
		return 1;
	}
	return expect == 2 && !strncmp(first, name, sizeof first - 1);
}

static void open_range(const void *fn, uint8_t cat, const char *name)
{
	struct torch_thread *tt = torch_thread();
	if (!tt)
		return; /* no room to find its end: no range */
	if (tt->nopen == OPEN_MAX) {
		prof_range_end_at(tt->open_rf[0].level, 0);
		for (uint32_t i = 1; i < OPEN_MAX; i++) {
			tt->open_rf[i - 1] = tt->open_rf[i];
			tt->open_rf[i - 1].level = tt->open_rf[i].level - (tt->open_rf[i].level > 0);
		}
		tt->nopen--;
	}
	tt->open_rf[tt->nopen].fn = fn;
	tt->open_rf[tt->nopen].level = prof_thr.nranges;
	/* torch.optim's Optimizer.step wraps each step in "Optimizer.step#SGD.step" */
	tt->open_rf[tt->nopen].step = cat == PROF_CAT_USER && step_boundary(tt, name);
	tt->open_rf[tt->nopen].hooked = 0;
	tt->nopen++;
	prof_range_open(cat, name);
}

static void range_end(const void *fn, void *ctx)
{
	(void)ctx;
	struct torch_thread *tt = torch_thr;
	if ((uintptr_t)tt <= 1)
		return; /* none opened on this thread */
	uint32_t k = tt->nopen;
	while (k && tt->open_rf[k - 1].fn != fn)
		k--;
	if (!k)
		return; /* not opened on this thread */
	uint32_t level = tt->open_rf[--k].level, step = tt->open_rf[k].step;
	for (uint32_t i = k + 1; i < tt->nopen; i++) {
		tt->open_rf[i - 1] = tt->open_rf[i];
		tt->open_rf[i - 1].level = tt->open_rf[i].level - 1; /* one level went */
	}
	tt->nopen--;
	prof_range_end_at(level, 1);
	if (step)
		prof_framework_step(); /* PROFILER_SCHEDULE over unmodified training loops */
}

static uint8_t op_category(void)
{
	return prof_category_once(PROF_CATNAME_OPERATOR, &operator_cat_once);
}

/* The start callbacks return std::unique_ptr<ObserverContext>, a class with a destructor:
 * returned through the hidden pointer in the first argument (an empty one: no context). */
static const char *name_of(const void *fn)
{
	const char *name = record_function_name(fn);
	return name ? name : "(unnamed)";
}

static uint32_t collective_cat_once;

/* torch.distributed's backends name their collectives "gloo:all_reduce",
 * "nccl:all_reduce", ... (ProcessGroup*'s RECORD_FUNCTION), in the user scope */
static int is_collective(const char *name)
{
	static const char *const backends[] = {"gloo:", "nccl:", "ucc:", "mpi:", "xccl:"};
	for (size_t i = 0; i < sizeof backends / sizeof *backends; i++)
		if (!strncmp(name, backends[i], strlen(backends[i])))
			return 1;
	return 0;
}

static void release_sizes(struct cxx_vector *v);
static void busy_done(uint32_t **busy);

/* A tensor dtype as caffe2::TypeMeta names it: its bytes per element (0: not known) and
 * torch's name for it (torch.float32 ...). */
static uint64_t dtype_bytes(const struct cxx_string *s, const char **torch_name)
{
	static const struct {
		const char *name, *torch;
		uint8_t bytes;
	} sizes[] = {{"float", "float32", 4}, {"double", "float64", 8},
		     {"c10::Half", "float16", 2}, {"c10::BFloat16", "bfloat16", 2},
		     {"long int", "int64", 8}, {"long", "int64", 8}, {"int", "int32", 4},
		     {"short int", "int16", 2}, {"short", "int16", 2}, {"signed char", "int8", 1},
		     {"unsigned char", "uint8", 1}, {"bool", "bool", 1},
		     {"c10::complex<float>", "complex64", 8},
		     {"c10::complex<double>", "complex128", 16},
		     {"c10::complex<c10::Half>", "complex32", 4}, {"unsigned int", "uint32", 4},
		     {"unsigned short", "uint16", 2}, {"long unsigned int", "uint64", 8}};
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
		if (s->len == strlen(sizes[i].name) && !memcmp(s->p, sizes[i].name, s->len)) {
			*torch_name = sizes[i].torch;
			return sizes[i].bytes;
		}
	*torch_name = NULL;
	if (s->len >= 11 && !memcmp(s->p, "c10::Float8", 11))
		return 1;
	return 0;
}

static void release_types(struct cxx_vector *v)
{
	for (struct cxx_string *s = (void *)v->begin; s < (struct cxx_string *)(void *)v->end; s++)
		if (s->p != s->local)
			cxx_delete(s->p);
	if (v->begin)
		cxx_delete(v->begin);
}

/* A collective's tensors (ProcessGroup's Work hands them to its RecordFunction): the sum
 * of elements x element size over its tensor inputs, PROF_COMM_UNKNOWN when an input's
 * type is not known; their dtype in *dtype (torch's name; "mixed"; NULL: not known). */
static uint64_t collective_bytes(const void *fn, const char **dtype)
{
	/* released whatever happens: inputTypes may throw after inputSizes gave its vector */
	struct cxx_vector sizes __attribute__((cleanup(release_sizes))) = {0};
	struct cxx_vector types __attribute__((cleanup(release_types))) = {0};
	uint32_t *busy __attribute__((cleanup(busy_done))) = &prof_thr.busy;
	(*busy)++; /* what torch allocates here is libprof's doing */
	input_sizes(&sizes, fn, false);
	input_types(&types, fn);
	const struct cxx_vector *shape = (const void *)sizes.begin;
	const struct cxx_string *type = (const void *)types.begin;
	size_t n = (size_t)((const struct cxx_vector *)(const void *)sizes.end - shape);
	uint64_t bytes = n == (size_t)((const struct cxx_string *)(const void *)types.end - type)
				 ? 0 : PROF_COMM_UNKNOWN;
	*dtype = NULL;
	for (size_t i = 0, first = 1; i < n && bytes != PROF_COMM_UNKNOWN; i++) {
		if (!type[i].len)
			continue; /* not a tensor */
		const char *name;
		uint64_t elems = 1, size = dtype_bytes(&type[i], &name);
		*dtype = first || (name && *dtype && !strcmp(name, *dtype)) ? name : "mixed";
		first = 0;
		for (const int64_t *d = (const void *)shape[i].begin;
		     d < (const int64_t *)(const void *)shape[i].end; d++)
			elems *= *d > 0 ? (uint64_t)*d : 0;
		bytes = size ? bytes + elems * size : PROF_COMM_UNKNOWN;
	}
	return bytes;
}

static void **user_start(void **ret, const void *fn)
{
	*ret = 0;
	if (prof_torch_compiled_opened(fn))
		return ret; /* a hook's already (torch_compiled.c) */
	const char *name = name_of(fn);
	int coll = is_collective(name);
	/* counted before the range opens, so that its cost is not the collective's time; and
	 * only for a range that is recorded */
	const char *dtype = NULL;
	int measure = coll && input_types && !prof_thr.busy &&
		      __atomic_load_n(&prof_on, __ATOMIC_RELAXED);
	uint64_t bytes = measure ? collective_bytes(fn, &dtype) : PROF_COMM_UNKNOWN;
	uint32_t type_id = dtype ? prof_intern(dtype) + 1 : 0;
	open_range(fn,
		   coll ? prof_category_once(PROF_CATNAME_COLLECTIVE, &collective_cat_once)
			: PROF_CAT_USER,
		   name);
	if (measure)
		prof_range_set_comm(bytes, type_id);
	return ret;
}

static void **backward_start(void **ret, const void *fn)
{
	*ret = 0;
	if (prof_torch_compiled_opened(fn))
		return ret;
	open_range(fn, op_category(), name_of(fn));
	return ret;
}

/* Appends to out[0..len) at *n as snprintf would (*n may pass len: the text is cut). */
static void put(char *out, size_t len, size_t *n, const char *fmt, long long v)
{
	*n += (size_t)snprintf(out + (*n < len ? *n : len), *n < len ? len - *n : 0, fmt, v);
}

/* "[[128, 500], [10, 500], []]", as torch.profiler's Input Shapes column shows them. */
static void shapes_text(const struct cxx_vector *v, char *out, size_t len)
{
	const struct cxx_vector *in = (const void *)v->begin, *last = (const void *)v->end;
	size_t n = 0;
	put(out, len, &n, "[", 0);
	for (const struct cxx_vector *first = in; in < last; in++) {
		put(out, len, &n, in == first ? "[" : ", [", 0);
		const int64_t *d = (const void *)in->begin, *end = (const void *)in->end;
		for (const int64_t *d0 = d; d < end; d++)
			put(out, len, &n, d == d0 ? "%lld" : ", %lld", (long long)*d);
		put(out, len, &n, "]", 0);
	}
	put(out, len, &n, "]", 0);
	if (n >= len && len > 4)
		memcpy(out + len - 4, "...", 4); /* cut short, and says so */
}


static uint64_t shapes_hash(const struct cxx_vector *v)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (const struct cxx_vector *in = (const void *)v->begin;
	     in < (const struct cxx_vector *)(const void *)v->end; in++) {
		h = (h ^ (uint64_t)(in->end - in->begin)) * 0x100000001b3ull;
		for (const int64_t *d = (const void *)in->begin;
		     d < (const int64_t *)(const void *)in->end; d++)
			h = (h ^ (uint64_t)*d) * 0x100000001b3ull;
	}
	return h | 1; /* 0: an empty cache entry */
}

/* The operator's input shapes, given to its entry point's event (the innermost traced
 * call: at::_ops::<op>::call leads to this RecordFunction through the dispatcher). */
static void release_sizes(struct cxx_vector *v)
{
	for (struct cxx_vector *in = (void *)v->begin; in < (struct cxx_vector *)(void *)v->end;
	     in++)
		if (in->begin)
			cxx_delete(in->begin);
	if (v->begin)
		cxx_delete(v->begin);
}

static void busy_done(uint32_t **busy)
{
	(**busy)--;
}

#define SHAPES_STRINGS_MAX (64ull << 20)

static void record_shapes(const void *fn)
{
	struct cxx_vector v = {0};
	/* what inputSizes allocates is libprof's doing; it throws for shapes it cannot give
	 * (nested or symbolic tensors: torch catches that, and this file is built with
	 * -fexceptions so that the count still comes down) */
	uint32_t *busy __attribute__((cleanup(busy_done))) = &prof_thr.busy;
	(*busy)++;
	input_sizes(&v, fn, false);
	struct torch_thread *tt = torch_thread();
	if (!tt) {
		release_sizes(&v);
		return;
	}
	uint64_t h = shapes_hash(&v);
	unsigned slot = (unsigned)(h >> 56) % SHAPE_CACHE;
	if (tt->shape_cache[slot].hash != h || tt->shape_cache[slot].proc != prof_proc) {
		/* every distinct text is a string of the process: a run whose shapes never
		 * repeat stops recording them when the names reach SHAPES_STRINGS_MAX, so that
		 * /dev/shm is not filled with them */
		const struct prof_proc_shm *p = prof_proc;
		if (!p || atomic_load_explicit(&p->strings_used, memory_order_relaxed) >
				  SHAPES_STRINGS_MAX) {
			static int said;
			if (p && !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
				prof_warn("PROFILER_RECORD_SHAPES: this process's names and "
					  "shapes reach 64 MiB; no more shapes are recorded");
			release_sizes(&v);
			return;
		}
		char text[512];
		shapes_text(&v, text, sizeof text);
		tt->shape_cache[slot].id = prof_intern(text);
		tt->shape_cache[slot].hash = h;
		tt->shape_cache[slot].proc = prof_proc;
	}
	release_sizes(&v);
	prof_trace_set_detail(tt->shape_cache[slot].id, op_category());
}

static void **function_start(void **ret, const void *fn)
{
	*ret = 0;
	if (!__atomic_load_n(&prof_on, __ATOMIC_RELAXED))
		return ret;
	const char *name = record_function_name(fn);
	if (!name)
		return ret;
	if (!strncmp(name, "aten::", 6)) {
		if (shapes && !prof_thr.busy)
			record_shapes(fn);
		return ret; /* recorded at its entry point */
	}
	if (prof_torch_compiled_opened(fn))
		return ret;
	open_range(fn, op_category(), name);
	return ret;
}

static uint64_t add(add_global_callback_fn add_global, void *start, void *end, unsigned scope,
		    bool inputs)
{
	struct record_function_callback cb = {
		.start = start, .end = end, .sampling_prob = 1.0, .needs_inputs = inputs};
	cb.scopes[scope] = true;
	return add_global(cb);
}

void prof_torch_engine_rows(int on)
{
	uint64_t h = __atomic_load_n(&function_handle, __ATOMIC_ACQUIRE);
	if (!h || shapes) /* with shapes it is on all along */
		return;
	prof_thr.busy++; /* what torch allocates here is libprof's doing */
	(on ? reenable_callback : disable_callback)(h);
	prof_thr.busy--;
}

typedef uint64_t (*add_tls_callback_fn)(struct record_function_callback);
static add_tls_callback_fn add_tls_callback;
static callback_switch_fn remove_callback;
static __thread uint64_t region_handle; /* this thread's FUNCTION callback, 0: none */

void prof_torch_region_rows(int on)
{
	if (!add_tls_callback || !remove_callback || on == (region_handle != 0))
		return;
	prof_thr.busy++; /* what torch allocates here is libprof's doing */
	if (on) {
		struct record_function_callback cb = {.start = (void *)function_start,
						      .end = (void *)range_end,
						      .sampling_prob = 1.0};
		cb.scopes[SCOPE_FUNCTION] = true;
		region_handle = add_tls_callback(cb);
	} else {
		remove_callback(region_handle);
		region_handle = 0;
	}
	prof_thr.busy--;
}

const void *prof_torch_range_innermost(void)
{
	struct torch_thread *tt = torch_thr;
	return (uintptr_t)tt > 1 && tt->nopen ? tt->open_rf[tt->nopen - 1].fn : NULL;
}

void prof_torch_range_open(const void *key, const char *name)
{
	open_range(key, op_category(), name);
	struct torch_thread *tt = torch_thr;
	if ((uintptr_t)tt > 1 && tt->nopen && tt->open_rf[tt->nopen - 1].fn == key)
		tt->open_rf[tt->nopen - 1].hooked = 1;
}

int prof_torch_range_end(const void *key)
{
	struct torch_thread *tt = torch_thr;
	uint32_t k = (uintptr_t)tt > 1 ? tt->nopen : 0;
	while (k && tt->open_rf[k - 1].fn != key)
		k--;
	if (!k || !tt->open_rf[k - 1].hooked)
		return 0;
	range_end(key, 0);
	return 1;
}

void prof_torch_callbacks_install(const struct dl_phdr_info *libtorch_cpu)
{
	if (__atomic_exchange_n(&installed, 1, __ATOMIC_ACQ_REL))
		return;
	add_global_callback_fn add_global = (add_global_callback_fn)prof_elf_symbol(
		libtorch_cpu, "_ZN2at17addGlobalCallbackENS_22RecordFunctionCallbackE");
	record_function_name = (record_function_name_fn)prof_elf_symbol(
		libtorch_cpu, "_ZNK2at14RecordFunction4nameEv");
	/* the 40-byte callback of function pointers came with StepCallbacks (torch 1.12/1.13);
	 * before, a std::function pair: not called with this layout */
	if (!prof_elf_symbol(libtorch_cpu, "_ZN2at16getStepCallbacksENS_11RecordScopeE"))
		add_global = 0;
	if (!add_global || !record_function_name) {
		prof_debug(PROF_DEBUG_TRACE, "torch: no RecordFunction callback API in %s",
			   libtorch_cpu->dlpi_name);
		return;
	}
	add_tls_callback = (add_tls_callback_fn)prof_elf_symbol(
		libtorch_cpu, "_ZN2at22addThreadLocalCallbackENS_22RecordFunctionCallbackE");
	remove_callback = (callback_switch_fn)prof_elf_symbol(libtorch_cpu,
							    "_ZN2at14removeCallbackEm");
	disable_callback = (callback_switch_fn)prof_elf_symbol(libtorch_cpu,
							     "_ZN2at15disableCallbackEm");
	reenable_callback = (callback_switch_fn)prof_elf_symbol(libtorch_cpu,
							      "_ZN2at16reenableCallbackEm");
	input_sizes = (input_sizes_fn)prof_elf_symbol(
		libtorch_cpu, "_ZN5torch8profiler4impl10inputSizesERKN2at14RecordFunctionEb");
	input_types = (input_types_fn)prof_elf_symbol(
		libtorch_cpu, "_ZN5torch8profiler4impl10inputTypesB5cxx11ERKN2at14RecordFunctionE");
	/* the operator delete of the libstdc++ torch uses (loaded locally with it) */
	cxx_delete = (cxx_delete_fn)prof_elf_symbol_in("libstdc++.so.6", "_ZdlPv");
	if (!cxx_delete)
		cxx_delete = (cxx_delete_fn)prof_real_dlsym(RTLD_DEFAULT, "_ZdlPv");
	shapes = prof_cfg.record_shapes && input_sizes && cxx_delete;
	if (prof_cfg.record_shapes && !shapes)
		prof_warn("PROFILER_RECORD_SHAPES: %s not found; no shapes are recorded",
			  input_sizes ? "libstdc++'s operator delete"
				      : "torch::profiler::impl::inputSizes");
	if (!input_sizes || !cxx_delete)
		input_types = 0;
	/* the user scope's inputs: a collective's tensors, for its bytes (labels and torch's
	 * own user ranges pass none) */
	int ok = add(add_global, (void *)user_start, (void *)range_end, SCOPE_USER,
		     input_types != 0) &&
		 add(add_global, (void *)backward_start, (void *)range_end,
		     SCOPE_BACKWARD_FUNCTION, false);
	/* off until torch's own profiler turns the dispatcher's RecordFunction on, unless
	 * shapes are asked for */
	if (ok && disable_callback && reenable_callback) {
		uint64_t h = add(add_global, (void *)function_start, (void *)range_end,
				 SCOPE_FUNCTION, shapes);
		if (h && !shapes)
			disable_callback(h);
		__atomic_store_n(&function_handle, h, __ATOMIC_RELEASE);
	}
	prof_debug(PROF_DEBUG_TRACE, "torch: RecordFunction callbacks %s in %s",
		   ok ? "added" : "refused", libtorch_cpu->dlpi_name);
}
