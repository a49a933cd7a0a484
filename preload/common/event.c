/* Names of the fixed event categories (enum prof_category). */
#include "preload/common/event.h"

#include <stddef.h>

const char *prof_fixed_category_name(unsigned cat)
{
	static const char *const names[] = {
		[PROF_CAT_MEMORY] = PROF_CATNAME_MEMORY,   [PROF_CAT_USER] = PROF_CATNAME_USER,
		[PROF_CAT_MARK] = PROF_CATNAME_MARK,       [PROF_CAT_STEP] = PROF_CATNAME_STEP,
		[PROF_CAT_COUNTER] = PROF_CATNAME_COUNTER, [PROF_CAT_LOST] = PROF_CATNAME_LOST,
	};
	if (cat >= sizeof(names) / sizeof(names[0]))
		return NULL;
	return names[cat];
}
