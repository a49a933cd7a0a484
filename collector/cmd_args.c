/* Option parsing helpers; see cmd_args.h. Hand-made rather than getopt_long so that
 * every problem gets the one-line "prof <command>: ..." message and exit status 2. */
#include "cmd_args.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
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

int arg_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 2;
}

int args_parse(const char *cmd, int argc, char **argv, void (*help)(void), arg_option_fn option,
	       void *ctx, const char **capture)
{
	int i, rc;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			help();
			return -1;
		}
		if (argv[i][0] == '-' && argv[i][1]) {
			if ((rc = option(argc, argv, &i, ctx)))
				return rc;
		} else if (*capture) {
			return arg_error(cmd, "more than one capture given ('%s', '%s')", *capture,
					 argv[i]);
		} else {
			*capture = argv[i];
		}
	}
	if (!*capture)
		return arg_error(cmd, "no capture file given (see %s --help)", cmd);
	return 0;
}

int arg_save(const char *cmd, const char *path, const char *buf, size_t len)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return arg_error(cmd, "%s: %m", path);
	if (fwrite(buf, 1, len, f) != len) {
		fclose(f);
		return arg_error(cmd, "writing %s: %m", path);
	}
	if (fclose(f))
		return arg_error(cmd, "writing %s: %m", path);
	return 0;
}
