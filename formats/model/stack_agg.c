/* Streaming gathering of calls by (thread, stack, category, name); see stack_agg.h. */
#include "formats/model/stack_agg.h"

#include <stdlib.h>
#include <string.h>

#include "formats/util/vec.h"

void stack_agg_init(struct stack_agg *a)
{
	memset(a, 0, sizeof(*a));
	u64map_init(&a->thread_stack);
	u64map_init(&a->leaf);
	u64map_init(&a->entry_ix);
}

void stack_agg_free(struct stack_agg *a)
{
	for (size_t i = 0; i < a->nthr; i++) {
		free(a->thr[i].child);
		free(a->thr[i].stacked_child);
	}
	free(a->thr);
	free(a->e);
	u64map_free(&a->thread_stack);
	u64map_free(&a->leaf);
	u64map_free(&a->entry_ix);
	memset(a, 0, sizeof(*a));
}

/* A small dense id for key, numbered in order of first sight; UINT32_MAX when out of
 * memory. */
static uint32_t dense_id(struct u64map *ix, uint64_t key, uint32_t *next)
{
	int created;
	uint64_t *v = u64map_upsert(ix, key, &created);

	if (!v)
		return UINT32_MAX;
	if (created)
		*v = (*next)++;
	return (uint32_t)*v;
}

static struct stack_entry *entry_for(struct stack_agg *a, uint32_t thread, uint32_t stack,
				     uint32_t cat, uint32_t name)
{
	uint32_t pair = dense_id(&a->thread_stack, (uint64_t)thread << 32 | stack, &a->npairs);
	uint32_t leaf = dense_id(&a->leaf, (uint64_t)cat << 32 | name, &a->nleaves);
	int created;
	uint64_t *v;

	if (pair == UINT32_MAX || leaf == UINT32_MAX ||
	    !(v = u64map_upsert(&a->entry_ix, (uint64_t)pair << 32 | leaf, &created)))
		return NULL;
	if (!created)
		return &a->e[*v];
	if (VEC_RESERVE(a->e, a->cap, a->n + 1)) {
		u64map_remove(&a->entry_ix, (uint64_t)pair << 32 | leaf, NULL);
		return NULL;
	}
	*v = a->n;
	a->e[a->n] = (struct stack_entry){ .thread = thread, .stack = stack, .cat = cat,
					   .name = name };
	return &a->e[a->n++];
}

/* The thread's per-level arrays, with room for level depth + 1. */
static struct stack_agg_thread *thread_for(struct stack_agg *a, uint32_t thread, unsigned depth)
{
	if (thread >= a->nthr) {
		size_t n = thread + 1;
		struct stack_agg_thread *t = realloc(a->thr, n * sizeof(*t));
		if (!t)
			return NULL;
		memset(t + a->nthr, 0, (n - a->nthr) * sizeof(*t));
		a->thr = t;
		a->nthr = n;
	}
	struct stack_agg_thread *t = &a->thr[thread];
	size_t need = (size_t)depth + 2;
	if (need > t->cap) {
		uint64_t *c = realloc(t->child, need * sizeof(*c));
		if (!c)
			return NULL;
		t->child = c;
		uint64_t *s = realloc(t->stacked_child, need * sizeof(*s));
		if (!s)
			return NULL;
		t->stacked_child = s;
		memset(c + t->cap, 0, (need - t->cap) * sizeof(*c));
		memset(s + t->cap, 0, (need - t->cap) * sizeof(*s));
		t->cap = need;
	}
	return t;
}

static int one_call(struct stack_agg *a, struct model *m, uint32_t image, uint32_t thread,
		    const struct prof_event *e, uint32_t stack)
{
	uint32_t name = model_name(m, image, e->name), cat = model_category(m, image, e->cat);
	struct stack_agg_thread *t = thread_for(a, thread, e->depth);
	struct stack_entry *x;
	uint64_t dur = e->t1 > e->t0 ? e->t1 - e->t0 : 0;
	unsigned d = e->depth;

	if (name == STR_NONE || cat == STR_NONE || !t ||
	    !(x = entry_for(a, thread, stack, cat, name)))
		return -1;
	/* Calls of a thread come in end order, callees first: what the level below gathered
	 * was spent inside this call. */
	x->self += dur > t->child[d + 1] ? dur - t->child[d + 1] : 0;
	t->child[d + 1] = 0;
	if (e->cat != PROF_CAT_MEMORY) /* the tables' Self rule (stats.c) */
		t->child[d] += dur;
	/* Flame graphs add a frame's children to its own value: a call with a stack keeps
	 * what its stacked callees do not already count, so nothing is counted twice; a
	 * call without one hands its stacked callees' time up to its caller. */
	if (stack) {
		uint64_t below = t->stacked_child[d + 1];
		x->stacked_self += dur > below ? dur - below : 0;
		t->stacked_child[d] += dur;
		a->stacked++;
		a->stacked_other += e->cat != PROF_CAT_MEMORY;
	} else {
		t->stacked_child[d] += t->stacked_child[d + 1];
	}
	t->stacked_child[d + 1] = 0;
	x->count++;
	x->total += dur;
	if (dur > x->max)
		x->max = dur;
	if (e->cat == PROF_CAT_MEMORY && (e->flags & PROF_EVF_ALLOCS) && e->a) {
		x->allocs++;
		x->bytes += e->b;
	}
	return 0;
}

int stack_agg_on_events(void *ctx, struct model *m, uint32_t image, uint32_t thread,
			const struct prof_event *ev, uint32_t n)
{
	struct stack_agg *a = ctx;

	for (uint32_t i = 0; i < n; i++) {
		if (ev[i].type == PROF_EV_LOST && thread < a->nthr && a->thr[thread].cap) {
			/* calls that ended in the gap never reported to their callers */
			struct stack_agg_thread *t = &a->thr[thread];
			memset(t->child, 0, t->cap * sizeof(*t->child));
			memset(t->stacked_child, 0, t->cap * sizeof(*t->stacked_child));
		}
		if (ev[i].type != PROF_EV_COMPLETE)
			continue;
		uint32_t key = m->ev_stacks ? m->ev_stacks[i] : 0;
		if (a->by_detail) {
			const struct prof_event *e = &ev[i];
			uint32_t gid = (e->flags & PROF_EVF_DETAIL) && e->a && e->a <= UINT32_MAX
					       ? model_name(m, image, (uint32_t)(e->a - 1))
					       : STR_NONE;
			key = gid == STR_NONE ? 0 : gid + 1;
		}
		if (one_call(a, m, image, thread, &ev[i], key))
			return -1;
	}
	return 0;
}
