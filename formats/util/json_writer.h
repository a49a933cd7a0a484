/* Fast JSON output: a large buffer, hand-made number formatting and string escaping, so
 * a trace of millions of events is written at hundreds of MB/s instead of one printf per
 * field. Errors are sticky: check jw_finish. */
#ifndef PROF_FORMATS_JSON_WRITER_H
#define PROF_FORMATS_JSON_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct jw {
	FILE *f;
	char *buf;
	size_t len, cap;
	int err; /* errno of the first failed write, 0 if none */
};

/* 0, or -1 when out of memory. */
int jw_init(struct jw *w, FILE *f, size_t cap);
/* Writes what is buffered and frees the buffer. 0, or -1 with errno. */
int jw_finish(struct jw *w);
/* Makes room for n more bytes (flushing, or growing the buffer for an item larger than
 * it); returns where to write them, or NULL when out of memory (w->err is then set). */
char *jw_space(struct jw *w, size_t n);

void jw_raw(struct jw *w, const char *s, size_t n);
/* A string literal, raw. The "" pasting makes anything but a literal fail to compile
 * (sizeof of a pointer would silently cut it). */
#define jw_lit(w, s) jw_raw((w), "" s, sizeof("" s) - 1)
/* A NUL-terminated string, raw (not escaped). */
void jw_text(struct jw *w, const char *s);
/* A JSON string of the bytes s[0..n): quotes, backslashes and control characters
 * escaped, every byte that is not part of well-formed UTF-8 replaced by U+FFFD. */
void jw_str(struct jw *w, const char *s, size_t n);
void jw_cstr(struct jw *w, const char *s);
/* s as a JSON string, or null when s is NULL. */
void jw_cstr_or_null(struct jw *w, const char *s);
void jw_u64(struct jw *w, uint64_t v);
/* v, or null when it is 0 (a measure not known). */
void jw_u64_or_null(struct jw *w, uint64_t v);
void jw_i64(struct jw *w, int64_t v);
/* Nanoseconds as microseconds with three decimals: 1234567 -> 1234.567. */
void jw_us(struct jw *w, int64_t ns);
/* Shortest form that reads back the same; null for NaN and infinities. */
void jw_double(struct jw *w, double v);
/* "0x..." (a string: JSON numbers lose 64-bit pointers). */
void jw_hex(struct jw *w, uint64_t v);

/* Escapes s[0..n) with its quotes into dst, which must hold json_escaped_max(n) bytes;
 * returns the bytes written. */
size_t json_escape(char *dst, const char *s, size_t n);
static inline size_t json_escaped_max(size_t n)
{
	return 6 * n + 2;
}

/* Writes the digits of v at p; returns their count (at most 20). */
size_t fmt_u64(char *p, uint64_t v);

/* The same formats written at p, returning the end: for a hot loop that reserved room
 * for a whole event with jw_space and writes it without further checks. Each number
 * takes at most JP_NUM_MAX bytes. */
#define JP_NUM_MAX 28
char *jp_u64(char *p, uint64_t v);
char *jp_i64(char *p, int64_t v);
char *jp_us(char *p, int64_t ns);
char *jp_hex(char *p, uint64_t v);
static inline char *jp_mem(char *p, const void *s, size_t n)
{
	memcpy(p, s, n);
	return p + n;
}
#define jp_lit(p, s) jp_mem((p), "" s, sizeof("" s) - 1)

#endif
