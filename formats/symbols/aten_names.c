/* at::_ops::<struct>::call, where <struct> is the operator name and its overload joined
 * by '_' ("add_Tensor", "sum_dim_IntList"): the operator is the longest known name that
 * the struct starts with, followed by '_' (exact for all but 2 of PyTorch 1.13's 3,605
 * entry points); an unknown struct keeps its whole name. */
#include <stdlib.h>
#include <string.h>

#include "formats/symbols/aten_names.h"

static int known(const char *s, size_t n)
{
	unsigned lo = 0, hi = aten_op_count;
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		int c = strncmp(aten_op_names[mid], s, n);
		if (c == 0 && aten_op_names[mid][n])
			c = 1;
		if (c == 0)
			return 1;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
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
	if (!known(s, n)) {
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
