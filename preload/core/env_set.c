/* libc's setenv and unsetenv, looked up past libprof.so (RTLD_NEXT), so that a program
 * defining its own (bash binds them to its shell variables, and its getenv then reads
 * only those) is not changed by libprof's settings: see preload/common/env.c. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

#include "preload/core/env_set.h"
#include "preload/wrap/dl.h"

static int (*libc_setenv)(const char *, const char *, int);
static int (*libc_unsetenv)(const char *);

static void resolve(void)
{
	if (!libc_setenv)
		libc_setenv = (int (*)(const char *, const char *, int))prof_real_dlsym(RTLD_NEXT,
											   "setenv");
	if (!libc_unsetenv)
		libc_unsetenv = (int (*)(const char *))prof_real_dlsym(RTLD_NEXT, "unsetenv");
}

int prof_setenv(const char *name, const char *value, int overwrite)
{
	resolve();
	return libc_setenv ? libc_setenv(name, value, overwrite) : setenv(name, value, overwrite);
}

int prof_unsetenv(const char *name)
{
	resolve();
	return libc_unsetenv ? libc_unsetenv(name) : unsetenv(name);
}
