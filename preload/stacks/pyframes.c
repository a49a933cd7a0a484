/* Python frames of the calling thread, read from CPython's own structures the way
 * py-spy reads them from outside, but in-process and on the thread itself: a thread's
 * frame chain only changes on that thread, so no GIL is needed to walk it, and every
 * object on the chain is kept alive by it (since 3.11.1 a frame is unlinked before it is
 * cleared, gh-99729; 3.11.0 is read too). The hot path is loads and calls into CPython
 * that neither lock nor allocate (Py_IsInitialized; PyGILState_GetThisThreadState: a
 * pthread_getspecific; on a cache miss PyCode_Addr2Line: a walk of co_linetable) and
 * prof_intern on a miss.
 *
 * Struct offsets are hard-coded per minor version (x86-64, default GIL build), so libprof
 * builds without Python headers; test/unit/pyframes/layout_probe.c prints them from the
 * headers and test/unit/pyframes/run.sh checks they agree. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "preload/wrap/dl.h"
#include "preload/stacks/gil.h"
#include "preload/stacks/pyframes.h"
#include "preload/core/state.h"

/* Per minor version. Sources (CPython tags v3.11.x, v3.12.x, v3.13.x):
 *   PyThreadState.cframe / .current_frame  Include/cpython/pystate.h (struct _ts)
 *   _PyCFrame.current_frame                Include/cpython/pystate.h (3.11, 3.12)
 *   _PyInterpreterFrame.*                  Include/internal/pycore_frame.h
 *   PyCodeObject.*                         Include/cpython/code.h (_PyCode_DEF)
 *   sizeof(PyASCIIObject)                  Include/cpython/unicodeobject.h (3.11 has wstr) */
struct py_layout {
	int minor;
	int ts_cframe;         /* PyThreadState.cframe; -1: frames hang off the thread state */
	int ts_frame;          /* _PyCFrame.current_frame, or PyThreadState.current_frame */
	int fr_code;           /* f_code (3.11, 3.12) or f_executable (3.13) */
	int fr_previous;
	int fr_instr;          /* prev_instr (3.11, 3.12) or instr_ptr (3.13) */
	int fr_owner;
	int owner_cstack;      /* FRAME_OWNED_BY_CSTACK: the eval loop's entry shim; -1: none */
	int co_firstlineno;
	int co_firsttraceable; /* _co_firsttraceable: before it a frame is incomplete */
	int co_filename;
	int co_qualname;
	int co_code;           /* co_code_adaptive: _PyCode_CODE(co) */
	int str_data;          /* sizeof(PyASCIIObject): a compact ASCII str's bytes follow */
};

static const struct py_layout layouts[] = {
	{ .minor = 11, .ts_cframe = 56, .ts_frame = 8, .fr_code = 32, .fr_previous = 48,
	  .fr_instr = 56, .fr_owner = 69, .owner_cstack = -1, .co_firstlineno = 72,
	  .co_firsttraceable = 168, .co_filename = 112, .co_qualname = 128, .co_code = 184,
	  .str_data = 48 },
	{ .minor = 12, .ts_cframe = 56, .ts_frame = 0, .fr_code = 0, .fr_previous = 8,
	  .fr_instr = 56, .fr_owner = 70, .owner_cstack = 3, .co_firstlineno = 68,
	  .co_firsttraceable = 176, .co_filename = 112, .co_qualname = 128, .co_code = 192,
	  .str_data = 40 },
	{ .minor = 13, .ts_cframe = -1, .ts_frame = 72, .fr_code = 0, .fr_previous = 8,
	  .fr_instr = 56, .fr_owner = 70, .owner_cstack = 3, .co_firstlineno = 68,
	  .co_firsttraceable = 184, .co_filename = 112, .co_qualname = 128, .co_code = 200,
	  .str_data = 40 },
};

/* The same in every supported version (Include/object.h, Include/cpython/unicodeobject.h,
 * Include/internal/pycore_frame.h). */
#define OB_TYPE 8            /* PyObject.ob_type */
#define OB_SIZE 16           /* PyVarObject.ob_size: code units, for a code object */
#define STR_LENGTH 16        /* PyASCIIObject.length */
#define STR_STATE 32         /* PyASCIIObject.state: a 32-bit bit field */
#define STR_COMPACT_BIT 5    /* state.compact */
#define STR_ASCII_BIT 6      /* state.ascii */
#define OWNER_GENERATOR 1    /* FRAME_OWNED_BY_GENERATOR: never incomplete */

struct py_runtime {
	const struct py_layout *L;
	void *(*this_thread_state)(void); /* PyGILState_GetThisThreadState */
	int (*is_initialized)(void);      /* Py_IsInitialized */
	int (*addr2line)(void *code, int byte_offset); /* PyCode_Addr2Line */
	uintptr_t code_type, str_type;    /* &PyCode_Type, &PyUnicode_Type */
};

/* Filled once, then published by a release store of `active`. */
static struct py_runtime rt;
static _Atomic(const struct py_runtime *) active;

/* Per-thread cache (code object, byte offset) -> frame (name id and line). A freed code object's address
 * can be reused: the key also holds its co_filename and co_qualname pointers and
 * co_firstlineno, so a stale hit needs a new code object at the same address with the
 * same name and file objects and first line: then the line reported may be an old one.
 * That rare case is accepted. The cache is dropped when the process segment (where ids
 * live) changes. */
#define CACHE_BITS 12 /* a training step's allocations run through thousands of lines */
#define CACHE_SIZE (1u << CACHE_BITS)

struct pf_entry {
	uintptr_t code;
	uint32_t names;  /* co_filename, co_qualname and co_firstlineno, mixed */
	int32_t key;     /* byte offset << 1 | owned by a generator */
	uint32_t id;     /* the code object's name id; the entry is empty while line1 is 0 */
	uint32_t line1;  /* its line + 1 */
};

/* The thread's last walk, its frames as found (innermost first): a walk takes the frames
 * it shares with the last one at the bottom from here, without the cache (one or two
 * misses a frame: the step's allocations run through thousands of lines, and the frames
 * of a capture are mostly its neighbour's). A frame is the same when it lies at the same
 * place from the bottom, at the same address, running the same code object (with the
 * same name objects: the cache's own check) at the same instruction. */
#define WALK_MAX (2 * PROF_MAX_STACK_DEPTH + 64)
#define NOT_NAMED 1 /* a frame of the walk left unnamed: more than max before it */
struct py_walk {
	int n; /* frames in it; 0: none to take (a walk that did not reach the bottom) */
	int max, out_n;    /* the frames it gave (out_n of at most max) */
	uint64_t out_hash; /* their hash (prof_py_stack_hashed) */
	uintptr_t frame[WALK_MAX], instr[WALK_MAX], code[WALK_MAX];
	uint32_t names[WALK_MAX];
	uint64_t id[WALK_MAX]; /* as a stack holds it; 0: skipped; NOT_NAMED */
	uint64_t out[WALK_MAX];
};

struct pf_cache {
	const void *segment; /* prof_proc when filled */
	unsigned last;       /* walk[last] is the thread's last walk */
	int busy;            /* a walk is being written (a signal handler then walks plainly) */
	/* walk[last] was made inside the GIL release of generation kept_gen (gil.h), with
	 * thread state kept_ts; kept_gen 0: not so */
	uint32_t kept_gen;
	uintptr_t kept_ts;
	struct py_walk walk[2];
	struct pf_entry e[CACHE_SIZE];
};

/* Mapped at the thread's first Python stack (96 KiB: too much for static TLS, which
 * glibc takes from every thread's stack), unmapped at its exit (prof_py_thread_exit);
 * PF_NONE when there is none. */
static __thread struct pf_cache *cache __attribute__((tls_model("initial-exec")));
#define PF_NONE ((struct pf_cache *)1)

void prof_py_thread_exit(void)
{
	struct pf_cache *c = cache;
	cache = PF_NONE;
	if (c && c != PF_NONE)
		munmap(c, sizeof *c);
}

#define AT(p, off, type) (*(type *)((p) + (off)))

/* ---- set-up (outside the hot path: dlsym, dladdr, dl_iterate_phdr) ---- */

static int count_loaded(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(unsigned long long *)data = info->dlpi_adds;
	return 1; /* the counter is the same in every entry: stop at the first */
}

static void *lookup(const char *name, void *base)
{
	void *p = prof_real_dlsym(RTLD_DEFAULT, name);
	Dl_info info;
	/* all from the one object that holds the interpreter (an extension linked against
	 * a second libpython would be a second, idle, copy) */
	if (p && base && (!dladdr(p, &info) || info.dli_fbase != base))
		return 0;
	return p;
}

static void unsupported(const char *what, unsigned minor)
{
	static int warned;
	if (!warned++)
		prof_warn(what, minor);
}

static void resolve(void)
{
	void *gts = prof_real_dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
	Dl_info info;
	if (!gts || !dladdr(gts, &info))
		return; /* no CPython (yet) */
	void *base = info.dli_fbase;
	const unsigned long *version = lookup("Py_Version", base);
	if (!version) {
		unsupported("CPython 3.%u or older in this process: stacks have no Python frames "
			    "(3.11 to 3.13 are read)", 10);
		return;
	}
	unsigned major = (unsigned)(*version >> 24), minor = (unsigned)(*version >> 16) & 0xff;
	const struct py_layout *L = 0;
	for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
		if (major == 3 && layouts[i].minor == (int)minor)
			L = &layouts[i];
	/* the free-threaded build's objects have another header (3.13t) */
	int free_threaded = lookup("_Py_MergeZeroLocalRefcount", base) != 0;
	if (!L || major != 3) {
		unsupported("CPython 3.%u in this process: stacks have no Python frames (3.11 to "
			    "3.13 are read)", minor);
		return;
	}
	if (free_threaded) {
		unsupported("CPython 3.%u free-threaded in this process: stacks have no Python "
			    "frames (its objects are laid out otherwise)", minor);
		return;
	}
	void *init = lookup("Py_IsInitialized", base), *a2l = lookup("PyCode_Addr2Line", base);
	uintptr_t code_t = (uintptr_t)lookup("PyCode_Type", base);
	uintptr_t str_t = (uintptr_t)lookup("PyUnicode_Type", base);
	uintptr_t type_t = (uintptr_t)lookup("PyType_Type", base);
	/* the object header is where the table says: type objects are of type `type` */
	if (!init || !a2l || !code_t || !str_t || !type_t || AT(code_t, OB_TYPE, uintptr_t) != type_t ||
	    AT(str_t, OB_TYPE, uintptr_t) != type_t) {
		unsupported("CPython 3.%u in this process does not look as expected: stacks have "
			    "no Python frames", minor);
		return;
	}
	rt.L = L;
	rt.this_thread_state = (void *(*)(void))gts;
	rt.is_initialized = (int (*)(void))init;
	rt.addr2line = (int (*)(void *, int))a2l;
	rt.code_type = code_t;
	rt.str_type = str_t;
	atomic_store_explicit(&active, &rt, memory_order_release);
}

void prof_py_init(void)
{
	static atomic_flag resolving = ATOMIC_FLAG_INIT;
	static unsigned long long seen_loads;
	if (atomic_load_explicit(&active, memory_order_acquire))
		return;
	/* one thread at a time; the others go on without Python frames for now */
	if (atomic_flag_test_and_set_explicit(&resolving, memory_order_acquire))
		return;
	unsigned long long loads = 0;
	dl_iterate_phdr(count_loaded, &loads);
	if (loads != seen_loads) {
		seen_loads = loads;
		resolve();
	}
	atomic_flag_clear_explicit(&resolving, memory_order_release);
}

/* ---- hot path: loads only ---- */

/* Cheap plausibility: canonical user address, aligned. Garbage can still pass; reaching it
 * needs a torn chain, which only a signal handler on this very thread could see. */
static inline int plausible(uintptr_t p, uintptr_t align)
{
	return p >= 4096 && p < (1ull << 56) && !(p & (align - 1));
}

/* A compact ASCII str's bytes, or NULL (then a placeholder is written). */
static const char *ascii_of(uintptr_t s, size_t *len)
{
	if (!plausible(s, 8) || AT(s, OB_TYPE, uintptr_t) != rt.str_type)
		return 0;
	uint32_t state = AT(s, STR_STATE, uint32_t);
	int64_t n = AT(s, STR_LENGTH, int64_t);
	if (!(state >> STR_COMPACT_BIT & 1) || !(state >> STR_ASCII_BIT & 1) || n < 0)
		return 0;
	*len = (size_t)n;
	return (const char *)(s + (uintptr_t)rt.L->str_data);
}

static char *put(char *p, char *end, const char *s, size_t n)
{
	if (n > (size_t)(end - p))
		n = (size_t)(end - p);
	memcpy(p, s, n);
	return p + n;
}

/* "qualname (file)" interned, once per code object (not per line: importing a large
 * package would make hundreds of thousands of names); 0 when not profiling. No snprintf:
 * a signal handler may be here. */
static uint32_t name_code(uintptr_t qualname, uintptr_t filename)
{
	char buf[768];
	char *p = buf, *end = buf + sizeof buf - 1;
	size_t n;
	const char *s = ascii_of(qualname, &n);
	if (s)
		p = put(p, buf + 200, s, n); /* a name is kept to 200 bytes */
	else
		p = put(p, end, "<non-ascii>", 11);
	p = put(p, end, " (", 2);
	s = ascii_of(filename, &n);
	if (!s) {
		s = "<non-ascii>";
		n = 11;
	} else if (n > 500) {
		/* a long path keeps its end, where the file's name is */
		p = put(p, end, "...", 3);
		s += n - 500;
		n = 500;
	}
	p = put(p, end, s, n);
	p = put(p, end, ")", 1);
	*p = 0;
	return prof_intern(buf);
}

/* A frame not in the cache: checks, names it and caches it: the frame as a stack holds it
 * (shm_layout.h: the code object's name id and the line + 1), 0: skip the frame;
 * UINT64_MAX: not profiling (no ids to give). */
static inline uint64_t frame_of(const struct pf_entry *e)
{
	return PROF_PYFRAME_TAG | (uint64_t)e->line1 << 32 | e->id;
}

static __attribute__((noinline)) uint64_t miss(struct pf_entry *e, uintptr_t code,
					       intptr_t offset, int32_t key, uint32_t names,
					       int owner)
{
	const struct py_layout *L = rt.L;
	/* incomplete: still making cells or its generator (_PyFrame_IsIncomplete) */
	if (owner != OWNER_GENERATOR && offset < (intptr_t)AT(code, L->co_firsttraceable, int) * 2)
		return 0;
	if (offset < 0 || offset >= AT(code, OB_SIZE, intptr_t) * 2)
		offset = -1; /* PyCode_Addr2Line: the first line */
	uint32_t name = name_code(AT(code, L->co_qualname, uintptr_t),
				  AT(code, L->co_filename, uintptr_t));
	if (!name)
		return prof_proc ? 0 : UINT64_MAX; /* "<unnamed>" (a full string area) is skipped */
	int line = rt.addr2line((void *)code, (int)offset);
	uint32_t line1 = line < 0 ? 1 : line >= 0x7ffffffe ? 0x7fffffff : (uint32_t)line + 1;
	/* line1 cleared first and written last: a signal handler on this thread never
	 * matches a half-written entry */
	e->line1 = 0;
	atomic_signal_fence(memory_order_seq_cst);
	e->code = code;
	e->names = names;
	e->key = key;
	e->id = name;
	atomic_signal_fence(memory_order_seq_cst);
	e->line1 = line1;
	return frame_of(e);
}

/* A frame's code object and the mix of its names the cache checks; 0: not a code object
 * (3.13's shims hold None). */
static inline uintptr_t code_of(const struct py_runtime *r, uintptr_t f, uint32_t *names)
{
	const struct py_layout *L = r->L;
	uintptr_t code = AT(f, L->fr_code, uintptr_t);
	*names = 0;
	if (!plausible(code, 8) || AT(code, OB_TYPE, uintptr_t) != r->code_type)
		return 0;
	uint64_t mixed = AT(code, L->co_filename, uintptr_t) ^
			 AT(code, L->co_qualname, uintptr_t) << 1 ^
			 (uintptr_t)(uint32_t)AT(code, L->co_firstlineno, int) << 48;
	*names = (uint32_t)(mixed ^ mixed >> 32);
	return code;
}

/* Frame f (running code, names mixed in names) as a stack holds it, through the cache:
 * 0: skipped (a shim, an incomplete frame); UINT64_MAX: not profiling. */
static uint64_t name_frame(const struct py_runtime *r, struct pf_cache *c, uintptr_t f,
			   uintptr_t code, uint32_t names)
{
	const struct py_layout *L = r->L;
	int owner = AT(f, L->fr_owner, char);
	if (owner == L->owner_cstack || !code)
		return 0;
	intptr_t offset = (intptr_t)(AT(f, L->fr_instr, uintptr_t) -
				     (code + (uintptr_t)L->co_code));
	/* whether the frame is a generator's decides whether it is complete */
	int32_t key = (int32_t)((uint32_t)offset << 1 | (owner == OWNER_GENERATOR));
	/* two ways: frames whose keys meet in one slot (a caller and its callee, the same
	 * every call) must not evict each other on every walk */
	uintptr_t slot = (code >> 4 ^ code >> 12 ^ (uintptr_t)offset >> 1) & (CACHE_SIZE - 2);
	struct pf_entry *e = &c->e[slot];
	if (e->code != code || e->key != key || e->names != names || !e->line1) {
		struct pf_entry *other = &c->e[slot + 1];
		/* a hit in the second way, or the emptier / older one to refill */
		if ((other->code == code && other->key == key && other->names == names &&
		     other->line1) ||
		    e->line1)
			e = other;
	}
	if (likely(e->code == code && e->key == key && e->names == names && e->line1))
		return frame_of(e);
	return miss(e, code, offset, key, names, owner);
}

/* The frames from frame on, each named through the cache: a signal handler's walk while
 * the thread's own is being written. */
static int walk_plainly(const struct py_runtime *r, struct pf_cache *c, uintptr_t frame,
			uint64_t *out, int max)
{
	int n = 0;
	/* bounded even on a garbage chain; shims and incomplete frames are skipped, a few per
	 * entry into the eval loop */
	for (int steps = 2 * max + 64; frame && n < max && steps > 0; steps--) {
		if (!plausible(frame, 8))
			break;
		uintptr_t f = frame;
		frame = AT(f, r->L->fr_previous, uintptr_t);
		uint32_t names = 0;
		uintptr_t code = code_of(r, f, &names);
		uint64_t id = name_frame(r, c, f, code, names);
		if (id == UINT64_MAX)
			return 0;
		if (id)
			out[n++] = id;
	}
	return n;
}

static uint64_t hash_ids(const uint64_t *f, int n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)n;
	for (int i = 0; i < n; i++)
		h = (h ^ f[i]) * 0xff51afd7ed558ccdull, h ^= h >> 32;
	return h;
}

/* Whether the chain from frame on is the last walk's, frame by frame from the top: the
 * same frames running the same code objects (with the same name objects) at the same
 * instructions. Most captures are: an operator makes several allocations, a backward
 * pass thousands, under one Python stack. One pass down the chain, without the pairing
 * from the bottom and the naming that a changed stack needs. */
static int same_walk(const struct py_runtime *r, const struct py_walk *last, uintptr_t frame)
{
	const struct py_layout *L = r->L;
	for (int i = 0; i < last->n; i++) {
		if (frame != last->frame[i] || AT(frame, L->fr_instr, uintptr_t) != last->instr[i])
			return 0;
		uint32_t names;
		if (code_of(r, frame, &names) != last->code[i] || names != last->names[i])
			return 0;
		frame = AT(frame, L->fr_previous, uintptr_t);
	}
	return !frame;
}

/* The frames from frame on, those shared at the bottom with the thread's last walk taken
 * from it, the others named through the cache; this walk becomes the last one. */
static int walk_sharing(const struct py_runtime *r, struct pf_cache *c, uintptr_t frame,
			uint64_t *out, int max)
{
	const struct py_layout *L = r->L;
	struct py_walk *now = &c->walk[c->last ^ 1];
	const struct py_walk *before = &c->walk[c->last];
	int k = 0, whole = 0;
	/* the chain first (the frames lie together on the thread's frame stack), as many
	 * steps as a plain walk may take */
	for (int steps = 2 * max + 64; steps > 0 && k < WALK_MAX; steps--) {
		if (!frame) {
			whole = 1;
			break;
		}
		if (!plausible(frame, 8))
			break;
		now->frame[k] = frame;
		now->instr[k] = AT(frame, L->fr_instr, uintptr_t);
		now->code[k] = code_of(r, frame, &now->names[k]);
		frame = AT(frame, L->fr_previous, uintptr_t);
		k++;
	}
	/* the frames shared at the bottom: [from, k) here, [from + shift, before->n) there */
	int from = k, shift = 0;
	if (whole && before->n) {
		int j = before->n;
		while (from > 0 && j > 0 && now->frame[from - 1] == before->frame[j - 1] &&
		       now->instr[from - 1] == before->instr[j - 1] &&
		       now->code[from - 1] == before->code[j - 1] &&
		       now->names[from - 1] == before->names[j - 1])
			from--, j--;
		shift = j - from;
	}
	int n = 0, i = 0;
	for (; i < k && n < max; i++) {
		uint64_t id = i >= from ? before->id[i + shift] : NOT_NAMED;
		if (id == NOT_NAMED)
			id = name_frame(r, c, now->frame[i], now->code[i], now->names[i]);
		if (id == UINT64_MAX) {
			now->n = 0;
			return 0;
		}
		now->id[i] = id;
		if (id)
			out[n++] = id;
	}
	for (; i < k; i++)
		now->id[i] = i >= from ? before->id[i + shift] : NOT_NAMED;
	memcpy(now->out, out, (size_t)n * sizeof *out);
	now->out_n = n;
	now->max = max;
	now->out_hash = hash_ids(out, n);
	now->n = whole ? k : 0;
	c->last ^= 1;
	return n;
}

static int count_kept;
static _Atomic uint64_t kept_walks;

void prof_py_count_kept(int on)
{
	__atomic_store_n(&count_kept, on, __ATOMIC_RELAXED);
}

uint64_t prof_py_kept_walks(void)
{
	return atomic_load_explicit(&kept_walks, memory_order_relaxed);
}

/* Whether the thread's last walk was made inside the GIL release it is still in. */
static inline int kept_in_release(const struct pf_cache *c)
{
	uintptr_t ts = prof_gil_released_ts;
	return ts && c->kept_gen == prof_gil_gen && c->kept_ts == ts;
}

static inline uintptr_t top_frame(const struct py_layout *L, uintptr_t ts)
{
	if (L->ts_cframe < 0)
		return AT(ts, L->ts_frame, uintptr_t);
	uintptr_t cf = AT(ts, L->ts_cframe, uintptr_t);
	return plausible(cf, 8) ? AT(cf, L->ts_frame, uintptr_t) : 0;
}

/* The last walk, to be given again without walking, when it was made inside the GIL
 * release the thread is still in: no Python code has run on the thread since, so its
 * frames are the same (98% of a CNN step's captures: torch's operators and its backward
 * pass allocate with the GIL released). The top frame is compared all the same: a take
 * of the GIL the wrappers did not see (through a pointer, not a GOT entry) runs Python
 * above it. NULL: walk. */
static const struct py_walk *kept_walk(const struct py_runtime *r, const struct pf_cache *c,
					int max)
{
	if (!kept_in_release(c) || c->busy || c->segment != prof_proc)
		return 0;
	const struct py_walk *last = &c->walk[c->last];
	if (!last->n || last->max != max || !r->is_initialized())
		return 0;
	const struct py_layout *L = r->L;
	uintptr_t frame = top_frame(L, c->kept_ts);
	if (frame != last->frame[0] || AT(frame, L->fr_instr, uintptr_t) != last->instr[0] ||
	    AT(frame, L->fr_code, uintptr_t) != last->code[0])
		return 0;
	if (unlikely(__atomic_load_n(&count_kept, __ATOMIC_RELAXED)))
		atomic_fetch_add_explicit(&kept_walks, 1, memory_order_relaxed);
	return last;
}

int prof_py_kept(int max, uint64_t *hash)
{
	const struct py_runtime *r = atomic_load_explicit(&active, memory_order_acquire);
	const struct pf_cache *c = cache;
	if (!r || max <= 0 || !c || c == PF_NONE)
		return -1;
	const struct py_walk *w = kept_walk(r, c, max);
	if (!w)
		return -1;
	*hash = w->out_hash;
	return w->out_n;
}

/* The frames' lines (code object, previous, instruction) and each code object's fields
 * the walk reads (two or three lines); 16 frames at most: a training step's captures
 * have ~10. Prefetches do not fault: an address gone since is harmless. */
void prof_py_prefetch(void)
{
	const struct pf_cache *c = cache;
	const struct py_runtime *r = atomic_load_explicit(&active, memory_order_acquire);
	if (!c || c == PF_NONE || !r)
		return;
	const struct py_layout *L = r->L;
	const struct py_walk *w = &c->walk[c->last];
	if (kept_in_release(c)) {
		/* only the top frame is read (kept_walk) */
		__builtin_prefetch((const char *)w->frame[0] + L->fr_code);
		__builtin_prefetch((const char *)w->frame[0] + L->fr_instr);
		return;
	}
	int n = w->n < 16 ? w->n : 16;
	for (int i = 0; i < n; i++) {
		const char *f = (const char *)w->frame[i], *code = (const char *)w->code[i];
		__builtin_prefetch(f + L->fr_code);
		__builtin_prefetch(f + L->fr_instr);
		if (code) {
			__builtin_prefetch(code + OB_TYPE);
			__builtin_prefetch(code + L->co_firstlineno);
			__builtin_prefetch(code + L->co_filename);
			__builtin_prefetch(code + L->co_qualname);
		}
	}
}

int prof_py_stack(uint64_t *out, int max)
{
	uint64_t hash;
	return prof_py_stack_hashed(out, max, &hash);
}

int prof_py_stack_hashed(uint64_t *out, int max, uint64_t *hash)
{
	const struct py_runtime *r = atomic_load_explicit(&active, memory_order_acquire);
	*hash = hash_ids(out, 0);
	if (!r || max <= 0)
		return 0;
	struct pf_cache *c = cache;
	const struct py_walk *kept = likely(c && c != PF_NONE) ? kept_walk(r, c, max) : 0;
	if (kept) {
		memcpy(out, kept->out, (size_t)kept->out_n * sizeof *out);
		*hash = kept->out_hash;
		return kept->out_n;
	}
	/* finalization frees thread states (also other threads'): stop reading before */
	if (!r->is_initialized())
		return 0;
	uintptr_t ts = (uintptr_t)r->this_thread_state();
	if (!plausible(ts, 8))
		return 0; /* no thread state: not a Python thread */
	const struct py_layout *L = r->L;
	uintptr_t frame;
	if (L->ts_cframe >= 0) {
		uintptr_t cf = AT(ts, L->ts_cframe, uintptr_t);
		if (!plausible(cf, 8))
			return 0;
		frame = AT(cf, L->ts_frame, uintptr_t);
	} else {
		frame = AT(ts, L->ts_frame, uintptr_t);
	}
	if (unlikely(!c)) {
		void *m = mmap(0, sizeof *c, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		cache = c = m == MAP_FAILED ? PF_NONE : m;
		if (c != PF_NONE)
			prof_thread_want_exit_hook();
	}
	if (unlikely(c == PF_NONE))
		return 0;
	if (unlikely(c->segment != prof_proc)) {
		memset(c->e, 0, sizeof c->e);
		c->walk[0].n = c->walk[1].n = 0;
		c->segment = prof_proc;
	}
	if (unlikely(c->busy)) {
		int n = walk_plainly(r, c, frame, out, max);
		*hash = hash_ids(out, n > 0 ? n : 0);
		return n;
	}
	const void *segment = c->segment;
	c->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	/* read before the walk: a walk is kept for its release only when made inside it */
	uint32_t gen = prof_gil_gen;
	int in_release = prof_gil_released_ts == ts && prof_gil_seen_whole();
	c->kept_gen = 0;
	const struct py_walk *last = &c->walk[c->last];
	int n;
	if (last->n && last->max == max && same_walk(r, last, frame)) {
		n = last->out_n; /* the last walk stays the last */
		memcpy(out, last->out, (size_t)n * sizeof *out);
		*hash = last->out_hash;
	} else {
		n = walk_sharing(r, c, frame, out, max);
		if (n > 0)
			*hash = c->walk[c->last].out_hash; /* this walk's: it became the last */
	}
	atomic_signal_fence(memory_order_seq_cst);
	/* a signal handler's walk that met another segment meanwhile dropped the walks: this
	 * one's names are the old segment's, not to be shared */
	if (unlikely(c->segment != segment))
		c->walk[0].n = c->walk[1].n = 0;
	else if (n > 0 && in_release) {
		c->kept_ts = ts;
		atomic_signal_fence(memory_order_seq_cst);
		c->kept_gen = gen;
	}
	c->busy = 0;
	return n;
}
