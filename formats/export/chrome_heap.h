/* The live-bytes counter tracks of the Chrome trace: "live heap bytes" per process from
 * every memory event (even those the size rule leaves out), and "GPU N live bytes" per
 * process and device from the gpu_memory events; thinned to a point budget. */
#ifndef PROF_FORMATS_CHROME_HEAP_H
#define PROF_FORMATS_CHROME_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "formats/model/model.h"
#include "formats/util/u64map.h"

struct heap_point {
	uint64_t t, live;
	uint32_t pid;
	int32_t device; /* -1: the host heap; else the GPU's ordinal */
};

struct heap_track {
	struct heap_point *pts;
	size_t n, cap;
	uint64_t changes; /* points before thinning */
	int thinned;
	struct u64map runs; /* heap_live_at's index: (pid, device) -> first << 32 | count */
	int indexed;
};

/* From the curves of every image of m (read with track_memory and keep_curves), its heap
 * and each of its devices, keeps at most about max_points points: per curve a share of
 * max_points proportional to its changes; a curve longer than its share is cut into
 * share/2 runs of equal point count and only the lowest and highest point of each run
 * kept (so the peak always is), plus the last point. 0, or -1 when out of memory. */
int heap_track_build(struct heap_track *h, struct model *m, uint64_t max_points);
void heap_track_free(struct heap_track *h);
/* The live bytes of pid's heap (device -1) or device at time t, as the track has them
 * (its last point at or before t; 0 before the first). */
uint64_t heap_live_at(struct heap_track *h, uint32_t pid, int32_t device, uint64_t t);

#endif
