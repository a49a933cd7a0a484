/* TensorFlow eager operators: TFE_Execute(TFE_Op *op, ...) runs one op; its event is
 * named after the op ("MatMul", "AddV2"), read with TensorFlow's own exported
 * TFE_OpGetName. The Python fast path builds and reuses ops without TFE_NewOp or
 * TFE_OpReset, so the op itself is the only place the name can be read. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>

#include "preload/wrap/dl.h"
#include "preload/core/state.h"
#include "preload/frameworks/tf.h"
#include "preload/trace/trace.h"

typedef const char *(*op_get_name_fn)(const void *op, void *status);
typedef void *(*new_status_fn)(void);

static op_get_name_fn op_get_name;
static new_status_fn new_status;
static int resolved; /* 1: looked up (found or not) */
static __thread void *thread_status __attribute__((tls_model("initial-exec")));

/* TensorFlow's Python package loads its libraries RTLD_GLOBAL; a program that loads
 * them locally still has libtensorflow_cc.so.2 by that name. */
static void *tf_symbol(const char *name)
{
	void *f = prof_real_dlsym(RTLD_DEFAULT, name);
	if (!f) {
		void *h = dlopen("libtensorflow_cc.so.2", RTLD_LAZY | RTLD_NOLOAD);
		if (h) {
			f = prof_real_dlsym(h, name);
			dlclose(h);
		}
	}
	return f;
}

uint32_t prof_tf_execute_hook(const uint64_t *args)
{
	struct prof_thread *t = &prof_thr;
	const void *op = (const void *)args[0];
	if (!op || !prof_proc || t->busy || !__atomic_load_n(&prof_trace_on, __ATOMIC_RELAXED))
		return 0;
	t->busy++; /* what TensorFlow allocates here is libprof's doing, not the program's */
	if (!__atomic_load_n(&resolved, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&op_get_name, (op_get_name_fn)tf_symbol("TFE_OpGetName"),
				 __ATOMIC_RELAXED);
		__atomic_store_n(&new_status, (new_status_fn)tf_symbol("TF_NewStatus"),
				 __ATOMIC_RELAXED);
		__atomic_store_n(&resolved, 1, __ATOMIC_RELEASE);
	}
	uint32_t id = 0;
	if (!thread_status && new_status)
		thread_status = new_status(); /* one per thread, for the thread's life */
	const char *name = op_get_name && thread_status ? op_get_name(op, thread_status) : 0;
	if (name && *name)
		id = prof_intern(name) + 1;
	t->busy--;
	return id;
}
