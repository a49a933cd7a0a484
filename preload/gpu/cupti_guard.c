/* CUPTI's claiming functions, as another module of the process calls them (torch's
 * Kineto when torch.profiler starts, another tracer). CUPTI has one set of buffer
 * callbacks, one timestamp callback and one subscriber per process: a second tool that
 * registers its own silently takes the records from the first.
 *
 * libprof is preloaded, so these definitions come before libcupti's for every module
 * that links CUPTI (its PLT); libprof's own calls go through dlsym'ed pointers, and
 * libcupti's internal calls never leave it (DT_SYMBOLIC). While libprof holds CUPTI a
 * claim is refused as CUPTI refuses a second subscriber, said once in one line, and
 * libprof keeps its GPU timeline; disabling and finalizing become no-ops. Otherwise the
 * call goes to CUPTI, and a claim made before cuInit leaves CUPTI to that tool.
 * PROFILER_CUPTI=0 leaves every call alone. */
#include <stdatomic.h>

#include "preload/gpu/cupti.h"
#include "preload/core/state.h"

#define EXPORT __attribute__((visibility("default")))
/* CUPTI_ERROR_UNKNOWN: no CUPTI behind the call */
#define CUPTI_ERR_UNKNOWN 999

static void refused(const char *what)
{
	static atomic_flag said = ATOMIC_FLAG_INIT;
	if (!atomic_flag_test_and_set(&said))
		prof_warn("another tool in this process asked CUPTI for GPU activity (%s), but "
			  "libprof holds CUPTI: that tool gets none (PROFILER_CUPTI=0 leaves CUPTI "
			  "to it)", what);
}

/* Non-zero when libprof refuses the claim. */
static int claim(const char *what)
{
	if (prof_cupti_held()) {
		refused(what);
		return 1;
	}
	prof_cupti_claimed_by_other(what);
	return 0;
}

static void *real(const char *name)
{
	struct prof_thread *t = &prof_thr;
	t->busy++;
	void *f = prof_cupti_real(name);
	t->busy--;
	return f;
}

/* The call handed to CUPTI. */
#define FORWARD(name, type, ...)                                                             \
	do {                                                                                 \
		static type real_fn;                                                         \
		if (!real_fn)                                                                \
			real_fn = (type)real(#name);                                         \
		return real_fn ? real_fn(__VA_ARGS__) : CUPTI_ERR_UNKNOWN;                   \
	} while (0)

typedef cupti_result (*subscribe_fn)(cupti_subscriber *, cupti_callback_fn, void *);
typedef cupti_result (*subscribe_v2_fn)(cupti_subscriber *, cupti_callback_fn, void *,
					struct cupti_subscriber_params *);
typedef cupti_result (*callbacks_fn)(cupti_request_fn, cupti_complete_fn);
typedef cupti_result (*timestamp_fn)(cupti_timestamp_fn);
typedef cupti_result (*kind_fn)(uint32_t);
typedef cupti_result (*context_kind_fn)(cupti_context, uint32_t);
typedef cupti_result (*void_fn)(void);

EXPORT cupti_result cuptiSubscribe(cupti_subscriber *sub, cupti_callback_fn fn, void *user)
{
	if (claim("cuptiSubscribe"))
		return CUPTI_ERR_MULTIPLE_SUBSCRIBERS;
	FORWARD(cuptiSubscribe, subscribe_fn, sub, fn, user);
}

EXPORT cupti_result cuptiSubscribe_v2(cupti_subscriber *sub, cupti_callback_fn fn, void *user,
				      struct cupti_subscriber_params *params)
{
	if (claim("cuptiSubscribe_v2")) {
		/* as CUPTI does: the holder's name for the caller's message */
		if (params && params->old_subscriber_name && params->old_subscriber_size > 7)
			__builtin_memcpy(params->old_subscriber_name, "libprof", 8);
		return CUPTI_ERR_MULTIPLE_SUBSCRIBERS;
	}
	FORWARD(cuptiSubscribe_v2, subscribe_v2_fn, sub, fn, user, params);
}

EXPORT cupti_result cuptiActivityRegisterCallbacks(cupti_request_fn request,
						   cupti_complete_fn complete)
{
	if (claim("cuptiActivityRegisterCallbacks"))
		return CUPTI_ERR_MULTIPLE_SUBSCRIBERS;
	FORWARD(cuptiActivityRegisterCallbacks, callbacks_fn, request, complete);
}

EXPORT cupti_result cuptiActivityRegisterTimestampCallback(cupti_timestamp_fn fn)
{
	if (claim("cuptiActivityRegisterTimestampCallback"))
		return CUPTI_ERR_MULTIPLE_SUBSCRIBERS;
	FORWARD(cuptiActivityRegisterTimestampCallback, timestamp_fn, fn);
}

EXPORT cupti_result cuptiActivityEnable(uint32_t kind)
{
	if (claim("cuptiActivityEnable"))
		return CUPTI_ERR_MULTIPLE_SUBSCRIBERS;
	FORWARD(cuptiActivityEnable, kind_fn, kind);
}

EXPORT cupti_result cuptiActivityEnableContext(cupti_context ctx, uint32_t kind)
{
	if (claim("cuptiActivityEnableContext"))
		return CUPTI_ERR_MULTIPLE_SUBSCRIBERS;
	FORWARD(cuptiActivityEnableContext, context_kind_fn, ctx, kind);
}

/* The other tool stopping must not stop libprof's records. */
EXPORT cupti_result cuptiActivityDisable(uint32_t kind)
{
	if (prof_cupti_held())
		return CUPTI_OK;
	FORWARD(cuptiActivityDisable, kind_fn, kind);
}

EXPORT cupti_result cuptiActivityDisableContext(cupti_context ctx, uint32_t kind)
{
	if (prof_cupti_held())
		return CUPTI_OK;
	FORWARD(cuptiActivityDisableContext, context_kind_fn, ctx, kind);
}

EXPORT cupti_result cuptiFinalize(void)
{
	if (prof_cupti_held())
		return CUPTI_OK;
	FORWARD(cuptiFinalize, void_fn);
}
