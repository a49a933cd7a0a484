/* Safe creation of output files; see outfile.h. Why: outputs often go to shared
 * directories (a job's scratch space, /tmp). Opening a name there with O_CREAT|O_TRUNC
 * follows a symbolic link another user planted (overwriting a file of whoever runs the
 * collector), blocks forever on a FIFO, and a predictable temporary name can be
 * pre-created by someone else, who then owns the output. */
#define _GNU_SOURCE
#include "collector/output/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* a suffix past this means something is wrong with the directory, not a busy one */
#define MAX_SUFFIX 1000

static const char *kind(mode_t m)
{
	return S_ISLNK(m)                ? "a symbolic link"
	       : S_ISFIFO(m)             ? "a FIFO"
	       : S_ISDIR(m)              ? "a directory"
	       : S_ISCHR(m) || S_ISBLK(m) ? "a device"
	       : S_ISSOCK(m)             ? "a socket"
				       : "not a regular file";
}

int outfile_probe(const char *path, char *err, size_t errlen)
{
	struct stat st;
	if (lstat(path, &st))
		return 0;
	if (S_ISREG(st.st_mode))
		return 1;
	snprintf(err, errlen, "%s is %s", path, kind(st.st_mode));
	return -1;
}

static unsigned long long random64(void)
{
	unsigned long long r;
	if (getrandom(&r, sizeof r, GRND_NONBLOCK) == (ssize_t)sizeof r)
		return r;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	/* no entropy yet (early boot): still unique, the O_EXCL retry handles the rest */
	return ((unsigned long long)getpid() << 40) ^ (unsigned long long)ts.tv_nsec ^
	       ((unsigned long long)ts.tv_sec << 20) ^ (unsigned long long)(size_t)&r;
}

int outfile_temp(const char *final, char *tmp, size_t tmplen)
{
	const char *slash = strrchr(final, '/');
	int dirlen = slash ? (int)(slash - final + 1) : 0;
	const char *name = slash ? slash + 1 : final;
	for (int tries = 0; tries < 100; tries++) {
		if (snprintf(tmp, tmplen, "%.*s.%s.%016llx.tmp", dirlen, final, name,
			     random64()) >= (int)tmplen) {
			errno = ENAMETOOLONG;
			return -1;
		}
		int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	return -1;
}

int outfile_place(const char *tmp, const char *final, int replace)
{
	char why[64];
	if (replace) {
		/* rename never follows a link at final, but a FIFO or a directory there is
		 * someone else's: leave it */
		if (outfile_probe(final, why, 0) < 0)
			return 1;
		return rename(tmp, final) ? -1 : 0;
	}
	if (!renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_NOREPLACE))
		return 0;
	if (errno == EEXIST)
		return 1;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
	/* a file system without RENAME_NOREPLACE: link() does not replace either */
	if (link(tmp, final))
		return errno == EEXIST ? 1 : -1;
	unlink(tmp);
	return 0;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int outfile_save(const char *path, const char *buf, size_t len, int replace)
{
	char tmp[4352];
	int fd = outfile_temp(path, tmp, sizeof tmp);
	if (fd < 0)
		return -1;
	int rc = write_all(fd, buf, len);
	int e = errno;
	if (close(fd) && !rc) {
		rc = -1;
		e = errno;
	}
	if (!rc) {
		rc = outfile_place(tmp, path, replace);
		e = errno;
	}
	if (rc)
		unlink(tmp);
	errno = e;
	return rc;
}

int outfile_suffixed(char *out, size_t len, const char *prefix, unsigned n, const char *ext)
{
	int w = n > 1 ? snprintf(out, len, "%s-%u%s", prefix, n, ext)
		      : snprintf(out, len, "%s%s", prefix, ext);
	return w < 0 || (size_t)w >= len ? -1 : 0;
}

/* With overwrite: the capture is made under a temporary name and renamed over a regular
 * file at path, so the old file is never opened. 1 when path cannot be used. */
static int replace_capture(const char *path, int *fd)
{
	char tmp[4352];
	*fd = outfile_temp(path, tmp, sizeof tmp);
	if (*fd < 0)
		return -1;
	int rc = outfile_place(tmp, path, 1);
	if (rc) {
		int e = errno;
		unlink(tmp);
		close(*fd);
		*fd = -1;
		errno = e;
	}
	return rc;
}

/* A directory of capture parts (PROFILER_ROTATE / PROFILER_FLIGHT) made at path; with
 * replace, a regular file there is removed first. A directory there is never emptied
 * (another session may be writing its parts in it, or a user keeping files): the name
 * counts as taken. Returns 0 with its descriptor in fd, 1 when taken, -1 with errno. */
static int make_parts_dir(const char *path, int replace, int *fd)
{
	*fd = -1;
	struct stat st;
	if (replace && !lstat(path, &st) && S_ISREG(st.st_mode) && unlink(path) && errno != ENOENT)
		return -1;
	if (mkdir(path, 0777))
		return errno == EEXIST ? 1 : -1;
	*fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return *fd >= 0 ? 0 : -1;
}

/* The directories leading to path made where missing, as `mkdir -p` (and nsys) would:
 * PROFILER_OUTPUT=runs/job-%r into a new runs/ once left the job unprofiled. 0, or -1
 * with err saying which one could not be made. */
static int make_parents(const char *path, char *err, size_t errlen)
{
	char dir[4200];
	if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
		return 0; /* too long: said by the caller */
	char *slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = 0;
	struct stat st;
	if (!stat(dir, &st))
		return 0; /* there (a file there is said when the outputs are opened) */
	for (char *p = dir + 1;; p++) {
		if (*p && *p != '/')
			continue;
		char keep = *p;
		*p = 0;
		if (mkdir(dir, 0777) && errno != EEXIST) {
			snprintf(err, errlen, "cannot create the output directory %s: %s", dir,
				 strerror(errno));
			return -1;
		}
		if (!keep)
			return 0;
		*p = keep;
	}
}

static int claim(char *prefix, size_t len, int overwrite, int parts, char *err, size_t errlen)
{
	char base[4200], name[3][4300], why[4400];
	static const char *const ext[3] = {".json", ".txt", ".prof"};
	if (snprintf(base, sizeof base, "%s", prefix) >= (int)sizeof base) {
		snprintf(err, errlen, "%s: output name too long", prefix);
		return -1;
	}
	if (make_parents(base, err, errlen))
		return -1;
	for (unsigned n = 1; n <= MAX_SUFFIX; n++) {
		int taken = 0, odd = 0;
		for (int k = 0; k < 3; k++) {
			if (outfile_suffixed(name[k], sizeof name[k], base, n, ext[k]) ||
			    outfile_suffixed(why, len, base, n, "")) {
				snprintf(err, errlen, "%s: output name too long", base);
				return -1;
			}
			int p = outfile_probe(name[k], why, sizeof why);
			struct stat st;
			if (p < 0 && k == 2 && parts && !lstat(name[k], &st) && S_ISDIR(st.st_mode))
				p = 1; /* a directory of parts: taken (never replaced) */
			if (p < 0 && !odd) {
				fprintf(stderr, "libprof: %s; not writing there\n", why);
				odd = 1;
			}
			taken |= p != 0;
		}
		if (odd || (taken && !overwrite))
			continue;
		int fd, rc = 0;
		if (parts) {
			rc = make_parts_dir(name[2], overwrite, &fd);
		} else if (overwrite) {
			rc = replace_capture(name[2], &fd);
		} else {
			fd = open(name[2], O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
			rc = fd >= 0 ? 0 : errno == EEXIST ? 1 : -1; /* lost a race: move on */
		}
		if (rc == 1)
			continue;
		if (rc < 0) {
			snprintf(err, errlen, "%s: %s", name[2], strerror(errno));
			return -1;
		}
		outfile_suffixed(prefix, len, base, n, "");
		return fd;
	}
	snprintf(err, errlen, "%s: every name up to %s-%d is taken", base, base, MAX_SUFFIX);
	return -1;
}

int outfile_claim(char *prefix, size_t len, int overwrite, char *err, size_t errlen)
{
	return claim(prefix, len, overwrite, 0, err, errlen);
}

int outfile_claim_parts(char *prefix, size_t len, int overwrite, char *err, size_t errlen)
{
	return claim(prefix, len, overwrite, 1, err, errlen);
}
