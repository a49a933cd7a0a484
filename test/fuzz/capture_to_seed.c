/* Turns a raw capture into a seed for fuzz_capture: each record as type (1 byte),
 * payload length (u16) and payload, events records cut to at most MAX_EVENTS events and
 * the whole to at most MAX_BYTES (records past it are left out), so seeds stay small.
 * Usage: capture_to_seed CAPTURE SEED */
#include <stdio.h>
#include <string.h>

#include "formats/capture/capture.h"

#define MAX_EVENTS 40
#define MAX_BYTES 8192

struct out {
	FILE *f;
	size_t used;
};

static int put(void *ctx, uint32_t type, const void *payload, uint32_t len)
{
	struct out *o = ctx;
	unsigned char buf[sizeof(struct cap_events) + MAX_EVENTS * sizeof(struct prof_event)];
	if (type == CAP_EVENTS) {
		struct cap_events h;
		memcpy(&h, payload, sizeof h);
		if (h.count > MAX_EVENTS)
			h.count = MAX_EVENTS;
		len = (uint32_t)(sizeof h + h.count * sizeof(struct prof_event));
		memcpy(buf, payload, len);
		memcpy(buf, &h, sizeof h);
		payload = buf;
	}
	if (len > 0xffff || o->used + 3 + len > MAX_BYTES)
		return 0;
	unsigned char hdr[3] = {(unsigned char)type, (unsigned char)len,
				(unsigned char)(len >> 8)};
	fwrite(hdr, 1, 3, o->f);
	fwrite(payload, 1, len, o->f);
	o->used += 3 + len;
	return 0;
}

int main(int argc, char **argv)
{
	char err[512];
	if (argc != 3) {
		fprintf(stderr, "usage: capture_to_seed CAPTURE SEED\n");
		return 2;
	}
	struct out o = {fopen(argv[2], "wb"), 0};
	if (!o.f) {
		perror(argv[2]);
		return 2;
	}
	int rc = cap_read(argv[1], put, &o, err, sizeof err);
	if (fclose(o.f) || rc) {
		fprintf(stderr, "capture_to_seed: %s\n", rc ? err : "write failed");
		return 2;
	}
	return 0;
}
