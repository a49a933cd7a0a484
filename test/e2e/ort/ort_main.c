/* ONNX Runtime through its C API, as a C program uses it: OrtGetApiBase()->GetApi(),
 * an env, session options, a session from argv[1] (C = A + B over float[4]) and argc[2]
 * runs, each with two input tensors made by CreateTensorWithDataAsOrtValue; the outputs
 * are checked here. Built linked against libonnxruntime (OrtGetApiBase called through the
 * PLT), or with -DUSE_DLOPEN (dlopen argv[3], OrtGetApiBase found by dlsym). The wheel
 * ships no headers: the few types and OrtApi slots used are declared here
 * (onnxruntime_c_api.h, ORT_API_VERSION 13). */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define ORT_API_VERSION 13

typedef struct OrtStatus OrtStatus;
typedef struct OrtApiBase {
	void *const *(*GetApi)(uint32_t version);
	const char *(*GetVersionString)(void);
} OrtApiBase;

/* slots of struct OrtApi */
enum {
	GetErrorMessage = 2, CreateEnv = 3, CreateSession = 7, Run = 9, CreateSessionOptions = 10,
	SetIntraOpNumThreads = 24, CreateTensorWithDataAsOrtValue = 49, GetTensorMutableData = 51,
	CreateCpuMemoryInfo = 69, ReleaseEnv = 92, ReleaseStatus = 93, ReleaseMemoryInfo = 94,
	ReleaseSession = 95, ReleaseValue = 96, ReleaseSessionOptions = 100,
};

static void *const *api;

#define FN(slot, ret, ...) ((ret(*)(__VA_ARGS__))api[slot])

static void ok(OrtStatus *s, const char *what)
{
	if (!s)
		return;
	fprintf(stderr, "ort_main: %s: %s\n", what,
		FN(GetErrorMessage, const char *, OrtStatus *)(s));
	FN(ReleaseStatus, void, OrtStatus *)(s);
	exit(2);
}

#ifndef USE_DLOPEN
const OrtApiBase *OrtGetApiBase(void);
#endif

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: ort_main MODEL RUNS [LIBONNXRUNTIME]\n");
		return 2;
	}
	const char *model = argv[1];
	int runs = atoi(argv[2]);
#ifdef USE_DLOPEN
	void *h = dlopen(argc > 3 ? argv[3] : "libonnxruntime.so", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "ort_main: %s\n", dlerror());
		return 2;
	}
	const OrtApiBase *(*get_base)(void) =
		(const OrtApiBase *(*)(void))dlsym(h, "OrtGetApiBase");
	if (!get_base) {
		fprintf(stderr, "ort_main: no OrtGetApiBase\n");
		return 2;
	}
	const OrtApiBase *base = get_base();
#else
	const OrtApiBase *base = OrtGetApiBase();
#endif
	printf("version=%s\n", base->GetVersionString());
	api = base->GetApi(ORT_API_VERSION);
	if (!api) {
		fprintf(stderr, "ort_main: GetApi(%d) refused\n", ORT_API_VERSION);
		return 2;
	}
	void *env, *opts, *session, *mem;
	ok(FN(CreateEnv, OrtStatus *, int, const char *, void **)(3, "ort_main", &env),
	   "CreateEnv");
	ok(FN(CreateSessionOptions, OrtStatus *, void **)(&opts), "CreateSessionOptions");
	ok(FN(SetIntraOpNumThreads, OrtStatus *, void *, int)(opts, 1), "SetIntraOpNumThreads");
	ok(FN(CreateSession, OrtStatus *, void *, const char *, void *, void **)(env, model, opts,
										 &session),
	   "CreateSession");
	ok(FN(CreateCpuMemoryInfo, OrtStatus *, int, int, void **)(0, 0, &mem),
	   "CreateCpuMemoryInfo");
	const char *in_names[] = {"A", "B"}, *out_names[] = {"C"};
	int64_t shape[] = {4};
	int tensors = 0, bad = 0;
	for (int k = 0; k < runs; k++) {
		float a[4], b[4];
		void *in[2], *out = 0;
		for (int i = 0; i < 4; i++) {
			a[i] = (float)(i + k);
			b[i] = (float)(10 * i);
		}
		for (int j = 0; j < 2; j++, tensors++)
			ok(FN(CreateTensorWithDataAsOrtValue, OrtStatus *, void *, void *, size_t,
			      const int64_t *, size_t, int, void **)(mem, j ? b : a, sizeof a, shape,
								   1, 1 /* FLOAT */, &in[j]),
			   "CreateTensorWithDataAsOrtValue");
		ok(FN(Run, OrtStatus *, void *, void *, const char *const *, void *const *, size_t,
		      const char *const *, size_t, void **)(session, 0, in_names, in, 2, out_names,
							    1, &out),
		   "Run");
		float *c;
		ok(FN(GetTensorMutableData, OrtStatus *, void *, void **)(out, (void **)&c),
		   "GetTensorMutableData");
		for (int i = 0; i < 4; i++)
			if (c[i] != a[i] + b[i])
				bad++;
		FN(ReleaseValue, void, void *)(out);
		FN(ReleaseValue, void, void *)(in[0]);
		FN(ReleaseValue, void, void *)(in[1]);
	}
	FN(ReleaseMemoryInfo, void, void *)(mem);
	FN(ReleaseSession, void, void *)(session);
	FN(ReleaseSessionOptions, void, void *)(opts);
	FN(ReleaseEnv, void, void *)(env);
	printf("runs=%d\ntensors=%d\nwrong=%d\n", runs, tensors, bad);
	return bad ? 1 : 0;
}
