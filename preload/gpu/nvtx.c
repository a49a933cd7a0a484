/* NVTX v3 ranges and marks, recorded without any change to the program.
 *
 * NVTX v3 is header-only: every DSO that includes it has its own hidden globals and, on
 * its first NVTX call, reads NVTX_INJECTION64_PATH, dlopens that library and calls its
 * InitializeInjectionNvtx2 with a getter for its export tables. libprof sets the variable
 * to itself (prof_nvtx_setup, from the constructor), so every instance in the process
 * (the program, each library, NCCL's own copy...) lands here and gets libprof's functions
 * written into its function tables.
 *
 * What is recorded, in the shapes Nsight Systems shows:
 *   push/pop   category "nvtx": complete events that nest with the thread's other events
 *              (the depth bookkeeping of prof_range_push/pop, so self time works). The
 *              stacks are per thread and per domain, as NVTX defines them.
 *   marks      category "nvtx": instant events.
 *   start/end  category "nvtx_startend" (nsys's "StartEnd" style): may end on another
 *              thread and need not nest, so they stay outside the self-time tree (see
 *              DETACHED_DEPTH). The event is written by the thread that ends the range:
 *              rings have one writer each. Its b field keeps the starting thread's tid.
 *   names      the message in the default domain; "<domain>:<message>" in a named one
 *              (as nsys's NVTX summaries print them). The category table is small (64
 *              per process) and shared, so domains are not categories.
 * Ignored: colours, payloads, NVTX category ids, thread/CUDA resource naming, resources.
 *
 * libprof builds without the CUDA toolkit: the few NVTX types used are mirrored below,
 * each naming the header it follows (include/nvtx3/ of the CUDA 13.0 toolkit, NVTX
 * v3.2). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "preload/gpu/nvtx.h"
#include "preload/common/event.h"
#include "preload/core/state.h"
#include "preload/common/env.h"
#include "preload/core/env_set.h"

#define EXPORT __attribute__((visibility("default")))

/* ---- the NVTX ABI, mirrored ------------------------------------------------------- */

/* nvtxDetail/nvtxTypes.h: NvtxExportTableID, NvtxCallbackModule, the callback ids */
enum { ETID_CALLBACKS = 1, ETID_VERSIONINFO = 3 };
enum { MODULE_CORE = 1, MODULE_CORE2 = 5 };
enum {
	CORE_MarkEx = 1, CORE_MarkA = 2, CORE_MarkW = 3, CORE_RangeStartEx = 4,
	CORE_RangeStartA = 5, CORE_RangeStartW = 6, CORE_RangeEnd = 7, CORE_RangePushEx = 8,
	CORE_RangePushA = 9, CORE_RangePushW = 10, CORE_RangePop = 11,
};
enum {
	CORE2_DomainMarkEx = 1, CORE2_DomainRangeStartEx = 2, CORE2_DomainRangeEnd = 3,
	CORE2_DomainRangePushEx = 4, CORE2_DomainRangePop = 5, CORE2_DomainRegisterStringA = 10,
	CORE2_DomainRegisterStringW = 11, CORE2_DomainCreateA = 12, CORE2_DomainCreateW = 13,
	CORE2_DomainDestroy = 14, CORE2_Initialize = 15,
};

/* nvtxDetail/nvtxTypes.h: NvtxFunctionPointer, NvtxFunctionTable, the export tables */
typedef void (*nvtx_fn)(void);
typedef nvtx_fn **nvtx_table; /* table[cbid] points at the instance's function pointer */
typedef const void *(*nvtx_get_export_table)(uint32_t id);
struct nvtx_etbl_callbacks {
	size_t struct_size;
	int (*get_module_function_table)(int module, nvtx_table *out, unsigned *out_size);
};
struct nvtx_etbl_version {
	size_t struct_size;
	uint32_t version;
	uint32_t reserved0;
	void (*set_injection_version)(uint32_t version);
};

/* nvToolsExt.h: nvtxMessageType_t and nvtxEventAttributes_v2 (v1 has the same layout) */
enum { MSG_ASCII = 1, MSG_UNICODE = 2, MSG_REGISTERED = 3 };
struct nvtx_attr {
	uint16_t version;
	uint16_t size;
	uint32_t category;
	int32_t color_type;
	uint32_t color;
	int32_t payload_type;
	int32_t reserved0;
	uint64_t payload;
	int32_t message_type;
	const void *message; /* ascii, unicode or a registered string handle */
};
_Static_assert(sizeof(struct nvtx_attr) == 48, "nvtxEventAttributes_v2 is 48 bytes");
_Static_assert(sizeof(wchar_t) == 4, "NVTX's W functions take UTF-32 here");
#define ATTR_HAS_MESSAGE(a) ((a)->size >= offsetof(struct nvtx_attr, message) + sizeof(void *))

/* ---- domains and registered strings ------------------------------------------------ */

/* What nvtxDomainCreate hands out (a NULL handle is the default domain). Never freed:
 * a destroyed domain's handle may still arrive from another thread. */
struct nvtx_domain {
	struct nvtx_domain *next;
	uint32_t index; /* tells the per-domain push/pop stacks apart; 0 is the default */
	uint32_t prefix_len;
	char prefix[];  /* "<name>:" */
};

/* What nvtxDomainRegisterString hands out. */
struct nvtx_string {
	struct nvtx_string *next;
	const struct nvtx_domain *domain;
	_Atomic uint32_t id1; /* interned "<domain>:<text>" + 1, once recorded */
	char text[];
};

#define DOMAIN_NAME_MAX 256
#define NAME_BYTES 1024 /* a name with its domain prefix, as interned */
#define STRING_BUCKETS 256

/* Push-only lists, inserted with a CAS: no lock a fork could leave held. */
static struct nvtx_domain *_Atomic domains;
static struct nvtx_string *_Atomic strings[STRING_BUCKETS];
static _Atomic uint32_t ndomains;

static size_t to_utf8(char *out, size_t cap, const wchar_t *w)
{
	size_t n = 0;
	for (; w && *w; w++) {
		uint32_t c = (uint32_t)*w;
		unsigned char b[4];
		size_t k;
		if (c >= 0x110000 || (c >= 0xd800 && c < 0xe000))
			c = 0xfffd;
		if (c < 0x80) {
			b[0] = (unsigned char)c;
			k = 1;
		} else if (c < 0x800) {
			b[0] = (unsigned char)(0xc0 | c >> 6);
			b[1] = (unsigned char)(0x80 | (c & 0x3f));
			k = 2;
		} else if (c < 0x10000) {
			b[0] = (unsigned char)(0xe0 | c >> 12);
			b[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3f));
			b[2] = (unsigned char)(0x80 | (c & 0x3f));
			k = 3;
		} else {
			b[0] = (unsigned char)(0xf0 | c >> 18);
			b[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3f));
			b[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3f));
			b[3] = (unsigned char)(0x80 | (c & 0x3f));
			k = 4;
		}
		if (n + k >= cap)
			break;
		memcpy(out + n, b, k);
		n += k;
	}
	if (cap)
		out[n] = 0;
	return n;
}

/* malloc/free for libprof's own use: untraced. */
static void *own_alloc(size_t n)
{
	prof_thr.busy++;
	void *p = malloc(n);
	prof_thr.busy--;
	return p;
}

static void own_free(void *p)
{
	prof_thr.busy++;
	free(p);
	prof_thr.busy--;
}

static struct nvtx_domain *domain_create(const char *name)
{
	/* (a literal's length is not measured: GCC takes the bound for an overread) */
	size_t len = name ? strnlen(name, DOMAIN_NAME_MAX) : 6;
	if (!name)
		name = "(null)";
	struct nvtx_domain *seen = 0, *head = atomic_load(&domains), *d;
	/* the same name gives the same handle, so the domain's stack is one */
	for (d = head; d; d = d->next)
		if (d->prefix_len == len + 1 && !memcmp(d->prefix, name, len))
			return d;
	struct nvtx_domain *nd = own_alloc(sizeof *nd + len + 2);
	if (!nd)
		return 0;
	memcpy(nd->prefix, name, len);
	nd->prefix[len] = ':';
	nd->prefix[len + 1] = 0;
	nd->prefix_len = (uint32_t)len + 1;
	nd->index = atomic_fetch_add(&ndomains, 1) + 1;
	for (;;) {
		nd->next = head;
		if (atomic_compare_exchange_weak(&domains, &head, nd))
			return nd;
		/* another thread inserted first: look at what it added */
		for (d = head; d != seen; d = d->next)
			if (d->prefix_len == len + 1 && !memcmp(d->prefix, name, len)) {
				own_free(nd);
				return d;
			}
		seen = head;
	}
}

static uint32_t hash_text(const struct nvtx_domain *d, const char *s)
{
	uint32_t h = 2166136261u ^ (uint32_t)(uintptr_t)d;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static struct nvtx_string *string_register(const struct nvtx_domain *dom, const char *text)
{
	size_t len = text ? strnlen(text, NAME_BYTES - 1) : 6;
	if (!text)
		text = "(null)";
	struct nvtx_string *_Atomic *bucket = &strings[hash_text(dom, text) % STRING_BUCKETS];
	struct nvtx_string *seen = 0, *head = atomic_load(bucket), *s;
	for (s = head; s; s = s->next)
		if (s->domain == dom && !strncmp(s->text, text, len) && !s->text[len])
			return s;
	struct nvtx_string *ns = own_alloc(sizeof *ns + len + 1);
	if (!ns)
		return 0;
	ns->domain = dom;
	atomic_init(&ns->id1, 0);
	memcpy(ns->text, text, len);
	ns->text[len] = 0;
	for (;;) {
		ns->next = head;
		if (atomic_compare_exchange_weak(bucket, &head, ns))
			return ns;
		for (s = head; s != seen; s = s->next)
			if (s->domain == dom && !strcmp(s->text, ns->text)) {
				own_free(ns);
				return s;
			}
		seen = head;
	}
}

/* ---- names -------------------------------------------------------------------------- */

/* The id of text in domain d. Only while recording (prof_proc is there), inside busy. */
static uint32_t intern_in(const struct nvtx_domain *d, const char *text)
{
	if (!d)
		return prof_intern(text);
	char buf[NAME_BYTES];
	size_t p = d->prefix_len, n = text ? strnlen(text, sizeof buf - p - 1) : 6;
	memcpy(buf, d->prefix, p);
	memcpy(buf + p, text ? text : "(null)", n);
	buf[p + n] = 0;
	return prof_intern(buf);
}

static uint32_t registered_id(const struct nvtx_domain *d, const struct nvtx_string *s)
{
	if (!s)
		return 0;
	if (s->domain != d) /* used outside the domain it was registered in */
		return intern_in(d, s->text);
	uint32_t id1 = atomic_load_explicit(&s->id1, memory_order_relaxed);
	if (likely(id1))
		return id1 - 1;
	uint32_t id = intern_in(d, s->text);
	atomic_store_explicit(&s->id1, id + 1, memory_order_relaxed);
	return id;
}

static uint32_t message_id(const struct nvtx_domain *d, int32_t type, const void *msg)
{
	char buf[NAME_BYTES];
	switch (type) {
	case MSG_ASCII:
		return intern_in(d, msg);
	case MSG_REGISTERED:
		return registered_id(d, msg);
	case MSG_UNICODE:
		to_utf8(buf, sizeof buf, msg);
		return intern_in(d, buf);
	default:
		return 0; /* "<unnamed>" */
	}
}

/* ---- recording ---------------------------------------------------------------------- */

/* Category indices, registered on first use; a forked child's segment starts with a
 * copy of the parent's categories, so the cached values stay right there too. */
static uint8_t cat_nvtx, cat_startend;

static inline uint8_t category(uint8_t *cache, const char *name)
{
	uint8_t c = __atomic_load_n(cache, __ATOMIC_RELAXED);
	if (unlikely(!c)) {
		c = prof_category(name);
		__atomic_store_n(cache, c, __ATOMIC_RELAXED);
	}
	return c;
}

/* Recording, and not inside libprof already (a signal handler interrupting a wrapper):
 * the thread then owns its ring until busy is cleared. */
static inline struct prof_thread *enter(void)
{
	struct prof_thread *t = &prof_thr;
	if (!__atomic_load_n(&prof_on, __ATOMIC_RELAXED) || !prof_proc || t->busy)
		return 0;
	t->busy = 1;
	return t;
}

/* A name: resolved only when the event is recorded (interning is the costly part). */
struct name_ref {
	const struct nvtx_domain *d;
	int32_t type;
	const void *msg;
};

static inline uint32_t resolve(struct name_ref n)
{
	return message_id(n.d, n.type, n.msg);
}

static struct name_ref attr_ref(const struct nvtx_domain *d, const struct nvtx_attr *a)
{
	if (!a || !ATTR_HAS_MESSAGE(a))
		return (struct name_ref){ d, 0, 0 };
	return (struct name_ref){ d, a->message_type, a->message };
}

/* -- push/pop: per thread, per domain ------------------------------------------------ */

#define MAX_OPEN 64

struct open_push {
	uint64_t t0;
	uint32_t name1;  /* name id + 1; 0: not recorded (pushed while not recording) */
	uint32_t depth;  /* prof_thr.depth when pushed: the event's depth */
	uint32_t domain; /* nvtx_domain index, 0 for the default domain */
	uint32_t level;  /* 0-based level in its domain's stack: what push/pop return */
};

struct nvtx_thread {
	uint32_t n;      /* open pushes, including those past MAX_OPEN (counted only) */
	uint32_t hidden; /* pushes made inside libprof (a signal handler): not stacked */
	/* the open pushes (1.5 KiB): mapped at the thread's first push, not static TLS
	 * (prof_thread_block); without it every push is counted only */
	struct open_push *r;
};

static __thread struct nvtx_thread nvtx_thr __attribute__((tls_model("initial-exec")));

static struct open_push *open_pushes(struct nvtx_thread *nt)
{
	return prof_thread_block((void **)&nt->r, MAX_OPEN * sizeof *nt->r);
}

static inline uint32_t domain_index(const struct nvtx_domain *d)
{
	return d ? d->index : 0;
}

static int push(const struct nvtx_domain *d, struct name_ref name)
{
	struct prof_thread *t = &prof_thr;
	struct nvtx_thread *nt = &nvtx_thr;
	if (unlikely(t->busy)) {
		/* the interrupted code may be in the middle of this stack */
		nt->hidden++;
		return 0;
	}
	int on = __atomic_load_n(&prof_on, __ATOMIC_RELAXED) && prof_proc;
	t->busy = 1;
	uint32_t n = nt->n++, dom = domain_index(d), level = n;
	/* too deep to keep: counted, so the matching pop stays balanced */
	if (likely(n < MAX_OPEN) && open_pushes(nt)) {
		struct open_push *o = &nt->r[n];
		level = 0;
		for (uint32_t i = n; i-- > 0;)
			if (nt->r[i].domain == dom) {
				level = nt->r[i].level + 1;
				break;
			}
		o->domain = dom;
		o->level = level;
		o->depth = t->depth;
		o->name1 = 0;
		/* Only a recorded range is a level: what a range pushed while not recording
		 * holds belongs to the nearest recorded one (its end is never recorded, so
		 * it could not take its children's time). */
		if (on) {
			o->name1 = resolve(name) + 1;
			o->t0 = prof_now();
			t->depth++;
		}
	}
	t->busy = 0;
	return (int)level;
}

static int pop(const struct nvtx_domain *d)
{
	struct prof_thread *t = &prof_thr;
	struct nvtx_thread *nt = &nvtx_thr;
	if (unlikely(t->busy)) {
		if (!nt->hidden)
			return -1;
		nt->hidden--;
		return 0;
	}
	uint32_t n = nt->n;
	if (!n)
		return -1;
	t->busy = 1;
	if (unlikely(n > MAX_OPEN || !open_pushes(nt))) {
		nt->n = n - 1;
		t->busy = 0;
		return (int)(n - 1);
	}
	uint32_t dom = domain_index(d), i = n;
	while (i-- > 0 && nt->r[i].domain != dom)
		;
	if (i == UINT32_MAX) { /* nothing open in this domain */
		t->busy = 0;
		return -1;
	}
	struct open_push o = nt->r[i];
	if (likely(i == n - 1)) {
		/* back to the depth of the push: a traced call that returned in between may
		 * already have lowered it */
		if (o.name1 && t->depth > o.depth)
			t->depth = o.depth;
	} else {
		/* Another domain's pushes came after this one (stacks are per domain): they
		 * stay open, one level up if this one was a level. */
		for (uint32_t j = i; j + 1 < n; j++) {
			nt->r[j] = nt->r[j + 1];
			if (o.name1 && nt->r[j].depth)
				nt->r[j].depth--;
		}
		if (o.name1 && t->depth)
			t->depth--;
	}
	nt->n = n - 1;
	if (o.name1 && __atomic_load_n(&prof_on, __ATOMIC_RELAXED) && prof_proc) {
		uint64_t now = prof_now();
		prof_emit(t, category(&cat_nvtx, PROF_CATNAME_NVTX), PROF_EV_COMPLETE, 0, o.name1 - 1,
			  o.depth, o.t0, now, 0, 0, 0);
	}
	t->busy = 0;
	return (int)o.level;
}

/* -- marks ---------------------------------------------------------------------------- */

static void mark(struct name_ref name)
{
	struct prof_thread *t = enter();
	if (!t)
		return;
	uint32_t id = resolve(name);
	uint64_t now = prof_now();
	prof_emit(t, category(&cat_nvtx, PROF_CATNAME_NVTX), PROF_EV_INSTANT, 0, id, t->depth, now,
		  now, 0, 0, 0);
	t->busy = 0;
}

/* -- start/end: process-wide, any thread may end a range ----------------------------- */

/* Open start/end ranges live in a table; the id handed out is (sequence << OPEN_BITS) |
 * slot, so the end finds its slot at once and a stale or repeated id matches nothing.
 * A slot is claimed (0 -> BUSY) before its fields are written and published with the
 * id; the end reads the fields, then frees the slot only if it still holds the id: no
 * lock on either side. */
#define OPEN_BITS 13
#define OPEN_SLOTS (1u << OPEN_BITS)
#define OPEN_PROBES 64
#define SLOT_BUSY UINT64_MAX
/* Start/end ranges do not nest with anything: recorded at the deepest level, which no
 * real call reaches, their self time is their whole time and no enclosing event's self
 * time loses theirs. */
#define DETACHED_DEPTH PROF_EVENT_DEPTH_MAX

struct open_range {
	_Atomic uint64_t id;
	_Atomic uint64_t t0;
	_Atomic uint32_t name;
	_Atomic uint32_t tid; /* the starting thread */
};

static struct open_range open_ranges[OPEN_SLOTS];
static _Atomic uint64_t range_seq;

static uint64_t range_start(struct name_ref name)
{
	uint64_t seq = atomic_fetch_add_explicit(&range_seq, 1, memory_order_relaxed) + 1;
	struct prof_thread *t = enter();
	if (!t)
		return seq << OPEN_BITS; /* slot 0 never holds this id: its end does nothing */
	uint32_t id = resolve(name);
	uint32_t tid = t->w.slot ? t->w.slot->tid : 0;
	for (uint32_t k = 0; k < OPEN_PROBES; k++) {
		uint32_t i = (uint32_t)(seq + k) & (OPEN_SLOTS - 1);
		struct open_range *o = &open_ranges[i];
		uint64_t free_ = 0;
		if (atomic_load_explicit(&o->id, memory_order_relaxed) ||
		    !atomic_compare_exchange_strong(&o->id, &free_, SLOT_BUSY))
			continue;
		uint64_t rid = seq << OPEN_BITS | i;
		atomic_store_explicit(&o->name, id, memory_order_relaxed);
		atomic_store_explicit(&o->tid, tid, memory_order_relaxed);
		atomic_store_explicit(&o->t0, prof_now(), memory_order_relaxed);
		atomic_store_explicit(&o->id, rid, memory_order_release);
		t->busy = 0;
		return rid;
	}
	/* thousands open at once: this one is not recorded */
	t->busy = 0;
	return seq << OPEN_BITS;
}

static void range_end(uint64_t rid)
{
	struct open_range *o = &open_ranges[rid & (OPEN_SLOTS - 1)];
	if (atomic_load_explicit(&o->id, memory_order_acquire) != rid)
		return;
	uint64_t now = prof_now();
	uint64_t t0 = atomic_load_explicit(&o->t0, memory_order_relaxed);
	uint32_t name = atomic_load_explicit(&o->name, memory_order_relaxed);
	uint32_t tid = atomic_load_explicit(&o->tid, memory_order_relaxed);
	if (!atomic_compare_exchange_strong(&o->id, &rid, 0))
		return; /* ended by another thread meanwhile */
	struct prof_thread *t = enter();
	if (!t)
		return;
	prof_emit(t, category(&cat_startend, "nvtx_startend"), PROF_EV_COMPLETE, 0, name,
		  DETACHED_DEPTH, t0, now, rid, tid, 0);
	t->busy = 0;
}

/* ---- the functions NVTX calls ------------------------------------------------------- */

#define DEFAULT ((const struct nvtx_domain *)0)
#define ASCII(m) ((struct name_ref){ DEFAULT, MSG_ASCII, (m) })
#define WIDE(m) ((struct name_ref){ DEFAULT, MSG_UNICODE, (m) })

static void nv_MarkEx(const struct nvtx_attr *a)
{
	mark(attr_ref(DEFAULT, a));
}

static void nv_MarkA(const char *m)
{
	mark(ASCII(m));
}

static void nv_MarkW(const wchar_t *m)
{
	mark(WIDE(m));
}

static uint64_t nv_RangeStartEx(const struct nvtx_attr *a)
{
	return range_start(attr_ref(DEFAULT, a));
}

static uint64_t nv_RangeStartA(const char *m)
{
	return range_start(ASCII(m));
}

static uint64_t nv_RangeStartW(const wchar_t *m)
{
	return range_start(WIDE(m));
}

static void nv_RangeEnd(uint64_t id)
{
	range_end(id);
}

static int nv_RangePushEx(const struct nvtx_attr *a)
{
	return push(DEFAULT, attr_ref(DEFAULT, a));
}

static int nv_RangePushA(const char *m)
{
	return push(DEFAULT, ASCII(m));
}

static int nv_RangePushW(const wchar_t *m)
{
	return push(DEFAULT, WIDE(m));
}

static int nv_RangePop(void)
{
	return pop(DEFAULT);
}

static void nv_DomainMarkEx(const struct nvtx_domain *d, const struct nvtx_attr *a)
{
	mark(attr_ref(d, a));
}

static uint64_t nv_DomainRangeStartEx(const struct nvtx_domain *d, const struct nvtx_attr *a)
{
	return range_start(attr_ref(d, a));
}

static void nv_DomainRangeEnd(const struct nvtx_domain *d, uint64_t id)
{
	(void)d;
	range_end(id);
}

static int nv_DomainRangePushEx(const struct nvtx_domain *d, const struct nvtx_attr *a)
{
	return push(d, attr_ref(d, a));
}

static int nv_DomainRangePop(const struct nvtx_domain *d)
{
	return pop(d);
}

static const struct nvtx_string *nv_DomainRegisterStringA(const struct nvtx_domain *d,
							  const char *s)
{
	return string_register(d, s);
}

static const struct nvtx_string *nv_DomainRegisterStringW(const struct nvtx_domain *d,
							  const wchar_t *s)
{
	char buf[NAME_BYTES];
	to_utf8(buf, sizeof buf, s);
	return string_register(d, buf);
}

static struct nvtx_domain *nv_DomainCreateA(const char *name)
{
	return domain_create(name);
}

static struct nvtx_domain *nv_DomainCreateW(const wchar_t *name)
{
	char buf[DOMAIN_NAME_MAX * 4];
	to_utf8(buf, sizeof buf, name);
	return domain_create(buf);
}

/* Handles stay valid: a range of the domain may still be open on some thread. */
static void nv_DomainDestroy(const struct nvtx_domain *d)
{
	(void)d;
}

static void nv_Initialize(const void *reserved)
{
	(void)reserved;
}

/* ---- the injection entry ------------------------------------------------------------ */

struct slot_fn {
	unsigned cbid;
	nvtx_fn fn;
};

#define FN(x) ((nvtx_fn)(x))

static const struct slot_fn core_fns[] = {
	{ CORE_MarkEx, FN(nv_MarkEx) },
	{ CORE_MarkA, FN(nv_MarkA) },
	{ CORE_MarkW, FN(nv_MarkW) },
	{ CORE_RangeStartEx, FN(nv_RangeStartEx) },
	{ CORE_RangeStartA, FN(nv_RangeStartA) },
	{ CORE_RangeStartW, FN(nv_RangeStartW) },
	{ CORE_RangeEnd, FN(nv_RangeEnd) },
	{ CORE_RangePushEx, FN(nv_RangePushEx) },
	{ CORE_RangePushA, FN(nv_RangePushA) },
	{ CORE_RangePushW, FN(nv_RangePushW) },
	{ CORE_RangePop, FN(nv_RangePop) },
};

static const struct slot_fn core2_fns[] = {
	{ CORE2_DomainMarkEx, FN(nv_DomainMarkEx) },
	{ CORE2_DomainRangeStartEx, FN(nv_DomainRangeStartEx) },
	{ CORE2_DomainRangeEnd, FN(nv_DomainRangeEnd) },
	{ CORE2_DomainRangePushEx, FN(nv_DomainRangePushEx) },
	{ CORE2_DomainRangePop, FN(nv_DomainRangePop) },
	{ CORE2_DomainRegisterStringA, FN(nv_DomainRegisterStringA) },
	{ CORE2_DomainRegisterStringW, FN(nv_DomainRegisterStringW) },
	{ CORE2_DomainCreateA, FN(nv_DomainCreateA) },
	{ CORE2_DomainCreateW, FN(nv_DomainCreateW) },
	{ CORE2_DomainDestroy, FN(nv_DomainDestroy) },
	{ CORE2_Initialize, FN(nv_Initialize) },
};

static int fill(const struct nvtx_etbl_callbacks *cb, int module, const struct slot_fn *fns,
		size_t nfns)
{
	nvtx_table table = 0;
	unsigned size = 0;
	if (!cb->get_module_function_table(module, &table, &size) || !table)
		return 0;
	for (size_t i = 0; i < nfns; i++)
		if (fns[i].cbid < size && table[fns[i].cbid])
			*table[fns[i].cbid] = fns[i].fn;
	return 1;
}

/* Called once by each NVTX instance, from its first NVTX call (the instance makes other
 * threads wait meanwhile). It only writes into that instance's own tables, so calls
 * for several instances, on several threads, do not interfere. */
EXPORT int InitializeInjectionNvtx2(nvtx_get_export_table get)
{
	const struct nvtx_etbl_callbacks *cb = get ? get(ETID_CALLBACKS) : 0;
	if (!cb || cb->struct_size < sizeof *cb || !cb->get_module_function_table)
		return 0;
	if (!fill(cb, MODULE_CORE, core_fns, sizeof core_fns / sizeof *core_fns) ||
	    !fill(cb, MODULE_CORE2, core2_fns, sizeof core2_fns / sizeof *core2_fns))
		return 0;
	const struct nvtx_etbl_version *v = get(ETID_VERSIONINFO);
	if (v && v->struct_size >= sizeof *v && v->set_injection_version)
		v->set_injection_version(3);
	return 1;
}

void prof_nvtx_setup(void)
{
	/* set by the user (another tool), or by a profiled parent: left as it is */
	if (prof_getenv("NVTX_INJECTION64_PATH"))
		return;
	struct prof_thread *t = &prof_thr;
	t->busy++;
	Dl_info info;
	char path[PATH_MAX];
	if (dladdr((void *)InitializeInjectionNvtx2, &info) && info.dli_fname &&
	    realpath(info.dli_fname, path))
		prof_setenv("NVTX_INJECTION64_PATH", path, 0);
	t->busy--;
}
