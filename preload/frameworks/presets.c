/* The one table of what each framework looks like to libprof (frameworks.h): its
 * preset's patterns, and the calls that get a hook. */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "preload/common/event.h"
#include "preload/frameworks/frameworks.h"
#include "preload/frameworks/mxnet.h"
#include "preload/frameworks/ort.h"
#include "preload/frameworks/tf.h"
#include "prof.h"

/* What each framework's calls look like; categories as the framework's own profiler
 * names them where it has one (MXNet's MXNET_C_API, PyTorch's operators). */
static const struct {
	const char *name, *patterns;
} presets[] = {
	{"mxnet", PROF_CATNAME_MXNET_C_API "=MX*," PROF_CATNAME_OPERATOR
		  "=_ZN5mxnet6engine14ThreadedEngine15ExecuteOprBlockE*"},
	{"torch", PROF_CATNAME_OPERATOR "=at::_ops::*::call"},
	{"onnxruntime", PROF_CATNAME_ORT_API "=OrtGetApiBase"},
	/* first match wins: TFE_Execute is the operator (named by tf.c), the rest C API */
	{"tensorflow", PROF_CATNAME_OPERATOR "=TFE_Execute," PROF_CATNAME_TF_C_API
		       "=TF_*," PROF_CATNAME_TF_C_API "=TFE_*"},
};

static int preset_on(const char *framework, const char *preset)
{
	return framework && (!strcmp(framework, "auto") || !strcmp(framework, preset));
}

size_t prof_framework_patterns(const char *framework, char *out, size_t len, size_t used)
{
	for (size_t i = 0; framework && *framework && i < sizeof presets / sizeof *presets; i++)
		if (preset_on(framework, presets[i].name))
			used += (size_t)snprintf(out + (used < len ? used : len),
						 used < len ? len - used : 0, "%s,",
						 presets[i].patterns);
	return used;
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

static const struct prof_framework_hook hooks[] = {
	{"MXSetProcessProfilerState", prof_mxnet_follow, 0, PROF_CATNAME_MXNET_C_API},
	{"MXSetProfilerState", prof_mxnet_follow, 0, PROF_CATNAME_MXNET_C_API},
	{"_ZN5torch8autograd8profiler14enableProfilerE*", follow_start, 0, PROF_CATNAME_PROFILER},
	{"_ZN5torch8autograd8profiler15disableProfilerEv", follow_stop, 0, PROF_CATNAME_PROFILER},
	/* tf.profiler.experimental.start/stop (and the TensorBoard callback's profiling):
	 * _pywrap_profiler calls these in TensorFlow's common library. stop() exports
	 * (ExportToTensorBoard) or, with save=False, drops the session (its destructor). */
	{"_ZN10tensorflow8profiler6pywrap22ProfilerSessionWrapper5StartE*", follow_start, 0,
	 PROF_CATNAME_PROFILER},
	{"_ZN10tensorflow8profiler6pywrap22ProfilerSessionWrapper4StopE*", follow_stop, 0,
	 PROF_CATNAME_PROFILER},
	{"_ZN10tensorflow8profiler6pywrap22ProfilerSessionWrapper19ExportToTensorBoardEv",
	 follow_stop, 0, PROF_CATNAME_PROFILER},
	{"_ZN3tsl15ProfilerSessionD[12]Ev", follow_stop, 0, PROF_CATNAME_PROFILER},
	{"_ZN5mxnet6engine14ThreadedEngine15ExecuteOprBlockE*", prof_mxnet_operator, "mxnet",
	 PROF_CATNAME_OPERATOR},
	{"TFE_Execute", prof_tf_execute_hook, "tensorflow", PROF_CATNAME_OPERATOR},
};

const struct prof_framework_hook *prof_framework_hook_for(const char *name,
							  const char *framework, int following)
{
	for (size_t i = 0; i < sizeof hooks / sizeof *hooks; i++) {
		int on = hooks[i].preset ? preset_on(framework, hooks[i].preset) : following;
		if (on && !fnmatch(hooks[i].symbol, name, 0))
			return &hooks[i];
	}
	return 0;
}

void *prof_framework_stand_in(const char *name, void *call, const char *framework)
{
	/* ONNX Runtime: OrtGetApiBase is replaced by ort.c's wrapper (which calls the stub) */
	if (preset_on(framework, "onnxruntime") && !strcmp(name, "OrtGetApiBase"))
		return prof_ort_wrap_get_api_base(call);
	return 0;
}
