/* Option parsing helpers; see cmd_args.h. Hand-made rather than getopt_long so that
 * every problem gets the one-line "prof <command>: ..." message and exit status 2. */
#include "cmd_args.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int arg_value(int argc, char **argv, int *i, const char *name, const char **value)
{
	size_t n = strlen(name);
	const char *a = argv[*i];

	if (strncmp(a, name, n))
		return 0;
	if (a[n] == '=') {
		*value = a + n + 1;
		return 1;
	}
	if (a[n])
		return 0;
	*value = *i + 1 < argc ? argv[++*i] : NULL;
	return 1;
}

int arg_number(const char *v, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long x;
	char *end;

	if (!v || *v < '0' || *v > '9')
		return -1;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno || *end || x < min || x > max)
		return -1;
	*out = x;
	return 0;
}
