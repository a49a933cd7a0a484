/* See huge_malloc.h. */
#include "collector/huge_malloc.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload/common/child_setup.h"

/* Set by the run again: "=value" when GLIBC_TUNABLES was value, "" when it was unset. */
#define WAS "PROF_GLIBC_TUNABLES_WAS"

void huge_malloc_reexec(char **argv)
{
	const char *old = getenv("GLIBC_TUNABLES");
	if (getenv(WAS) || (old && strstr(old, PROF_HUGE_MALLOC_TUNABLE)))
		return;
	size_t len = (old ? strlen(old) : 0) + 64;
	char *entry = malloc(len), *was = malloc(len);
	if (!entry || !was || prof_tunables_entry(entry, len, old)) {
		free(entry);
		free(was);
		return;
	}
	was[0] = 0;
	if (old) {
		was[0] = '=';
		strcpy(was + 1, old);
	}
	if (setenv(WAS, was, 1) ||
	    setenv("GLIBC_TUNABLES", entry + strlen("GLIBC_TUNABLES="), 1)) {
		unsetenv(WAS);
		free(entry);
		free(was);
		return;
	}
	execv("/proc/self/exe", argv);
	huge_malloc_restore(); /* no /proc: this run goes on as it began */
	free(entry);
	free(was);
}

void huge_malloc_restore(void)
{
	const char *was = getenv(WAS);
	if (!was)
		return;
	if (*was == '=')
		setenv("GLIBC_TUNABLES", was + 1, 1);
	else
		unsetenv("GLIBC_TUNABLES");
	unsetenv(WAS);
}
