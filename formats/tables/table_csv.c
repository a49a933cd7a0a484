/* The rows as CSV (RFC 4180 quoting) for spreadsheets and scripts. Only the rows: the
 * other sections have their own shapes and are in the JSON form. */
#include <inttypes.h>

#include "formats/tables/report.h"

/* Always quoted, inner quotes doubled: names may hold commas, quotes and newlines. */
static void quoted(FILE *out, const char *s, size_t n)
{
	size_t i;

	fputc('"', out);
	for (i = 0; i < n; i++) {
		if (s[i] == '"')
			fputc('"', out);
		fputc(s[i], out);
	}
	fputc('"', out);
}

int table_csv(const struct report *r, FILE *out)
{
	size_t i, j, len;

	fputs("category,name,count,total_ns,self_ns,min_ns,max_ns,avg_ns,median_ns,percent,"
	      "cpu_mem_bytes,self_cpu_mem_bytes\n",
	      out);
	for (i = 0; i < r->ncats; i++) {
		const struct report_cat *c = &r->cats[i];
		const char *cat = model_str(r->m, c->cat, &len);
		size_t clen = len;

		for (j = 0; j < c->nrows; j++) {
			const struct row *w = c->rows[j];
			const char *name = model_str(r->m, w->name, &len);
			quoted(out, cat, clen);
			fputc(',', out);
			quoted(out, name, len);
			if (c->untimed) /* not measured: empty, not 0 */
				fprintf(out, ",%" PRIu64 ",,,,,,,,%" PRId64 ",%" PRId64 "\n", w->count,
					w->mem, w->self_mem);
			else
				fprintf(out, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
					",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.2f,%" PRId64
					",%" PRId64 "\n", w->count, w->total, w->self, w->min, w->max,
					row_avg(w), w->median, row_percent(c, w), w->mem, w->self_mem);
		}
	}
	return ferror(out) ? -1 : 0;
}
