/* The one table of what each framework looks like to libprof (frameworks.h): its
 * preset's patterns, and the calls that get a hook. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "preload/common/event.h"
#include "preload/common/shm_layout.h"
#include "preload/frameworks/frameworks.h"
#include "preload/frameworks/mpi.h"
#include "preload/frameworks/mxnet.h"
#include "preload/frameworks/ort.h"
#include "preload/frameworks/tf.h"
#include "preload/trace/glob.h"
#include "preload/frameworks/torch_callbacks.h"
#include "preload/frameworks/torch_compiled.h"
#include "preload/core/state.h"
#include "prof.h"

#define C PROF_CATNAME_COLLECTIVE "="
#define M PROF_CATNAME_MPI "="

/* What each framework's calls look like; categories as the framework's own profiler
 * names them where it has one (MXNet's MXNET_C_API, PyTorch's operators). Entry i is
 * framework bit 1 << i (PROF_FRAMEWORK_NAMES). libs: the starts of the file names of the
 * framework's own objects; an object is the framework's when its name or one it needs
 * (DT_NEEDED) starts so, which is where its calls are (its Python bindings, its own
 * calls to itself, a program linked with it). */
static const struct {
	const char *name, *patterns, *libs;
} presets[PROF_NFRAMEWORKS] = {
	{"mxnet",
	 PROF_CATNAME_MXNET_C_API "=MX*," PROF_CATNAME_OPERATOR
				  "=_ZN5mxnet6engine14ThreadedEngine15ExecuteOprBlockE*",
	 "libmxnet.so"},
	{"torch", PROF_CATNAME_OPERATOR "=at::_ops::*::call", "libtorch"},
	/* first match wins: TFE_Execute is the operator (named by tf.c), the rest C API */
	{"tensorflow",
	 PROF_CATNAME_OPERATOR "=TFE_Execute," PROF_CATNAME_TF_C_API "=TF_*," PROF_CATNAME_TF_C_API
			       "=TFE_*",
	 "libtensorflow,_pywrap_tensorflow_internal"},
	{"onnxruntime", PROF_CATNAME_ORT_API "=OrtGetApiBase",
	 "libonnxruntime,onnxruntime_pybind11_state"},
	/* collectives apart from the rest: the tables across ranks match them by order */
	{"mpi",
	 C "MPI_Allreduce," C "MPI_Allgather*," C "MPI_Alltoall*," C "MPI_Bcast," C "MPI_Reduce," C "MPI_Reduce_scatter*,"
	 C "MPI_Gather*," C "MPI_Scatter*," C "MPI_Barrier," C "MPI_Scan," C "MPI_Exscan," M
	 "MPI_Send," M "MPI_Ssend," M "MPI_Recv," M "MPI_Isend," M "MPI_Irecv," M "MPI_Sendrecv,"
	 M "MPI_Wait*," M "MPI_Init*," M "MPI_Finalize",
	 "libmpi.so,libmpich.so"},
};

unsigned prof_framework_presets(const char *framework)
{
	unsigned bits = 0;
	for (unsigned i = 0; framework && i < PROF_NFRAMEWORKS; i++)
		if (!strcmp(framework, "auto") || !strcmp(framework, presets[i].name))
			bits |= 1u << i;
	return bits;
}

int prof_framework_detecting(const char *framework)
{
	return !framework || !*framework || !strcmp(framework, "detect");
}

size_t prof_framework_patterns(unsigned i, char *out, size_t len, size_t used)
{
	return used + (size_t)snprintf(out + (used < len ? used : len), used < len ? len - used : 0,
				       "%s", presets[i].patterns);
}

/* Whether the file name of path starts with one of the comma-separated prefixes. */
static int named(const char *path, const char *prefixes)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	for (const char *p = prefixes; *p;) {
		size_t n = strcspn(p, ",");
		if (n && !strncmp(base, p, n))
			return 1;
		p += n + (p[n] == ',');
	}
	return 0;
}

unsigned prof_framework_object(const char *path, const Elf64_Dyn *dyn, const char *strtab)
{
	unsigned bits = 0;
	for (unsigned i = 0; i < PROF_NFRAMEWORKS; i++) {
		if (path && named(path, presets[i].libs))
			bits |= 1u << i;
		for (const Elf64_Dyn *d = dyn; d && strtab && d->d_tag != DT_NULL; d++)
			if (d->d_tag == DT_NEEDED && named(strtab + d->d_un.d_val, presets[i].libs))
				bits |= 1u << i;
	}
	return bits;
}

/* torch.profiler (Kineto) starts and stops through these; recording starts when
 * enableProfiler returns, as torch.profiler's own does (what it runs to set itself up
 * is not in its tables either). */
static uint32_t follow_start(const uint64_t *args)
{
	(void)args;
	return PROF_HOOK_RESUME_AFTER;
}

static uint32_t follow_stop(const uint64_t *args)
{
	(void)args;
	prof_pause();
	return 0;
}

/* The same, where the torch preset applies: torch's profiler also turns on the rows of
 * the dispatcher's RecordFunction calls (torch_callbacks.c), following or not (not
 * following, the calls are no events). By address: torch's Python binding takes their
 * addresses (pybind11), so no PLT slot leads to them. */
static uint32_t torch_profiler_start(const uint64_t *args)
{
	prof_torch_engine_rows(1);
	return prof_cfg.follow ? follow_start(args) : PROF_HOOK_PASS;
}

static uint32_t torch_profiler_stop(const uint64_t *args)
{
	prof_torch_engine_rows(0);
	return prof_cfg.follow ? follow_stop(args) : PROF_HOOK_PASS;
}

static const struct prof_framework_hook hooks[] = {
	{"MXSetProcessProfilerState", prof_mxnet_follow, 0, PROF_CATNAME_MXNET_C_API, 0},
	{"MXSetProfilerState", prof_mxnet_follow, 0, PROF_CATNAME_MXNET_C_API, 0},
	{"_ZN5torch8autograd8profiler14enableProfilerE*", torch_profiler_start, PROF_FW_TORCH,
	 PROF_CATNAME_PROFILER, 1},
	{"_ZN5torch8autograd8profiler15disableProfilerEv", torch_profiler_stop, PROF_FW_TORCH,
	 PROF_CATNAME_PROFILER, 1},
	{"_ZN5torch8autograd8profiler14enableProfilerE*", follow_start, 0, PROF_CATNAME_PROFILER, 0},
	{"_ZN5torch8autograd8profiler15disableProfilerEv", follow_stop, 0, PROF_CATNAME_PROFILER, 0},
	/* tf.profiler.experimental.start/stop (and the TensorBoard callback's profiling):
	 * _pywrap_profiler calls these in TensorFlow's common library. stop() exports
	 * (ExportToTensorBoard) or, with save=False, drops the session (its destructor). */
	{"_ZN10tensorflow8profiler6pywrap22ProfilerSessionWrapper5StartE*", follow_start, 0,
	 PROF_CATNAME_PROFILER, 0},
	{"_ZN10tensorflow8profiler6pywrap22ProfilerSessionWrapper4StopE*", follow_stop, 0,
	 PROF_CATNAME_PROFILER, 0},
	{"_ZN10tensorflow8profiler6pywrap22ProfilerSessionWrapper19ExportToTensorBoardEv",
	 follow_stop, 0, PROF_CATNAME_PROFILER, 0},
	{"_ZN3tsl15ProfilerSessionD[12]Ev", follow_stop, 0, PROF_CATNAME_PROFILER, 0},
	/* every session is made here: also the profiler server's, for a capture a client
	 * asks (tf.profiler.experimental.client.trace, TensorBoard's capture button),
	 * which never passes through the wrapper above (libtensorflow_cc calls it) */
	{"_ZN3tsl15ProfilerSession6CreateE*", follow_start, 0, PROF_CATNAME_PROFILER, 0},
	/* torch.compile's ranges that no callback sees with torch's profiler off
	 * (torch_compiled.c) */
	{"_ZN2at14RecordFunctionC[12]ENS_11RecordScopeE", prof_torch_rf_constructed,
	 PROF_FW_TORCH, PROF_CATNAME_OPERATOR, 0},
	{"_ZN2at14RecordFunction6beforeESt7variantIJSt17basic_string_viewIcSt11char_traitsIcEESt"
	 "17reference_wrapperIKN3c1014FunctionSchemaEEEEl",
	 prof_torch_rf_before, PROF_FW_TORCH, PROF_CATNAME_OPERATOR, 0},
	{"_ZN2at14RecordFunctionD[12]Ev", prof_torch_rf_destroyed, PROF_FW_TORCH,
	 PROF_CATNAME_OPERATOR, 0},
	{"aoti_record_function_start", prof_torch_aoti_start, PROF_FW_TORCH, PROF_CATNAME_OPERATOR,
	 0},
	{"aoti_record_function_end", prof_torch_aoti_end, PROF_FW_TORCH, PROF_CATNAME_OPERATOR, 0},
	{"_ZN5mxnet6engine14ThreadedEngine15ExecuteOprBlockE*", prof_mxnet_operator, PROF_FW_MXNET,
	 PROF_CATNAME_OPERATOR, 0},
	{"_ZN5mxnet6engine14ThreadedEngine16OnCompleteStaticE*", prof_mxnet_operator_done,
	 PROF_FW_MXNET, PROF_CATNAME_OPERATOR, 1},
	{"_ZN5mxnet7storage21DeviceStorageProfiler7OnAllocERKNS_7Storage6HandleE",
	 prof_mxnet_storage_alloc, PROF_FW_MXNET, PROF_CATNAME_MXNET_MEMORY, 0},
	{"_ZN5mxnet7storage21DeviceStorageProfiler6OnFreeERKNS_7Storage6HandleE",
	 prof_mxnet_storage_free, PROF_FW_MXNET, PROF_CATNAME_MXNET_MEMORY, 0},
	{"TFE_Execute", prof_tf_execute_hook, PROF_FW_TENSORFLOW, PROF_CATNAME_OPERATOR, 0},
	{"MPI_Send", prof_mpi_p2p_hook, PROF_FW_MPI, PROF_CATNAME_MPI, 0},
	{"MPI_Ssend", prof_mpi_p2p_hook, PROF_FW_MPI, PROF_CATNAME_MPI, 0},
	{"MPI_Recv", prof_mpi_p2p_hook, PROF_FW_MPI, PROF_CATNAME_MPI, 0},
	{"MPI_Isend", prof_mpi_p2p_hook, PROF_FW_MPI, PROF_CATNAME_MPI, 0},
	{"MPI_Irecv", prof_mpi_p2p_hook, PROF_FW_MPI, PROF_CATNAME_MPI, 0},
	{"MPI_Sendrecv", prof_mpi_sendrecv_hook, PROF_FW_MPI, PROF_CATNAME_MPI, 0},
	{"MPI_Bcast", prof_mpi_bcast_hook, PROF_FW_MPI, PROF_CATNAME_COLLECTIVE, 0},
	{"MPI_Allreduce", prof_mpi_allreduce_hook, PROF_FW_MPI, PROF_CATNAME_COLLECTIVE, 0},
	{"MPI_Reduce", prof_mpi_reduce_hook, PROF_FW_MPI, PROF_CATNAME_COLLECTIVE, 0},
	{"MPI_Allgather", prof_mpi_allgather_hook, PROF_FW_MPI, PROF_CATNAME_COLLECTIVE, 0},
	{"MPI_Alltoall", prof_mpi_allgather_hook, PROF_FW_MPI, PROF_CATNAME_COLLECTIVE, 0},
	{"MPI_Gather", prof_mpi_gather_hook, PROF_FW_MPI, PROF_CATNAME_COLLECTIVE, 0},
	{"MPI_Scatter", prof_mpi_scatter_hook, PROF_FW_MPI, PROF_CATNAME_COLLECTIVE, 0},
	{"MPI_Barrier", prof_mpi_barrier_hook, PROF_FW_MPI, PROF_CATNAME_COLLECTIVE, 0},
};

const struct prof_framework_hook *prof_framework_hook_for(const char *name, unsigned scope,
							  int following)
{
	for (size_t i = 0; i < sizeof hooks / sizeof *hooks; i++) {
		int on = hooks[i].preset ? (hooks[i].preset & scope) != 0 : following;
		if (on && prof_glob(hooks[i].symbol, name))
			return &hooks[i];
	}
	return 0;
}

int prof_framework_hooks_by_address(unsigned scope)
{
	for (size_t i = 0; i < sizeof hooks / sizeof *hooks; i++)
		if (hooks[i].by_address && (hooks[i].preset & scope))
			return 1;
	return 0;
}

void *prof_framework_stand_in(const char *name, void *call, unsigned scope)
{
	/* ONNX Runtime: OrtGetApiBase is replaced by ort.c's wrapper (which calls the stub) */
	if ((scope & PROF_FW_ONNXRUNTIME) && !strcmp(name, "OrtGetApiBase"))
		return prof_ort_wrap_get_api_base(call);
	return 0;
}
