/* Which functions PROFILER_TRACE picks, and reaching their calls: the GOT entries
 * (JUMP_SLOT relocations) of every loaded object that name a matching symbol are pointed
 * at the symbol's stub. That covers calls between objects and an object's calls to its
 * own exported functions through its PLT. Objects loaded later are patched when they
 * are first seen (the dlsym wrapper looks, as ctypes and extension-module loading both
 * go through it); dlsym itself hands back stubs (dl.c). All of this runs at set-up, never
 * on a traced call. What the frameworks add (presets, hooks) is asked of
 * preload/frameworks/frameworks.h: nothing here knows one. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "preload/common/event.h"
#include "preload/common/debug.h"
#include "preload/frameworks/mxnet.h"
#include "preload/trace/glob.h"
#include "preload/wrap/dl.h"
#include "preload/wrap/nonlocal.h"
#include "preload/trace/elf_sym.h"
#include "preload/frameworks/torch_callbacks.h"
#include "preload/trace/got_write.h"
#include "preload/frameworks/frameworks.h"
#include "prof.h"
#include "preload/core/state.h"
#include "preload/trace/trace.h"
#include "preload/trace/trace_policy.h"
#include "preload/common/env.h"

#define MAX_PATTERNS 64
#define MAX_OBJECTS 4096

struct pattern {
	const char *glob;
	uint8_t cat;
	uint8_t fw;    /* the framework whose preset it is (applies in its scope), or 0 */
	char lead[24]; /* "2at" for at::...: how its mangled names start, or "" */
};

static char pattern_text[4096];
static struct pattern patterns[MAX_PATTERNS];
static unsigned npatterns, nuser; /* nuser: PROFILER_TRACE's own, applied everywhere */
static uintptr_t patched[MAX_OBJECTS];
static unsigned npatched;
/* dlpi_adds/dlpi_subs when the objects were last looked at: an object unloaded since
 * may have left its address to another one, which then needs patching of its own */
static unsigned long long seen_adds = ~0ull, seen_subs;
static int following; /* PROFILER_FOLLOW */
/* PROFILER_FRAMEWORK: presets applied to every object (a name, auto); detecting (the
 * default): each framework's preset applied only in its own objects (frameworks.h), so
 * the objects of a program that loads none are not looked into */
static unsigned presets_everywhere;
static int detecting;

int prof_trace_enabled(void)
{
	return npatterns > 0 || following;
}

static uint8_t category_for(const char *name, size_t len)
{
	char buf[PROF_CATEGORY_NAME_MAX];
	if (len >= sizeof buf)
		len = sizeof buf - 1;
	memcpy(buf, name, len);
	buf[len] = 0;
	return prof_category(buf);
}

/* What a mangled name must start with (past _Z and its qualifiers: leads_with) to
 * demangle to one starting with glob's leading scope: that scope's <length><identifier>.
 * "" when the scope is not a plain identifier (or std, abbreviated). */
static void mangled_lead(const char *glob, char *lead, size_t len)
{
	const char *end = strstr(glob, "::");
	size_t n = end ? (size_t)(end - glob) : 0;
	lead[0] = 0;
	if (!n || n + 4 > len || (n == 3 && !strncmp(glob, "std", 3)) ||
	    (glob[0] >= '0' && glob[0] <= '9'))
		return;
	for (size_t i = 0; i < n; i++)
		if (!(glob[i] == '_' || (glob[i] >= 'a' && glob[i] <= 'z') ||
		      (glob[i] >= 'A' && glob[i] <= 'Z') || (glob[i] >= '0' && glob[i] <= '9')))
			return;
	snprintf(lead, len, "%zu%.*s", n, (int)n, glob);
}

/* Whether the mangled name's outermost scope is lead ("2at" in _ZN2at4_ops...,
 * _ZNK2at..., _ZZN2at... for a local entity). */
static int leads_with(const char *name, const char *lead)
{
	const char *p = name + 2;
	p += *p == 'Z';
	p += *p == 'L';
	if (*p == 'N')
		for (p++; *p && strchr("rVKRO", *p); p++)
			;
	p += *p == 'L';
	return !strncmp(p, lead, strlen(lead));
}

static void add_patterns(char *text, unsigned fw)
{
	uint8_t trace_cat = category_for(PROF_CATNAME_TRACE, strlen(PROF_CATNAME_TRACE));
	for (char *save, *tok = strtok_r(text, ",", &save); tok; tok = strtok_r(0, ",", &save)) {
		while (*tok == ' ')
			tok++;
		if (!*tok)
			continue;
		if (npatterns == MAX_PATTERNS) {
			prof_debug(PROF_DEBUG_TRACE, "not tracing '%s': more than %d patterns", tok,
				   MAX_PATTERNS);
			continue;
		}
		char *eq = strchr(tok, '=');
		struct pattern *p = &patterns[npatterns++];
		p->cat = trace_cat;
		p->glob = tok;
		p->fw = (uint8_t)fw;
		nuser += !fw;
		if (eq) {
			p->cat = category_for(tok, (size_t)(eq - tok));
			p->glob = eq + 1;
		}
		mangled_lead(p->glob, p->lead, sizeof p->lead);
	}
}

/* The framework hook installed for name where scope's presets apply
 * (preload/frameworks/), or NULL. */
static const struct prof_framework_hook *hook_for(const char *name, unsigned scope)
{
	return prof_framework_hook_for(name, scope, following);
}

/* PROFILER_TRACE, read from environ: getenv may be the program's own. bash defines one
 * (and setenv) that, in a bash starting the session, answered NULL here: nothing was
 * traced in it. */
const char *prof_trace_env(void)
{
	return prof_getenv("PROFILER_TRACE");
}

int prof_trace_configure(const char *text, const char *framework, int follow)
{
	/* PROFILER_TRACE, then each preset's patterns, each ending with its NUL */
	size_t used = 0, start[PROF_NFRAMEWORKS];
	pattern_text[0] = 0;
	if (text && *text)
		used = (size_t)snprintf(pattern_text, sizeof pattern_text, "%s", text) + 1;
	detecting = prof_framework_detecting(framework);
	presets_everywhere = prof_framework_presets(framework);
	unsigned installed = detecting ? (1u << PROF_NFRAMEWORKS) - 1 : presets_everywhere;
	for (unsigned i = 0; i < PROF_NFRAMEWORKS; i++) {
		start[i] = used;
		if (installed & (1u << i))
			used = prof_framework_patterns(i, pattern_text, sizeof pattern_text, used) + 1;
	}
	if (used > sizeof pattern_text) {
		prof_warn("PROFILER_TRACE is longer than %zu bytes; not tracing by name",
			  sizeof pattern_text - 1);
		pattern_text[0] = 0;
		detecting = 0;
		presets_everywhere = 0;
		return -1;
	}
	following = follow;
	if (text && *text)
		add_patterns(pattern_text, 0);
	for (unsigned i = 0; i < PROF_NFRAMEWORKS; i++)
		if (installed & (1u << i))
			add_patterns(pattern_text + start[i], 1u << i);
	return 0;
}

/* The demangled name without its parameter list: "ns::f(int)" -> "ns::f". */
static void strip_params(char *s)
{
	int depth = 0;
	for (char *p = s; *p; p++) {
		if (*p == '<')
			depth++;
		else if (*p == '>')
			depth--;
		else if (*p == '(' && depth == 0 && p != s) {
			*p = 0;
			return;
		}
	}
}

/* Whether pattern p is one to try on name where scope's presets apply. */
static int applies(const struct pattern *p, unsigned scope)
{
	return !p->fw || (p->fw & scope);
}

/* A category + 1 when name (mangled or demangled) matches a pattern that applies where
 * scope's presets do, else 0. */
static unsigned match(const char *name, unsigned scope)
{
	static char *(*demangle)(const char *, char *, size_t *, int *);
	int cxx_patterns = 0;
	for (unsigned i = 0; i < npatterns; i++) {
		if (!applies(&patterns[i], scope))
			continue;
		if (prof_glob(patterns[i].glob, name))
			return patterns[i].cat + 1u;
		/* demangling every C++ name of libtorch would cost more than the rest */
		cxx_patterns |= strstr(patterns[i].glob, "::") && !strncmp(name, "_Z", 2) &&
				(!patterns[i].lead[0] || leads_with(name, patterns[i].lead));
	}
	/* Only a pattern naming a scope ("ns::f", "at::_ops::*::call") is tried on demangled
	 * names: a C API pattern like TF_* must not take in TF_Session::TF_Session(...). */
	if (!cxx_patterns || strncmp(name, "_Z", 2))
		return 0;
	if (!demangle) {
		/* C++ libraries loaded RTLD_LOCAL (Python extensions) keep libstdc++ out of the
		 * global scope: read its own symbol table (no dlopen: see elf_sym.c) */
		demangle = (char *(*)(const char *, char *, size_t *, int *))prof_real_dlsym(
			RTLD_DEFAULT, "__cxa_demangle");
		if (!demangle)
			demangle = (char *(*)(const char *, char *, size_t *, int *))
				prof_elf_symbol_in("libstdc++.so.6", "__cxa_demangle");
	}
	int status = -1;
	char *d = demangle ? demangle(name, 0, 0, &status) : 0;
	unsigned cat = 0;
	if (d && status == 0) {
		for (unsigned i = 0; i < npatterns && !cat; i++)
			if (applies(&patterns[i], scope) && strstr(patterns[i].glob, "::") &&
			    prof_glob(patterns[i].glob, d))
				cat = patterns[i].cat + 1u;
		strip_params(d);
		for (unsigned i = 0; i < npatterns && !cat; i++)
			if (applies(&patterns[i], scope) && strstr(patterns[i].glob, "::") &&
			    prof_glob(patterns[i].glob, d))
				cat = patterns[i].cat + 1u;
	}
	free(d);
	return cat;
}

/* The loaded object holding addr in one of its PT_LOAD segments. Not dladdr: it walks
 * the whole symbol table of the object for the nearest symbol, and libtorch_cpu's has
 * hundreds of thousands (three per patched slot made `import torch` 5x slower). */
struct object_at {
	uintptr_t addr;
	struct dl_phdr_info info;
	uintptr_t lo, hi; /* the object's lowest and highest loaded addresses */
};

static int object_at_cb(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	struct object_at *o = ctx;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	int in = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const Elf64_Phdr *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		in |= o->addr >= a && o->addr < a + ph->p_memsz;
		lo = a < lo ? a : lo;
		hi = a + ph->p_memsz > hi ? a + ph->p_memsz : hi;
	}
	if (in) {
		o->info = *info;
		o->lo = lo;
		o->hi = hi;
	}
	return in;
}

static int object_at(const void *addr, struct object_at *o)
{
	o->addr = (uintptr_t)addr;
	return dl_iterate_phdr(object_at_cb, o) > 0;
}

static int inside_libprof(const void *addr)
{
	static uintptr_t lo, hi;
	struct object_at self;
	if (!hi && object_at((const void *)inside_libprof, &self)) {
		lo = self.lo;
		hi = self.hi;
	}
	return (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
}

/* libprof's own functions are not traced, but for its longjmp family (nonlocal.c): the
 * program's jumps are its calls. */
static int untraceable(const void *real)
{
	return inside_libprof(real) && !prof_nonlocal_is_wrapper(real);
}

/* The stub for name where scope's presets apply, or NULL when it is neither traced nor
 * hooked. */
static void *stub_for(const char *name, void *real, unsigned scope)
{
	unsigned cat = match(name, scope);
	const struct prof_framework_hook *h = hook_for(name, scope);
	if (!cat && !h)
		return 0;
	if (!cat)
		cat = category_for(h->category, strlen(h->category)) + 1u;
	prof_trace_hook hook = h ? h->hook : 0;
	int entry_only = hook ? 0 : prof_trace_entry_only(name);
	if (entry_only)
		hook = entry_only == 2 ? prof_trace_unwind_hook : prof_trace_entry_only_hook;
	void *stub = prof_trace_stub(real, prof_intern(name), (uint8_t)(cat - 1), hook);
	if (!stub)
		prof_debug(PROF_DEBUG_TRACE, "not tracing %s: %s", name,
			   prof_trace_stub_why(errno));
	void *stand_in = prof_framework_stand_in(name, stub ? stub : real, scope);
	return stand_in ? stand_in : stub;
}

/* Whether addr is where an executable's undefined symbol points: its PLT entry, made the
 * function's canonical address because the executable takes it (non-PIE code). That
 * entry jumps through the executable's own GOT slot: a stub calling it from there would
 * call itself forever. */
static int plt_entry(void *addr, const char *name)
{
	Dl_info di;
	const Elf64_Sym *sym = 0;
	struct object_at o;
	if (!object_at(addr, &o) || (o.info.dlpi_name && *o.info.dlpi_name))
		return 0; /* not in the executable */
	return dladdr1(addr, &di, (void **)&sym, RTLD_DL_SYMENT) && sym && di.dli_sname &&
	       !strcmp(di.dli_sname, name) && sym->st_shndx == SHN_UNDEF;
}

/* Whether addr lies in an executable segment of a loaded object: a function, not data
 * (dlsym also finds variables: a stub handed back for `stdout` made fprintf crash, and
 * ctypes' in_dll read the stub's bytes as the variable). An IFUNC's resolved code, which
 * no dynamic symbol names, is in one too. */
static int in_code(const void *addr)
{
	struct object_at o;
	if (!object_at(addr, &o))
		return 0;
	for (int i = 0; i < o.info.dlpi_phnum; i++) {
		const Elf64_Phdr *ph = &o.info.dlpi_phdr[i];
		uintptr_t a = o.info.dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (uintptr_t)addr >= a && (uintptr_t)addr < a + ph->p_memsz)
			return (ph->p_flags & PF_X) != 0;
	}
	return 0;
}

static uintptr_t dyn_ptr(uintptr_t base, Elf64_Addr v);

/* The frameworks the object holding addr is part of (frameworks.h). */
static unsigned framework_of(const void *addr)
{
	struct object_at o;
	if (!object_at(addr, &o))
		return 0;
	const Elf64_Dyn *dyn = 0;
	for (int i = 0; i < o.info.dlpi_phnum; i++)
		if (o.info.dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const Elf64_Dyn *)(o.info.dlpi_addr + o.info.dlpi_phdr[i].p_vaddr);
	const char *strtab = 0;
	for (const Elf64_Dyn *d = dyn; d && d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_STRTAB)
			strtab = (const char *)dyn_ptr(o.info.dlpi_addr, d->d_un.d_ptr);
	return prof_framework_object(o.info.dlpi_name, dyn, strtab);
}

void *prof_trace_lookup(const char *name, void *real)
{
	if ((!npatterns && !following) || !real || !name || !prof_proc || untraceable(real))
		return real;
	/* a lookup gets the presets of the framework that defines the function (ctypes) */
	unsigned scope = presets_everywhere | (detecting ? framework_of(real) : 0);
	/* most lookups want nothing: answer them before plt_entry's symbol-table scan */
	if ((!match(name, scope) && !hook_for(name, scope)) || plt_entry(real, name) ||
	    !in_code(real))
		return real;
	void *stub = stub_for(name, real, scope);
	return stub ? stub : real;
}

/* The loaded objects, as prof_trace_patch_loaded last listed them. */
static struct dl_phdr_info listed[MAX_OBJECTS];
static unsigned nlisted, unlisted; /* unlisted: past the table, not patched */

/* Where a slot's call really goes: the slot itself once bound, else what the dynamic
 * linker would pick (the global scope first, then the object's own). */
static void *resolve(void **slot, const char *name, const struct dl_phdr_info *object)
{
	struct object_at o;
	void *cur = *slot;
	/* bound: the slot holds name's definition in the object it points into */
	if (object_at(cur, &o) && prof_elf_symbol(&o.info, name) == cur && !plt_entry(cur, name))
		return cur;
	void *r = prof_real_dlsym(RTLD_DEFAULT, name);
	if (r && !plt_entry(r, name))
		return r;
	if (r) {
		/* the executable's PLT entry stands for the definition the global scope
		 * gives, roughly the first in load order (libprof's own before libc's) */
		for (unsigned i = 0; i < nlisted; i++)
			if ((r = prof_elf_symbol(&listed[i], name)))
				return r;
		return 0;
	}
	/* The object's own scope (a library loaded RTLD_LOCAL calling itself or its own
	 * dependencies): the object, then the others in load order, read from their symbol
	 * tables. Never dlopen(RTLD_NOLOAD) here: this may run in a constructor, and for an
	 * object being loaded that runs other objects' constructors early (elf_sym.c). */
	r = prof_elf_symbol(object, name);
	for (unsigned i = 0; !r && i < nlisted; i++)
		if (listed[i].dlpi_addr != object->dlpi_addr)
			r = prof_elf_symbol(&listed[i], name);
	return r;
}

struct dynamic_info {
	const Elf64_Dyn *dyn;
	const Elf64_Sym *symtab;
	const char *strtab;
	const Elf64_Rela *jmprel;
	size_t jmprel_size;
	const Elf64_Rela *rela; /* GLOB_DAT: function pointers taken (pybind11 bindings) */
	size_t rela_size;
};

static uintptr_t dyn_ptr(uintptr_t base, Elf64_Addr v)
{
	/* glibc relocates most d_ptr values in place; a small one is still an offset */
	return v < base ? base + v : v;
}

static int read_dynamic(const struct dl_phdr_info *info, struct dynamic_info *d,
			uintptr_t *relro_start, uintptr_t *relro_end)
{
	const Elf64_Dyn *dyn = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const Elf64_Phdr *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_DYNAMIC)
			dyn = (const Elf64_Dyn *)(info->dlpi_addr + ph->p_vaddr);
		if (ph->p_type == PT_GNU_RELRO) {
			*relro_start = info->dlpi_addr + ph->p_vaddr;
			*relro_end = *relro_start + ph->p_memsz;
		}
	}
	if (!dyn)
		return -1;
	memset(d, 0, sizeof *d);
	d->dyn = dyn;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		switch (dyn->d_tag) {
		case DT_SYMTAB:
			d->symtab = (const void *)dyn_ptr(info->dlpi_addr, dyn->d_un.d_ptr);
			break;
		case DT_STRTAB:
			d->strtab = (const void *)dyn_ptr(info->dlpi_addr, dyn->d_un.d_ptr);
			break;
		case DT_JMPREL:
			d->jmprel = (const void *)dyn_ptr(info->dlpi_addr, dyn->d_un.d_ptr);
			break;
		case DT_PLTRELSZ:
			d->jmprel_size = dyn->d_un.d_val;
			break;
		case DT_RELA:
			d->rela = (const void *)dyn_ptr(info->dlpi_addr, dyn->d_un.d_ptr);
			break;
		case DT_RELASZ:
			d->rela_size = dyn->d_un.d_val;
			break;
		case DT_PLTREL:
			if (dyn->d_un.d_val != DT_RELA)
				return -1;
			break;
		}
	}
	return d->symtab && d->strtab && d->jmprel ? 0 : -1;
}

static int skip_object(const struct dl_phdr_info *info)
{
	const char *n = info->dlpi_name;
	return strstr(n, "linux-vdso") || strstr(n, "ld-linux") || strstr(n, "/ld-") ||
	       inside_libprof((const void *)(info->dlpi_addr + info->dlpi_phdr[0].p_vaddr));
}

static const char *object_name(const struct dl_phdr_info *info)
{
	return info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "the executable";
}

/* 0, or -1 when the object is still being relocated (got_write.c): look again later. */
static int patch_slot(const struct dl_phdr_info *info, const struct dynamic_info *d,
		      const Elf64_Rela *r, struct prof_got_object *pages, int hooks_only,
		      unsigned scope)
{
	const char *name = d->strtab + d->symtab[ELF64_R_SYM(r->r_info)].st_name;
	void **slot = (void **)(info->dlpi_addr + r->r_offset);
	if (!*name)
		return 0;
	const struct prof_framework_hook *h = hook_for(name, scope);
	if (hooks_only ? !h || (!following && !h->by_address)
		       : (!match(name, scope) && !h))
		return 0;
	if (prof_trace_is_stub(*slot)) /* after the match: it looks through every stub */
		return 0;
	void *real = resolve(slot, name, info);
	if (!real) {
		prof_debug(PROF_DEBUG_TRACE, "not tracing %s in %s: no definition found", name,
			   object_name(info));
		return 0;
	}
	void *stub = !untraceable(real) ? stub_for(name, real, scope) : 0;
	int rc = stub ? prof_got_write(pages, slot, stub) : 0;
	if (rc == PROF_GOT_REFUSED) {
		/* the page will not become writable later: this slot is given up */
		prof_debug(PROF_DEBUG_GOT,
			   "cannot patch %s in %s: slot %p in a read-only mapping (mprotect: %s)",
			   name, object_name(info), (void *)slot, strerror(errno));
		return 0;
	}
	return rc;
}

/* libtorch_cpu, patched and relocated: its RecordFunction callbacks are added once the
 * patching is over (torch_callbacks.c). */
static struct dl_phdr_info torch_cpu;
static int have_torch_cpu;

static int named_libtorch_cpu(const char *path)
{
	const char *base = path ? strrchr(path, '/') : 0;
	base = base ? base + 1 : path;
	return base && !strncmp(base, "libtorch_cpu.so", 15);
}

static void patch_object(struct dl_phdr_info *info)
{
	for (unsigned i = 0; i < npatched; i++)
		if (patched[i] == info->dlpi_addr)
			return;
	unsigned marked = npatched < MAX_OBJECTS;
	if (marked)
		patched[npatched++] = info->dlpi_addr;
	struct dynamic_info d;
	struct prof_got_object pages = {0};
	int busy = 0;
	if (skip_object(info) || read_dynamic(info, &d, &pages.relro_lo, &pages.relro_hi))
		return;
	unsigned own = prof_framework_object(info->dlpi_name, d.dyn, d.strtab);
	unsigned scope = presets_everywhere | (detecting ? own : 0);
	unsigned found = own & (detecting ? ~0u : presets_everywhere);
	if (found) /* named on the collector's summary line */
		atomic_fetch_or(&prof_proc->frameworks, found);
	if (own & PROF_FW_MXNET)
		prof_mxnet_loaded();
	if (!scope && !nuser && !following)
		return; /* no pattern or hook applies here */
	size_t n = d.jmprel_size / sizeof(Elf64_Rela);
	for (size_t i = 0; i < n && !busy; i++)
		if (ELF64_R_TYPE(d.jmprel[i].r_info) == R_X86_64_JUMP_SLOT)
			busy = patch_slot(info, &d, &d.jmprel[i], &pages, 0, scope);
	/* A function's address taken (GLOB_DAT) is patched only for the follow hooks and
	 * those marked by_address (a completion callback): elsewhere it could change what a
	 * program compares function pointers with. */
	int by_address = following || prof_framework_hooks_by_address(scope);
	n = d.rela ? d.rela_size / sizeof(Elf64_Rela) : 0;
	for (size_t i = 0; by_address && i < n && !busy; i++)
		if (ELF64_R_TYPE(d.rela[i].r_info) == R_X86_64_GLOB_DAT &&
		    ELF64_ST_TYPE(d.symtab[ELF64_R_SYM(d.rela[i].r_info)].st_info) == STT_FUNC)
			busy = patch_slot(info, &d, &d.rela[i], &pages, 1, scope);
	prof_got_write_done();
	if (busy) {
		/* being relocated by a dlopen in another thread: the next look patches it */
		npatched -= marked;
		__atomic_store_n(&seen_adds, ~0ull, __ATOMIC_RELAXED);
	} else if ((scope & PROF_FW_TORCH) && named_libtorch_cpu(info->dlpi_name)) {
		torch_cpu = *info;
		have_torch_cpu = 1;
	}
}

static int count_adds(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	((unsigned long long *)ctx)[0] = info->dlpi_adds;
	((unsigned long long *)ctx)[1] = info->dlpi_subs;
	return 1;
}

/* The objects are listed first and patched after dl_iterate_phdr returns: it holds the
 * loader's lock, and the patching calls dladdr, which takes another one that a
 * concurrent dlopen holds while it waits for the first (a deadlock seen in testing). */
static int list_object(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	(void)ctx;
	if (nlisted < MAX_OBJECTS)
		listed[nlisted++] = *info;
	else
		unlisted++;
	return 0;
}

static pthread_mutex_t patch_lock = PTHREAD_MUTEX_INITIALIZER;

/* A fork may have caught another thread patching. */
void prof_trace_patch_after_fork(void)
{
	pthread_mutex_init(&patch_lock, 0);
}

void prof_trace_patch_loaded(void)
{
	if ((!npatterns && !following) || !prof_proc)
		return;
	unsigned long long counts[2] = {0, 0};
	dl_iterate_phdr(count_adds, counts);
	if (counts[0] == seen_adds)
		return;
	struct prof_thread *t = &prof_thr;
	t->busy++;
	pthread_mutex_lock(&patch_lock);
	seen_adds = counts[0];
	/* Something was unloaded since: an object now at a patched address may be another
	 * one (or the same file loaded afresh, GOT unpatched). Look at every object again;
	 * slots already holding a stub are left as they are. */
	if (counts[1] != seen_subs)
		npatched = 0;
	seen_subs = counts[1];
	nlisted = unlisted = 0;
	dl_iterate_phdr(list_object, 0);
	if (unlisted)
		prof_debug(PROF_DEBUG_GOT, "not patching %u loaded objects: more than %d loaded",
			   unlisted, MAX_OBJECTS);
	/* Not held open meanwhile: dlopen/dlclose here could drop the last reference of an
	 * object whose constructor is what called dlsym. A dlclose racing with this patching
	 * is not handled. */
	for (unsigned i = 0; i < nlisted; i++)
		patch_object(&listed[i]);
	struct dl_phdr_info torch = torch_cpu;
	int torch_found = have_torch_cpu;
	pthread_mutex_unlock(&patch_lock);
	if (torch_found)
		prof_torch_callbacks_install(&torch);
	t->busy--;
}
