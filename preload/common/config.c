#include "preload/common/config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void prof_config_defaults(struct prof_config *c)
{
	memset(c, 0, sizeof *c);
	c->profile_memory = 1;
	c->profile_api = 1;
	c->aggregate_stats = 1;
	c->dump_period_ms = 1000;
	c->ring_bytes = PROF_DEFAULT_RING_BYTES;
	c->stack_depth = PROF_DEFAULT_STACK_DEPTH;
	c->cupti = 1;
	strcpy(c->output, "libprof");
}

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

static int parse_uint(const char *s, uint64_t *out)
{
	char *end;
	if (!isdigit((unsigned char)*s))
		return -1;
	unsigned long long v = strtoull(s, &end, 10);
	if (*end)
		return -1;
	*out = v;
	return 0;
}

static int bad(char *err, size_t errlen, const char *key, const char *value, const char *why)
{
	snprintf(err, errlen, "%s=%s: %s", key, value, why);
	return -1;
}

static int set_bool(int *field, const char *key, const char *value, char *err, size_t errlen)
{
	int v;
	if (parse_bool(value, &v))
		return bad(err, errlen, key, value, "not a boolean (use 1 or 0)");
	*field = v;
	return 0;
}

static int set_output(struct prof_config *c, const char *key, const char *value, int strip_json,
		      char *err, size_t errlen)
{
	size_t n = strlen(value);
	if (n == 0)
		return bad(err, errlen, key, value, "empty output name");
	if (n >= sizeof c->output)
		return bad(err, errlen, key, "...", "output name too long");
	memcpy(c->output, value, n + 1);
	/* MXNet's filename names the trace ("profile_output.json"); we want the prefix. */
	if (strip_json && n > 5 && strcmp(value + n - 5, ".json") == 0)
		c->output[n - 5] = 0;
	return 0;
}

int prof_config_set(struct prof_config *c, const char *key, const char *value, char *err,
		    size_t errlen)
{
	if (!key || !value)
		return snprintf(err, errlen, "missing key or value"), -1;
	if (!strcmp(key, "profile_all")) {
		int v;
		if (parse_bool(value, &v))
			return bad(err, errlen, key, value, "not a boolean (use 1 or 0)");
		c->profile_memory = c->profile_api = v;
		return 0;
	}
	if (!strcmp(key, "profile_memory"))
		return set_bool(&c->profile_memory, key, value, err, errlen);
	if (!strcmp(key, "profile_api"))
		return set_bool(&c->profile_api, key, value, err, errlen);
	if (!strcmp(key, "aggregate_stats"))
		return set_bool(&c->aggregate_stats, key, value, err, errlen);
	if (!strcmp(key, "continuous_dump"))
		return set_bool(&c->continuous_dump, key, value, err, errlen);
	if (!strcmp(key, "autostart"))
		return set_bool(&c->autostart, key, value, err, errlen);
	if (!strcmp(key, "overwrite"))
		return set_bool(&c->overwrite, key, value, err, errlen);
	if (!strcmp(key, "quiet"))
		return set_bool(&c->quiet, key, value, err, errlen);
	if (!strcmp(key, "block"))
		return set_bool(&c->block, key, value, err, errlen);
	if (!strcmp(key, "filename"))
		return set_output(c, key, value, 1, err, errlen);
	if (!strcmp(key, "output"))
		return set_output(c, key, value, 0, err, errlen);
	if (!strcmp(key, "dump_period")) {
		char *end;
		double s = strtod(value, &end);
		if (end == value || *end || !(s > 0) || s > 86400)
			return bad(err, errlen, key, value, "not a period in seconds (e.g. 0.5)");
		c->dump_period_ms = (uint32_t)(s * 1000) ? (uint32_t)(s * 1000) : 1;
		return 0;
	}
	if (!strcmp(key, "ring_size")) {
		uint64_t v;
		if (prof_parse_size(value, &v))
			return bad(err, errlen, key, value, "not a size (e.g. 4M, 65536)");
		if (v < PROF_MIN_RING_BYTES || v > PROF_MAX_RING_BYTES)
			return bad(err, errlen, key, value, "ring size must be 4K..1G");
		uint64_t p = PROF_MIN_RING_BYTES;
		while (p * 2 <= v)
			p *= 2;
		c->ring_bytes = p;
		return 0;
	}
	if (!strcmp(key, "trace_max_events")) {
		uint64_t v;
		if (parse_uint(value, &v) || v == 0)
			return bad(err, errlen, key, value, "not a positive count");
		c->max_json_events = v;
		return 0;
	}
	if (!strcmp(key, "stack")) {
		static const char *modes[] = {"off", "alloc", "all"};
		for (int i = 0; i < 3; i++)
			if (!strcmp(value, modes[i])) {
				c->stack_mode = i;
				return 0;
			}
		return bad(err, errlen, key, value, "use alloc, all or off");
	}
	if (!strcmp(key, "stack_depth")) {
		uint64_t v;
		if (parse_uint(value, &v) || v == 0 || v > PROF_MAX_STACK_DEPTH)
			return bad(err, errlen, key, value, "frames must be 1..128");
		c->stack_depth = (uint32_t)v;
		return 0;
	}
	if (!strcmp(key, "stack_min_us")) {
		uint64_t v;
		if (parse_uint(value, &v) || v > 3600000000ull)
			return bad(err, errlen, key, value, "not a duration in microseconds");
		c->stack_min_ns = v * 1000;
		return 0;
	}
	if (!strcmp(key, "follow"))
		return set_bool(&c->follow, key, value, err, errlen);
	if (!strcmp(key, "cupti"))
		return set_bool(&c->cupti, key, value, err, errlen);
	if (!strcmp(key, "cuda")) {
		int on;
		if (parse_bool(value, &on))
			return bad(err, errlen, key, value, "not a boolean (use 1 or 0)");
		c->no_cuda = !on;
		return 0;
	}
	if (!strcmp(key, "framework")) {
		static const char *known[] = {"mxnet", "torch", "tensorflow", "onnxruntime", "auto"};
		for (size_t i = 0; i < sizeof known / sizeof *known; i++)
			if (!strcmp(value, known[i])) {
				strcpy(c->framework, value);
				return 0;
			}
		return bad(err, errlen, key, value,
			   "use mxnet, torch, tensorflow, onnxruntime or auto");
	}
	if (!strcmp(key, "clock")) {
		if (strcmp(value, "tsc") && strcmp(value, "mono"))
			return bad(err, errlen, key, value, "clock must be tsc or mono");
		strcpy(c->clock, value);
		return 0;
	}
	snprintf(err, errlen,
		 "unknown setting '%s' (known: profile_all, profile_memory, profile_api, "
		 "aggregate_stats, filename, continuous_dump, dump_period, output, ring_size, "
		 "block, quiet, overwrite, autostart, clock, trace_max_events, framework, follow, "
		 "stack, stack_depth, stack_min_us, cupti, cuda)",
		 key);
	return -1;
}

/* Variables that belong to the session machinery rather than to settings. */
static int is_internal(const char *name)
{
	return !strcmp(name, "SESSION") || !strcmp(name, "COLLECTOR") || !strcmp(name, "LIBRARY") ||
	       !strcmp(name, "TRACE") || !strcmp(name, "SPAWNED"); /* read by the tracer (preload/trace/got.c) */
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
		for (size_t i = 0; i < klen; i++)
			key[i] = (char)tolower((unsigned char)(*env)[9 + i]);
		key[klen] = 0;
		memcpy(line, *env + 9, klen);
		line[klen] = 0;
		if (is_internal(line))
			continue;
		if (prof_config_set(c, key, eq + 1, err, sizeof err) == 0)
			continue;
		problems++;
		if (!strncmp(err, "unknown setting", 15)) {
			snprintf(line, sizeof line, "unknown variable PROFILER_%.*s, ignored",
				 (int)klen, *env + 9);
		} else {
			snprintf(line, sizeof line, "PROFILER_%s, ignored", err);
			/* the key as the user wrote it: PROFILER_RING_SIZE=x, not ring_size=x */
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
			case 'r': {
				static const char *vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
							     "SLURM_PROCID"};
				add = "0";
				for (size_t i = 0; i < 4; i++)
					if (getenv(vars[i]) && *getenv(vars[i])) {
						add = getenv(vars[i]);
						break;
					}
				break;
			}
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
