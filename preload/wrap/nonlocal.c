/* longjmp and its kin, called by the program. A signal handler that interrupted
 * libprof's own code (prof_thr.busy set: a wrapper recording an event) and leaves by a
 * jump never returns into that code, so the flag stayed set and the thread went
 * unrecorded for good (a timer handler that siglongjmps out every 64th run kept 11% of a
 * loop's traced calls). libprof itself never jumps, and runs no program code while busy
 * that could jump out of it, so a jump while busy is always out of libprof: the flag is
 * cleared, then the real function jumps. The shadow stack of traced calls heals itself
 * (trace.c: editing, pop_dead). Resolved at start-up: dlsym is not for signal handlers. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <setjmp.h>

#include "preload/core/state.h"
#include "preload/wrap/dl.h"
#include "preload/wrap/nonlocal.h"

#define EXPORT __attribute__((visibility("default")))

typedef void (*jump_fn)(void *env, int val);
static jump_fn real_longjmp, real__longjmp, real_siglongjmp;
static void (*real_longjmp_chk)(void *env, int val);

static jump_fn resolve(const char *name)
{
	return (jump_fn)prof_real_dlsym(RTLD_NEXT, name);
}

void prof_nonlocal_setup(void)
{
	real_longjmp = resolve("longjmp");
	real__longjmp = resolve("_longjmp");
	real_siglongjmp = resolve("siglongjmp");
	real_longjmp_chk = resolve("__longjmp_chk");
}

static void leaving_libprof(void)
{
	prof_thr.busy = 0;
}

/* A call before the constructor resolved it (another library's constructor) looks it
 * up then: no signal handler of the program runs that early. */
#define JUMP(real, name, env, val)                                                        \
	do {                                                                              \
		if (prof_thr.busy)                                                        \
			leaving_libprof();                                                \
		if (!(real))                                                              \
			(real) = resolve(name);                                           \
		(real)((env), (val));                                                     \
		__builtin_unreachable();                                                  \
	} while (0)

EXPORT void longjmp(struct __jmp_buf_tag env[1], int val)
{
	JUMP(real_longjmp, "longjmp", env, val);
}

EXPORT void _longjmp(struct __jmp_buf_tag env[1], int val)
{
	JUMP(real__longjmp, "_longjmp", env, val);
}

EXPORT void siglongjmp(struct __jmp_buf_tag env[1], int val)
{
	JUMP(real_siglongjmp, "siglongjmp", env, val);
}

EXPORT void __longjmp_chk(struct __jmp_buf_tag env[1], int val)
{
	JUMP(real_longjmp_chk, "__longjmp_chk", env, val);
}

int prof_nonlocal_is_wrapper(const void *f)
{
	return f == (const void *)longjmp || f == (const void *)_longjmp ||
	       f == (const void *)siglongjmp || f == (const void *)__longjmp_chk;
}
