/* Option parsing helpers; see cmd_args.h. Hand-made rather than getopt_long so that
 * every problem gets the one-line "prof <command>: ..." message and exit status 2. */
#include "collector/cmd_args.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/output/outfile.h"

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

int arg_output_ok(const char *cmd, const char *path, int force)
{
	char why[4200];
	int p = outfile_probe(path, why, sizeof why);

	if (p < 0)
		return arg_error(cmd, "%s; not writing there", why);
	if (p > 0 && !force)
		return arg_error(cmd, "%s exists; not replacing it (use --force-overwrite)", path);
	return 0;
}

int arg_place(const char *cmd, const char *tmp, const char *path, int force)
{
	int rc = outfile_place(tmp, path, force);

	if (rc == 0)
		return 0;
	unlink(tmp);
	if (rc > 0)
		return arg_error(cmd, "%s appeared meanwhile; not replacing it%s", path,
				 force ? "" : " (use --force-overwrite)");
	return arg_error(cmd, "writing %s: %m", path);
}

int arg_save(const char *cmd, const char *path, const char *buf, size_t len, int force)
{
	int rc = arg_output_ok(cmd, path, force);

	if (rc)
		return rc;
	rc = outfile_save(path, buf, len, force);
	if (rc > 0)
		return arg_error(cmd, "%s appeared meanwhile; not replacing it%s", path,
				 force ? "" : " (use --force-overwrite)");
	if (rc < 0)
		return arg_error(cmd, "writing %s: %m", path);
	return 0;
}
