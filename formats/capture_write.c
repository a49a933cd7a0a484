/* The raw capture writer: records are gathered in a raw buffer and written as one zstd
 * frame when the buffer reaches CAP_FRAME_TARGET or on cap_flush. A frame is written
 * with a single write(), and a failed write is cut off again, so that the file always
 * ends at a frame boundary and keeps every frame written before the failure. */
#include "capture.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "capture_internal.h"

struct cap_writer {
	int fd;
	char *path;
	ZSTD_CCtx *cctx;
	unsigned char *raw;
	size_t raw_len, raw_cap;
	unsigned char *out; /* frame header + compressed bytes */
	size_t out_cap;
	uint64_t bytes;     /* file size after the last complete frame */
	int err;            /* errno of the first failure; later calls fail fast with it */
	char msg[256];
};

static int fail(struct cap_writer *w, int err, const char *what, const char *reason)
{
	if (!w->err) {
		w->err = err;
		snprintf(w->msg, sizeof(w->msg), "%s %s: %s", what, w->path,
			 reason ? reason : strerror(err));
	}
	errno = w->err;
	return -1;
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
	while (n > 0) {
		ssize_t r = write(fd, p, n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0) {
			errno = EIO;
			return -1;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static void writer_free(struct cap_writer *w)
{
	if (w->fd >= 0)
		close(w->fd);
	ZSTD_freeCCtx(w->cctx);
	free(w->raw);
	free(w->out);
	free(w->path);
	free(w);
}

static int writer_setup(struct cap_writer *w)
{
	size_t r;

	w->cctx = ZSTD_createCCtx();
	if (!w->cctx)
		return -1;
	/* Level 1: the collector compresses while the application runs; the checksum lets
	 * the reader tell a damaged frame from a good one. */
	r = ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, 1);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);
	return ZSTD_isError(r) ? -1 : 0;
}

struct cap_writer *cap_writer_open(const char *path, char *err, size_t errlen)
{
	struct cap_file_header h;
	struct cap_writer *w = calloc(1, sizeof(*w));

	if (!w || !(w->path = strdup(path))) {
		snprintf(err, errlen, "%s: %s", path, strerror(ENOMEM));
		free(w);
		return NULL;
	}
	w->fd = -1;
	if (writer_setup(w)) {
		snprintf(err, errlen, "%s: cannot set up zstd compression", path);
		writer_free(w);
		return NULL;
	}
	w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, CAP_FILE_MAGIC, sizeof(h.magic));
	h.version = CAP_VERSION;
	if (w->fd < 0 || write_all(w->fd, (const unsigned char *)&h, sizeof(h))) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		writer_free(w);
		errno = e;
		return NULL;
	}
	w->bytes = sizeof(h);
	return w;
}

int cap_flush(struct cap_writer *w)
{
	struct cap_frame_header fh;
	size_t bound, clen;

	if (w->err) {
		errno = w->err;
		return -1;
	}
	if (!w->raw_len)
		return 0;
	bound = sizeof(fh) + ZSTD_compressBound(w->raw_len);
	if (bound > w->out_cap) {
		unsigned char *p = realloc(w->out, bound);
		if (!p)
			return fail(w, ENOMEM, "compressing", NULL);
		w->out = p;
		w->out_cap = bound;
	}
	clen = ZSTD_compress2(w->cctx, w->out + sizeof(fh), bound - sizeof(fh), w->raw,
			      w->raw_len);
	if (ZSTD_isError(clen))
		return fail(w, EIO, "compressing", ZSTD_getErrorName(clen));
	fh.magic = CAP_FRAME_MAGIC;
	fh.clen = (uint32_t)clen;
	fh.rawlen = (uint32_t)w->raw_len;
	fh.reserved = 0;
	memcpy(w->out, &fh, sizeof(fh));
	if (write_all(w->fd, w->out, sizeof(fh) + clen)) {
		int e = errno;
		/* Cut a partly written frame off, so the file ends on a frame boundary. */
		if (ftruncate(w->fd, (off_t)w->bytes) == 0)
			lseek(w->fd, (off_t)w->bytes, SEEK_SET);
		return fail(w, e, "writing", NULL);
	}
	w->bytes += sizeof(fh) + clen;
	w->raw_len = 0;
	return 0;
}

static int append(struct cap_writer *w, const void *p, size_t n)
{
	if (w->raw_len + n > w->raw_cap) {
		size_t cap = w->raw_cap ? w->raw_cap : CAP_FRAME_TARGET + 4096;
		unsigned char *q;
		while (cap < w->raw_len + n)
			cap *= 2;
		q = realloc(w->raw, cap);
		if (!q)
			return fail(w, ENOMEM, "buffering records for", NULL);
		w->raw = q;
		w->raw_cap = cap;
	}
	if (n)
		memcpy(w->raw + w->raw_len, p, n);
	w->raw_len += n;
	return 0;
}

int cap_write2(struct cap_writer *w, uint32_t type, const void *head, size_t head_len,
	       const void *tail, size_t tail_len)
{
	static const unsigned char zeros[8];
	struct cap_rec_hdr rh;
	size_t len = head_len + tail_len, rec;

	if (w->err) {
		errno = w->err;
		return -1;
	}
	rec = sizeof(rh) + CAP_PAD8(len);
	if (len < head_len || len > UINT32_MAX || rec > CAP_MAX_FRAME_RAW) {
		/* Not sticky: the file is still fine, only this record cannot be stored. */
		errno = EMSGSIZE;
		return -1;
	}
	if (w->raw_len + rec > CAP_MAX_FRAME_RAW && cap_flush(w))
		return -1;
	rh.type = type;
	rh.len = (uint32_t)len;
	if (append(w, &rh, sizeof(rh)) || append(w, head, head_len) ||
	    append(w, tail, tail_len) || append(w, zeros, CAP_PAD8(len) - len))
		return -1;
	if (w->raw_len >= CAP_FRAME_TARGET)
		return cap_flush(w);
	return 0;
}

int cap_write(struct cap_writer *w, uint32_t type, const void *payload, size_t len)
{
	return cap_write2(w, type, payload, len, NULL, 0);
}

int cap_writer_close(struct cap_writer *w)
{
	int rc = cap_flush(w), e = errno;

	if (close(w->fd) && !rc) {
		e = errno;
		rc = fail(w, e, "closing", NULL);
	}
	w->fd = -1;
	writer_free(w);
	errno = e;
	return rc;
}

const char *cap_writer_error(const struct cap_writer *w)
{
	return w->err ? w->msg : NULL;
}

uint64_t cap_writer_bytes(const struct cap_writer *w)
{
	return w->bytes;
}
