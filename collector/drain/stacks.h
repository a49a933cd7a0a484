/* A process's call stacks (its segment's stack area) and the code mappings they point
 * into, copied into the capture as CAP_STACK and CAP_MODULE records. */
#ifndef PROF_COLLECTOR_STACKS_H
#define PROF_COLLECTOR_STACKS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "preload/common/shm_layout.h"
#include "collector/drain/areas.h"
#include "formats/util/u64map.h"

typedef void (*stacks_put_fn)(void *ctx, uint32_t type, const void *head, size_t hlen,
			      const void *tail, size_t tlen);

struct module_range {
	uint64_t lo, hi, offset;
	char *path;
};

struct proc_stacks {
	uint64_t read;             /* bytes of the stack area copied so far */
	struct module_range *mods; /* executable mappings already written, sorted */
	size_t nmods, cap;
	int maps_read_this_pass;
	struct u64map pcs;         /* native frames seen (the keys), to be named at the end */
	int pcs_init;
};

struct symbolizer;

/* Copies the stacks published since the last call from the stack area (its chunks
 * mapped as they are published); a frame outside every known module has
 * /proc/<pid>/maps read again (once per call) and the new mappings written. 0, or -1
 * with the problem in why when an entry or a chunk cannot be. */
int stacks_drain(struct proc_stacks *ps, struct prof_proc_shm *shm, struct shm_area *area,
		 pid_t pid, stacks_put_fn put, void *ctx, char *why, size_t whylen);
/* Writes again every stack copied so far and every mapping written (a new capture part
 * starts with them): from the area up to what was read, rechecked. */
void stacks_replay(const struct proc_stacks *ps, struct shm_area *area, pid_t pid,
		   stacks_put_fn put, void *ctx);
/* Writes the executable mappings of /proc/<pid>/maps not written yet. */
void stacks_read_maps(struct proc_stacks *ps, pid_t pid, stacks_put_fn put, void *ctx);
/* Naming the frames, once the session is over and while the modules on disk are the
 * ones that ran: every process's frames are added to one symbolizer (a forked child
 * that left no mappings of its own uses its parent's, parent may be NULL), resolved
 * together, then written as CAP_FRAME_NAME records. 0 or -1 (out of memory). */
int stacks_add_frames(struct proc_stacks *ps, const struct proc_stacks *parent,
		      struct symbolizer *sym);
void stacks_put_names(struct proc_stacks *ps, const struct proc_stacks *parent, pid_t pid,
		      uint32_t exec_seq, struct symbolizer *sym, stacks_put_fn put, void *ctx);
void stacks_free(struct proc_stacks *ps);

#endif
