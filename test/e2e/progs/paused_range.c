/* A range pushed while paused (not recorded) holds one recorded after the resume; a
 * sibling follows. The unrecorded range must not be a nesting level: the recorded one is
 * at the top, and the sibling's self time is its own whole time. */
#include "e2e.h"

int main(void)
{
	if (!prof_pause)
		return 2;
	prof_pause();
	prof_range_push("unrecorded outer");
	prof_resume();
	prof_range_push("inner");
	usleep(3000);
	prof_range_pop();
	prof_range_pop();
	prof_range_push("sibling");
	usleep(1000);
	prof_range_pop();
	printf("pid=%d\n", (int)getpid());
	return 0;
}
