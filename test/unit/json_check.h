/* A strict JSON validator for the unit tests (RFC 8259: no control characters in
 * strings, valid escapes, well-formed UTF-8, one value, nothing after it), so tests do
 * not depend on an outside parser. Header only. */
#ifndef PROF_TEST_JSON_CHECK_H
#define PROF_TEST_JSON_CHECK_H

#include <stddef.h>
#include <string.h>

struct jc {
	const unsigned char *p, *end;
	int depth;
};

static int jc_value(struct jc *j);

static inline void jc_ws(struct jc *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t'))
		j->p++;
}

static inline int jc_utf8(struct jc *j)
{
	unsigned c = *j->p, lo = 0x80, hi = 0xbf;
	size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2, i;

	if (c < 0xc2 || c > 0xf4 || (size_t)(j->end - j->p) < n)
		return -1;
	if (c == 0xe0)
		lo = 0xa0;
	if (c == 0xed)
		hi = 0x9f;
	if (c == 0xf0)
		lo = 0x90;
	if (c == 0xf4)
		hi = 0x8f;
	if (j->p[1] < lo || j->p[1] > hi)
		return -1;
	for (i = 2; i < n; i++)
		if ((j->p[i] & 0xc0) != 0x80)
			return -1;
	j->p += n;
	return 0;
}

static inline int jc_string(struct jc *j)
{
	int i;

	if (j->p >= j->end || *j->p++ != '"')
		return -1;
	while (j->p < j->end && *j->p != '"') {
		if (*j->p < 0x20)
			return -1;
		if (*j->p == '\\') {
			j->p++;
			if (j->p >= j->end)
				return -1;
			if (*j->p == 'u') {
				for (i = 1; i <= 4; i++)
					if (j->p + i >= j->end || !strchr("0123456789abcdefABCDEF", j->p[i]) ||
					    !j->p[i])
						return -1;
				j->p += 5;
			} else if (strchr("\"\\/bfnrt", *j->p) && *j->p) {
				j->p++;
			} else {
				return -1;
			}
		} else if (*j->p >= 0x80) {
			if (jc_utf8(j))
				return -1;
		} else {
			j->p++;
		}
	}
	if (j->p >= j->end)
		return -1;
	j->p++;
	return 0;
}

static inline int jc_digits(struct jc *j)
{
	const unsigned char *s = j->p;

	while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
		j->p++;
	return j->p > s ? 0 : -1;
}

static inline int jc_number(struct jc *j)
{
	if (*j->p == '-')
		j->p++;
	if (j->p < j->end && *j->p == '0')
		j->p++;
	else if (jc_digits(j))
		return -1;
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (jc_digits(j))
			return -1;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (jc_digits(j))
			return -1;
	}
	return 0;
}

static inline int jc_word(struct jc *j, const char *w)
{
	size_t n = strlen(w);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n))
		return -1;
	j->p += n;
	return 0;
}

static inline int jc_seq(struct jc *j, char close, int object)
{
	j->p++;
	jc_ws(j);
	if (j->p < j->end && *j->p == close) {
		j->p++;
		return 0;
	}
	for (;;) {
		jc_ws(j);
		if (object) {
			if (jc_string(j))
				return -1;
			jc_ws(j);
			if (j->p >= j->end || *j->p++ != ':')
				return -1;
		}
		if (jc_value(j))
			return -1;
		jc_ws(j);
		if (j->p >= j->end)
			return -1;
		if (*j->p == close) {
			j->p++;
			return 0;
		}
		if (*j->p++ != ',')
			return -1;
	}
}

static int jc_value(struct jc *j)
{
	int rc;

	jc_ws(j);
	if (j->p >= j->end || j->depth > 64)
		return -1;
	switch (*j->p) {
	case '{':
	case '[':
		j->depth++;
		rc = jc_seq(j, *j->p == '{' ? '}' : ']', *j->p == '{');
		j->depth--;
		return rc;
	case '"':
		return jc_string(j);
	case 't':
		return jc_word(j, "true");
	case 'f':
		return jc_word(j, "false");
	case 'n':
		return jc_word(j, "null");
	default:
		return jc_number(j);
	}
}

/* 1 when s[0..n) is exactly one valid JSON document. */
static inline int json_valid(const char *s, size_t n)
{
	struct jc j = { (const unsigned char *)s, (const unsigned char *)s + n, 0 };

	if (jc_value(&j))
		return 0;
	jc_ws(&j);
	return j.p == j.end;
}

#endif
