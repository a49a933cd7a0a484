/* Calls in progress at once: each call is two edges; sorted by process and time, a
 * running sum's maximum is the answer. Events reach the model per thread, not in time
 * order across threads, so the edges are kept until the end (bounded by CONC_MAX_CALLS). */
#include "formats/model/concurrency.h"

#include <stdlib.h>
#include <string.h>

#include "formats/util/vec.h"

int concurrency_add(struct concurrency *c, uint32_t pid, uint64_t t0, uint64_t t1)
{
	c->calls++;
	if (c->n / 2 >= CONC_MAX_CALLS) {
		c->partial = 1;
		return 0;
	}
	if (VEC_RESERVE(c->edges, c->cap, c->n + 2))
		return -1;
	c->edges[c->n++] = (struct conc_edge){.t = t0, .pid = pid, .delta = 1};
	/* a call of no measurable length still lasts: its end after its begin */
	c->edges[c->n++] = (struct conc_edge){.t = t1 > t0 ? t1 : t0 + 1, .pid = pid, .delta = -1};
	return 0;
}

/* By process, then time; at one instant an end before a begin: calls that only touch
 * (one returns as the next is made) are not at once. */
static int by_pid_time_end_first(const void *a, const void *b)
{
	const struct conc_edge *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return (x->delta > y->delta) - (x->delta < y->delta);
}

void concurrency_finish(struct concurrency *c)
{
	qsort(c->edges, c->n, sizeof *c->edges, by_pid_time_end_first);
	int64_t open = 0;
	for (size_t i = 0; i < c->n; i++) {
		if (i && c->edges[i].pid != c->edges[i - 1].pid)
			open = 0;
		open += c->edges[i].delta;
		if (open > 0 && (uint64_t)open > c->most)
			c->most = (uint64_t)open;
	}
	free(c->edges);
	c->edges = NULL;
	c->n = c->cap = 0;
}

void concurrency_free(struct concurrency *c)
{
	free(c->edges);
	memset(c, 0, sizeof *c);
}
