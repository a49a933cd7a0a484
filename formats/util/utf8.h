/* UTF-8 validation shared by the JSON escaper and the text tables. */
#ifndef PROF_FORMATS_UTF8_H
#define PROF_FORMATS_UTF8_H

#include <stddef.h>

/* Length (2..4) of the well-formed multi-byte sequence at s (n bytes available), or 0
 * when s[0] does not start one: stray continuation bytes, overlong forms, surrogates and
 * code points past U+10FFFF are all invalid. */
static inline size_t utf8_seq_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
	unsigned lo = 0x80, hi = 0xbf;
	size_t i;

	if (c < 0xc2 || c > 0xf4 || n < len)
		return 0;
	if (c == 0xe0)
		lo = 0xa0; /* overlong */
	else if (c == 0xed)
		hi = 0x9f; /* surrogates */
	else if (c == 0xf0)
		lo = 0x90; /* overlong */
	else if (c == 0xf4)
		hi = 0x8f; /* past U+10FFFF */
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

#endif
