/* A plugin the program loads with RTLD_DEEPBIND: its own references to the allocator
 * bind to libc's before the global scope (libprof's). Built by alloc_data.py. */
#include <stdlib.h>
#include <string.h>

void *deep_alloc(size_t n)
{
	return malloc(n);
}

void deep_free(void *p)
{
	free(p);
}

/* strdup is libc's (it allocates through the global scope: libprof sees it); the
 * release is the plugin's own. Returns the copy's length. */
size_t deep_dup_and_free(size_t n)
{
	char *s = malloc(n + 1);
	if (!s)
		return 0;
	memset(s, 'x', n);
	s[n] = 0;
	char *copy = strdup(s);
	size_t len = copy ? strlen(copy) : 0;
	free(copy);
	free(s);
	return len;
}
