/* A model fed while its capture is still being written (the collector's live tables,
 * collector/drain/live.c), so the tables are ready when the program ends instead of a
 * read of the whole capture then.
 *
 * The one thing only the end tells is the launchers' fold (fold.c): an image is folded
 * when it exec's, or when it is a helper its folded launcher waited for. So each new
 * image's events and thread names are held for its first MODEL_LIVE_HOLD_NS of the
 * stream's time (launchers exec within it), then given to the model as the fold decides
 * at that moment; an image that works (fold.c: more events or other events than a
 * launcher makes) can never be folded, and is given from then on at once. At the end every image still held goes as the final fold says, and
 * the images decided earlier are checked against it: one decided otherwise that had
 * events (a launcher that ran longer than the hold, then exec'd) makes the live model
 * unusable, and the caller reads the finished capture instead. */
#ifndef PROF_FORMATS_MODEL_LIVE_H
#define PROF_FORMATS_MODEL_LIVE_H

#include "formats/model/model.h"

#define MODEL_LIVE_HOLD_NS 1000000000ull  /* 1 s */
#define MODEL_LIVE_HOLD_BYTES (64u << 20) /* held records of all images, at most */

struct model_live;
/* A live reader feeding m (set up as for model_read, without a fold); NULL when out of
 * memory. */
struct model_live *model_live_new(struct model *m);
/* A cap_visit_fn; ctx is the struct model_live. */
int model_live_visit(void *ctx, uint32_t type, const void *payload, uint32_t len);
/* Once cap_read returned rc. 0: m is what model_read_folded makes of the capture, with
 * the final fold in *f (model_fold_free it), err set when damaged (rc says so again
 * through *read_rc); 1: an image was decided otherwise than the final fold (err says
 * which): read the capture again; 2: unusable or out of memory (err says). */
int model_live_finish(struct model_live *l, int rc, const char *path, struct model_fold *f,
		      int *read_rc, char *err, size_t errlen);
/* Bytes of records held now (an image that has worked is never held: fold.c). */
size_t model_live_held_bytes(const struct model_live *l);
void model_live_free(struct model_live *l);

#endif
