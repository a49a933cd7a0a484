/* Small helpers for the option parsing of `prof report` and `prof export`. */
#ifndef PROF_COLLECTOR_CMD_ARGS_H
#define PROF_COLLECTOR_CMD_ARGS_H

#include <stddef.h>
#include <stdint.h>

/* Whether argv[*i] is option name, given as "name VALUE" or "name=VALUE"; on a match
 * *value points to VALUE (NULL when it is missing) and *i moves past it. */
int arg_value(int argc, char **argv, int *i, const char *name, const char **value);
/* A whole decimal number in [min, max]; 0, or -1 when v is not one. */
int arg_number(const char *v, uint64_t min, uint64_t max, uint64_t *out);

/* "CMD: message" on stderr; returns 2, the exit status of bad usage. */
int arg_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes buf to path (outputs are made in memory first, so an unusable input leaves no
 * empty file behind) by a temporary file renamed into place (collector/output/outfile.h). An
 * existing file is replaced only with force; anything else at path (a symbolic link, a
 * FIFO...) never is. 0, or 2 after one "cmd: ..." line. */
int arg_save(const char *cmd, const char *path, const char *buf, size_t len, int force);
/* Whether path may be written, before the work starts (the same rules): 0, or 2 after one
 * line. */
int arg_output_ok(const char *cmd, const char *path, int force);
/* Renames tmp to path under those rules (tmp is removed on failure): 0, or 2 after one
 * line. */
int arg_place(const char *cmd, const char *tmp, const char *path, int force);

typedef int (*arg_option_fn)(int argc, char **argv, int *i, void *ctx);

/* The shape both commands share: --help, options (handled by option, which returns 0 or
 * an exit status), and exactly one capture file. Returns 0 to go on, -1 after --help,
 * or 2 after one line on stderr. */
int args_parse(const char *cmd, int argc, char **argv, void (*help)(void), arg_option_fn option,
	       void *ctx, const char **capture);

#endif
