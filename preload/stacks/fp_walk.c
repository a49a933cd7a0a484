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
#include <sys/mman.h>

#include "preload/stacks/fp_walk.h"
#include "preload/wrap/dl.h"

#define VERDICT_FIRST_BITS 16
#define VERDICT_TABLES 12 /* up to 2^27 addresses */
#define FP_FRAME_LIMIT (64u << 10) /* a frame this large is not believed */

enum { VERDICT_FP = 1, VERDICT_NOT_FP = 2, VERDICT_FP_UNCHECKED = 3 };

/* The main thread's stack ends above this (argv, the environment): a frame pointer of
 * its stack found above it is not read. */
extern void *__libc_stack_end;

/* (return address << 2) | verdict; 0 is empty. Addresses stay below 2^47. A chain of
 * tables, each twice the last, the newest used: a fixed table filled during a heavy
 * import (`import torch` walks tens of thousands of return addresses), after which
 * no address of the training loop could be confirmed and every capture through it went
 * to libunwind (issue 29: 2x a CNN step). Older tables stay readable: an address found
 * only there is copied into the newest. The first is static, so that a walk before any
 * growth (or in a handler during one) needs no system call. */
static _Atomic uint64_t first_verdicts[1u << VERDICT_FIRST_BITS];
static _Atomic(_Atomic uint64_t *) verdict_tables[VERDICT_TABLES] = {first_verdicts};
static _Atomic unsigned verdict_ntables = 1;
static _Atomic uint64_t verdicts_filled; /* entries of the newest table */
static atomic_flag verdicts_growing = ATOMIC_FLAG_INIT;

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

static uint64_t verdict_mask(unsigned table)
{
	return ((uint64_t)1 << (VERDICT_FIRST_BITS + table)) - 1;
}

static uint64_t slot_of(uint64_t ra)
{
	return (ra * 0x9e3779b97f4a7c15ull) >> 32;
}

/* Whether verdict b replaces a recorded a: "not" over any (a walk disagreed with
 * libunwind), checked over unchecked. */
static int stronger(int b, int a)
{
	return b == VERDICT_NOT_FP ? a != VERDICT_NOT_FP : b == VERDICT_FP && a == VERDICT_FP_UNCHECKED;
}

/* Records a verdict in table tab: new (unchecked or not) where the address has none
 * (a checked one is never inserted: only a prologue makes an address walkable), a
 * stronger one over what is there. 0 when the table has no room on the way. */
static int put_verdict(_Atomic uint64_t *tab, uint64_t mask, uint64_t ra, int verdict)
{
	uint64_t want = ra << 2 | (uint64_t)verdict;
	for (uint64_t i = slot_of(ra) & mask, k = 0; k <= mask; i = (i + 1) & mask, k++) {
		uint64_t v = atomic_load(&tab[i]);
		if (!v) {
			if (verdict == VERDICT_FP)
				return 1;
			if (atomic_compare_exchange_strong(&tab[i], &v, want)) {
				if (tab == atomic_load(&verdict_tables[atomic_load(&verdict_ntables) - 1]))
					atomic_fetch_add(&verdicts_filled, 1);
				return 1;
			}
		}
		while (v >> 2 == ra) {
			if (!stronger(verdict, (int)(v & 3)) ||
			    atomic_compare_exchange_weak(&tab[i], &v, want))
				return 1;
		}
	}
	return 0;
}

/* A table twice the newest's with its verdicts, published; then the verdicts recorded in
 * the old one during the copy are put in too. Only the thread holding verdicts_growing. */
static void grow_verdicts(unsigned n)
{
	if (n >= VERDICT_TABLES)
		return;
	size_t bytes = sizeof(uint64_t) << (VERDICT_FIRST_BITS + n);
	void *p = mmap(0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	_Atomic uint64_t *tab = p, *old = atomic_load(&verdict_tables[n - 1]);
	uint64_t mask = verdict_mask(n), moved = 0;
	for (int pass = 0; pass < 2; pass++) {
		for (uint64_t i = 0; i <= mask >> 1; i++) {
			uint64_t v = atomic_load(&old[i]);
			if (v && put_verdict(tab, mask, v >> 2, (int)(v & 3)) && !pass)
				moved++;
		}
		if (!pass) {
			atomic_store(&verdict_tables[n], tab);
			atomic_store(&verdicts_filled, moved);
			atomic_store(&verdict_ntables, n + 1);
		}
	}
}

/* Records a verdict in the newest table, which grows at half full. A thread that put
 * it into a table another thread's growth then replaced puts it into the new one too,
 * so that no verdict is left behind (a distrusted address believed again would walk a
 * wrong frame). A table that cannot grow and is full drops it: the address is asked
 * again next time, and walks stop there. */
static void remember(uint64_t ra, int verdict)
{
	unsigned n = atomic_load(&verdict_ntables);
	if (atomic_load(&verdicts_filled) >= (verdict_mask(n - 1) + 1) / 2 &&
	    !atomic_flag_test_and_set(&verdicts_growing)) {
		if (atomic_load(&verdict_ntables) == n)
			grow_verdicts(n);
		atomic_flag_clear(&verdicts_growing);
	}
	for (;;) {
		n = atomic_load(&verdict_ntables);
		if (!put_verdict(atomic_load(&verdict_tables[n - 1]), verdict_mask(n - 1), ra,
				 verdict) ||
		    atomic_load(&verdict_ntables) == n)
			return;
	}
}

void prof_fp_after_fork(void)
{
	atomic_flag_clear(&verdicts_growing);
}

/* The verdicts this thread used lately, direct-mapped: the shared table is large and
 * a walk asks for one per frame. Only believed verdicts are kept here. */
#define NEAR_SIZE 512
/* mapped at the thread's first walk (4 KiB of static TLS before: glibc takes that from
 * every thread's stack); NEAR_NONE when it cannot be, or after the thread's exit hook */
static __thread uint64_t *near_verdicts __attribute__((tls_model("initial-exec")));
#define NEAR_NONE ((uint64_t *)1)
#define NEAR_BYTES (NEAR_SIZE * sizeof(uint64_t))

static uint64_t *near_table(void)
{
	uint64_t *t = near_verdicts;
	if (__builtin_expect(!t, 0)) {
		void *m = mmap(0, NEAR_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		near_verdicts = t = m == MAP_FAILED ? NEAR_NONE : m;
	}
	return t == NEAR_NONE ? 0 : t;
}

void prof_fp_thread_exit(void)
{
	uint64_t *t = near_verdicts;
	near_verdicts = NEAR_NONE;
	if (t && t != NEAR_NONE)
		munmap(t, NEAR_BYTES);
}

/* The verdict on the function that returns to ra, from the shared tables: the newest,
 * then the older ones (an address found only there is copied into the newest), then
 * libunwind's bounds of the function. */
static int shared_verdict_of(uint64_t ra)
{
	if (!ra || ra >> 47)
		return VERDICT_NOT_FP;
	unsigned n = atomic_load_explicit(&verdict_ntables, memory_order_acquire);
	for (unsigned t = n; t--;) {
		_Atomic uint64_t *tab = atomic_load_explicit(&verdict_tables[t], memory_order_acquire);
		uint64_t mask = verdict_mask(t);
		for (uint64_t i = slot_of(ra) & mask, k = 0; k <= mask; i = (i + 1) & mask, k++) {
			uint64_t v = atomic_load_explicit(&tab[i], memory_order_relaxed);
			if (!v)
				break;
			if (v >> 2 == ra) {
				if (t != n - 1)
					remember(ra, (int)(v & 3));
				return (int)(v & 3);
			}
		}
	}
	int verdict = classify(ra);
	remember(ra, verdict);
	return verdict;
}

/* The verdict on the function that returns to ra. */
static int verdict_of(uint64_t ra)
{
	uint64_t *table = near_table();
	if (!table)
		return shared_verdict_of(ra);
	uint64_t *near = &table[(ra ^ (ra >> 9)) & (NEAR_SIZE - 1)];
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
	uint64_t *table = near_table();
	if (table)
		table[(ra ^ (ra >> 9)) & (NEAR_SIZE - 1)] = 0;
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
