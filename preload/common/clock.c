#include "preload/common/clock.h"

#include <cpuid.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int prof_clock_is_tsc;

static int cpu_has_invariant_tsc(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000007)
		return 0;
	__get_cpuid(0x80000007, &a, &b, &c, &d);
	return (d >> 8) & 1;
}

static int kernel_clocksource_is_tsc(void)
{
	char buf[32] = {0};
	int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
		      O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	return n >= 3 && strncmp(buf, "tsc", 3) == 0;
}

enum prof_clock_kind prof_clock_detect(const char *override)
{
	if (override && strcmp(override, "mono") == 0)
		return PROF_CLOCK_MONO;
	if (override && strcmp(override, "tsc") == 0)
		return cpu_has_invariant_tsc() ? PROF_CLOCK_TSC : PROF_CLOCK_MONO;
	return cpu_has_invariant_tsc() && kernel_clocksource_is_tsc() ? PROF_CLOCK_TSC
								     : PROF_CLOCK_MONO;
}

void prof_clock_use(enum prof_clock_kind kind)
{
	prof_clock_is_tsc = kind == PROF_CLOCK_TSC;
}

void prof_clock_pair(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best_gap = UINT64_MAX;
	for (int i = 0; i < 8; i++) {
		uint64_t a = __rdtsc();
		uint64_t n = prof_mono_ns();
		uint64_t b = __rdtsc();
		if (b - a < best_gap) {
			best_gap = b - a;
			*tsc = a + (b - a) / 2;
			*ns = n;
		}
	}
}

/* A rate in nanoseconds per tick as a multiplier << 32 (a TSC runs at 0.1 to 10 GHz). */
static uint64_t fixed(double ns_per_tick)
{
	if (!(ns_per_tick > 0))
		ns_per_tick = 1.0;
	if (ns_per_tick > 1e6)
		ns_per_tick = 1e6;
	return (uint64_t)(ns_per_tick * 4294967296.0 + 0.5);
}

void prof_clock_map_init(struct prof_clock_map *m, enum prof_clock_kind kind,
			 uint64_t first_tsc, uint64_t first_ns)
{
	memset(m, 0, sizeof *m);
	m->kind = kind;
	if (kind != PROF_CLOCK_TSC) {
		m->first_ns = first_ns ? first_ns : prof_mono_ns();
		return;
	}
	if (!first_tsc)
		prof_clock_pair(&first_tsc, &first_ns);
	m->first_tsc = first_tsc;
	m->first_ns = first_ns;
	uint64_t now = prof_mono_ns();
	if (now < first_ns + 2000000)
		usleep((useconds_t)((first_ns + 2000000 - now) / 1000));
	uint64_t tsc, ns;
	prof_clock_pair(&tsc, &ns);
	/* the first segment runs through the first pair at the rate measured since */
	double rate = tsc > first_tsc ? (double)(ns - first_ns) / (double)(tsc - first_tsc) : 1.0;
	m->seg[0] = (struct prof_clock_segment){.tsc = first_tsc, .ns = first_ns,
						.mult = fixed(rate)};
	m->nseg = 1;
	m->newest = 0;
}

/* The period over which an update closes the gap to its pair: the collector's. */
#define SLEW_NS 100e6
/* A gap past this is a jump (a suspended VM, a clock set), not noise: taken at once. */
#define STEP_NS 1000000

void prof_clock_map_update(struct prof_clock_map *m)
{
	if (m->kind != PROF_CLOCK_TSC || !m->nseg)
		return;
	uint64_t tsc, ns;
	prof_clock_pair(&tsc, &ns);
	struct prof_clock_segment *cur = &m->seg[m->newest];
	if (tsc <= cur->tsc || tsc <= m->first_tsc)
		return;
	double rate = (double)(ns - m->first_ns) / (double)(tsc - m->first_tsc);
	uint64_t here = prof_clock_segment_ns(cur, tsc);
	int64_t gap = (int64_t)(ns - here);
	struct prof_clock_segment next = {.tsc = tsc, .ns = here, .mult = fixed(rate)};
	if (gap > STEP_NS || gap < -STEP_NS) {
		next.ns = ns;
	} else {
		/* closed over the next period, never faster than half the rate: increasing */
		double fix = (double)gap / (SLEW_NS / rate);
		if (fix > rate / 2)
			fix = rate / 2;
		if (fix < -rate / 2)
			fix = -rate / 2;
		next.mult = fixed(rate + fix);
	}
	m->newest = (m->newest + 1) % PROF_CLOCK_SEGMENTS;
	m->seg[m->newest] = next;
	if (m->nseg < PROF_CLOCK_SEGMENTS)
		m->nseg++;
}

const struct prof_clock_segment *prof_clock_segment_of(const struct prof_clock_map *m,
						       uint64_t t)
{
	/* newest first: a tick is almost always in the newest segment or the one before */
	for (uint32_t k = 0; k < m->nseg; k++) {
		const struct prof_clock_segment *g =
			&m->seg[(m->newest + PROF_CLOCK_SEGMENTS - k) % PROF_CLOCK_SEGMENTS];
		if ((int64_t)(t - g->tsc) >= 0 || k + 1 == m->nseg)
			return g;
	}
	return &m->seg[m->newest];
}
