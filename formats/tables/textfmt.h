/* Number and name formatting for the text tables. */
#ifndef PROF_FORMATS_TEXTFMT_H
#define PROF_FORMATS_TEXTFMT_H

#include <stddef.h>
#include <stdint.h>

#define TEXTFMT_LEN 40

/* 1234567 -> "1,234,567". Returns buf. */
char *fmt_count(char buf[TEXTFMT_LEN], uint64_t v);
/* A duration with a readable unit: "51ns", "1.20us", "512.30ms", "3.07s". */
char *fmt_dur(char buf[TEXTFMT_LEN], uint64_t ns);
/* Bytes with a readable unit: "512 B", "1.50 KiB", "3.20 GiB". */
char *fmt_bytes(char buf[TEXTFMT_LEN], uint64_t b);
/* A name made safe for a terminal: control characters and bytes that are not UTF-8
 * become '?', and the name is cut to at most max columns ("..." marks a cut). Returns
 * the columns used; dst must hold 4 * max + 4 bytes. */
size_t fmt_name(char *dst, const char *s, size_t n, size_t max);

#endif
