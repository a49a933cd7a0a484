/* Traced functions of unknown signature: per-function stubs, the entry/exit hooks the
 * trampolines call (preload/trace/trace_x86_64.S), and the per-thread shadow stack of
 * replaced return addresses.
 *
 * The real function runs on the caller's own stack with its return address replaced,
 * so stack arguments and varargs need nothing. Frames that go away without returning
 * are handled where they can be seen: longjmp leaves entries whose stack slot lies below
 * the next traced call or return (popped then), and a C++ exception needs the real
 * return addresses back in the stack before the unwinder walks it (restored in
 * _Unwind_RaiseException and friends, entries of frames gone popped at the catch).
 * Entries given up for dead are remembered a while (the "given up" ring): a coroutine
 * on a nearby stack looks just like a longjmp, and when its call does return it is sent
 * on to its real return address. Functions that return twice or never are traced at
 * entry only (trace_policy.c), so their return addresses are never replaced. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unwind.h>

#include "preload/wrap/dl.h"
#include "preload/trace/elf_sym.h"
#include "prof.h"
#include "preload/stacks/stack.h"
#include "preload/core/state.h"
#include "preload/trace/trace.h"

#define EXPORT __attribute__((visibility("default")))
#define SHADOW_MAX 256
#define STUB_SIZE 32
#define STUBS_PER_CHUNK 2048
#define MAX_TARGETS PROF_TRACE_MAX_TARGETS

struct trace_target {
	void *real;
	void *stub;
	prof_trace_hook hook; /* runs on every call, traced or not */
	uint32_t name;
	uint8_t cat;
};

struct shadow_entry {
	void **ret_slot; /* where the return address lives in the caller's frame */
	void *orig_ret;
	uint64_t t0;
	uint64_t t_end; /* prof_trace_end_now's time, 0: when it returns */
	uint64_t arg1;  /* its second integer argument, for prof_trace_end_now (hooked) */
	uint64_t comm_bytes, comm_where; /* prof_trace_set_comm's, when comm */
	uint32_t detail; /* prof_trace_set_detail's string id + 1, 0: none */
	uint32_t target;
	uint32_t depth;
	uint32_t name; /* + 1; 0: the function's own name */
	uint16_t restored; /* its real return address is back in the stack (unwinding) */
	uint8_t resume_after; /* PROF_HOOK_RESUME_AFTER */
	uint8_t unshadowed; /* real return address back while a stack is captured */
	uint8_t comm; /* a message: PROF_EVF_COMM */
};

struct shadow_stack {
	uint32_t n;
	/* The frame of prof_trace_enter or prof_trace_leave while it changes the entries,
	 * else 0. A signal handler's traced call in that window (one whose stack slot is
	 * below it) goes untraced: it would take the index being filled (a 30 us SIGALRM
	 * handler calling getppid beside a loop of getpid aborted on "unknown to the
	 * shadow stack"). A call above it on the same stack finds the frame left (a
	 * siglongjmp out of such a handler) and clears it. */
	uintptr_t editing;
	struct shadow_entry e[SHADOW_MAX];
};

/* What a hook gave for its call (prof_trace_set_comm), taken when the call is entered. */
static __thread struct {
	uint64_t bytes, where;
	uint32_t detail;
	uint8_t set;
} hook_comm __attribute__((tls_model("initial-exec")));

/* Entries popped without returning, newest last: what their return slot held. */
#define GIVEN_UP_MAX 256 /* 4 KiB a thread: as deep as the shadow stack */
struct given_up {
	uint32_t next; /* ring index */
	struct {
		void **ret_slot;
		void *orig_ret;
	} e[GIVEN_UP_MAX];
};
void prof_trace_entry(void);
void prof_trace_exit(void);

/* A thread's shadow stack and given-up entries (24 KiB): mapped at its first traced call,
 * not static TLS, which glibc takes from every thread's stack (libprof's 47 KiB of it
 * made pthread_create refuse 16 and 64 KiB stacks). TRACE_GONE once the thread's exit
 * hook unmapped it, or when it could not be mapped: its calls go untraced. */
struct trace_thread {
	struct shadow_stack sh;
	struct given_up gu;
};
#define TRACE_GONE ((struct trace_thread *)1)
static __thread struct trace_thread *trace_thr __attribute__((tls_model("initial-exec")));
#define shadow (trace_thr->sh)
#define given_up (trace_thr->gu)

/* Whether this thread has its shadow stack (every function below but the entry reads it
 * only then). */
static inline int have_shadow(void)
{
	return (uintptr_t)trace_thr > (uintptr_t)TRACE_GONE;
}

/* Mapped at the thread's first traced call (a system call, once a thread); NULL when it
 * cannot be. A signal handler's first call may map one first: this one is dropped. */
static __attribute__((noinline)) struct trace_thread *make_trace_thread(void)
{
	if (prof_thr.exiting) { /* its exit hook has run: nothing would unmap it */
		trace_thr = TRACE_GONE;
		return 0;
	}
	void *m = mmap(0, sizeof(struct trace_thread), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 0;
	if (trace_thr) {
		munmap(m, sizeof(struct trace_thread));
		return have_shadow() ? trace_thr : 0;
	}
	trace_thr = m;
	prof_thread_want_exit_hook(); /* unmapped there */
	return m;
}

void prof_trace_thread_exit(void)
{
	struct trace_thread *tt = trace_thr;
	if (!have_shadow())
		return;
	/* an entry whose slot still holds prof_trace_exit may yet return through it (a
	 * frame below start_thread's key destructors: none that glibc unwinds): kept */
	for (uint32_t i = 0; i < tt->sh.n; i++)
		if (*tt->sh.e[i].ret_slot == (void *)prof_trace_exit)
			return;
	trace_thr = TRACE_GONE;
	munmap(tt, sizeof *tt);
}
static _Atomic uint64_t came_back; /* given-up entries that returned after all */

static struct trace_target targets[MAX_TARGETS];
static _Atomic uint32_t ntargets;
static char *stub_chunk;
static uint32_t stubs_left;
static atomic_flag stub_lock = ATOMIC_FLAG_INIT;
int prof_trace_on;

static void end_entry(struct prof_thread *t, struct shadow_entry *e, uint64_t t1)
{
	struct trace_target *tg = &targets[e->target];
	/* a call that began while recording is recorded whole, even if a pause came since
	 * (an engine thread's operator outlives the wait the program stops after) */
	if (t->busy || !prof_proc)
		return;
	t->busy = 1;
	uint8_t flags = (e->detail ? PROF_EVF_DETAIL : 0) | (e->comm ? PROF_EVF_COMM : 0);
	prof_emit(t, tg->cat, PROF_EV_COMPLETE, flags, e->name ? e->name - 1 : tg->name, e->depth,
		  e->t0, t1, e->detail, e->comm ? e->comm_bytes : 0, e->comm ? e->comm_where : 0);
	t->busy = 0;
}

/* Two slots on one stack: a signal handler on an alternate stack, or a coroutine that
 * switched stacks, is far away, and its calls say nothing about the frames here. */
#define SAME_STACK(a, b) ((uintptr_t)(b) - (uintptr_t)(a) < (64u << 20))

/* An entry popped without its return: its frame is gone (longjmp), or so it seems. */
static void give_up(struct prof_thread *t, struct shadow_entry *e, uint64_t now)
{
	/* a tail-called entry's "return" is prof_trace_exit: its caller's, same slot, is
	 * the real one */
	if (e->orig_ret != (void *)prof_trace_exit) {
		uint32_t i = given_up.next++ % GIVEN_UP_MAX;
		given_up.e[i].ret_slot = e->ret_slot;
		given_up.e[i].orig_ret = e->orig_ret;
	}
	end_entry(t, e, now);
}

/* Entries whose frames are gone (longjmp past them): at or below a live stack slot. */
static void pop_dead(struct prof_thread *t, void **live_slot, uint64_t now)
{
	while (shadow.n && shadow.e[shadow.n - 1].ret_slot <= live_slot &&
	       SAME_STACK(shadow.e[shadow.n - 1].ret_slot, live_slot)) {
		struct shadow_entry *e = &shadow.e[--shadow.n];
		give_up(t, e, now);
		t->depth = e->depth;
	}
}

/* A return through a slot no live entry has: the newest entry given up with that slot
 * (a coroutine's frame taken for dead, still running), taken out of the ring. NULL
 * when there is none. */
static void *take_given_up(void **ret_slot)
{
	for (uint32_t k = 0; k < GIVEN_UP_MAX; k++) {
		uint32_t i = (given_up.next - 1 - k) % GIVEN_UP_MAX;
		if (given_up.e[i].ret_slot == ret_slot) {
			given_up.e[i].ret_slot = 0;
			return given_up.e[i].orig_ret;
		}
	}
	return 0;
}

/* Records a call of a function that must keep its return address (trace_policy.c). */
uint32_t prof_trace_entry_only_hook(const uint64_t *args)
{
	(void)args;
	return PROF_HOOK_ENTRY_ONLY;
}

/* A call of an entry-only function (trace_policy.c): a zero-length event now, and its
 * return address left as it is. */
static __attribute__((noinline)) void *entry_only_call(struct trace_target *tg,
						       void **ret_slot)
{
	struct prof_thread *t = &prof_thr;
	uint64_t now = prof_now();
	void **live = *ret_slot == (void *)prof_trace_exit ? ret_slot - 1 : ret_slot;
	if (have_shadow())
		pop_dead(t, live, now); /* its depth is below the frames a longjmp left */
	if (t->busy || !prof_proc || !__atomic_load_n(&prof_trace_on, __ATOMIC_RELAXED))
		return tg->real;
	t->busy = 1;
	prof_emit(t, tg->cat, PROF_EV_COMPLETE, 0, tg->name, t->depth, now, now, 0, 0, 0);
	t->busy = 0;
	return tg->real;
}

__attribute__((used)) void *prof_trace_enter(uint32_t idx, void **ret_slot,
					     const uint64_t *saved_args)
{
	struct trace_target *tg = &targets[idx];
	struct prof_thread *t = &prof_thr;
	uint32_t name = 0, resume_after = 0;
	uint8_t comm = 0;
	if (unlikely(tg->hook != 0)) {
		name = tg->hook(saved_args);
		comm = hook_comm.set;
		hook_comm.set = 0;
		if (unlikely(name & PROF_HOOK_ENTRY_ONLY))
			return entry_only_call(tg, ret_slot);
		if (unlikely(name & PROF_HOOK_PASS))
			return tg->real;
		resume_after = name & PROF_HOOK_RESUME_AFTER;
		name &= ~PROF_HOOK_RESUME_AFTER;
	}
	/* A traced function that tail-calls another (jmp through the PLT) hands it its own
	 * return slot, still holding prof_trace_exit: the caller's entry stays, the callee
	 * nests inside it and returns into prof_trace_exit again, which ends the caller. */
	void **live = *ret_slot == (void *)prof_trace_exit ? ret_slot - 1 : ret_slot;
	if (unlikely(!have_shadow()) &&
	    (trace_thr == TRACE_GONE || t->busy || !make_trace_thread())) {
		if (resume_after)
			prof_resume();
		return tg->real;
	}
	if (unlikely(shadow.editing)) {
		if (!((uintptr_t)live > shadow.editing && SAME_STACK(shadow.editing, live)))
			return tg->real; /* a signal handler's, inside an edit */
		shadow.editing = 0;      /* that edit's frame was left by a siglongjmp */
	}
	shadow.editing = (uintptr_t)__builtin_frame_address(0);
	atomic_signal_fence(memory_order_seq_cst);
	if (unlikely(shadow.n) && shadow.e[shadow.n - 1].ret_slot <= live &&
	    SAME_STACK(shadow.e[shadow.n - 1].ret_slot, live))
		pop_dead(t, live, prof_now());
	if ((!__atomic_load_n(&prof_trace_on, __ATOMIC_RELAXED) && !resume_after) || t->busy ||
	    shadow.n >= SHADOW_MAX) {
		atomic_signal_fence(memory_order_seq_cst);
		shadow.editing = 0;
		if (resume_after)
			prof_resume(); /* cannot wait for the return: start now */
		return tg->real;
	}
	struct shadow_entry *e = &shadow.e[shadow.n];
	e->ret_slot = ret_slot;
	e->orig_ret = *ret_slot;
	e->target = idx;
	e->name = name;
	e->restored = 0;
	e->unshadowed = 0;
	e->resume_after = resume_after != 0;
	e->depth = t->depth++;
	e->t_end = 0;
	e->detail = 0;
	e->comm = comm;
	if (unlikely(comm)) {
		e->detail = hook_comm.detail;
		e->comm_bytes = hook_comm.bytes;
		e->comm_where = hook_comm.where;
	}
	e->arg1 = tg->hook ? saved_args[1] : 0;
	e->t0 = prof_now();
	shadow.n++;
	*ret_slot = (void *)prof_trace_exit;
	atomic_signal_fence(memory_order_seq_cst);
	shadow.editing = 0;
	return tg->real;
}

__attribute__((used)) void *prof_trace_leave(void **sp)
{
	uint64_t t1 = prof_now();
	struct prof_thread *t = &prof_thr;
	void **ret_slot = sp - 1;
	if (unlikely(!have_shadow())) {
		prof_warn("a traced function returned through %p on a thread without a shadow "
			  "stack; aborting", (void *)ret_slot);
		abort();
	}
	uintptr_t outer_edit = shadow.editing; /* 0 unless returning inside a handler's edit */
	shadow.editing = (uintptr_t)__builtin_frame_address(0);
	atomic_signal_fence(memory_order_seq_cst);
	/* deeper entries still here were skipped by a longjmp out of their frames */
	uint32_t k = shadow.n, n_before = shadow.n;
	while (k && shadow.e[k - 1].ret_slot != ret_slot)
		k--;
	if (unlikely(!k)) {
		/* an entry given up for dead came back (a coroutine on a stack near this one) */
		void *orig = take_given_up(ret_slot);
		if (orig) {
			if (atomic_fetch_add(&came_back, 1) == 0)
				prof_warn("a traced call returned after its frame was taken for "
					  "gone (a coroutine?); its event ended early");
			*ret_slot = orig;
			atomic_signal_fence(memory_order_seq_cst);
			shadow.editing = outer_edit;
			return orig;
		}
		/* Unreachable unless a function that returns twice is missing from
		 * trace_policy.c and was traced: its return address is lost. */
		prof_warn("a traced function returned through %p, unknown to the shadow stack; "
			  "aborting", (void *)ret_slot);
		abort();
	}
	/* Entries above it on this stack were left by a longjmp; ones on another stack (a
	 * handler on sigaltstack, a coroutine) are still running and stay. */
	struct shadow_entry e = shadow.e[k - 1];
	/* The slot is dead, but with its real return address back prof_trace_exit's CFI
	 * (return address at the caller's stack pointer - 8) lets unwinders walk past it. */
	*ret_slot = e.orig_ret;
	if (unlikely(__atomic_load_n(&prof_stack_calls_on, __ATOMIC_RELAXED)) && !t->busy &&
	    !e.resume_after && t1 - e.t0 >= prof_stack_min_ticks && prof_proc) {
		t->busy = 1;
		shadow.n = k - 1; /* the call is over: its own entry must not be unshadowed */
		uint32_t id = prof_stack_capture((uintptr_t)e.orig_ret, (uintptr_t)sp, 0);
		shadow.n = n_before;
		if (id)
			prof_emit(t, targets[e.target].cat, PROF_EV_STACK, 0, 0, e.depth, e.t0,
				  e.t0, id, 0, 0);
		t->busy = 0;
	}
	uint32_t keep = k - 1;
	for (uint32_t i = k; i < shadow.n; i++) {
		if (shadow.e[i].ret_slot < ret_slot && SAME_STACK(shadow.e[i].ret_slot, ret_slot))
			give_up(t, &shadow.e[i], t1);
		else
			shadow.e[keep++] = shadow.e[i];
	}
	shadow.n = keep;
	atomic_signal_fence(memory_order_seq_cst);
	shadow.editing = outer_edit;
	t->depth = e.depth;
	if (e.resume_after)
		prof_resume();
	else
		end_entry(t, &e, e.t_end ? e.t_end : t1);
	return e.orig_ret;
}

void prof_trace_set_detail(uint32_t id, uint8_t cat)
{
	struct shadow_entry *e = have_shadow() && shadow.n ? &shadow.e[shadow.n - 1] : 0;
	if (e && !e->detail && targets[e->target].cat == cat)
		e->detail = id + 1;
}

void prof_trace_set_comm(uint64_t bytes, uint64_t where, uint32_t detail)
{
	hook_comm.bytes = bytes;
	hook_comm.where = where;
	hook_comm.detail = detail;
	hook_comm.set = 1;
}

void prof_trace_end_now(prof_trace_hook hook, uint64_t arg1)
{
	if (!have_shadow())
		return;
	for (uint32_t i = shadow.n; i-- > 0;)
		if (targets[shadow.e[i].target].hook == hook && shadow.e[i].arg1 == arg1) {
			if (!shadow.e[i].t_end)
				shadow.e[i].t_end = prof_now();
			return;
		}
}

/* ---- stacks ---- */

/* Newest first, as restore_return_addresses does: entries chained by tail calls share
 * a slot, and only the oldest one's return address is real. */
void prof_trace_unshadow(void)
{
	void **here = (void **)__builtin_frame_address(0);
	if (!have_shadow())
		return;
	for (uint32_t i = shadow.n; i-- > 0;) {
		struct shadow_entry *e = &shadow.e[i];
		/* a slot below this frame on this stack is dead (left by a longjmp): its
		 * memory may be a live frame now */
		e->unshadowed = !(e->ret_slot < here && SAME_STACK(e->ret_slot, here)) &&
				*e->ret_slot == (void *)prof_trace_exit;
		if (e->unshadowed)
			*e->ret_slot = e->orig_ret;
	}
}

void prof_trace_reshadow(void)
{
	if (!have_shadow())
		return;
	for (uint32_t i = 0; i < shadow.n; i++)
		if (shadow.e[i].unshadowed) {
			*shadow.e[i].ret_slot = (void *)prof_trace_exit;
			shadow.e[i].unshadowed = 0;
		}
}

/* ---- C++ exceptions ---- */

static void restore_return_addresses(void);

/* pthread_exit and the like: glibc unwinds with libgcc_s's own _Unwind_ForcedUnwind,
 * past libprof's wrapper, so the real return addresses go back here (a C++ catch of
 * the forced unwind re-arms the frames below it, as for a throw). */
uint32_t prof_trace_unwind_hook(const uint64_t *args)
{
	(void)args;
	restore_return_addresses();
	return PROF_HOOK_ENTRY_ONLY;
}

/* Before the unwinder walks the stack, every return address still replaced is put
 * back. Newest first, and only where the slot still holds prof_trace_exit: an entry a
 * longjmp left behind may point into a frame that is live again (its slot overwritten),
 * or share its slot with a newer entry, and must not be written through. */
static void restore_return_addresses(void)
{
	if (!have_shadow())
		return;
	pop_dead(&prof_thr, (void **)__builtin_frame_address(0) + 1, prof_now());
	for (uint32_t i = shadow.n; i-- > 0;) {
		struct shadow_entry *e = &shadow.e[i];
		e->restored = *e->ret_slot == (void *)prof_trace_exit;
		if (e->restored)
			*e->ret_slot = e->orig_ret;
	}
}

/* The real unwinder. RTLD_NEXT searches the global scope only; C++ code loaded
 * RTLD_LOCAL (Python extensions, ctypes libraries) brings libgcc_s and libstdc++ in
 * privately while its throws still bind to these wrappers: ask those libraries by name. */
static void *real_symbol(const char *name, const char *library)
{
	void *f = prof_real_dlsym(RTLD_NEXT, name);
	if (f)
		return f;
	/* not dlopen(RTLD_NOLOAD): in a constructor that can run others early (elf_sym.c) */
	f = prof_elf_symbol_in(library, name);
	if (!f) {
		prof_warn("cannot find the real %s; aborting", name);
		abort();
	}
	return f;
}

#define REAL_UNWIND(name)                                                                  \
	static __typeof__(&name) real_##name;                                              \
	if (!real_##name)                                                                  \
		real_##name = (__typeof__(&name))real_symbol(#name, "libgcc_s.so.1")

EXPORT _Unwind_Reason_Code _Unwind_RaiseException(struct _Unwind_Exception *ex)
{
	REAL_UNWIND(_Unwind_RaiseException);
	restore_return_addresses();
	return real__Unwind_RaiseException(ex);
}

EXPORT _Unwind_Reason_Code _Unwind_Resume_or_Rethrow(struct _Unwind_Exception *ex)
{
	REAL_UNWIND(_Unwind_Resume_or_Rethrow);
	restore_return_addresses();
	return real__Unwind_Resume_or_Rethrow(ex);
}

EXPORT _Unwind_Reason_Code _Unwind_ForcedUnwind(struct _Unwind_Exception *ex,
						_Unwind_Stop_Fn stop, void *arg)
{
	REAL_UNWIND(_Unwind_ForcedUnwind);
	restore_return_addresses();
	return real__Unwind_ForcedUnwind(ex, stop, arg);
}

/* In the catching frame: entries of the frames the exception left are over; the ones
 * below (still on the stack) get their replaced return addresses back. */
EXPORT void *__cxa_begin_catch(void *ex)
{
	static void *(*real)(void *);
	if (!real)
		real = (void *(*)(void *))real_symbol("__cxa_begin_catch", "libstdc++.so.6");
	void **my_slot = (void **)__builtin_frame_address(0) + 1;
	struct prof_thread *t = &prof_thr;
	if (!have_shadow())
		return real(ex);
	pop_dead(t, my_slot, prof_now());
	for (uint32_t i = 0; i < shadow.n; i++)
		if (shadow.e[i].restored) {
			*shadow.e[i].ret_slot = (void *)prof_trace_exit;
			shadow.e[i].restored = 0;
		}
	return real(ex);
}

/* ---- stubs ---- */

/* mov $idx, %r11d; jmp *0(%rip); .quad prof_trace_entry */
static void write_stub(char *at, uint32_t idx)
{
	static const unsigned char code[] = {0x41, 0xbb, 0, 0, 0, 0, 0xff, 0x25, 0, 0, 0, 0};
	void *entry = (void *)prof_trace_entry;
	memcpy(at, code, sizeof code);
	memcpy(at + 2, &idx, 4);
	memcpy(at + sizeof code, &entry, 8);
}

void *prof_trace_stub(void *real, uint32_t name, uint8_t cat, prof_trace_hook hook)
{
	uint32_t n = atomic_load(&ntargets);
	/* keyed by name too: after a dlclose another object's function may have this address */
	for (uint32_t i = 0; i < n; i++)
		if (targets[i].real == real && targets[i].cat == cat && targets[i].name == name)
			return targets[i].stub;
	while (atomic_flag_test_and_set_explicit(&stub_lock, memory_order_acquire))
		;
	void *stub = 0;
	int err = ENOSPC;
	n = atomic_load(&ntargets);
	if (n < MAX_TARGETS) {
		if (!stubs_left) {
			/* writable and executable: a stub is added while others run */
			void *p = mmap(0, STUBS_PER_CHUNK * STUB_SIZE,
				       PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
				       -1, 0);
			if (p != MAP_FAILED) {
				stub_chunk = p;
				stubs_left = STUBS_PER_CHUNK;
			} else {
				err = errno;
			}
		}
		if (stubs_left) {
			stub = stub_chunk;
			stub_chunk += STUB_SIZE;
			stubs_left--;
			targets[n] = (struct trace_target){real, stub, hook, name, cat};
			write_stub(stub, n);
			__builtin___clear_cache(stub, (char *)stub + STUB_SIZE);
			atomic_store(&ntargets, n + 1);
		}
	}
	atomic_flag_clear_explicit(&stub_lock, memory_order_release);
	if (!stub)
		errno = err;
	return stub;
}

int prof_trace_is_stub(const void *addr)
{
	uint32_t n = atomic_load(&ntargets);
	for (uint32_t i = 0; i < n; i++)
		if (targets[i].stub == addr)
			return 1;
	return 0;
}

void prof_trace_after_fork_child(void)
{
	atomic_flag_clear(&stub_lock);
	prof_trace_patch_after_fork();
}
