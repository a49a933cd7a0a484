/* Reading the environment without the program's getenv. A program may define its own,
 * and inside it libprof's calls bind to it: bash's reads its shell variables once its
 * setenv has made any, so in an exec'd bash libprof's constructor (which had set MXNet's
 * variables for PROFILER_MXNET_BULK=0) did not find PROFILER_SESSION and started a
 * session of its own; through pyenv's shims one run became 17. libc's getenv is this
 * same scan of environ. */
#include <string.h>

#include "preload/common/env.h"

extern char **environ;

const char *prof_getenv(const char *name)
{
	size_t n = strlen(name);
	for (char **e = environ; e && *e; e++)
		if (!strncmp(*e, name, n) && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}
