/* Starting another program of the session (child_setup.h): no heap, no stdio, only
 * async-signal-safe calls. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload/common/child_setup.h"
#include "preload/common/session.h"

/* parts (NULL-terminated) one after the other into out (len > 0), NUL-terminated; -1
 * when out is too short (what fits is kept, as snprintf does) */
static int concat(char *out, size_t len, const char *const *parts)
{
	size_t n = 0;
	for (; *parts; parts++) {
		size_t k = strlen(*parts);
		if (n + k >= len) {
			memcpy(out + n, *parts, len - 1 - n);
			out[len - 1] = 0;
			return -1;
		}
		memcpy(out + n, *parts, k);
		n += k;
	}
	out[n] = 0;
	return 0;
}

int prof_find_sibling(const char *self, const char *const *rels, int mode,
		      const char *override, char *out, size_t len)
{
	if (override && *override) {
		size_t n = strlen(override);
		if (n >= len)
			return -1;
		memcpy(out, override, n + 1);
		return access(out, mode) ? -1 : 0;
	}
	const char *slash = self ? strrchr(self, '/') : NULL;
	if (!slash)
		return -1;
	size_t dlen = (size_t)(slash - self);
	for (; *rels; rels++) {
		if (dlen + 1 + strlen(*rels) >= len)
			continue;
		memcpy(out, self, dlen);
		if (!concat(out + dlen, len - dlen, (const char *[]){"/", *rels, NULL}) &&
		    access(out, mode) == 0)
			return 0;
	}
	return -1;
}

/* var ("NAME=value") is one of names */
static int named(const char *var, const char *const *names)
{
	for (; *names; names++) {
		size_t n = strlen(*names);
		if (!strncmp(var, *names, n) && var[n] == '=')
			return 1;
	}
	return 0;
}

size_t prof_env_drop(char *const *env, const char *const *drop, char **out)
{
	size_t k = 0;
	for (; env && *env; env++)
		if (!named(*env, drop))
			out[k++] = *env;
	out[k] = NULL;
	return k;
}

int prof_preload_entry(char *out, size_t len, const char *lib, const char *old)
{
	if (old && (!*lib || strstr(old, lib)))
		return concat(out, len, (const char *[]){"LD_PRELOAD=", old, NULL});
	if (old && *old)
		return concat(out, len, (const char *[]){"LD_PRELOAD=", lib, ":", old, NULL});
	return concat(out, len, (const char *[]){"LD_PRELOAD=", lib, NULL});
}

int prof_tunables_entry(char *out, size_t len, const char *old)
{
	if (old && strstr(old, PROF_HUGE_MALLOC_TUNABLE))
		return concat(out, len, (const char *[]){"GLIBC_TUNABLES=", old, NULL});
	if (old && *old)
		return concat(out, len, (const char *[]){"GLIBC_TUNABLES=", old, ":",
							 PROF_HUGE_MALLOC_TUNABLE "=1", NULL});
	return concat(out, len,
		      (const char *[]){"GLIBC_TUNABLES=", PROF_HUGE_MALLOC_TUNABLE "=1", NULL});
}

struct close_walk {
	int low;
};

static int close_listed(const char *name, int dir_fd, void *arg)
{
	const struct close_walk *w = arg;
	long fd = 0;
	const char *p = name;
	for (; *p >= '0' && *p <= '9' && fd <= INT32_MAX; p++)
		fd = fd * 10 + (*p - '0');
	if (p != name && !*p && fd >= w->low && fd != dir_fd && fd <= INT32_MAX)
		close((int)fd);
	return 0;
}

int prof_close_from_listed(int low)
{
	/* /proc/self/fd is read by descriptor number: closing the ones already listed skips
	 * none of the rest */
	struct close_walk w = {low};
	return prof_proc_dir_each("/proc/self/fd", close_listed, &w) < 0 ? -1 : 0;
}

void prof_close_from(int low)
{
#ifdef SYS_close_range
	if (syscall(SYS_close_range, (unsigned)low, ~0u, 0) == 0)
		return;
#endif
	if (prof_close_from_listed(low) == 0)
		return;
	struct rlimit rl;
	long max = getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY ||
				   rl.rlim_cur > 1 << 20
			   ? 1 << 20
			   : (long)rl.rlim_cur;
	for (long fd = low; fd < max; fd++)
		close((int)fd);
}
