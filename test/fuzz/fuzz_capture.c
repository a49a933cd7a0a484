/* libFuzzer harness: the readers of a raw capture (formats/) on records a damaged
 * collector or a hostile .prof file could hold. The input is decoded into capture
 * records, written by the real writer (cap_writer_fdopen: framing, zstd, checksums) into
 * a memfd, and every output is made from it into /dev/null: the tables (text, CSV,
 * JSON, grouped by stack), the Chrome trace, folded stacks, the summary and a diff of it
 * with itself. The readers must never crash, hang or read outside a record.
 *
 * Input: records of 3 header bytes (type: the low 4 bits; payload length: u16) then the
 * payload. The harness keeps only what the writer itself guarantees: a CAP_EVENTS count
 * matching its length (the reader refuses others as a damaged frame, which would end
 * the read before any output code runs) and CAP_MODULE paths emptied (a path would make
 * the symbolizer open files and run addr2line). Everything else (ids, pids, counts,
 * times, depths, flags, frames) is the fuzzer's. A capture_to_seed program turns real
 * captures into seeds (run.sh). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "formats/capture/capture.h"
#include "formats/perfcheck/diff.h"
#include "formats/export/folded.h"
#include "formats/model/outputs.h"
#include "formats/perfcheck/summary.h"
#include "formats/tables/table_stacks.h"

static FILE *devnull(void)
{
	FILE *f = fopen("/dev/null", "w");
	if (!f)
		abort();
	return f;
}

/* Writes the records of data into a new memfd; its /proc path in path. The memfd's
 * descriptor, or -1. */
static int write_capture(const uint8_t *data, size_t size, char *path, size_t len)
{
	char err[256];
	int fd = memfd_create("fuzz_capture", MFD_CLOEXEC);
	if (fd < 0)
		abort();
	int wfd = dup(fd);
	struct cap_writer *w = wfd >= 0 ? cap_writer_fdopen(wfd, "fuzz.prof", 0, err, sizeof err)
					: NULL;
	if (!w)
		abort();
	while (size >= 3) {
		uint32_t type = data[0] & 15;
		size_t n = data[1] | (size_t)data[2] << 8;
		data += 3;
		size -= 3;
		if (n > size)
			n = size;
		uint8_t buf[65536 + sizeof(struct cap_events)];
		memcpy(buf, data, n);
		data += n;
		size -= n;
		if (type == CAP_EVENTS) {
			struct cap_events h = {0};
			size_t head = n < sizeof h ? n : sizeof h;
			memcpy(&h, buf, head);
			if (n < sizeof h)
				n = sizeof h;
			h.count = (uint32_t)((n - sizeof h) / sizeof(struct prof_event));
			n = sizeof h + (size_t)h.count * sizeof(struct prof_event);
			memcpy(buf, &h, sizeof h);
		} else if (type == CAP_MODULE && n > sizeof(struct cap_module)) {
			n = sizeof(struct cap_module);
		}
		if (cap_write(w, type, buf, n))
			abort();
	}
	if (cap_writer_close(w))
		abort();
	snprintf(path, len, "/proc/self/fd/%d", fd);
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], err[512];
	struct output_summary sum;
	int fd = write_capture(data, size, path, sizeof path);
	FILE *f;

	/* The model and the text tables, and the trace, for every input; the other readers
	 * in turn (by the input's length): all of them on every input runs 3 times slower. */
	struct table_options opt = {.sort = (enum table_sort)(size % 7), .format = FORMAT_TEXT};
	f = devnull();
	tables_write(path, f, &opt, &sum, err, sizeof err);
	fclose(f);
	/* a small cap on the trace's events now and then, for the size rule */
	chrome_export_to(path, "fuzz.json", devnull(), size & 8 ? 16 : 0, &sum, err, sizeof err);

	switch ((size >> 1) % 4) {
	case 0:
		opt.format = size & 1 ? FORMAT_CSV : FORMAT_JSON;
		f = devnull();
		tables_write(path, f, &opt, &sum, err, sizeof err);
		fclose(f);
		break;
	case 1:
		opt.format = size & 1 ? FORMAT_TEXT : FORMAT_JSON;
		f = devnull();
		table_stacks_write(path, f, &opt, size & 16 ? 1 : TABLE_STACKS_DEFAULT_FRAMES,
				   &sum, err, sizeof err);
		fclose(f);
		break;
	case 2: {
		struct folded_options fopt = {.weight = (enum folded_weight)(size >> 3 & 3),
					      .threads = (int)(size & 1)};
		struct folded_summary fsum;
		f = devnull();
		folded_write(path, f, &fopt, &fsum, err, sizeof err);
		fclose(f);
		break;
	}
	default: {
		struct summary s;
		summary_init(&s);
		if (summary_add_capture(&s, path, err, sizeof err) != 2) {
			f = devnull();
			summary_write_json(&s, f);
			struct diff_config cfg;
			struct diff_result r;
			struct diff_labels labels = {"base", "cur"};
			diff_config_init(&cfg);
			if (!diff_compare(&s, &s, &cfg, &r)) {
				diff_write(&r, &cfg, &labels, (enum diff_format)(size >> 3 & 3), 0,
					   f);
				diff_result_free(&r);
			}
			diff_config_free(&cfg);
			fclose(f);
		}
		summary_free(&s);
		break;
	}
	}
	close(fd);
	return 0;
}
