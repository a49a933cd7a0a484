/* Small helpers for the option parsing of `prof report` and `prof export`. */
#ifndef PROF_COLLECTOR_CMD_ARGS_H
#define PROF_COLLECTOR_CMD_ARGS_H

#include <stdint.h>

/* Whether argv[*i] is option name, given as "name VALUE" or "name=VALUE"; on a match
 * *value points to VALUE (NULL when it is missing) and *i moves past it. */
int arg_value(int argc, char **argv, int *i, const char *name, const char **value);
/* A whole decimal number in [min, max]; 0, or -1 when v is not one. */
int arg_number(const char *v, uint64_t min, uint64_t max, uint64_t *out);

#endif
