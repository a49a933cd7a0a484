/* Call stacks and code mappings of the model's images, and the pairing of each
 * PROF_EV_STACK record with the event it belongs to (the thread's next one, same t0). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "formats/model/model_internal.h"
#include "formats/util/vec.h"

/* pcs are user-space addresses (below 2^47); images fit the bits above */
#define FRAME_KEY(image, pc) ((uint64_t)(image) << 47 | ((pc) & ((1ull << 47) - 1)))

int model_stack_record(struct model *m, const void *payload, uint32_t len)
{
	struct cap_stack cs;
	if (len < sizeof cs)
		return 0;
	memcpy(&cs, payload, sizeof cs);
	if (cs.nframes > (len - sizeof cs) / 8)
		return 0; /* damaged: skipped */
	int64_t im = model_image_of(m, cs.pid);
	if (im >= 0 && u64map_find(&m->stack_ix, (uint64_t)im << 32 | cs.id))
		return 0; /* a later part's repeat */
	if (im < 0 || VEC_RESERVE(m->stacks, m->stacks_cap, m->nstacks + 1) ||
	    VEC_RESERVE(m->frames, m->frames_cap, m->nframes + cs.nframes))
		return -1;
	int created;
	uint64_t *slot = u64map_upsert(&m->stack_ix, (uint64_t)im << 32 | cs.id, &created);
	if (!slot)
		return -1;
	if (!m->stack_front)
		m->stack_front = u64map_front_new(); /* NULL: look-ups go to the map */
	if (cs.nframes) /* an empty stack of a damaged capture: frames may still be NULL */
		memcpy(m->frames + m->nframes, (const char *)payload + sizeof cs,
		       (size_t)cs.nframes * 8);
	m->stacks[m->nstacks] = (struct model_stack){(uint32_t)im, cs.nframes, m->nframes};
	m->nframes += cs.nframes;
	*slot = ++m->nstacks;
	return 0;
}

int model_module_record(struct model *m, const void *payload, uint32_t len)
{
	struct cap_module cm;
	uint32_t gid;
	if (len < sizeof cm)
		return 0;
	memcpy(&cm, payload, sizeof cm);
	int64_t im = model_image_of(m, cm.pid);
	if (im < 0 || VEC_RESERVE(m->mods, m->mods_cap, m->nmods + 1) ||
	    strtab_intern(&m->str, (const char *)payload + sizeof cm, len - sizeof cm, &gid))
		return -1;
	/* a later part repeats the modules written before it */
	int created;
	uint64_t *seen = u64map_upsert(&m->mod_seen, FRAME_KEY(im, cm.start), &created);
	if (!seen)
		return -1;
	if (!created) {
		const struct model_module *o = &m->mods[*seen - 1];
		if (o->end == cm.end && o->offset == cm.offset && o->path == gid)
			return 0;
	}
	m->mods[m->nmods++] = (struct model_module){(uint32_t)im, gid, cm.start, cm.end, cm.offset};
	*seen = m->nmods;
	return 0;
}


int model_frame_name_record(struct model *m, const void *payload, uint32_t len)
{
	struct cap_frame_name cf;
	uint32_t gid;
	int created;
	if (len < sizeof cf)
		return 0;
	memcpy(&cf, payload, sizeof cf);
	/* written when the session ended: the image it names may not be the pid's last
	 * (a map, not a walk over the images: a capture of many processes and names of
	 * images it lacks would take quadratic time) */
	const uint64_t *seq = model_exec_find(m, cf.pid, cf.exec_seq);
	int64_t im = seq ? (int64_t)*seq - 1 : model_image_of(m, cf.pid);
	if (im < 0 || strtab_intern(&m->str, (const char *)payload + sizeof cf, len - sizeof cf,
				    &gid))
		return -1;
	uint64_t *slot = u64map_upsert(&m->frame_names, FRAME_KEY(im, cf.pc), &created);
	if (!slot)
		return -1;
	*slot = gid;
	return 0;
}

uint32_t model_frame_name(const struct model *m, uint32_t image, uint64_t pc)
{
	const uint64_t *v = u64map_find(&m->frame_names, FRAME_KEY(image, pc));
	return v ? (uint32_t)*v : STR_NONE;
}

uint32_t model_stack_index(const struct model *m, uint32_t image, uint32_t id)
{
	uint64_t key = (uint64_t)image << 32 | id;
	struct u64map_slot *f = m->stack_front ? u64map_front_at(m->stack_front, key) : NULL;
	if (f && f->key == key)
		return (uint32_t)f->val;
	uint64_t *v = u64map_find(&m->stack_ix, key);
	if (v && f) /* an index, once given, stays */
		*f = (struct u64map_slot){key, *v};
	return v ? (uint32_t)*v : 0;
}

static int mod_cmp(const void *a, const void *b, void *ctx)
{
	const struct model *m = ctx;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	const struct model_module *x = &m->mods[i], *y = &m->mods[j];
	if (x->image != y->image)
		return x->image < y->image ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return i < j ? -1 : i > j;
}

int model_modules_index(struct model *m)
{
	free(m->mod_order);
	m->mod_order = NULL;
	m->nmod_order = 0;
	if (!m->nmods || m->nmods > UINT32_MAX)
		return 0; /* past 2^32 modules: the walk below, slow but right */
	m->mod_order = malloc(m->nmods * sizeof(*m->mod_order));
	if (!m->mod_order)
		return -1;
	for (size_t i = 0; i < m->nmods; i++)
		m->mod_order[i] = (uint32_t)i;
	qsort_r(m->mod_order, m->nmods, sizeof(*m->mod_order), mod_cmp, m);
	m->nmod_order = m->nmods;
	return 0;
}

/* Mappings of a process do not overlap, but for a range mapped again (the latest
 * wins): of the image's modules starting at or below pc, the last MOD_BACK by start
 * are looked at. A capture that overlaps more than that (damaged or hostile) may see
 * an older mapping win; it no longer costs a walk over every module per frame. */
#define MOD_BACK 64

static const struct model_module *own_module(const struct model *m, uint32_t image, uint64_t pc)
{
	const struct model_module *best = 0;
	if (m->nmod_order != m->nmods) { /* not indexed yet (still reading) */
		for (size_t i = 0; i < m->nmods; i++) {
			const struct model_module *d = &m->mods[i];
			if (d->image == image && pc >= d->start && pc < d->end)
				best = d; /* the latest mapping of the range wins */
		}
		return best;
	}
	/* the first entry past (image, pc) */
	size_t lo = 0, hi = m->nmod_order;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct model_module *d = &m->mods[m->mod_order[mid]];
		if (d->image < image || (d->image == image && d->start <= pc))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = lo, n = 0; k-- > 0 && n < MOD_BACK; n++) {
		const struct model_module *d = &m->mods[m->mod_order[k]];
		if (d->image != image)
			break;
		if (pc < d->end && (!best || d > best))
			best = d;
	}
	return best;
}

/* A forked child that was gone before its maps could be read has its parent's
 * mappings (what it loaded itself stays unresolved). */
const struct model_module *model_module_of(const struct model *m, uint32_t image, uint64_t pc)
{
	for (int hops = 0; hops < 64 && image < m->nimg; hops++) {
		const struct model_module *d = own_module(m, image, pc);
		const struct image *im = &m->img[image];
		if (d || im->exec_seq)
			return d;
		const uint64_t *parent = u64map_find(&m->pid_image, (uint64_t)im->source << 32 | im->ppid);
		if (!parent || *parent == image)
			return 0;
		image = (uint32_t)*parent;
	}
	return 0;
}

void model_stacks_free(struct model *m)
{
	free(m->stacks);
	free(m->frames);
	free(m->mods);
	free(m->mod_order);
	free(m->ev_stacks_buf);
	free(m->ev_buf);
	u64map_free(&m->stack_ix);
	free(m->stack_front);
	m->stack_front = NULL;
	u64map_free(&m->frame_names);
}
