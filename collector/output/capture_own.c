/* capture_own.h: the session's capture checked by device and inode before its name is
 * used again. */
#define _GNU_SOURCE
#include "collector/output/capture_own.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/output/outfile.h"

int capture_is_ours(int fd, const char *path)
{
	struct stat a, b;
	if (fd < 0)
		return 1; /* nothing to compare with: the name is all there is */
	return fstat(fd, &a) == 0 && lstat(path, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

const char *capture_source(int fd, const char *path, char *out, size_t len)
{
	if (capture_is_ours(fd, path))
		return path;
	snprintf(out, len, "/proc/self/fd/%d", fd);
	return out;
}

static int copy_all(int in, int out)
{
	char buf[1 << 16];
	off_t off = 0;
	for (;;) {
		ssize_t n = pread(in, buf, sizeof buf, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return (int)n;
		for (ssize_t done = 0; done < n;) {
			ssize_t w = write(out, buf + done, (size_t)(n - done));
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return -1;
			done += w;
		}
		off += n;
	}
}

int capture_keep_elsewhere(int fd, char *prefix, size_t plen, char *path, size_t len,
			   char *err, size_t errlen)
{
	/* the descriptor is write-only: the file is opened again for reading through it */
	char src[64];
	snprintf(src, sizeof src, "/proc/self/fd/%d", fd);
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0) {
		snprintf(err, errlen, "%s: %s", src, strerror(errno));
		return -1;
	}
	int out = outfile_claim(prefix, plen, 0, err, errlen);
	if (out < 0) {
		close(in);
		return -1;
	}
	snprintf(path, len, "%s.prof", prefix);
	int rc = copy_all(in, out);
	close(in);
	if (rc)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	if (close(out) && !rc) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		rc = -1;
	}
	return rc;
}
