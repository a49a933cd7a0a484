/* Buffered JSON output and escaping; see json_writer.h. */
#include "formats/util/json_writer.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formats/util/utf8.h"

int jw_init(struct jw *w, FILE *f, size_t cap)
{
	w->f = f;
	w->len = 0;
	w->cap = cap < 4096 ? 4096 : cap;
	w->err = 0;
	w->buf = malloc(w->cap);
	return w->buf ? 0 : -1;
}

static void drain(struct jw *w)
{
	if (w->len && !w->err && fwrite(w->buf, 1, w->len, w->f) != w->len)
		w->err = errno ? errno : EIO;
	w->len = 0;
}

int jw_finish(struct jw *w)
{
	drain(w);
	if (!w->err && fflush(w->f))
		w->err = errno ? errno : EIO;
	free(w->buf);
	w->buf = NULL;
	w->cap = 0;
	errno = w->err;
	return w->err ? -1 : 0;
}

char *jw_space(struct jw *w, size_t n)
{
	char *p;

	if (w->len + n > w->cap)
		drain(w);
	if (n > w->cap) {
		/* One item larger than the buffer (a huge name): grow rather than fail. */
		p = realloc(w->buf, n);
		if (!p) {
			if (!w->err)
				w->err = ENOMEM;
			return NULL;
		}
		w->buf = p;
		w->cap = n;
	}
	return w->buf + w->len;
}

void jw_raw(struct jw *w, const char *s, size_t n)
{
	char *p;

	if (n > w->cap) {
		drain(w);
		if (!w->err && fwrite(s, 1, n, w->f) != n)
			w->err = errno ? errno : EIO;
		return;
	}
	p = jw_space(w, n);
	memcpy(p, s, n);
	w->len += n;
}

void jw_text(struct jw *w, const char *s)
{
	jw_raw(w, s, strlen(s));
}

static const char hexdig[] = "0123456789abcdef";

size_t json_escape(char *dst, const char *src, size_t n)
{
	const unsigned char *s = (const unsigned char *)src, *end = s + n;
	char *d = dst;

	*d++ = '"';
	while (s < end) {
		unsigned c = *s;
		size_t k;

		if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
			*d++ = (char)c;
			s++;
		} else if (c == '"' || c == '\\') {
			*d++ = '\\';
			*d++ = (char)c;
			s++;
		} else if (c < 0x20) {
			memcpy(d, "\\u00", 4);
			d[4] = hexdig[c >> 4];
			d[5] = hexdig[c & 15];
			d += 6;
			s++;
		} else if ((k = utf8_seq_len(s, (size_t)(end - s)))) {
			memcpy(d, s, k);
			d += k;
			s += k;
		} else {
			memcpy(d, "\xef\xbf\xbd", 3); /* U+FFFD for one bad byte */
			d += 3;
			s++;
		}
	}
	*d++ = '"';
	return (size_t)(d - dst);
}

void jw_str(struct jw *w, const char *s, size_t n)
{
	char *p = jw_space(w, json_escaped_max(n));

	if (p)
		w->len += json_escape(p, s, n);
}

void jw_cstr(struct jw *w, const char *s)
{
	jw_str(w, s, strlen(s));
}

static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
			   "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
			   "8081828384858687888990919293949596979899";

size_t fmt_u64(char *p, uint64_t v)
{
	char tmp[20], *q = tmp + sizeof(tmp);
	size_t n;

	/* Two digits per division: number formatting is a tenth of the export's time. */
	while (v >= 100) {
		q -= 2;
		memcpy(q, pairs + 2 * (v % 100), 2);
		v /= 100;
	}
	if (v >= 10) {
		q -= 2;
		memcpy(q, pairs + 2 * v, 2);
	} else {
		*--q = (char)('0' + v);
	}
	n = (size_t)(tmp + sizeof(tmp) - q);
	memcpy(p, q, n);
	return n;
}

char *jp_u64(char *p, uint64_t v)
{
	return p + fmt_u64(p, v);
}

char *jp_i64(char *p, int64_t v)
{
	if (v < 0)
		*p++ = '-';
	return jp_u64(p, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
}

char *jp_us(char *p, int64_t ns)
{
	uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns, frac = a % 1000;

	if (ns < 0)
		*p++ = '-';
	p = jp_u64(p, a / 1000);
	*p++ = '.';
	*p++ = (char)('0' + frac / 100);
	memcpy(p, pairs + 2 * (frac % 100), 2);
	return p + 2;
}

char *jp_hex(char *p, uint64_t v)
{
	char tmp[16];
	size_t n = 0;

	do {
		tmp[n++] = hexdig[v & 15];
		v >>= 4;
	} while (v);
	*p++ = '"';
	*p++ = '0';
	*p++ = 'x';
	while (n)
		*p++ = tmp[--n];
	*p++ = '"';
	return p;
}

void jw_u64(struct jw *w, uint64_t v)
{
	char *p = jw_space(w, JP_NUM_MAX);

	w->len = (size_t)(jp_u64(p, v) - w->buf);
}

void jw_i64(struct jw *w, int64_t v)
{
	char *p = jw_space(w, JP_NUM_MAX);

	w->len = (size_t)(jp_i64(p, v) - w->buf);
}

void jw_us(struct jw *w, int64_t ns)
{
	char *p = jw_space(w, JP_NUM_MAX);

	w->len = (size_t)(jp_us(p, ns) - w->buf);
}

void jw_hex(struct jw *w, uint64_t v)
{
	char *p = jw_space(w, JP_NUM_MAX);

	w->len = (size_t)(jp_hex(p, v) - w->buf);
}

void jw_double(struct jw *w, double v)
{
	char tmp[40];
	int n;

	if (!isfinite(v)) {
		jw_lit(w, "null");
		return;
	}
	n = snprintf(tmp, sizeof(tmp), "%.15g", v);
	if (strtod(tmp, NULL) != v)
		n = snprintf(tmp, sizeof(tmp), "%.17g", v);
	jw_raw(w, tmp, (size_t)n);
}

void jw_u64_or_null(struct jw *w, uint64_t v)
{
	if (v)
		jw_u64(w, v);
	else
		jw_lit(w, "null");
}

void jw_cstr_or_null(struct jw *w, const char *s)
{
	if (s)
		jw_cstr(w, s);
	else
		jw_lit(w, "null");
}
