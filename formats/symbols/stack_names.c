/* Frame and site names for captured stacks. Every frame after the first is a return
 * address, and the first is one too (libprof's own frames are cut off in the program):
 * the call instruction is at pc - 1, which is what gets symbolized. */
#include "formats/symbols/stack_names.h"
#include "formats/util/strtab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/symbols/symbolize.h"

static int native_site(const struct model *m, uint32_t image, uint64_t pc,
		       const struct model_module **mod, uint64_t *off)
{
	*mod = model_module_of(m, image, pc - 1);
	if (!*mod)
		return 0;
	*off = pc - 1 - (*mod)->start + (*mod)->offset;
	return 1;
}

int stack_names_init(struct stack_names *sn, struct model *m)
{
	memset(sn, 0, sizeof *sn);
	sn->m = m;
	sn->sym = symbolizer_new();
	if (!sn->sym)
		return -1;
	for (size_t i = 0; i < m->nstacks; i++) {
		const struct model_stack *st = &m->stacks[i];
		for (uint32_t k = 0; k < st->nframes; k++) {
			uint64_t f = m->frames[st->at + k], off;
			const struct model_module *mod;
			if (f & PROF_STACK_FRAME_PYTHON || model_frame_name(m, st->image, f) != STR_NONE ||
			    !native_site(m, st->image, f, &mod, &off))
				continue;
			if (symbolizer_add(sn->sym, model_str(m, mod->path, NULL), off))
				return -1;
		}
	}
	return symbolizer_resolve(sn->sym);
}

void stack_names_free(struct stack_names *sn)
{
	if (sn->sym)
		symbolizer_free(sn->sym);
	sn->sym = NULL;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

const char *stack_frame_name(struct stack_names *sn, uint32_t image, uint64_t frame)
{
	struct model *m = sn->m;
	if (frame & PROF_STACK_FRAME_PYTHON) {
		uint32_t gid = model_name(m, image, (uint32_t)frame);
		size_t len = 0;
		const char *s = gid == STR_NONE ? NULL : model_str(m, gid, &len);
		/* the line is the frame's own, the name its code object's "function (file)"
		 * (shm_layout.h); 0: the name has the line, as captures before had it */
		uint32_t line1 = (uint32_t)(frame >> 32) & 0x7fffffff;
		if (s && line1 && len && s[len - 1] == ')')
			snprintf(sn->buf, sizeof sn->buf, "%.*s:%u)", (int)(len - 1), s, line1 - 1);
		else
			snprintf(sn->buf, sizeof sn->buf, "%s", s ? s : "(python)");
		return sn->buf;
	}
	const struct model_module *mod;
	uint64_t off;
	struct sym_frame f;
	uint32_t stored = model_frame_name(m, image, frame);
	if (stored != STR_NONE) {
		snprintf(sn->buf, sizeof sn->buf, "%s", model_str(m, stored, NULL));
		return sn->buf;
	}
	if (!native_site(m, image, frame, &mod, &off)) {
		snprintf(sn->buf, sizeof sn->buf, "0x%llx", (unsigned long long)frame);
		return sn->buf;
	}
	const char *path = model_str(m, mod->path, NULL);
	if (symbolizer_get(sn->sym, path, off, &f))
		f.function = NULL;
	return stack_frame_label(&f, path, off, sn->buf, sizeof sn->buf);
}

const char *stack_frame_label(const struct sym_frame *f, const char *module, uint64_t off,
			      char *buf, size_t len)
{
	if (!f->function)
		snprintf(buf, len, "0x%llx (%s)", (unsigned long long)off, base_name(module));
	else if (f->file && f->line)
		snprintf(buf, len, "%s (%s:%u)", f->function, base_name(f->file), f->line);
	else
		snprintf(buf, len, "%s (%s)", f->function, base_name(module));
	return buf;
}

/* The runtime's own allocation layers, skipped when naming a site. */
static int runtime_module(const char *path)
{
	const char *b = base_name(path);
	return !strncmp(b, "libc.so", 7) || !strncmp(b, "libc-", 5) ||
	       !strncmp(b, "libstdc++", 9) || !strncmp(b, "ld-linux", 8);
}

const char *stack_site_name(struct stack_names *sn, uint32_t stack)
{
	struct model *m = sn->m;
	if (!stack || stack > m->nstacks) {
		snprintf(sn->buf, sizeof sn->buf, "(no stack)");
		return sn->buf;
	}
	const struct model_stack *st = &m->stacks[stack - 1];
	const uint64_t *f = m->frames + st->at;
	for (uint32_t k = 0; k < st->nframes; k++)
		if (f[k] & PROF_STACK_FRAME_PYTHON)
			return stack_frame_name(sn, st->image, f[k]);
	for (uint32_t k = 0; k < st->nframes; k++) {
		const struct model_module *mod;
		uint64_t off;
		if (native_site(m, st->image, f[k], &mod, &off) &&
		    runtime_module(model_str(m, mod->path, NULL)) && k + 1 < st->nframes)
			continue;
		return stack_frame_name(sn, st->image, f[k]);
	}
	snprintf(sn->buf, sizeof sn->buf, "(empty stack)");
	return sn->buf;
}

struct site_row *site_rows(struct stack_names *sn, const struct mem_image *mi, size_t *n)
{
	struct site_row *rows = calloc(mi->nsites ? mi->nsites : 1, sizeof *rows);
	*n = 0;
	if (!rows)
		return NULL;
	/* a site per distinct stack (hundreds of thousands in a real model): the rows are
	 * found by name through an index, ids given in order of first use */
	struct strtab index;
	strtab_init(&index);
	for (size_t k = 0; k < mi->nsites; k++) {
		const struct mem_site *s = &mi->sites[k];
		const char *name = stack_site_name(sn, s->stack);
		uint32_t r;
		if (strtab_intern_str(&index, name, &r)) {
			strtab_free(&index);
			site_rows_free(rows, *n);
			return NULL;
		}
		if (r == *n) {
			rows[r].name = strdup(name);
			if (!rows[r].name) {
				strtab_free(&index);
				site_rows_free(rows, *n);
				return NULL;
			}
			(*n)++;
		}
		rows[r].allocs += s->allocs;
		rows[r].bytes += s->bytes;
		rows[r].peak_bytes += s->peak_bytes;
		rows[r].live_bytes += s->live_bytes;
		rows[r].live_count += s->live_count;
	}
	strtab_free(&index);
	return rows;
}

void site_rows_free(struct site_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(rows[i].name);
	free(rows);
}
