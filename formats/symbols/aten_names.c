/* at::_ops::<struct>::call, where <struct> is the operator name and its overload joined
 * by '_' ("add_Tensor", "sum_dim_IntList"): the operator is the longest known name that
 * the struct starts with, followed by '_', except for the few structs the generated
 * table lists (that makes it exact for every entry point of the torch versions the table
 * was generated from: 1.13's 3,605 and 2.15's 3,765); an unknown struct of a newer torch
 * gets the rule, or keeps its whole name. */
#include <stdlib.h>
#include <string.h>

#include "formats/symbols/aten_names.h"

static const char *op_name(unsigned i)
{
	return aten_op_names[i];
}

static const char *struct_entry(unsigned i)
{
	return aten_struct_ops[i].entry;
}

/* The index of s[0..n) among count sorted keys, or -1. */
static long lookup(const char *(*key)(unsigned), unsigned count, const char *s, size_t n)
{
	unsigned lo = 0, hi = count;
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		const char *k = key(mid);
		int c = strncmp(k, s, n);
		if (c == 0 && k[n])
			c = 1;
		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static int known(const char *s, size_t n)
{
	return lookup(op_name, aten_op_count, s, n) >= 0;
}

char *aten_display_name(const char *d)
{
	static const char prefix[] = "at::_ops::";
	if (strncmp(d, prefix, sizeof prefix - 1))
		return 0;
	const char *s = d + sizeof prefix - 1;
	const char *end = strstr(s, "::call");
	if (!end || (end[6] && end[6] != '('))
		return 0;
	size_t n = (size_t)(end - s), keep = n;
	long x = lookup(struct_entry, aten_struct_op_count, s, n);
	if (x >= 0) {
		s = aten_struct_ops[x].op;
		keep = strlen(s);
	} else if (!known(s, n)) {
		for (size_t i = 1; i < n; i++)
			if (s[i] == '_' && known(s, i))
				keep = i;
	}
	char *out = malloc(6 + keep + 1);
	if (out) {
		memcpy(out, "aten::", 6);
		memcpy(out + 6, s, keep);
		out[6 + keep] = 0;
	}
	return out;
}
