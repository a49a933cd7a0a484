/* Names for captured call stacks' frames and allocation sites, symbolized once for a
 * whole model (every frame of every stack in one batch). */
#ifndef PROF_FORMATS_STACK_NAMES_H
#define PROF_FORMATS_STACK_NAMES_H

#include "formats/model/model.h"

struct stack_names {
	struct model *m;
	struct symbolizer *sym;
	char buf[1024];
};

struct sym_frame;
/* A frame's name from a symbolizer's result: "function (file:line)", "function (module)"
 * or "0xOFF (module)" (module and file as base names). Returns buf. */
const char *stack_frame_label(const struct sym_frame *f, const char *module, uint64_t off,
			      char *buf, size_t len);

/* Symbolizes every native frame of every stack in m that the capture does not name
 * (CAP_FRAME_NAME) already. 0, or -1 when out of memory. */
int stack_names_init(struct stack_names *sn, struct model *m);
void stack_names_free(struct stack_names *sn);
/* "function (file:line)", "function (module)", "0xOFF (module)", or a Python frame's
 * "function (file:line)". Valid until the next call. */
const char *stack_frame_name(struct stack_names *sn, uint32_t image, uint64_t frame);
/* Where a stack's allocation was asked for: its innermost Python frame when it has one,
 * else its innermost frame outside the C and C++ runtime (operator new, libc). */
const char *stack_site_name(struct stack_names *sn, uint32_t stack);

/* An image's allocation sites merged by name (stacks that differ only beyond the frame
 * that names them are one site), in no particular order. */
struct site_row {
	char *name;
	uint64_t allocs, bytes, peak_bytes, live_bytes, live_count;
};
/* The rows (free with site_rows_free), or NULL when out of memory. */
struct site_row *site_rows(struct stack_names *sn, const struct mem_image *mi, size_t *n);
void site_rows_free(struct site_row *rows, size_t n);

#endif
