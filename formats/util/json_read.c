/* Recursive-descent JSON reader; see json_read.h. */
#include "formats/util/json_read.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

struct parser {
	const char *p, *start, *end;
	char *err;
	size_t errlen;
	int failed;
};

static int fail(struct parser *ps, const char *what)
{
	if (!ps->failed)
		snprintf(ps->err, ps->errlen, "byte %zu: %s", (size_t)(ps->p - ps->start), what);
	ps->failed = 1;
	return -1;
}

static void skip_ws(struct parser *ps)
{
	while (ps->p < ps->end &&
	       (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

static int literal(struct parser *ps, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n))
		return fail(ps, "not a JSON value");
	ps->p += n;
	return 0;
}

static int hex4(struct parser *ps, unsigned *out)
{
	unsigned v = 0;
	int i;

	if (ps->end - ps->p < 4)
		return fail(ps, "cut \\u escape");
	for (i = 0; i < 4; i++) {
		char c = *ps->p++;
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return fail(ps, "bad \\u escape");
	}
	*out = v;
	return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* At the opening quote; the decoded bytes (never longer than the source) into *out. */
static int string(struct parser *ps, char **out, size_t *outlen)
{
	const char *q = ++ps->p;
	char *o, *s;

	while (q < ps->end && *q != '"')
		q += *q == '\\' ? 2 : 1;
	if (q >= ps->end)
		return fail(ps, "unterminated string");
	s = o = malloc((size_t)(q - ps->p) + 1);
	if (!s)
		return fail(ps, "out of memory");
	while (*ps->p != '"') {
		unsigned char c = (unsigned char)*ps->p++;
		unsigned cp, lo;

		if (c < 0x20) {
			free(s);
			return fail(ps, "control character in a string");
		}
		if (c != '\\') {
			*o++ = (char)c;
			continue;
		}
		switch (*ps->p++) {
		case '"': *o++ = '"'; break;
		case '\\': *o++ = '\\'; break;
		case '/': *o++ = '/'; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u':
			if (hex4(ps, &cp)) {
				free(s);
				return -1;
			}
			/* a surrogate pair is one code point; a lone surrogate becomes U+FFFD */
			if (cp >= 0xd800 && cp < 0xdc00 && ps->end - ps->p >= 6 &&
			    ps->p[0] == '\\' && ps->p[1] == 'u') {
				const char *back = ps->p;
				ps->p += 2;
				if (hex4(ps, &lo)) {
					free(s);
					return -1;
				}
				if (lo >= 0xdc00 && lo < 0xe000)
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				else
					ps->p = back;
			}
			if (cp >= 0xd800 && cp < 0xe000)
				cp = 0xfffd;
			o += put_utf8(o, cp);
			break;
		default:
			free(s);
			return fail(ps, "bad escape in a string");
		}
	}
	ps->p++;
	*o = 0;
	*out = s;
	*outlen = (size_t)(o - s);
	return 0;
}

static int number(struct parser *ps, struct jnode *n)
{
	const char *q = ps->p;
	char buf[64], *end;
	int whole = 1;

	if (q < ps->end && *q == '-') {
		q++;
		whole = 0;
	}
	if (q >= ps->end || *q < '0' || *q > '9')
		return fail(ps, "not a JSON value");
	while (q < ps->end && ((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' ||
			       *q == '+' || *q == '-')) {
		if (*q == '.' || *q == 'e' || *q == 'E')
			whole = 0;
		q++;
	}
	if ((size_t)(q - ps->p) >= sizeof(buf))
		return fail(ps, "number too long");
	memcpy(buf, ps->p, (size_t)(q - ps->p));
	buf[q - ps->p] = 0;
	errno = 0;
	n->d = strtod(buf, &end);
	if (*end)
		return fail(ps, "bad number");
	n->type = J_NUM;
	if (whole) {
		errno = 0;
		n->u = strtoull(buf, &end, 10);
		n->is_u64 = !errno && !*end;
	}
	ps->p = q;
	return 0;
}

static int value(struct parser *ps, struct jnode *n, int depth);

static int push(struct parser *ps, struct jnode *n, size_t *cap, int with_key)
{
	if (n->n < *cap)
		return 0;
	size_t nc = *cap ? 2 * *cap : 8;
	struct jnode *it = realloc(n->items, nc * sizeof(*it));
	if (!it)
		return fail(ps, "out of memory");
	n->items = it;
	if (with_key) {
		char **k = realloc(n->keys, nc * sizeof(*k));
		if (!k)
			return fail(ps, "out of memory");
		n->keys = k;
	}
	*cap = nc;
	return 0;
}

static int container(struct parser *ps, struct jnode *n, int depth, int obj)
{
	size_t cap = 0;
	char close = obj ? '}' : ']';

	n->type = obj ? J_OBJ : J_ARR;
	ps->p++;
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == close) {
		ps->p++;
		return 0;
	}
	for (;;) {
		char *key = NULL;
		size_t klen;

		if (push(ps, n, &cap, obj))
			return -1;
		if (obj) {
			skip_ws(ps);
			if (ps->p >= ps->end || *ps->p != '"')
				return fail(ps, "expected a key");
			if (string(ps, &key, &klen))
				return -1;
			skip_ws(ps);
			if (ps->p >= ps->end || *ps->p != ':') {
				free(key);
				return fail(ps, "expected ':'");
			}
			ps->p++;
			n->keys[n->n] = key;
		}
		memset(&n->items[n->n], 0, sizeof(n->items[0]));
		n->n++;
		if (value(ps, &n->items[n->n - 1], depth + 1))
			return -1;
		skip_ws(ps);
		if (ps->p < ps->end && *ps->p == ',') {
			ps->p++;
			continue;
		}
		if (ps->p < ps->end && *ps->p == close) {
			ps->p++;
			return 0;
		}
		return fail(ps, obj ? "expected ',' or '}'" : "expected ',' or ']'");
	}
}

static int value(struct parser *ps, struct jnode *n, int depth)
{
	if (depth > MAX_DEPTH)
		return fail(ps, "nested too deeply");
	skip_ws(ps);
	if (ps->p >= ps->end)
		return fail(ps, "unexpected end");
	switch (*ps->p) {
	case '{':
		return container(ps, n, depth, 1);
	case '[':
		return container(ps, n, depth, 0);
	case '"':
		n->type = J_STR;
		return string(ps, &n->s, &n->slen);
	case 't':
		n->type = J_BOOL;
		n->b = 1;
		return literal(ps, "true");
	case 'f':
		n->type = J_BOOL;
		return literal(ps, "false");
	case 'n':
		n->type = J_NULL;
		return literal(ps, "null");
	default:
		return number(ps, n);
	}
}

int json_parse(const char *text, size_t len, struct jnode *root, char *err, size_t errlen)
{
	struct parser ps = { text, text, text + len, err, errlen, 0 };

	memset(root, 0, sizeof(*root));
	if (!value(&ps, root, 0)) {
		skip_ws(&ps);
		if (ps.p == ps.end)
			return 0;
		fail(&ps, "text after the document");
	}
	json_free(root);
	return -1;
}

void json_free(struct jnode *n)
{
	size_t i;

	for (i = 0; i < n->n; i++) {
		json_free(&n->items[i]);
		if (n->keys)
			free(n->keys[i]);
	}
	free(n->items);
	free(n->keys);
	free(n->s);
	memset(n, 0, sizeof(*n));
}

const struct jnode *json_get(const struct jnode *obj, const char *key)
{
	size_t i = obj && obj->type == J_OBJ ? obj->n : 0;

	while (i--)
		if (!strcmp(obj->keys[i], key))
			return &obj->items[i];
	return NULL;
}

int json_u64(const struct jnode *n, uint64_t *out)
{
	if (!n || n->type != J_NUM || !n->is_u64)
		return -1;
	*out = n->u;
	return 0;
}

const char *json_str(const struct jnode *n)
{
	return n && n->type == J_STR ? n->s : NULL;
}
