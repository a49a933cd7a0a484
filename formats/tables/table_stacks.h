/* `prof report --group-by stack[:N]`: rows keyed by (category, name, the innermost N
 * frames of the call's stack), like PyTorch's key_averages(group_by_stack_n=N), each row
 * followed by its frames. Calls without a stack share the row of an empty stack. */
#ifndef PROF_FORMATS_TABLE_STACKS_H
#define PROF_FORMATS_TABLE_STACKS_H

#include <stdio.h>

#include "formats/model/outputs.h"

#define TABLE_STACKS_DEFAULT_FRAMES 5
#define TABLE_STACKS_MAX_FRAMES 1000
/* nframes for `--group-by shape`: rows keyed by the calls' input shapes instead
 * (PyTorch operators recorded with PROFILER_RECORD_SHAPES: key_averages(
 * group_by_input_shape=True)); calls without shapes share a row per name. */
#define TABLE_STACKS_BY_SHAPE (TABLE_STACKS_MAX_FRAMES + 1)

/* Writes the rows of capture_path grouped by the innermost nframes frames, in the
 * options' format, sort, --top and --category. Same return values as tables_write. */
int table_stacks_write(const char *capture_path, FILE *out, const struct table_options *opt,
		       unsigned nframes, struct output_summary *sum, char *err, size_t errlen);

#endif
