/* A capture in parts (PROFILER_ROTATE, PROFILER_FLIGHT): a directory of part-NNNNNN.prof
 * files read in order as one capture. Each part repeats what its events need, so a part
 * is also readable alone; read together the model continues the repeated processes. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/capture/capture.h"

int cap_is_parts(const char *path)
{
	struct stat st;
	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

static int is_part_name(const char *name)
{
	size_t n = strlen(name), pl = strlen(CAP_PART_PREFIX), sl = strlen(CAP_PART_SUFFIX);
	if (n <= pl + sl || strncmp(name, CAP_PART_PREFIX, pl) ||
	    strcmp(name + n - sl, CAP_PART_SUFFIX))
		return 0;
	for (size_t i = pl; i < n - sl; i++)
		if (name[i] < '0' || name[i] > '9')
			return 0;
	return 1;
}

static int by_name(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	size_t lx = strlen(x), ly = strlen(y);
	/* numbered parts of one directory: a longer number is a later part */
	return lx != ly ? (lx < ly ? -1 : 1) : strcmp(x, y);
}

void cap_parts_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int cap_parts(const char *dir, char ***names, size_t *n)
{
	*names = NULL;
	*n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	char **v = NULL;
	size_t cnt = 0, cap = 0;
	int rc = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (!is_part_name(e->d_name))
			continue;
		if (cnt == cap) {
			size_t nc = cap ? cap * 2 : 16;
			char **nv = realloc(v, nc * sizeof *nv);
			if (!nv) {
				rc = -1;
				break;
			}
			v = nv;
			cap = nc;
		}
		if (asprintf(&v[cnt], "%s/%s", dir, e->d_name) < 0) {
			rc = -1;
			break;
		}
		cnt++;
	}
	int e = errno;
	closedir(d);
	if (rc) {
		cap_parts_free(v, cnt);
		errno = e ? e : ENOMEM;
		return -1;
	}
	/* one directory: the number alone decides the order */
	if (cnt)
		qsort(v, cnt, sizeof *v, by_name);
	*names = v;
	*n = cnt;
	return 0;
}

int cap_read(const char *path, cap_visit_fn visit, void *ctx, char *err, size_t errlen)
{
	if (!cap_is_parts(path))
		return cap_read_file(path, visit, ctx, err, errlen);
	if (errlen)
		err[0] = 0;
	char **parts;
	size_t n;
	if (cap_parts(path, &parts, &n)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return CAP_READ_UNUSABLE;
	}
	if (!n) {
		snprintf(err, errlen, "%s: a directory with no capture parts (%sN%s)", path,
			 CAP_PART_PREFIX, CAP_PART_SUFFIX);
		return CAP_READ_UNUSABLE;
	}
	int result = CAP_READ_OK, read_any = 0;
	char why[1024];
	/* parts are small, the capture may not be: decompressed ahead as one big file is */
	uint64_t total = 0;
	struct stat st;
	for (size_t i = 0; i < n; i++)
		if (!stat(parts[i], &st))
			total += (uint64_t)st.st_size;
	int ahead = total >= cap_read_ahead_min_bytes;
	for (size_t i = 0; i < n; i++) {
		/* a list's link (prof report a.prof b.prof): read, and named, as given */
		char real[PATH_MAX];
		struct stat lst;
		const char *part = parts[i];
		if (!lstat(part, &lst) && S_ISLNK(lst.st_mode) && realpath(part, real))
			part = real;
		int rc = cap_read_file_ahead(part, visit, ctx, why, sizeof why, ahead);
		if (rc == CAP_READ_UNUSABLE && access(parts[i], F_OK) && errno == ENOENT)
			continue; /* dropped by a flight recorder since the listing */
		if (rc != CAP_READ_OK && rc != CAP_READ_DAMAGED && rc != CAP_READ_UNUSABLE) {
			result = rc; /* the visitor stopped */
			break;
		}
		if (rc == CAP_READ_OK || rc == CAP_READ_DAMAGED)
			read_any = 1;
		if (rc != CAP_READ_OK && result == CAP_READ_OK) {
			/* the first problem is named; later parts are still read */
			snprintf(err, errlen, "%s", why);
			result = CAP_READ_DAMAGED;
		}
	}
	cap_parts_free(parts, n);
	if (!read_any && result == CAP_READ_DAMAGED)
		result = CAP_READ_UNUSABLE;
	return result;
}
