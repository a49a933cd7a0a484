/* Several captures read as one (prof report a.prof b.prof, a directory of per-rank
 * captures): each session is a source of its own, told apart by its CAP_SESSION text,
 * which the parts of one capture repeat word for word and no two sessions share (it
 * holds the session's start and clock anchors). */
#ifndef PROF_FORMATS_CAPTURE_SOURCE_H
#define PROF_FORMATS_CAPTURE_SOURCE_H

#include <stdint.h>

#include "formats/util/u64map.h"

struct cap_sources {
	struct u64map by_text; /* hash of a CAP_SESSION text -> source + 1 */
	uint32_t n;            /* sources seen */
	uint32_t cur;          /* the source of the records being read */
};

void cap_sources_init(struct cap_sources *s);
void cap_sources_free(struct cap_sources *s);
/* At a CAP_SESSION record: makes its source the current one. 1 when it is new (numbered
 * n - 1), 0 when seen before (a later part), -1 when out of memory. */
int cap_sources_session(struct cap_sources *s, const void *text, uint32_t len);

#endif
