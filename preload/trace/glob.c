/* Shell-style patterns matched byte by byte (glob.h says why not fnmatch). */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <string.h>

#include "preload/trace/glob.h"

/* The bracket expression whose text begins at p (after the '['): 1 when c is in it, 0 when
 * not, with *end past its ']'; -1 when it has no ']' (then the '[' is an ordinary
 * character, as for fnmatch). A ']' first is a member. */
static int in_bracket(const char *p, unsigned char c, const char **end)
{
	int negate = *p == '!' || *p == '^';
	if (negate)
		p++;
	int in = 0;
	do {
		unsigned char lo = (unsigned char)*p;
		if (!lo)
			return -1;
		if (lo == '\\' && p[1])
			lo = (unsigned char)*++p;
		p++;
		unsigned char hi = lo;
		if (p[0] == '-' && p[1] && p[1] != ']') {
			p++;
			if (*p == '\\' && p[1])
				p++;
			hi = (unsigned char)*p++;
		}
		if (c >= lo && c <= hi)
			in = 1;
	} while (*p != ']');
	*end = p + 1;
	return in != negate;
}

int prof_glob(const char *pattern, const char *name)
{
	/* character classes ([[:alpha:]]) are the C library's */
	if (strstr(pattern, "[:"))
		return fnmatch(pattern, name, 0) == 0;
	const char *p = pattern, *s = name;
	const char *star_p = 0, *star_s = 0; /* after the last '*', and where it began to match */
	for (;;) {
		if (*p == '*') {
			while (*p == '*')
				p++;
			star_p = p;
			star_s = s;
			continue;
		}
		if (!*s)
			return !*p;
		const char *next = p + 1;
		int same;
		switch (*p) {
		case 0:
			same = 0;
			break;
		case '?':
			same = 1;
			break;
		case '[': {
			const char *end;
			int in = in_bracket(p + 1, (unsigned char)*s, &end);
			same = in < 0 ? *s == '[' : in;
			if (in >= 0)
				next = end;
			break;
		}
		case '\\':
			if (!p[1])
				return 0; /* a pattern ending in a lone '\\' matches nothing */
			same = p[1] == *s;
			next = p + 2;
			break;
		default:
			same = *p == *s;
		}
		if (same) {
			p = next;
			s++;
		} else if (star_p) {
			p = star_p; /* the last '*' takes one more character */
			s = ++star_s;
		} else {
			return 0;
		}
	}
}
