/* Walking a stack by its frame pointers where the code keeps them, without libunwind.
 *
 * A return address belongs to a function that keeps a frame pointer when the function
 * (its bounds from libunwind's unwind tables, asked once per address) begins with the
 * standard prologue: `push %rbp` first (after an `endbr64`), then `mov %rsp,%rbp` among
 * its first instructions (GCC schedules argument moves between the two). From then on
 * until its epilogue %rbp holds the frame's base, with the caller's %rbp at [%rbp] and
 * the return address at [%rbp + 8]; every call inside it lies between the two. Code that
 * does not (most of Debian 12, which builds without frame pointers) ends the walk there,
 * and stack.c finds the rest of the stack as before.
 *
 * A prologue found is believed only once libunwind agreed: the first walk through an
 * address is checked against libunwind's frames by stack.c (prof_fp_checked). The
 * verdict per address is kept in a lock-free table shared by the threads. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "preload/stacks/fp_walk.h"
#include "preload/wrap/dl.h"

#define VERDICT_BITS 16
#define VERDICT_SIZE (1u << VERDICT_BITS)
#define VERDICT_PROBES 16
#define FP_FRAME_LIMIT (64u << 10) /* a frame this large is not believed */

enum { VERDICT_FP = 1, VERDICT_NOT_FP = 2, VERDICT_FP_UNCHECKED = 3 };

/* The main thread's stack ends above this (argv, the environment): a frame pointer of
 * its stack found above it is not read. */
extern void *__libc_stack_end;

/* (return address << 2) | verdict; 0 is empty. Addresses stay below 2^47. */
static _Atomic uint64_t verdicts[VERDICT_SIZE];

/* libunwind's unw_proc_info_t begins with the procedure's bounds; the rest is room for
 * what follows them (72 bytes on x86-64). */
struct proc_bounds {
	uint64_t start_ip, end_ip;
	char rest[256];
};

static int (*proc_info_by_ip)(void *as, uint64_t ip, struct proc_bounds *pi, void *arg);
static void *local_as;

int prof_fp_setup(void *libunwind)
{
	void **as = prof_real_dlsym(libunwind, "_ULx86_64_local_addr_space");
	proc_info_by_ip = (int (*)(void *, uint64_t, struct proc_bounds *, void *))
		prof_real_dlsym(libunwind, "_ULx86_64_get_proc_info_by_ip");
	local_as = as ? *as : 0;
	return proc_info_by_ip && local_as ? 0 : -1;
}

#define PROLOGUE_SPAN 24 /* bytes after the push where the mov may come */

/* After `push %rbp` ... `mov %rsp,%rbp` (and an endbr64 before them): where the body
 * begins, or 0 when the function does not begin so. */
static uint64_t body_after_prologue(uint64_t start, uint64_t end)
{
	static const unsigned char endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
	const unsigned char *p = (const unsigned char *)start;
	if (end - start >= 4 && !memcmp(p, endbr64, 4))
		p += 4;
	if ((uint64_t)p >= end || *p != 0x55) /* push %rbp */
		return 0;
	for (const unsigned char *q = p + 1; q + 3 <= p + 1 + PROLOGUE_SPAN &&
					     (uint64_t)(q + 3) <= end; q++)
		/* mov %rsp,%rbp in either encoding */
		if (q[0] == 0x48 && ((q[1] == 0x89 && q[2] == 0xe5) || (q[1] == 0x8b && q[2] == 0xec)))
			return (uint64_t)(q + 3);
	return 0;
}

static int classify(uint64_t ra)
{
	struct proc_bounds pi;
	memset(&pi, 0, sizeof pi);
	/* ra - 1: inside the call, even when the call ends its function (noreturn) */
	if (!proc_info_by_ip || proc_info_by_ip(local_as, ra - 1, &pi, 0) < 0 ||
	    pi.start_ip >= pi.end_ip || ra - 1 < pi.start_ip || ra - 1 >= pi.end_ip)
		return VERDICT_NOT_FP;
	uint64_t body = body_after_prologue(pi.start_ip, pi.end_ip);
	return body && ra - 1 >= body ? VERDICT_FP_UNCHECKED : VERDICT_NOT_FP;
}

static uint32_t slot_of(uint64_t ra)
{
	return (uint32_t)((ra * 0x9e3779b97f4a7c15ull) >> (64 - VERDICT_BITS));
}

/* Records a verdict: a new one (unchecked or not), "not" over any (a walk disagreed with
 * libunwind), checked over unchecked (never inserted: only a prologue makes an address
 * walkable). */
static void remember(uint64_t ra, int verdict)
{
	uint64_t want = ra << 2 | (uint64_t)verdict;
	for (uint32_t i = slot_of(ra), k = 0; k < VERDICT_PROBES;
	     i = (i + 1) & (VERDICT_SIZE - 1), k++) {
		uint64_t v = atomic_load_explicit(&verdicts[i], memory_order_relaxed);
		if (!v) {
			if (verdict == VERDICT_FP)
				return;
			if (atomic_compare_exchange_strong_explicit(&verdicts[i], &v, want,
								    memory_order_relaxed,
								    memory_order_relaxed))
				return;
		}
		while (v >> 2 == ra) {
			int upgrade = verdict == VERDICT_NOT_FP ? (v & 3) != VERDICT_NOT_FP
							      : (v & 3) == VERDICT_FP_UNCHECKED;
			if (!upgrade || atomic_compare_exchange_weak_explicit(
						&verdicts[i], &v, want, memory_order_relaxed,
						memory_order_relaxed))
				return;
		}
	}
	/* a crowded table: the address is asked again next time, and walks stop there */
}

/* The verdicts this thread used lately, direct-mapped: the shared table is large and
 * a walk asks for one per frame. Only believed verdicts are kept here. */
#define NEAR_SIZE 512
static __thread uint64_t near_verdicts[NEAR_SIZE] __attribute__((tls_model("initial-exec")));

/* The verdict on the function that returns to ra, from the shared table. */
static int shared_verdict_of(uint64_t ra)
{
	if (!ra || ra >> 47)
		return VERDICT_NOT_FP;
	for (uint32_t i = slot_of(ra), k = 0; k < VERDICT_PROBES;
	     i = (i + 1) & (VERDICT_SIZE - 1), k++) {
		uint64_t v = atomic_load_explicit(&verdicts[i], memory_order_relaxed);
		if (!v)
			break;
		if (v >> 2 == ra)
			return (int)(v & 3);
	}
	int verdict = classify(ra);
	remember(ra, verdict);
	return verdict;
}

/* The verdict on the function that returns to ra. */
static int verdict_of(uint64_t ra)
{
	uint64_t *near = &near_verdicts[(ra ^ (ra >> 9)) & (NEAR_SIZE - 1)];
	if (*near >> 2 == ra)
		return (int)(*near & 3);
	int verdict = shared_verdict_of(ra);
	if (verdict != VERDICT_FP_UNCHECKED)
		*near = ra << 2 | (uint64_t)verdict;
	return verdict;
}

void prof_fp_distrust(uint64_t ra)
{
	remember(ra, VERDICT_NOT_FP);
	near_verdicts[(ra ^ (ra >> 9)) & (NEAR_SIZE - 1)] = 0;
}

void prof_fp_checked(const uint64_t *f, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		remember(f[i], VERDICT_FP);
}

/* The frames of last from j outwards are still there: each return address in its slot.
 * With frame j's address and stack pointer the same, they are then the same frames:
 * each caller's frame follows from its callee's address and stack pointer. */
static int same_from(const struct fp_last *last, unsigned j)
{
	unsigned same = 1;
	for (unsigned m = j + 1; m < last->n; m++) /* independent loads: no early exit */
		same &= *(const uint64_t *)(last->sp[m] - 8) == last->ip[m];
	return (int)same;
}

struct fp_walk prof_fp_walk(uint64_t *f, uint64_t *sps, unsigned max, uint64_t ip, uint64_t sp,
			    uint64_t bp, uint64_t stop_lo, uint64_t stop_hi,
			    const struct fp_last *last)
{
	struct fp_walk w = {.status = FP_WALK_BAD};
	unsigned n = 0, j = 0;
	uint64_t main_top = (uint64_t)__libc_stack_end;
	uint64_t top = sp <= main_top && main_top - sp < (64u << 20) ? main_top : UINT64_MAX;
	uint64_t last_ip = 0;
	int verdict = 0;
	while (n < max) {
		/* the rest as the last walk found it, when it is still there */
		while (j < last->n && last->sp[j] < sp)
			j++;
		if (j < last->n && last->sp[j] == sp && last->ip[j] == ip &&
		    (!last->truncated || n + last->n - j >= max) && same_from(last, j)) {
			unsigned k = n + last->n - j > max ? max - n : last->n - j;
			memcpy(f + n, last->ip + j, (size_t)k * 8);
			memcpy(sps + n, last->sp + j, (size_t)k * 8);
			w.status = n + k == max ? FP_WALK_FULL : FP_WALK_END;
			w.spliced = 1;
			n += k;
			break;
		}
		sps[n] = sp;
		f[n++] = ip;
		if (ip - 1 >= stop_lo && ip - 1 < stop_hi) {
			w.status = FP_WALK_STOPPED;
			break;
		}
		if (n == max) { /* the last frame kept: its caller is not wanted */
			w.status = FP_WALK_FULL;
			break;
		}
		if (ip != last_ip) /* recursion: the same address again */
			verdict = verdict_of(ip);
		last_ip = ip;
		if (verdict == VERDICT_NOT_FP) {
			w.status = FP_WALK_OTHER_CODE;
			break;
		}
		w.unchecked |= verdict == VERDICT_FP_UNCHECKED;
		/* the frame's base lies above where its callee returned to, not far, and
		 * inside the main thread's stack when that is the one walked */
		if (bp < sp || bp - sp > FP_FRAME_LIMIT || (bp & 7) || bp > top - 16) {
			w.status = FP_WALK_BAD;
			return w;
		}
		const uint64_t *frame = (const uint64_t *)bp;
		uint64_t ra = frame[1];
		w.used++;
		if (!ra) { /* the outermost frame: its caller's return address is zero */
			w.status = FP_WALK_END;
			break;
		}
		sp = bp + 16;
		bp = frame[0];
		ip = ra;
	}
	w.n = n;
	w.sp = sp;
	return w;
}
