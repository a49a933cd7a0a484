/* A small JSON reader for summaries: the whole document into a tree. Integers that fit
 * 64 bits unsigned are kept exactly (counts and nanoseconds), besides their double. */
#ifndef PROF_FORMATS_JSON_READ_H
#define PROF_FORMATS_JSON_READ_H

#include <stddef.h>
#include <stdint.h>

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jnode {
	enum jtype type;
	int b;          /* J_BOOL */
	int is_u64;     /* J_NUM: a whole number in [0, 2^64) */
	uint64_t u;
	double d;       /* J_NUM */
	char *s;        /* J_STR, NUL-terminated (also holding the escapes' NULs: see slen) */
	size_t slen;
	struct jnode *items; /* J_ARR items, J_OBJ values */
	char **keys;         /* J_OBJ keys */
	size_t n;
};

/* Parses text[0..len). 0, or -1 with err ("byte N: what is wrong"). */
int json_parse(const char *text, size_t len, struct jnode *root, char *err, size_t errlen);
void json_free(struct jnode *n);

/* The value of key in an object (the last one when repeated), or NULL. */
const struct jnode *json_get(const struct jnode *obj, const char *key);
/* 0 and the value when n is a whole number in [0, 2^64), else -1. */
int json_u64(const struct jnode *n, uint64_t *out);
/* The string of n, or NULL when n is not a string. */
const char *json_str(const struct jnode *n);

#endif
