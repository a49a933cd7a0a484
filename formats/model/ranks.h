/* Across the ranks of a job in one capture: each rank's collectives matched with the other
 * ranks' (the k-th call of a name on each rank is one collective), the time each rank
 * waited in them for the last to arrive, and per step each rank's time in and out of
 * collectives: who the straggler is. Ranks are the images a launcher gave a rank
 * (CAP_JOB); one image per rank, the one with the most collectives. */
#ifndef PROF_FORMATS_RANKS_H
#define PROF_FORMATS_RANKS_H

#include <stddef.h>
#include <stdint.h>

#include "formats/util/u64map.h"

struct model;
struct prof_event;

/* Collectives kept per image: beyond, they are counted in ranks.dropped and left out. */
#define RANKS_MAX_COLLECTIVES (1u << 20)

enum rank_step_kind {
	RANK_STEPS_NONE,
	RANK_STEPS_MARKS,     /* libprof.step() / prof_step() */
	RANK_STEPS_PROFILER,  /* torch.profiler's ProfilerStep#N starts */
	RANK_STEPS_OPTIMIZER, /* torch.optim's Optimizer.step#... ends */
	RANK_STEPS_KINDS
};

enum rank_slow_by { RANK_SLOW_WAITING, RANK_SLOW_CPU, RANK_SLOW_WALL };
#define RANKS_STANDS_OUT_PCT 130
#define RANKS_STANDS_OUT_NS 10000000ull

struct rank_coll {
	uint32_t name; /* gid */
	uint64_t t0, t1, wait;
};

struct rank_step {
	uint64_t t0, t1;         /* [t0, t1): between two boundaries */
	uint64_t coll_ns, wait_ns; /* of collectives starting in it */
};

/* A table row's calls on one rank image. */
struct rank_row {
	uint32_t image, cat, name; /* cat, name: gids */
	uint64_t count, total;
};

/* One name across the ranks compared (ranks_finish): its time on each rank, a rank
 * without calls counted as 0. */
struct rank_name {
	uint32_t cat, name;
	size_t ranks;                 /* ranks that called it */
	uint64_t min, median, max;    /* of the ranks' total times */
	uint64_t calls_min, calls_max;
	int32_t slowest;              /* the rank of max */
};

struct rank_proc {
	uint32_t image;
	int32_t rank;
	struct rank_coll *coll;
	size_t ncoll, coll_cap;
	uint64_t *bound[RANK_STEPS_KINDS]; /* step boundaries seen, per kind */
	size_t nbound[RANK_STEPS_KINDS], bound_cap[RANK_STEPS_KINDS];
	/* the name of each Optimizer.step# boundary: the steps are one optimizer's, the one
	 * called most (a second one, a GAN's, would halve them) */
	uint32_t *optimizer;
	size_t optimizer_cap;
	uint64_t active_ns; /* in its threads' top-level recorded calls, summed (ranks_active) */
	/* ranks_finish's */
	uint64_t matched, coll_ns, wait_ns;
	uint64_t wall_ns; /* the image's start to its end; 0: it has no end */
	uint64_t cpu_ns;  /* user + system of every thread; 0: not known */
	struct rank_step *steps; /* ranks.nsteps of them */
};

struct ranks {
	struct rank_proc *p;
	size_t n, cap;
	struct u64map by_image; /* image -> index + 1 */
	uint32_t coll_cat;      /* gid of "collective"; STR_NONE until known */
	uint64_t dropped;       /* collectives beyond RANKS_MAX_COLLECTIVES */
	const struct model *m;  /* whose names the gids are */
	struct model *mw;       /* the same: ranks_finish puts the clocks' refinement there */
	struct rank_row *rows;  /* per (image, table row) */
	size_t nrows, rows_cap;
	struct u64map row_ix;   /* image << 32 | row index -> rows index + 1 */
	/* ranks_finish's: names called on two ranks or more, largest max first */
	struct rank_name *names;
	size_t nnames, names_cap;
	/* ranks_finish's: the ranks compared (p[0..nranks), by rank), what the steps are */
	size_t nranks;
	int collectives;        /* some rank compared made collectives */
	uint64_t unmatched;     /* calls of a collective more on some ranks than others */
	enum rank_step_kind step_kind;
	size_t nsteps;          /* compared: as many as the rank with fewest has */
	/* ranks_finish's straggler: with collectives the rank the others waited for (the
	 * one that waited least); without, the one with the most CPU time (wall time where
	 * a rank's CPU time is not known), which stands out at RANKS_STANDS_OUT_PCT of the
	 * other ranks' median and RANKS_STANDS_OUT_NS more */
	enum rank_slow_by slow_by;
	size_t slowest;              /* index into p */
	uint64_t slow_value, others_median; /* the measure's, without collectives */
	int stands_out;
};

void ranks_init(struct ranks *r);
void ranks_free(struct ranks *r);
/* One complete event (cat, name: gids) or step instant of an image that has a rank. */
int ranks_event(struct ranks *r, struct model *m, uint32_t image, uint32_t cat, uint32_t name,
		const struct prof_event *e);
/* A complete event of an image that has a rank, counted in table row `row` (cat, name). */
int ranks_row(struct ranks *r, struct model *m, uint32_t image, size_t row, uint32_t cat,
	      uint32_t name, uint64_t dur);
/* A complete event (not an allocator call) at the top of its thread, of an image that has
 * a rank: its time is the rank's active time. */
int ranks_active(struct ranks *r, struct model *m, uint32_t image, uint64_t dur);
/* Rank i's time waiting in collectives: in the steps compared, or in all without steps. */
uint64_t ranks_waited(const struct ranks *r, size_t i);
/* Matches, waits and steps, once every event was seen. 0 or -1. */
int ranks_finish(struct ranks *r);
const char *ranks_step_kind_name(enum rank_step_kind k);
const char *ranks_slow_by_name(enum rank_slow_by b);

#endif
