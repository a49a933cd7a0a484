/* Formatting for the text tables; see textfmt.h. */
#include "formats/tables/textfmt.h"

#include <stdio.h>
#include <string.h>

#include "formats/util/utf8.h"

char *fmt_count(char buf[TEXTFMT_LEN], uint64_t v)
{
	char digits[24];
	int n = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)v), i, k = 0;

	for (i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			buf[k++] = ',';
		buf[k++] = digits[i];
	}
	buf[k] = '\0';
	return buf;
}

char *fmt_dur(char buf[TEXTFMT_LEN], uint64_t ns)
{
	if (ns < 1000)
		snprintf(buf, TEXTFMT_LEN, "%lluns", (unsigned long long)ns);
	else if (ns < 1000000)
		snprintf(buf, TEXTFMT_LEN, "%.2fus", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, TEXTFMT_LEN, "%.2fms", (double)ns / 1e6);
	else
		snprintf(buf, TEXTFMT_LEN, "%.2fs", (double)ns / 1e9);
	return buf;
}

char *fmt_bytes(char buf[TEXTFMT_LEN], uint64_t b)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)b;
	int u = -1;

	if (b < 1024) {
		snprintf(buf, TEXTFMT_LEN, "%llu B", (unsigned long long)b);
		return buf;
	}
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(buf, TEXTFMT_LEN, "%.2f %s", v, unit[u]);
	return buf;
}

size_t fmt_name(char *dst, const char *src, size_t n, size_t max)
{
	const unsigned char *s = (const unsigned char *)src, *end = s + n;
	size_t cols = 0, k, out = 0;

	while (s < end && cols < max) {
		if (*s >= 0x20 && *s < 0x7f) {
			dst[out++] = (char)*s++;
		} else if (*s >= 0x80 && (k = utf8_seq_len(s, (size_t)(end - s)))) {
			memcpy(dst + out, s, k);
			out += k;
			s += k;
		} else {
			dst[out++] = '?';
			s++;
		}
		cols++;
	}
	if (s < end && max >= 3) {
		/* Cut: take back columns for the "..." marker. */
		while (cols > max - 3) {
			do
				out--;
			while (out > 0 && ((unsigned char)dst[out] & 0xc0) == 0x80);
			cols--;
		}
		memcpy(dst + out, "...", 3);
		out += 3;
		cols += 3;
	}
	dst[out] = '\0';
	return cols;
}
