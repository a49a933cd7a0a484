/* What prof html shows, computed from a capture (html_data.c): the steps and their
 * phases, the live bytes over time, a window of the timeline, and the advice, as fields
 * of the JSON object the page (report.html) carries and renders. */
#ifndef PROF_FORMATS_HTML_DATA_H
#define PROF_FORMATS_HTML_DATA_H

#include <stdint.h>
#include <stdio.h>

#include "formats/util/json_writer.h"

struct html_options {
	const char *fp_point;   /* the operator a step's forward begins with (MindInsight's
				   FP_POINT); NULL: the first operator after the data wait */
	const char *bp_point;   /* the one its backward ends with (BP_POINT); NULL: the last
				   autograd node (*Backward*) */
	const char *data_point; /* a name a data wait's range starts with; NULL: PyTorch's
				   enumerate(DataLoader)#... and DataPipe */
	int64_t window_start_ns, window_end_ns; /* the timeline's window from the origin
						   (start -1: a few steps in the middle, or
						   the first seconds; end 0: to the end) */
	uint64_t max_timeline_events;            /* 0: HTML_TIMELINE_MAX */
	int all_processes;
};

#define HTML_TIMELINE_MAX 100000 /* the timeline's events: the longest in the window */
#define HTML_STEPS_LISTED 20000  /* steps listed one by one (the averages take all) */
#define HTML_MEMORY_POINTS 1000  /* points per memory curve, about */

/* Per step, what its time went to. */
enum html_phase {
	PH_DATA, PH_FORWARD, PH_BACKWARD, PH_OPTIMIZER, PH_OTHER, /* stacked: the step */
	PH_COLLECTIVE, PH_GPU,                                   /* beside it */
	PH_N
};

/* Writes the fields "steps", "timeline", "memory" and "advice" of the page's data into
 * w (an object already open). report_json is prof report's JSON of the same
 * capture (its rows, processes and ranks feed the advice). 0, 1 (damaged: what came
 * before), 2 (err says why). */
int html_data_write(struct jw *w, const char *capture, const struct html_options *o,
		    const char *report_json, size_t report_len, char *err, size_t errlen);

#endif
