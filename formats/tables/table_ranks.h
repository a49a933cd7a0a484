/* The tables across the ranks of a job (formats/model/ranks.h): per rank its collectives
 * and waiting, per step the slowest rank; in the text and the JSON tables. */
#ifndef PROF_FORMATS_TABLE_RANKS_H
#define PROF_FORMATS_TABLE_RANKS_H

#include <stdio.h>

struct report;
struct jw;

void table_ranks_text(const struct report *r, FILE *out);
/* ",\n\"ranks\":" then null or the object */
void table_ranks_json(const struct report *r, struct jw *w);

#endif
