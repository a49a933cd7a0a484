/* The progress line (progress.h). */
#include "collector/progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "formats/capture/capture.h"

static const char *label;
static uint64_t started, shown_at, last_at;
static unsigned pass = 1;
static int on, drawn;

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void progress_show(uint64_t at, uint64_t total, const char *doing)
{
	uint64_t t = now_ms();
	if (!on || t - started < 1000 || t - shown_at < 200)
		return;
	shown_at = t;
	unsigned pct = total ? (unsigned)(at * 100 / total) : 0;
	if (pct > 100)
		pct = 100;
	fprintf(stderr, "\r%s: %s%s %3u%% (%.1f of %.1f MB)\033[K", label, doing,
		pass > 1 ? " again" : "", pct, (double)at / 1e6, (double)total / 1e6);
	fflush(stderr);
	drawn = 1;
}

static void on_read(uint64_t at, uint64_t size)
{
	if (at < last_at) /* a read of the capture from its start: the next pass */
		pass++;
	last_at = at;
	progress_show(at, size, "reading");
}

void progress_start(const char *what)
{
	on = isatty(2);
	if (!on)
		return;
	label = what;
	started = now_ms();
	shown_at = last_at = 0;
	pass = 1;
	cap_read_progress = on_read;
}

void progress_end(void)
{
	if (drawn)
		fprintf(stderr, "\r\033[K");
	fflush(stderr);
	drawn = 0;
	cap_read_progress = NULL;
	on = 0;
}
