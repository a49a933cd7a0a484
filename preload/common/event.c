/* Names of the fixed event categories (enum prof_category). */
#include "preload/common/event.h"

#include <stddef.h>

const char *prof_fixed_category_name(unsigned cat)
{
	static const char *const names[] = {
		[PROF_CAT_MEMORY] = "memory", [PROF_CAT_USER] = "user",
		[PROF_CAT_MARK] = "mark",     [PROF_CAT_STEP] = "step",
		[PROF_CAT_COUNTER] = "counter", [PROF_CAT_LOST] = "lost",
	};
	if (cat >= sizeof(names) / sizeof(names[0]))
		return NULL;
	return names[cat];
}
