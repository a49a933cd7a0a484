/* On-disk structures of the raw capture shared by its writer and reader (the layout
 * itself is documented in capture.h and docs/FORMATS.md). */
#ifndef PROF_FORMATS_CAPTURE_INTERNAL_H
#define PROF_FORMATS_CAPTURE_INTERNAL_H

#include <stdint.h>

/* A frame is written once its raw records reach this size: big enough for zstd to find
 * repeats, small enough that a crash or damage loses little. */
#define CAP_FRAME_TARGET (1u << 20)

#define CAP_PAD8(n) (((n) + 7) & ~(size_t)7)

struct cap_file_header {
	char magic[8]; /* CAP_FILE_MAGIC with its NUL */
	uint32_t version;
	uint32_t reserved;
};

struct cap_frame_header {
	uint32_t magic; /* CAP_FRAME_MAGIC */
	uint32_t clen;  /* compressed bytes that follow */
	uint32_t rawlen;
	uint32_t seq;   /* 1 for the file's first frame, +1 each; 0 in older captures */
};

_Static_assert(sizeof(struct cap_file_header) == 16, "capture file header");
_Static_assert(sizeof(struct cap_frame_header) == 16, "capture frame header");

#endif
