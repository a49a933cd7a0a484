/* The settings engine: parses values by the rows of the table (settings.c) for the
 * environment, prof_config_set and the defaults; and expands output prefixes. */
#include "preload/common/config.h"
#include "preload/common/job.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parse_bool(const char *s, int *out)
{
	static const char *yes[] = {"1", "true", "yes", "on", "True", "TRUE"};
	static const char *no[] = {"0", "false", "no", "off", "False", "FALSE", ""};
	for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
		if (strcmp(s, yes[i]) == 0)
			return *out = 1, 0;
	for (size_t i = 0; i < sizeof no / sizeof *no; i++)
		if (strcmp(s, no[i]) == 0)
			return *out = 0, 0;
	return -1;
}

int prof_parse_size(const char *s, uint64_t *out)
{
	char *end;
	if (!isdigit((unsigned char)*s))
		return -1;
	unsigned long long v = strtoull(s, &end, 10);
	unsigned shift = 0;
	switch (toupper((unsigned char)*end)) {
	case 'K': shift = 10; end++; break;
	case 'M': shift = 20; end++; break;
	case 'G': shift = 30; end++; break;
	}
	if (shift && toupper((unsigned char)*end) == 'I')
		end++;
	if (toupper((unsigned char)*end) == 'B')
		end++;
	if (*end || v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

int prof_parse_uint(const char *s, uint64_t *out)
{
	char *end;
	if (!s || !isdigit((unsigned char)*s))
		return -1;
	int saved = errno;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	int bad = *end || errno;
	errno = saved;
	if (bad)
		return -1;
	*out = v;
	return 0;
}

/* One value against one row's type, stored into the field at (off, size). Returns NULL,
 * or the reason it is refused (the field unchanged); *elide: the value is too long to
 * repeat in a message. */
struct field {
	size_t off, size;
	unsigned flags;
	const char *why, *range_why;
};

static const char *type_reason(enum prof_setting_type t)
{
	switch (t) {
	case PROF_SETTING_BOOL: return "not a boolean (use 1 or 0)";
	case PROF_SETTING_UINT: return "not a whole number in range";
	case PROF_SETTING_SIZE: return "not a size (e.g. 4M, 65536)";
	case PROF_SETTING_SECONDS: return "not a period in seconds (e.g. 0.5)";
	case PROF_SETTING_ENUM: return "not one of the known values";
	case PROF_SETTING_STRING: return "empty";
	case PROF_SETTING_LIST: return "not a comma list of the known values";
	}
	return "bad value";
}

/* The index of the n bytes at s in the comma list values, or -1. */
static int value_index(const char *values, const char *s, size_t n)
{
	int i = 0;
	for (const char *v = values; *v; i++) {
		size_t len = strcspn(v, ",");
		if (len == n && !strncmp(v, s, n))
			return i;
		v += len + (v[len] == ',');
	}
	return -1;
}

static void store_uint(struct prof_config *c, const struct field *f, uint64_t v)
{
	char *p = (char *)c + f->off;
	if (f->size == sizeof(uint32_t)) {
		uint32_t u = (uint32_t)v;
		memcpy(p, &u, sizeof u);
	} else {
		memcpy(p, &v, sizeof v);
	}
}

static const char *parse_field(const struct prof_setting *r, const struct field *f,
			       struct prof_config *c, const char *value, int *elide)
{
	const char *why = f->why ? f->why : type_reason(r->type);
	const char *range_why = f->range_why ? f->range_why : why;
	char *field = (char *)c + f->off;
	switch (r->type) {
	case PROF_SETTING_BOOL: {
		int v;
		if (parse_bool(value, &v))
			return why;
		v = f->flags & PROF_SETTING_INVERT ? !v : v;
		memcpy(field, &v, sizeof v);
		return 0;
	}
	case PROF_SETTING_UINT: {
		uint64_t v;
		if (prof_parse_uint(value, &v))
			return why;
		if (v < r->min || v > r->max)
			return range_why;
		store_uint(c, f, v * (r->scale ? r->scale : 1));
		return 0;
	}
	case PROF_SETTING_SIZE: {
		uint64_t v, p = 1;
		if (prof_parse_size(value, &v))
			return why;
		if (v < r->min || v > r->max)
			return range_why;
		while (p * 2 <= v)
			p *= 2;
		store_uint(c, f, p);
		return 0;
	}
	case PROF_SETTING_SECONDS: {
		char *end;
		double s = strtod(value, &end);
		int zero_ok = (r->flags & PROF_SETTING_ZERO_OK) && s == 0;
		if (end == value || *end || !(s > 0 || zero_ok) || s > (double)r->max)
			return why;
		uint32_t ms = (uint32_t)(s * 1000) || zero_ok ? (uint32_t)(s * 1000) : 1;
		store_uint(c, f, ms);
		return 0;
	}
	case PROF_SETTING_ENUM: {
		size_t n = strlen(value);
		int i = value_index(r->values, value, n);
		if (i < 0)
			return why;
		if (!(f->flags & PROF_SETTING_TEXT))
			memcpy(field, &i, sizeof i);
		else if (n < f->size)
			memcpy(field, value, n + 1);
		else
			return range_why;
		return 0;
	}
	case PROF_SETTING_LIST:
		for (const char *v = value; *v;) {
			size_t len = strcspn(v, ",");
			if (value_index(r->values, v, len) < 0)
				return why;
			v += len;
			if (*v == ',' && !*++v)
				return why; /* "got," */
		}
		/* kept as text */
		__attribute__((fallthrough));
	case PROF_SETTING_STRING: {
		size_t n = strlen(value);
		if (n == 0 && (f->flags & PROF_SETTING_NONEMPTY))
			return why;
		if (n >= f->size)
			return *elide = 1, range_why;
		const char *bad = r->check ? r->check(value) : 0;
		if (bad)
			return bad;
		memcpy(field, value, n + 1);
		/* MXNet's filename names the trace ("profile_output.json"); we want the prefix */
		if ((f->flags & PROF_SETTING_STRIP_JSON) && n > 5 && !strcmp(value + n - 5, ".json"))
			field[n - 5] = 0;
		return 0;
	}
	}
	return why;
}

const struct prof_setting *prof_setting_find(const char *key)
{
	for (size_t i = 0; key && i < prof_nsettings; i++)
		if (!strcmp(prof_settings[i].name, key))
			return &prof_settings[i];
	return 0;
}

/* A row's value into its field, or into each field of the rows an alias sets (all take
 * the same value of the alias's type: the first refusal leaves c unchanged). */
static const char *parse_row(const struct prof_setting *r, struct prof_config *c,
			     const char *value, int *elide)
{
	*elide = 0;
	if (!r->sets) {
		struct field f = {r->off, r->size, r->flags, r->why, r->range_why};
		return parse_field(r, &f, c, value, elide);
	}
	for (const char *s = r->sets; *s;) {
		size_t len = strcspn(s, ",");
		char name[64];
		snprintf(name, sizeof name, "%.*s", (int)len, s);
		const struct prof_setting *t = prof_setting_find(name);
		if (!t)
			return "alias of an unknown setting"; /* the table's own test says which */
		struct field f = {t->off, t->size, r->flags | t->flags, r->why ? r->why : t->why,
				  r->range_why ? r->range_why : t->range_why};
		const char *why = parse_field(r, &f, c, value, elide);
		if (why)
			return why;
		s += len + (s[len] == ',');
	}
	return 0;
}

void prof_config_defaults(struct prof_config *c)
{
	memset(c, 0, sizeof *c);
	int elide;
	for (size_t i = 0; i < prof_nsettings; i++)
		if (prof_settings[i].def && !prof_settings[i].sets)
			parse_row(&prof_settings[i], c, prof_settings[i].def, &elide);
}

static int bad(char *err, size_t errlen, const char *key, const char *value, const char *why)
{
	snprintf(err, errlen, "%s=%s: %s", key, value, why);
	return -1;
}

int prof_config_set(struct prof_config *c, const char *key, const char *value, char *err,
		    size_t errlen)
{
	if (!key || !value)
		return snprintf(err, errlen, "missing key or value"), -1;
	const struct prof_setting *r = prof_setting_find(key);
	if (!r) {
		size_t n = (size_t)snprintf(err, errlen, "unknown setting '%s' (known: ", key);
		for (size_t i = 0; i < prof_nsettings && n < errlen; i++)
			n += (size_t)snprintf(err + n, errlen - n, "%s%s", i ? ", " : "",
					      prof_settings[i].name);
		if (n < errlen)
			snprintf(err + n, errlen - n, ")");
		return -1;
	}
	int elide;
	const char *why = parse_row(r, c, value, &elide);
	return why ? bad(err, errlen, key, elide ? "..." : value, why) : 0;
}

/* Variables that belong to the session machinery rather than to settings. */
static int is_internal(const char *name)
{
	return !strcmp(name, "SESSION") || !strcmp(name, "COLLECTOR") || !strcmp(name, "LIBRARY") ||
	       !strcmp(name, "SPAWNED");
}

int prof_config_from_env(struct prof_config *c, char *const *env, void (*warn)(const char *))
{
	int problems = 0;
	for (; env && *env; env++) {
		if (strncmp(*env, "PROFILER_", 9))
			continue;
		const char *eq = strchr(*env, '=');
		char key[64], err[512], line[640];
		size_t klen = eq ? (size_t)(eq - *env) - 9 : 0;
		if (!eq || klen == 0 || klen >= sizeof key)
			continue;
		memcpy(line, *env + 9, klen);
		line[klen] = 0;
		if (is_internal(line))
			continue;
		/* the key in any case, as before: PROFILER_Ring_Size is ring_size */
		for (size_t i = 0; i < klen; i++)
			key[i] = (char)tolower((unsigned char)(*env)[9 + i]);
		key[klen] = 0;
		const struct prof_setting *r = prof_setting_find(key);
		int elide;
		const char *why = r ? parse_row(r, c, eq + 1, &elide) : 0;
		if (r && !why)
			continue;
		problems++;
		if (!r)
			snprintf(line, sizeof line, "unknown variable PROFILER_%.*s, ignored",
				 (int)klen, *env + 9);
		else {
			/* the message prof_config_set gives, under the variable's name */
			bad(err, sizeof err, key, elide ? "..." : eq + 1, why);
			snprintf(line, sizeof line, "PROFILER_%s, ignored", err);
			for (char *p = line + 9; *p && *p != '='; p++)
				*p = (char)toupper((unsigned char)*p);
		}
		warn(line);
	}
	return problems;
}

int prof_expand_prefix(const char *pattern, char *out, size_t outlen, pid_t pid, time_t start,
		       char *err, size_t errlen)
{
	size_t o = 0;
	char piece[256];
	for (const char *p = pattern; *p; p++) {
		const char *add = piece;
		if (*p != '%') {
			piece[0] = *p;
			piece[1] = 0;
		} else {
			switch (*++p) {
			case 'p':
				snprintf(piece, sizeof piece, "%d", (int)pid);
				break;
			case 'h':
				if (gethostname(piece, sizeof piece - 1))
					strcpy(piece, "host");
				piece[sizeof piece - 1] = 0;
				break;
			case 't': {
				struct tm tm;
				localtime_r(&start, &tm);
				strftime(piece, sizeof piece, "%Y%m%d-%H%M%S", &tm);
				break;
			}
			case 'r':
				add = prof_job_rank() ? prof_job_rank() : "0";
				break;
			case '%':
				add = "%";
				break;
			default:
				snprintf(err, errlen, "output '%s': unknown %%%c (use %%p %%h %%t %%r %%%%)",
					 pattern, *p ? *p : ' ');
				return -1;
			}
		}
		size_t n = strlen(add);
		if (o + n >= outlen) {
			snprintf(err, errlen, "output '%s': name too long", pattern);
			return -1;
		}
		memcpy(out + o, add, n);
		o += n;
	}
	out[o] = 0;
	return 0;
}
