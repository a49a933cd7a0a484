/* The PROFILER_DEBUG channel (debug.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "preload/common/debug.h"

unsigned prof_debug_mask;

static const struct {
	const char *name;
	unsigned bit;
} domains[] = {
	{"got", PROF_DEBUG_GOT},     {"trace", PROF_DEBUG_TRACE}, {"drain", PROF_DEBUG_DRAIN},
	{"cupti", PROF_DEBUG_CUPTI}, {"shm", PROF_DEBUG_SHM},     {"alloc", PROF_DEBUG_ALLOC},
	{"stack", PROF_DEBUG_STACK},
};
#define NDOMAINS (sizeof domains / sizeof *domains)

static const char *domain_name(unsigned bit)
{
	for (size_t i = 0; i < NDOMAINS; i++)
		if (domains[i].bit & bit)
			return domains[i].name;
	return "?";
}

void prof_debug_say(unsigned domain, const char *fmt, ...)
{
	int saved = errno;
	char line[640];
	/* a line in two domains is labelled with one that was asked for */
	unsigned asked = domain & prof_debug_mask;
	int n = snprintf(line, sizeof line, "libprof[debug %s]: ",
			 domain_name(asked ? asked : domain));
	if (n < 0 || (size_t)n >= sizeof line)
		n = 0;
	va_list ap;
	errno = saved; /* %m says the caller's */
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	n += m;
	if ((size_t)n > sizeof line - 2)
		n = (int)sizeof line - 2; /* cut off: still one line */
	line[n++] = '\n';
	if (write(2, line, (size_t)n) < 0) {
	}
	errno = saved;
}

unsigned prof_debug_parse(const char *text, char *unknown, size_t len)
{
	unsigned mask = 0;
	size_t used = 0;
	if (len)
		unknown[0] = 0;
	for (const char *p = text; p && *p;) {
		size_t n = strcspn(p, ",");
		const char *word = p;
		p += n + (p[n] == ',');
		unsigned bit = 0;
		if (n == 3 && !strncmp(word, "all", 3))
			bit = ~0u;
		for (size_t i = 0; i < NDOMAINS && !bit; i++)
			if (strlen(domains[i].name) == n && !strncmp(word, domains[i].name, n))
				bit = domains[i].bit;
		if (bit) {
			mask |= bit;
		} else if (len) {
			int w = snprintf(unknown + used, len - used, "%s'%.*s'", used ? ", " : "",
					 (int)n, word);
			if (w > 0 && used + (size_t)w < len)
				used += (size_t)w;
		}
	}
	unsigned all = 0;
	for (size_t i = 0; i < NDOMAINS; i++)
		all |= domains[i].bit;
	return mask & all;
}

void prof_debug_init(char *const *env)
{
	static const char key[] = "PROFILER_DEBUG=";
	const char *text = 0;
	for (char *const *e = env; e && *e; e++)
		if (!strncmp(*e, key, sizeof key - 1))
			text = *e + sizeof key - 1;
	char unknown[256];
	unsigned mask = prof_debug_parse(text, unknown, sizeof unknown);
	/* the settings row refuses such a value whole, in one line ("ignored"): so does this */
	prof_debug_mask = unknown[0] ? 0 : mask;
}
