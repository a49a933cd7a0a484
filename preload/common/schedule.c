/* PROFILER_SCHEDULE's parser and rule; see schedule.h. No allocation: it runs in the
 * preloaded library's settings code. */
#include "preload/common/schedule.h"

#include <stdlib.h>
#include <string.h>

int prof_schedule_parse(const char *text, struct prof_schedule *out)
{
	static const char *const keys[] = {"wait", "warmup", "active", "repeat", "skip_first"};
	struct prof_schedule s = {0};
	uint32_t *fields[] = {&s.wait, &s.warmup, &s.active, &s.repeat, &s.skip_first};
	int seen = 0;
	if (!*text) {
		*out = s;
		return 0;
	}
	for (const char *p = text; *p;) {
		size_t klen = strcspn(p, "=,");
		int k = -1;
		for (int i = 0; i < 5; i++)
			if (strlen(keys[i]) == klen && !strncmp(p, keys[i], klen))
				k = i;
		if (k < 0 || (seen & (1 << k)) || p[klen] != '=' || p[klen + 1] < '0' ||
		    p[klen + 1] > '9')
			return -1;
		char *end;
		unsigned long v = strtoul(p + klen + 1, &end, 10);
		if (v > 1000000000ul || (*end && *end != ','))
			return -1;
		*fields[k] = (uint32_t)v;
		seen |= 1 << k;
		p = *end ? end + 1 : end;
		if (*end && !*p)
			return -1; /* a trailing comma */
	}
	if (!(seen & (1 << 2)) || !s.active)
		return -1;
	s.set = 1;
	*out = s;
	return 0;
}

const char *prof_schedule_check(const char *text)
{
	struct prof_schedule s;
	return prof_schedule_parse(text, &s)
		       ? "use wait=N,warmup=N,active=N,repeat=N,skip_first=N (active at least 1; "
			 "the others may be left out)"
		       : 0;
}

int prof_schedule_records(const struct prof_schedule *s, uint64_t step)
{
	if (!s->set)
		return 1;
	if (step < s->skip_first)
		return 0;
	uint64_t j = step - s->skip_first;
	uint64_t cycle = (uint64_t)s->wait + s->warmup + s->active;
	if (s->repeat && j / cycle >= s->repeat)
		return 0;
	return j % cycle >= (uint64_t)s->wait + s->warmup;
}
