/* Stacks and the modules their addresses belong to, from a process segment to the
 * capture. Modules are read from /proc/<pid>/maps while the process lives (a stack is
 * read within milliseconds of being made), so a library unloaded later still resolves. */
#define _GNU_SOURCE
#include "collector/drain/stacks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/capture/capture.h"
#include "collector/shm/shm_check.h"
#include "preload/common/debug.h"
#include "formats/symbols/stack_names.h"
#include "formats/symbols/symbolize.h"

static const struct module_range *module_of(const struct proc_stacks *ps, uint64_t pc)
{
	size_t lo = 0, hi = ps ? ps->nmods : 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (pc < ps->mods[mid].lo)
			hi = mid;
		else if (pc >= ps->mods[mid].hi)
			lo = mid + 1;
		else
			return &ps->mods[mid];
	}
	return NULL;
}

static int covered(const struct proc_stacks *ps, uint64_t pc)
{
	return module_of(ps, pc) != NULL;
}

static int by_lo(const void *a, const void *b)
{
	const struct module_range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Writes every executable mapping not written yet. */
void stacks_read_maps(struct proc_stacks *ps, pid_t pid, stacks_put_fn put, void *ctx)
{
	char path[64], line[4096 + 256];
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	size_t added = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long long lo, hi, off;
		char perms[8];
		int name_at = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &lo, &hi, perms, &off, &name_at) < 4 ||
		    perms[2] != 'x' || covered(ps, lo))
			continue;
		char *name = name_at ? line + name_at : line + strlen(line);
		name[strcspn(name, "\n")] = 0;
		if (ps->nmods == ps->cap) {
			size_t cap = ps->cap ? ps->cap * 2 : 64;
			struct module_range *m = realloc(ps->mods, cap * sizeof *m);
			if (!m) {
				prof_debug(PROF_DEBUG_DRAIN, "process %d: mappings past %zu left out: "
					   "out of memory", (int)pid, ps->nmods);
				break;
			}
			ps->mods = m;
			ps->cap = cap;
		}
		char *copy = strdup(name);
		if (!copy) {
			prof_debug(PROF_DEBUG_DRAIN, "process %d: mappings past %zu left out: out "
				   "of memory", (int)pid, ps->nmods);
			break;
		}
		ps->mods[ps->nmods++] = (struct module_range){lo, hi, off, copy};
		added++;
		struct cap_module h = {.pid = (uint32_t)pid, .start = lo, .end = hi, .offset = off};
		put(ctx, CAP_MODULE, &h, sizeof h, name, strlen(name));
	}
	fclose(f);
	if (added)
		qsort(ps->mods, ps->nmods, sizeof *ps->mods, by_lo);
}

void stacks_replay(const struct proc_stacks *ps, struct shm_area *area, pid_t pid,
		   stacks_put_fn put, void *ctx)
{
	for (size_t i = 0; i < ps->nmods; i++) {
		const struct module_range *m = &ps->mods[i];
		struct cap_module h = {.pid = (uint32_t)pid, .start = m->lo, .end = m->hi,
				       .offset = m->offset};
		put(ctx, CAP_MODULE, &h, sizeof h, m->path, strlen(m->path));
	}
	for (uint64_t at = 0; at + sizeof(struct prof_stack_entry) <= ps->read;) {
		const struct prof_stack_entry *e = (const void *)shm_area_at(area, at, sizeof *e);
		if (!e)
			return;
		uint32_t n = atomic_load_explicit(&((struct prof_stack_entry *)e)->nframes,
						  memory_order_acquire);
		if (n == PROF_AREA_PAD) { /* a reservation across a chunk's end (shm_layout.h) */
			uint32_t skip = e->hash; /* read once */
			if (skip < sizeof *e || skip % 8 || at + skip <= shm_area_chunk_end(area, at))
				return;
			at += skip;
			continue;
		}
		uint64_t size = sizeof *e + (uint64_t)n * 8;
		if (!n || n > SHM_MAX_FRAMES || at + size > ps->read || !shm_area_at(area, at, size))
			return; /* changed since it was read: the rest is not believed */
		struct cap_stack h = {.pid = (uint32_t)pid, .id = (uint32_t)(at / 8) + 1,
				      .nframes = n};
		put(ctx, CAP_STACK, &h, sizeof h, e->frames, (size_t)n * 8);
		at += size;
	}
}

int stacks_drain(struct proc_stacks *ps, struct prof_proc_shm *shm, struct shm_area *area,
		 pid_t pid, stacks_put_fn put, void *ctx, char *why, size_t whylen)
{
	/* reservations may overshoot what was written (a failed add); the entries never do */
	uint64_t used = atomic_load_explicit(&shm->stacks_reserved, memory_order_acquire);
	ps->maps_read_this_pass = 0;
	while (ps->read + sizeof(struct prof_stack_entry) <= used) {
		const struct prof_stack_entry *e =
			(const void *)shm_area_at(area, ps->read, sizeof *e);
		if (!e)
			break; /* its chunk is not published yet, or cannot be believed */
		uint32_t n = atomic_load_explicit(&((struct prof_stack_entry *)e)->nframes,
						  memory_order_acquire);
		if (n == PROF_AREA_PAD) { /* a reservation across a chunk's end (shm_layout.h) */
			uint32_t skip = e->hash; /* read once */
			if (skip < sizeof *e || skip % 8 ||
			    ps->read + skip <= shm_area_chunk_end(area, ps->read) ||
			    skip > sizeof *e + (uint64_t)SHM_MAX_FRAMES * 8) {
				snprintf(why, whylen, "a pad of %u bytes at %llu", skip,
					 (unsigned long long)ps->read);
				return -1;
			}
			ps->read += skip;
			continue;
		}
		if (n > SHM_MAX_FRAMES) {
			snprintf(why, whylen, "a stack of %u frames at %llu", n,
				 (unsigned long long)ps->read);
			return -1;
		}
		uint64_t size = sizeof *e + (uint64_t)n * 8;
		if (!n || ps->read + size > used)
			break; /* not published yet */
		if (!shm_area_at(area, ps->read, size)) {
			snprintf(why, whylen, "a stack of %u frames at %llu across a chunk's end", n,
				 (unsigned long long)ps->read);
			return -1;
		}
		for (uint32_t i = 0; i < n && !ps->maps_read_this_pass; i++)
			if (!(e->frames[i] & PROF_STACK_FRAME_PYTHON) && !covered(ps, e->frames[i])) {
				stacks_read_maps(ps, pid, put, ctx);
				ps->maps_read_this_pass = 1;
			}
		if (!ps->pcs_init) {
			u64map_init(&ps->pcs);
			ps->pcs_init = 1;
		}
		for (uint32_t i = 0; i < n; i++) {
			int created;
			if (!(e->frames[i] & PROF_STACK_FRAME_PYTHON))
				u64map_upsert(&ps->pcs, e->frames[i], &created); /* best effort */
		}
		struct cap_stack h = {.pid = (uint32_t)pid, .id = (uint32_t)(ps->read / 8) + 1,
				      .nframes = n};
		put(ctx, CAP_STACK, &h, sizeof h, e->frames, (size_t)n * 8);
		ps->read += size;
	}
	if (area->why[0]) {
		snprintf(why, whylen, "%s", area->why);
		return -1;
	}
	return 0;
}

/* The module and file offset of a frame: the call instruction at pc - 1. */
static const struct module_range *frame_at(const struct proc_stacks *ps,
					   const struct proc_stacks *parent, uint64_t pc,
					   uint64_t *off)
{
	const struct module_range *m = module_of(ps, pc - 1);
	if (!m && parent)
		m = module_of(parent, pc - 1);
	if (m)
		*off = pc - 1 - m->lo + m->offset;
	return m;
}

struct add_ctx {
	const struct proc_stacks *ps, *parent;
	struct symbolizer *sym;
	int failed;
};

static void add_one(void *ctx, uint64_t pc, uint64_t *val)
{
	struct add_ctx *a = ctx;
	uint64_t off;
	const struct module_range *m = frame_at(a->ps, a->parent, pc, &off);
	(void)val;
	if (m && symbolizer_add(a->sym, m->path, off))
		a->failed = 1;
}

int stacks_add_frames(struct proc_stacks *ps, const struct proc_stacks *parent,
		      struct symbolizer *sym)
{
	struct add_ctx a = {ps, parent, sym, 0};
	if (ps->pcs_init)
		u64map_each(&ps->pcs, add_one, &a);
	return a.failed ? -1 : 0;
}

struct put_ctx {
	const struct proc_stacks *ps, *parent;
	struct symbolizer *sym;
	pid_t pid;
	uint32_t exec_seq;
	stacks_put_fn put;
	void *ctx;
};

static void put_one(void *ctx, uint64_t pc, uint64_t *val)
{
	struct put_ctx *p = ctx;
	uint64_t off;
	char name[1024];
	struct sym_frame f;
	const struct module_range *m = frame_at(p->ps, p->parent, pc, &off);
	(void)val;
	if (!m)
		return;
	if (symbolizer_get(p->sym, m->path, off, &f))
		return;
	stack_frame_label(&f, m->path, off, name, sizeof name);
	struct cap_frame_name h = {.pid = (uint32_t)p->pid, .exec_seq = p->exec_seq, .pc = pc};
	p->put(p->ctx, CAP_FRAME_NAME, &h, sizeof h, name, strlen(name));
}

void stacks_put_names(struct proc_stacks *ps, const struct proc_stacks *parent, pid_t pid,
		      uint32_t exec_seq, struct symbolizer *sym, stacks_put_fn put, void *ctx)
{
	struct put_ctx p = {ps, parent, sym, pid, exec_seq, put, ctx};
	if (ps->pcs_init)
		u64map_each(&ps->pcs, put_one, &p);
}

void stacks_free(struct proc_stacks *ps)
{
	for (size_t i = 0; i < ps->nmods; i++)
		free(ps->mods[i].path);
	free(ps->mods);
	if (ps->pcs_init)
		u64map_free(&ps->pcs);
	memset(ps, 0, sizeof *ps);
}
