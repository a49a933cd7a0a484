/* C++ names come out of the capture mangled (the program never demangles: it would
 * allocate on a traced path); every output shows them demangled. */
#include <stdlib.h>
#include <string.h>

#include "formats/symbols/demangle.h"

/* libstdc++'s demangler, the one g++ and c++filt agree with. */
char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

char *demangle_name(const char *name, size_t n)
{
	if (n < 3 || name[0] != '_' || name[1] != 'Z')
		return 0;
	char *z = malloc(n + 1);
	if (!z)
		return 0;
	memcpy(z, name, n);
	z[n] = 0;
	int status = -1;
	char *d = __cxa_demangle(z, 0, 0, &status);
	free(z);
	if (status == 0)
		return d;
	free(d);
	return 0;
}
