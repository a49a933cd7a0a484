/* The settings table (preload/common/settings.c) written for people: README's markdown
 * table, made here so README cannot drift from the table (test/unit/test_settings.c). */
#ifndef PROF_COLLECTOR_SETTINGS_DOC_H
#define PROF_COLLECTOR_SETTINGS_DOC_H

#include <stdio.h>

#include "preload/common/config.h"

/* The lines README.md holds around the table. */
#define SETTINGS_DOC_BEGIN                                                                 \
	"<!-- settings table: made from preload/common/settings.c by "                     \
	"`build/test/test_settings --markdown`; test_settings checks it -->"
#define SETTINGS_DOC_END "<!-- end of settings table -->"

/* The markdown table, header and one row per setting, without the marker lines. */
void settings_markdown(FILE *f);

/* The allowed values or range of a row, for people ("4K..1G", "`off`, `alloc`, `all`"). */
void settings_values_text(const struct prof_setting *s, char *out, size_t len);

#endif
