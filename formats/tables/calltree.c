/* The call tree (calltree.h). A thread's complete events arrive in the order they
 * ended, each with its nesting depth when it began (docs/FORMATS.md, "Self time"): the
 * calls that ended at depth d + 1 since the last one at depth d are that one's children.
 * So each depth keeps the subtrees that ended there and wait for their parent, merged by
 * name as they come: memory grows with the distinct call paths, not with the calls. */
#include "formats/tables/calltree.h"

#include <stdlib.h>
#include <string.h>

#include "formats/model/model.h"
#include "formats/tables/textfmt.h"
#include "formats/util/vec.h"

struct node {
	uint32_t name, cat; /* gids */
	uint64_t calls, total, self;
	struct node **kids;
	size_t nkids, cap;
};

struct waiting {        /* one thread's */
	struct node **at;   /* per depth: a holder whose kids ended there, parent to come */
	size_t ndepth;
	uint32_t image, tid;
};

struct tree {
	const struct calltree_options *o;
	struct waiting *thr; /* by the model's thread index */
	size_t nthr;
	uint32_t memory_cat;
	int failed;
};

static void node_free(struct node *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->nkids; i++)
		node_free(n->kids[i]);
	free(n->kids);
	free(n);
}

/* n (owned) added among h's kids, merged into the kid of its name when there is one. */
static int adopt(struct node *h, struct node *n)
{
	for (size_t i = 0; i < h->nkids; i++) {
		struct node *k = h->kids[i];
		if (k->name != n->name || k->cat != n->cat)
			continue;
		k->calls += n->calls;
		k->total += n->total;
		k->self += n->self;
		int rc = 0;
		for (size_t j = 0; j < n->nkids && !rc; j++) {
			rc = adopt(k, n->kids[j]);
			n->kids[j] = NULL;
		}
		n->nkids = 0;
		node_free(n);
		return rc;
	}
	if (VEC_RESERVE(h->kids, h->cap, h->nkids + 1)) {
		node_free(n);
		return -1;
	}
	h->kids[h->nkids++] = n;
	return 0;
}

static struct waiting *waiting_of(struct tree *t, struct model *m, uint32_t image,
				  uint32_t thread)
{
	if (thread >= t->nthr) {
		size_t n = thread + 1;
		struct waiting *w = realloc(t->thr, n * sizeof *w);
		if (!w)
			return NULL;
		memset(w + t->nthr, 0, (n - t->nthr) * sizeof *w);
		t->thr = w;
		t->nthr = n;
	}
	struct waiting *w = &t->thr[thread];
	w->image = image;
	w->tid = m->thr[thread].tid;
	return w;
}

static struct node *holder(struct waiting *w, size_t d)
{
	if (d >= w->ndepth) {
		size_t n = d + 1;
		struct node **at = realloc(w->at, n * sizeof *at);
		if (!at)
			return NULL;
		memset(at + w->ndepth, 0, (n - w->ndepth) * sizeof *at);
		w->at = at;
		w->ndepth = n;
	}
	if (!w->at[d] && !(w->at[d] = calloc(1, sizeof *w->at[d])))
		return NULL;
	return w->at[d];
}

/* What waits below depth `from` on w has no parent coming (a gap, the end): to depth 0
 * (the thread's roots). */
static int give_up_waiting(struct waiting *w, size_t from)
{
	struct node *roots = holder(w, 0);
	if (!roots)
		return -1;
	for (size_t d = w->ndepth; d-- > from && d > 0;) {
		struct node *h = w->at[d];
		if (!h)
			continue;
		for (size_t i = 0; i < h->nkids; i++)
			if (adopt(roots, h->kids[i]))
				return -1;
		h->nkids = 0;
	}
	return 0;
}

static int one(struct tree *t, struct model *m, struct waiting *w, uint32_t image,
	       const struct prof_event *e)
{
	if (e->type == PROF_EV_LOST)
		return give_up_waiting(w, 1);
	if (e->type != PROF_EV_COMPLETE || (!t->o->memory && e->cat == PROF_CAT_MEMORY))
		return 0;
	struct node *n = calloc(1, sizeof *n);
	if (!n)
		return -1;
	n->name = model_name(m, image, e->name);
	n->cat = model_category(m, image, e->cat);
	n->calls = 1;
	n->total = e->t1 > e->t0 ? e->t1 - e->t0 : 0;
	/* work that does not nest with the thread's calls (GPU rows, NVTX start/end) is a
	 * root of its own */
	size_t d = e->depth >= PROF_EVENT_DEPTH_MAX ? 0 : e->depth;
	uint64_t below = 0;
	if (e->depth < PROF_EVENT_DEPTH_MAX && d + 1 < w->ndepth && w->at[d + 1]) {
		struct node *h = w->at[d + 1];
		n->kids = h->kids;
		n->nkids = h->nkids;
		n->cap = h->cap;
		h->kids = NULL;
		h->nkids = h->cap = 0;
		for (size_t i = 0; i < n->nkids; i++)
			below += n->kids[i]->total;
	}
	n->self = n->total > below ? n->total - below : 0;
	struct node *h = holder(w, d);
	if (!h) {
		node_free(n);
		return -1;
	}
	return adopt(h, n);
}

static int on_events(void *ctx, struct model *m, uint32_t image, uint32_t thread,
		     const struct prof_event *ev, uint32_t n)
{
	struct tree *t = ctx;
	struct waiting *w = waiting_of(t, m, image, thread);
	if (!w)
		return -1;
	for (uint32_t i = 0; i < n; i++)
		if (one(t, m, w, image, &ev[i]))
			return -1;
	return 0;
}

static int by_total(const void *a, const void *b)
{
	const struct node *x = *(struct node *const *)a, *y = *(struct node *const *)b;
	return (x->total < y->total) - (x->total > y->total);
}

static void print_node(FILE *out, const struct model *m, const struct calltree_options *o,
		       struct node *n, unsigned level, uint64_t whole)
{
	if (o->min_percent > 0 && whole && 100.0 * (double)n->total / (double)whole < o->min_percent)
		return;
	char total[TEXTFMT_LEN], self[TEXTFMT_LEN];
	fmt_dur(total, n->total);
	fmt_dur(self, n->self);
	size_t nl, cl;
	const char *name = model_str(m, n->name, &nl), *cat = model_str(m, n->cat, &cl);
	char shown[4 * 160 + 4], shown_cat[4 * 40 + 4];
	fmt_name(shown, name, nl, 160);
	fmt_name(shown_cat, cat, cl, 40);
	fprintf(out, "%10s %10s %9llu  %*s%s  [%s]\n", total, self, (unsigned long long)n->calls,
		(int)(2 * level), "", shown, shown_cat);
	if (o->max_depth && level + 1 >= o->max_depth)
		return;
	if (n->nkids > 1) /* a leaf has no array: qsort wants one */
		qsort(n->kids, n->nkids, sizeof *n->kids, by_total);
	for (size_t i = 0; i < n->nkids; i++)
		print_node(out, m, o, n->kids[i], level + 1, whole);
}

static void print_tree(FILE *out, const struct model *m, const struct calltree_options *o,
		       struct node *roots, const char *title)
{
	uint64_t whole = 0;
	for (size_t i = 0; i < roots->nkids; i++)
		whole += roots->kids[i]->total;
	char w[TEXTFMT_LEN];
	fmt_dur(w, whole);
	fprintf(out, "\n%s: %s in %zu root call%s\n", title, w, roots->nkids,
		roots->nkids == 1 ? "" : "s");
	fprintf(out, "%10s %10s %9s  %s\n", "Total", "Self", "Calls", "Call path  [category]");
	if (roots->nkids > 1)
		qsort(roots->kids, roots->nkids, sizeof *roots->kids, by_total);
	for (size_t i = 0; i < roots->nkids; i++)
		print_node(out, m, o, roots->kids[i], 0, whole);
}

/* The threads' roots, per process (or per thread), printed. */
static int print_all(FILE *out, struct model *m, struct tree *t)
{
	for (size_t i = 0; i < m->nimg; i++) {
		const struct image *im = &m->img[i];
		if (im->folded)
			continue;
		struct node proc = {0};
		int any = 0;
		for (size_t k = 0; k < t->nthr; k++) {
			struct waiting *w = &t->thr[k];
			if (!w->ndepth || w->image != i || give_up_waiting(w, 1))
				continue;
			struct node *roots = w->at[0];
			if (!roots || !roots->nkids)
				continue;
			if (t->o->threads) {
				char title[160];
				size_t nl = 0;
				const char *tn = m->thr[k].name != STR_NONE
							 ? model_str(m, m->thr[k].name, &nl) : "";
				snprintf(title, sizeof title, "pid %u, thread %u %.*s", im->pid,
					 w->tid, (int)(nl < 60 ? nl : 60), tn);
				print_tree(out, m, t->o, roots, title);
				continue;
			}
			for (size_t j = 0; j < roots->nkids; j++)
				if (adopt(&proc, roots->kids[j]))
					return -1;
			roots->nkids = 0;
			any = 1;
		}
		if (any) {
			char title[160];
			size_t nl = 0;
			const char *label = im->label != STR_NONE ? model_str(m, im->label, &nl) : "";
			snprintf(title, sizeof title, "pid %u %.*s", im->pid, (int)(nl < 100 ? nl : 100),
				 label);
			print_tree(out, m, t->o, &proc, title);
		}
		for (size_t j = 0; j < proc.nkids; j++)
			node_free(proc.kids[j]);
		free(proc.kids);
	}
	return 0;
}

int calltree_write(const char *capture, FILE *out, const struct calltree_options *o,
		   char *err, size_t errlen)
{
	struct model m;
	struct model_fold fold = {0};
	struct tree t = {.o = o};
	model_init(&m);
	m.on_events = on_events;
	m.ctx = &t;
	int rc = o->all_processes ? model_read(&m, capture, err, errlen)
				  : model_read_folded(&m, &fold, capture, err, errlen);
	int result = rc == CAP_READ_OK ? 0 : rc == CAP_READ_DAMAGED ? 1 : 2;
	if (result < 2) {
		fprintf(out, "libprof call tree: %s   (%llu events)\n", model_command(&m),
			(unsigned long long)m.events);
		if (print_all(out, &m, &t)) {
			snprintf(err, errlen, "%s: out of memory", capture);
			result = 2;
		}
	}
	for (size_t k = 0; k < t.nthr; k++) {
		for (size_t d = 0; d < t.thr[k].ndepth; d++)
			node_free(t.thr[k].at[d]);
		free(t.thr[k].at);
	}
	free(t.thr);
	model_fold_free(&fold);
	model_free(&m);
	return result;
}
