/* Names a CSV, Parquet or HTML writer must carry whole: commas, quotes, an empty name, a
 * line break, bytes that are not UTF-8, markup that would end a script element, names of
 * JavaScript's object prototype; and counters that are not finite.
 * usage: odd_names */
#include <math.h>

#include "e2e.h"

int main(void)
{
	static const char *const names[] = {"a,b", "say \"hi\"", "", "two\nlines",
					    "bad \xff\xfe bytes", "\xe2\x82",
					    "</script><img src=x onerror=alert(1)>", "<!--",
					    "constructor", "__proto__"};
	if (!prof_range_push)
		return 2;
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		prof_range_push(names[i]);
		prof_range_pop();
	}
	prof_counter("loss", 1.5);
	prof_counter("loss", NAN);
	prof_counter("loss", INFINITY);
	printf("pid=%d\n", (int)getpid());
	return 0;
}
