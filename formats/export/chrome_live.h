/* The Chrome trace made as the capture is written (the collector's live outputs,
 * collector/drain/live.c), so the end writes it from what it kept instead of reading the
 * whole capture twice.
 *
 * Pass 1 (counts, the duration histogram, allocator calls shown, GPU flows) runs on each
 * event as the live model gives it. The events the trace may keep go to a spool file in
 * capture order: every event the trace always has, and the complete events whose
 * duration bucket is at least the size rule's cut as it stands then. That cut only rises
 * as events come (more events, less room), and the end's rule is the same rule over all
 * of them, so every event it keeps is in the spool, ties in the same order: the end
 * writes the spool through pass 2's writer and makes the trace `prof export` makes of the
 * capture: the same events, but in another order where images were held, names as the
 * whole capture gives them (an event read before its name's record is named, not
 * "<unknown:N>"), and thread metadata in the live model's order. The spool is compacted
 * to what the current cut keeps when it doubles: about the trace's size, not the
 * capture's; it gives up when the disk runs short (the end then reads the capture). */
#ifndef PROF_FORMATS_CHROME_LIVE_H
#define PROF_FORMATS_CHROME_LIVE_H

#include <stdint.h>
#include <stdio.h>

#include "formats/model/model.h"
#include "formats/model/outputs.h"

struct chrome_live;
/* A live trace over model m (given its events by model_live), spooling into spool_fd (a
 * read-write file the caller made and unlinked; closed by chrome_live_free). NULL when
 * out of memory. */
struct chrome_live *chrome_live_new(const struct chrome_options *o, struct model *m,
				    int spool_fd);
/* A model_events_fn; ctx is the struct chrome_live. */
int chrome_live_events(void *ctx, struct model *m, uint32_t image, uint32_t thread,
		       const struct prof_event *ev, uint32_t n);
/* Once the model is read whole (model_live_finish said 0): writes the trace into out
 * (closed here), which messages call json_path; fold is the one the model took, damage
 * the read's damage line or NULL. Returns as chrome_export_opts. */
int chrome_live_write(struct chrome_live *l, const struct model_fold *fold, const char *damage,
		      const char *json_path, FILE *out, struct output_summary *sum, char *err,
		      size_t errlen);
/* hold: another process (a dump: a fork of this one) reads the spool as it is now, so it
 * is only appended to (not compacted in place) until released. */
void chrome_live_hold(struct chrome_live *l, int hold);
void chrome_live_free(struct chrome_live *l);
/* The spool is never compacted below this many records, and the cut looked at again
 * every this many complete events (tests make them small). */
extern uint64_t chrome_live_spool_min, chrome_live_recut_every;

#endif
