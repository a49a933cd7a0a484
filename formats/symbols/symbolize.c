/* The symbolizer; see symbolize.h. Our own ELF64 reader gives function names (no libelf
 * or libbfd to depend on); addr2line gives file:line, one process per module fed every
 * address at once, a few modules at a time. */
#define _GNU_SOURCE /* O_CLOEXEC, SOCK_CLOEXEC, strnlen */
#include "formats/symbols/symbolize.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "formats/symbols/demangle.h"
#include "formats/util/strtab.h"
#include "formats/util/u64map.h"
#include "formats/util/vec.h"

extern char **environ;

/* addr2line processes at once: each may hold a big module's DWARF in memory. */
#define A2L_PARALLEL 4
/* How far back a look-up searches for a sized symbol that encloses a nested one. */
#define SYM_WALK_BACK 16
#define BUILD_ID_MAX 64

struct sym {
	uint64_t addr;
	uint64_t end;  /* addr + size; for size 0, the end of its section or UINT64_MAX */
	uint32_t name; /* offset in the string table */
	uint32_t rank; /* which of several symbols at one address names it; bit 31: size 0 */
};
#define RANK_UNSIZED 0x80000000u

struct query {
	uint64_t off, vaddr;
	const char *function, *file;
	uint64_t fn_off;
	unsigned line;
	unsigned char has_vaddr, has_offset;
};

struct seg {
	uint64_t off, filesz, vaddr;
};

/* A mapped ELF64 file, every header checked against its size. */
struct elf {
	const unsigned char *p;
	size_t size;
	dev_t dev;
	ino_t ino;
	Elf64_Ehdr eh;
	size_t shoff, shnum; /* section headers, 0 when absent or out of bounds */
	Elf64_Shdr shstr;    /* the section-name table, sh_size 0 when unusable */
};

struct module {
	char *path;
	size_t next_same_hash; /* index + 1 of the next module whose path hashes alike */
	struct query *q;
	size_t nq, qcap, ndone; /* q[0..ndone) resolved */
	struct u64map by_off;   /* file offset -> index in q */
	int state;              /* 0 not read yet, 1 read, -1 unusable */
	struct seg *segs;
	size_t nsegs;
	struct sym *syms;
	size_t nsyms;
	char *sym_path; /* the file whose string table names syms (module or debug file) */
	uint64_t strtab_off, strtab_size;
	struct elf symf;     /* sym_path, mapped while resolving */
	struct u64map names; /* symbol index -> interned demangled name */
	char *line_path;     /* the file addr2line reads, or NULL */
};

struct strblock {
	struct strblock *next;
	size_t used, cap;
	char data[];
};

struct symbolizer {
	struct module **mods;
	size_t nmods, mcap;
	struct u64map by_path; /* path hash -> index + 1 of the first such module */
	struct module *last;   /* the module of the last add or get: frames come in runs */
	struct strblock *blocks;
	struct u64map strs; /* string hash -> interned string */
	char *debug_dir;
	char *a2l; /* NULL: no file:line */
};

/* ---- strings: interned into blocks that never move ---- */

static char *arena_alloc(struct symbolizer *s, size_t n)
{
	struct strblock *b = s->blocks;

	if (!b || b->cap - b->used < n) {
		size_t cap = n > 65536 ? n : 65536;
		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->next = s->blocks;
		b->used = 0;
		b->cap = cap;
		s->blocks = b;
	}
	b->used += n;
	return b->data + b->used - n;
}

static const char *intern(struct symbolizer *s, const char *p, size_t n)
{
	uint64_t h = hash_bytes(p, n), *v = u64map_find(&s->strs, h);
	char *q;
	int created;

	if (v) {
		const char *old = (const char *)(uintptr_t)*v;
		if (!strncmp(old, p, n) && !old[n])
			return old;
	}
	q = arena_alloc(s, n + 1);
	if (!q)
		return NULL;
	memcpy(q, p, n);
	q[n] = 0;
	/* A hash collision keeps the first string: the second is just not shared. */
	if (!v) {
		v = u64map_upsert(&s->strs, h, &created);
		if (!v)
			return NULL;
		*v = (uintptr_t)q;
	}
	return q;
}

/* ---- ELF ---- */

static int in_bounds(const struct elf *e, uint64_t off, uint64_t len)
{
	return off <= e->size && len <= e->size - off;
}

static void elf_close(struct elf *e)
{
	if (e->p)
		munmap((void *)e->p, e->size);
	memset(e, 0, sizeof(*e));
}

static int elf_shdr(const struct elf *e, size_t i, Elf64_Shdr *sh)
{
	if (i >= e->shnum)
		return -1;
	memcpy(sh, e->p + e->shoff + i * sizeof(*sh), sizeof(*sh));
	return 0;
}

static int elf_open(struct elf *e, const char *path)
{
	struct stat st;
	Elf64_Shdr sh0;
	void *p;
	size_t shnum, shstrndx;
	/* O_NONBLOCK: a FIFO where a library was must not hang us (regular files only). */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	memset(e, 0, sizeof(*e));
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_size < (off_t)sizeof(Elf64_Ehdr) || (uint64_t)st.st_size > SIZE_MAX) {
		close(fd);
		return -1;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -1;
	e->p = p;
	e->size = (size_t)st.st_size;
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	memcpy(&e->eh, p, sizeof(e->eh));
	if (memcmp(e->eh.e_ident, ELFMAG, SELFMAG) || e->eh.e_ident[EI_CLASS] != ELFCLASS64 ||
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	    e->eh.e_ident[EI_DATA] != ELFDATA2LSB ||
#else
	    e->eh.e_ident[EI_DATA] != ELFDATA2MSB ||
#endif
	    (e->eh.e_type != ET_EXEC && e->eh.e_type != ET_DYN)) {
		elf_close(e);
		return -1;
	}
	if (!e->eh.e_shoff || e->eh.e_shentsize != sizeof(Elf64_Shdr) ||
	    !in_bounds(e, e->eh.e_shoff, sizeof(Elf64_Shdr)))
		return 0;
	memcpy(&sh0, e->p + e->eh.e_shoff, sizeof(sh0));
	/* Extended numbering: past 0xff00 sections the counts live in section 0. */
	shnum = e->eh.e_shnum ? e->eh.e_shnum : sh0.sh_size;
	shstrndx = e->eh.e_shstrndx == SHN_XINDEX ? sh0.sh_link : e->eh.e_shstrndx;
	if (shnum > e->size / sizeof(Elf64_Shdr) ||
	    !in_bounds(e, e->eh.e_shoff, shnum * sizeof(Elf64_Shdr)))
		return 0;
	e->shoff = e->eh.e_shoff;
	e->shnum = shnum;
	if (elf_shdr(e, shstrndx, &e->shstr) || e->shstr.sh_type != SHT_STRTAB ||
	    !in_bounds(e, e->shstr.sh_offset, e->shstr.sh_size))
		memset(&e->shstr, 0, sizeof(e->shstr)); /* no section has a name */
	return 0;
}

/* A section that has bytes in the file (not NOBITS, as in stripped debug files). */
static int sec_has_data(const struct elf *e, const Elf64_Shdr *sh)
{
	return sh->sh_type != SHT_NOBITS && sh->sh_size && in_bounds(e, sh->sh_offset, sh->sh_size);
}

/* The section named name with bytes in the file: 0, else -1. */
static int elf_find(const struct elf *e, const char *name, Elf64_Shdr *out)
{
	size_t i, n = strlen(name);
	const char *names = (const char *)e->p + e->shstr.sh_offset;

	for (i = 0; i < e->shnum; i++) {
		elf_shdr(e, i, out);
		if (out->sh_name < e->shstr.sh_size && e->shstr.sh_size - out->sh_name > n &&
		    !memcmp(names + out->sh_name, name, n + 1) && sec_has_data(e, out))
			return 0;
	}
	return -1;
}

static int has_line_table(const struct elf *e)
{
	Elf64_Shdr sh;

	return !elf_find(e, ".debug_line", &sh) || !elf_find(e, ".zdebug_line", &sh);
}

/* The GNU build id in a run of notes: its length (copied to id), or 0. */
static size_t note_build_id(const unsigned char *p, uint64_t len, uint64_t align,
			    unsigned char *id)
{
	Elf64_Nhdr nh;
	uint64_t name_end, desc_end;

	align = align == 8 ? 8 : 4;
	while (len >= sizeof(nh)) {
		memcpy(&nh, p, sizeof(nh));
		name_end = (sizeof(nh) + (uint64_t)nh.n_namesz + align - 1) & ~(align - 1);
		desc_end = (name_end + (uint64_t)nh.n_descsz + align - 1) & ~(align - 1);
		if (name_end + nh.n_descsz > len)
			return 0;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp(p + sizeof(nh), "GNU", 4) && nh.n_descsz &&
		    nh.n_descsz <= BUILD_ID_MAX) {
			memcpy(id, p + name_end, nh.n_descsz);
			return nh.n_descsz;
		}
		if (desc_end >= len)
			return 0;
		p += desc_end;
		len -= desc_end;
	}
	return 0;
}

static size_t elf_build_id(const struct elf *e, unsigned char *id)
{
	Elf64_Shdr sh;
	Elf64_Phdr ph;
	size_t i, n;

	/* Sections first: a debug file's program headers may point at nothing. */
	for (i = 0; i < e->shnum; i++) {
		elf_shdr(e, i, &sh);
		if (sh.sh_type == SHT_NOTE && sec_has_data(e, &sh) &&
		    (n = note_build_id(e->p + sh.sh_offset, sh.sh_size, sh.sh_addralign, id)))
			return n;
	}
	if (e->eh.e_phentsize != sizeof(ph))
		return 0;
	for (i = 0; i < e->eh.e_phnum; i++) {
		if (!in_bounds(e, e->eh.e_phoff + i * sizeof(ph), sizeof(ph)))
			return 0;
		memcpy(&ph, e->p + e->eh.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type == PT_NOTE && in_bounds(e, ph.p_offset, ph.p_filesz) &&
		    (n = note_build_id(e->p + ph.p_offset, ph.p_filesz, ph.p_align, id)))
			return n;
	}
	return 0;
}

static int read_segments(struct module *m, const struct elf *e)
{
	Elf64_Phdr ph;
	size_t i, cap = 0;

	if (e->eh.e_phentsize != sizeof(ph))
		return 0;
	for (i = 0; i < e->eh.e_phnum; i++) {
		if (!in_bounds(e, e->eh.e_phoff + i * sizeof(ph), sizeof(ph)))
			break;
		memcpy(&ph, e->p + e->eh.e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_LOAD || !ph.p_filesz)
			continue;
		if (VEC_RESERVE(m->segs, cap, m->nsegs + 1))
			return -1;
		m->segs[m->nsegs++] = (struct seg){ ph.p_offset, ph.p_filesz, ph.p_vaddr };
	}
	return 0;
}

static int off_to_vaddr(const struct module *m, uint64_t off, uint64_t *vaddr)
{
	size_t i;

	for (i = 0; i < m->nsegs; i++) {
		const struct seg *g = &m->segs[i];
		if (off >= g->off && off - g->off < g->filesz) {
			*vaddr = g->vaddr + (off - g->off);
			return 1;
		}
	}
	return 0;
}

/* ---- symbol tables ---- */

static int sym_cmp(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

/* Which alias names an address, lower first: a sized one; fewer leading underscores
 * (libc's "getpid" over "__getpid", which is the GLOBAL one); GLOBAL, WEAK, then LOCAL;
 * the shorter name. */
static uint32_t sym_rank(const Elf64_Sym *st, const char *name, size_t len)
{
	uint32_t under = 0, bind = 2;

	while (under < len && under < 15 && name[under] == '_')
		under++;
	if (ELF64_ST_BIND(st->st_info) == STB_GLOBAL)
		bind = 0;
	else if (ELF64_ST_BIND(st->st_info) == STB_WEAK)
		bind = 1;
	return (st->st_size ? 0 : RANK_UNSIZED) | under << 26 | bind << 24 |
	       (len < 0xffffff ? (uint32_t)len : 0xffffff);
}

/* The function symbols of the table in section symsec of e, sorted, one per address.
 * 0 (m->nsyms may be 0), or -1 when out of memory. */
static int read_symbols(struct module *m, const struct elf *e, const Elf64_Shdr *symsec)
{
	Elf64_Shdr strsec, sh;
	Elf64_Sym st;
	uint64_t i, n, ent = symsec->sh_entsize ? symsec->sh_entsize : sizeof(st);
	const char *strs;
	size_t j, k;

	if (ent < sizeof(st) || elf_shdr(e, symsec->sh_link, &strsec) ||
	    strsec.sh_type != SHT_STRTAB || !sec_has_data(e, &strsec) ||
	    strsec.sh_size > UINT32_MAX)
		return 0;
	strs = (const char *)e->p + strsec.sh_offset;
	n = symsec->sh_size / ent;
	m->syms = malloc((n ? n : 1) * sizeof(*m->syms));
	if (!m->syms)
		return -1;
	m->nsyms = 0;
	for (i = 0; i < n; i++) {
		struct sym *y = &m->syms[m->nsyms];
		size_t len;
		int type;

		memcpy(&st, e->p + symsec->sh_offset + i * ent, sizeof(st));
		type = ELF64_ST_TYPE(st.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || st.st_shndx == SHN_UNDEF ||
		    !st.st_value || st.st_name >= strsec.sh_size)
			continue;
		len = strnlen(strs + st.st_name, strsec.sh_size - st.st_name);
		if (!len || len == strsec.sh_size - st.st_name)
			continue;
		y->addr = st.st_value;
		y->name = st.st_name;
		y->rank = sym_rank(&st, strs + st.st_name, len);
		if (st.st_size)
			y->end = st.st_value + st.st_size < st.st_value ? UINT64_MAX :
				 st.st_value + st.st_size;
		/* Size 0 (hand-written assembly): up to the next symbol, but not past its
		 * section, so PLT stubs do not read as the function before them. */
		else if (st.st_shndx < SHN_LORESERVE && !elf_shdr(e, st.st_shndx, &sh) &&
			 (sh.sh_flags & SHF_ALLOC) && st.st_value >= sh.sh_addr &&
			 st.st_value - sh.sh_addr < sh.sh_size)
			y->end = sh.sh_addr + sh.sh_size;
		else
			y->end = UINT64_MAX;
		m->nsyms++;
	}
	qsort(m->syms, m->nsyms, sizeof(*m->syms), sym_cmp);
	for (j = k = 0; j < m->nsyms; j++)
		if (!k || m->syms[j].addr != m->syms[k - 1].addr)
			m->syms[k++] = m->syms[j];
	m->nsyms = k;
	m->strtab_off = strsec.sh_offset;
	m->strtab_size = strsec.sh_size;
	return 0;
}

/* The symbol that holds vaddr: the nearest below it, or, past a sized one's end, a sized
 * one a little further back that encloses it. -1 when none. */
static long sym_find(const struct module *m, uint64_t vaddr)
{
	size_t lo = 0, hi = m->nsyms, k;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (k = 0; k < SYM_WALK_BACK && k < lo; k++) {
		const struct sym *y = &m->syms[lo - 1 - k];
		if (vaddr < y->end && (!k || !(y->rank & RANK_UNSIZED)))
			return (long)(lo - 1 - k);
	}
	return -1;
}

/* The demangled name of symbol i, interned once. NULL when unreadable; *oom on failure. */
static const char *sym_name(struct symbolizer *s, struct module *m, long i, int *oom)
{
	uint64_t *v = u64map_find(&m->names, (uint64_t)i), off = m->syms[i].name;
	const char *raw, *name;
	char *d;
	size_t n;
	int created;

	if (v)
		return (const char *)(uintptr_t)*v;
	/* The file was mapped again for this resolve: it may have changed under us. */
	if (!m->symf.p || !in_bounds(&m->symf, m->strtab_off, m->strtab_size) ||
	    off >= m->strtab_size)
		return NULL;
	raw = (const char *)m->symf.p + m->strtab_off + off;
	n = strnlen(raw, m->strtab_size - off);
	if (n == m->strtab_size - off)
		return NULL;
	d = demangle_name(raw, n);
	name = d ? intern(s, d, strlen(d)) : intern(s, raw, n);
	free(d);
	v = name ? u64map_upsert(&m->names, (uint64_t)i, &created) : NULL;
	if (!v) {
		*oom = 1;
		return NULL;
	}
	*v = (uintptr_t)name;
	return name;
}

/* ---- separate debug files ---- */

static int try_debug(const struct elf *mod, const unsigned char *id, size_t idlen,
		     const char *path, struct elf *d)
{
	unsigned char did[BUILD_ID_MAX];
	size_t dlen;

	if (elf_open(d, path))
		return -1;
	if (d->dev == mod->dev && d->ino == mod->ino)
		goto no;
	/* Without checking the debuglink CRC (reading the whole file), matching build ids
	 * are what says a debug file belongs to this module. */
	dlen = idlen ? elf_build_id(d, did) : 0;
	if (dlen && (dlen != idlen || memcmp(did, id, idlen)))
		goto no;
	return 0;
no:
	elf_close(d);
	return -1;
}

/* Opens the module's separate debug file into d and names it in *path (malloc'd): 0, or
 * -1 when there is none (or out of memory: then *oom). */
static int find_debug(struct symbolizer *s, const char *mpath, const struct elf *mod,
		      struct elf *d, char **path, int *oom)
{
	unsigned char id[BUILD_ID_MAX];
	size_t idlen = elf_build_id(mod, id), i, dirlen;
	char buf[PATH_MAX];
	Elf64_Shdr sh;
	const char *slash = strrchr(mpath, '/'), *link;
	int p;

	if (idlen >= 2 && s->debug_dir) {
		p = snprintf(buf, sizeof(buf), "%s/.build-id/%02x/", s->debug_dir, id[0]);
		for (i = 1; i < idlen && p > 0 && (size_t)p < sizeof(buf); i++)
			p += snprintf(buf + p, sizeof(buf) - p, "%02x", id[i]);
		if (p > 0 && (size_t)p < sizeof(buf) &&
		    (size_t)snprintf(buf + p, sizeof(buf) - p, ".debug") < sizeof(buf) - p &&
		    !try_debug(mod, id, idlen, buf, d))
			goto found;
	}
	if (!slash || elf_find(mod, ".gnu_debuglink", &sh))
		return -1;
	/* The name, NUL, padding, then a CRC we do not check. */
	link = (const char *)mod->p + sh.sh_offset;
	if (!strnlen(link, sh.sh_size) || strnlen(link, sh.sh_size) == sh.sh_size ||
	    strchr(link, '/'))
		return -1;
	dirlen = (size_t)(slash - mpath);
	/* gdb's order: beside the module, in .debug/ beside it, under the debug directory. */
	for (i = 0; i < 3; i++) {
		if (i == 0)
			p = snprintf(buf, sizeof(buf), "%.*s/%s", (int)dirlen, mpath, link);
		else if (i == 1)
			p = snprintf(buf, sizeof(buf), "%.*s/.debug/%s", (int)dirlen, mpath, link);
		else if (s->debug_dir)
			p = snprintf(buf, sizeof(buf), "%s%.*s/%s", s->debug_dir, (int)dirlen,
				     mpath, link);
		else
			break;
		if (p > 0 && (size_t)p < sizeof(buf) && !try_debug(mod, id, idlen, buf, d))
			goto found;
	}
	return -1;
found:
	*path = strdup(buf);
	if (*path)
		return 0;
	*oom = 1;
	elf_close(d);
	return -1;
}

/* ---- one module ---- */

/* The first table in order[] with function symbols: a module's own .symtab, its debug
 * file's, then its .dynsym (exported names only). */
static int pick_symbols(struct module *m, const struct elf *files[2], const char *paths[2])
{
	static const struct { int file; const char *name; } order[] = {
		{ 0, ".symtab" }, { 1, ".symtab" }, { 0, ".dynsym" },
	};
	Elf64_Shdr sh;
	size_t i;

	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		const struct elf *e = files[order[i].file];
		if (!e || elf_find(e, order[i].name, &sh))
			continue;
		free(m->syms);
		m->syms = NULL;
		m->nsyms = 0;
		if (read_symbols(m, e, &sh))
			return -1;
		if (m->nsyms) {
			m->sym_path = strdup(paths[order[i].file]);
			return m->sym_path ? 0 : -1;
		}
	}
	free(m->syms);
	m->syms = NULL;
	return 0;
}

/* Reads the module's load segments, symbol table and line-table file. -1 only when out
 * of memory; an unusable module gets state -1. */
static int module_read(struct symbolizer *s, struct module *m)
{
	struct elf e, d;
	char *dpath = NULL;
	const struct elf *files[2] = { &e, NULL };
	const char *paths[2] = { m->path, NULL };
	const char *lp;
	Elf64_Shdr sh;
	int oom = 0, line;

	memset(&d, 0, sizeof(d));
	m->state = -1;
	if (!m->path[0] || m->path[0] == '[' || elf_open(&e, m->path))
		return 0;
	if (read_segments(m, &e))
		goto fail;
	line = has_line_table(&e);
	/* A separate debug file only for what the module lacks. */
	if ((!line || elf_find(&e, ".symtab", &sh)) &&
	    !find_debug(s, m->path, &e, &d, &dpath, &oom)) {
		files[1] = &d;
		paths[1] = dpath;
	}
	if (oom || pick_symbols(m, files, paths))
		goto fail;
	lp = line ? m->path : dpath && has_line_table(&d) ? dpath : NULL;
	if (lp && !(m->line_path = strdup(lp)))
		goto fail;
	m->state = 1;
	/* Keep the file that names the symbols mapped for this resolve; drop the other. */
	if (m->sym_path && dpath && !strcmp(m->sym_path, dpath)) {
		m->symf = d;
		elf_close(&e);
	} else {
		m->symf = e;
		elf_close(&d);
	}
	free(dpath);
	return 0;
fail:
	elf_close(&e);
	elf_close(&d);
	free(dpath);
	return -1;
}

/* The ELF part of resolving the module's pending queries. */
static int module_resolve(struct symbolizer *s, struct module *m)
{
	size_t i;
	int oom = 0;

	if (m->ndone == m->nq)
		return 0;
	if (!m->state && module_read(s, m))
		return -1;
	if (m->state < 0)
		return 0;
	if (m->nsyms && !m->symf.p)
		elf_open(&m->symf, m->sym_path); /* a failure just leaves names unknown */
	for (i = m->ndone; i < m->nq && !oom; i++) {
		struct query *q = &m->q[i];
		long k;

		q->has_vaddr = off_to_vaddr(m, q->off, &q->vaddr);
		if (!q->has_vaddr || (k = sym_find(m, q->vaddr)) < 0)
			continue;
		q->function = sym_name(s, m, k, &oom);
		if (q->function) {
			q->fn_off = q->vaddr - m->syms[k].addr;
			q->has_offset = 1;
		}
	}
	elf_close(&m->symf);
	return oom ? -1 : 0;
}

/* ---- addr2line ---- */

struct a2l_job {
	struct module *m;
	pid_t pid;
	int fd;
	char *out; /* the addresses to send */
	size_t olen, opos;
	char *in; /* what came back */
	size_t ilen, icap;
	size_t *idx; /* the query of each address sent, in order */
	size_t n;
};

/* Starts addr2line on file with one end of a socket pair as its stdin and stdout (a
 * socket, so that writing to a dead child is EPIPE with MSG_NOSIGNAL, never SIGPIPE).
 * 0, else an errno. */
static int a2l_spawn(const char *prog, const char *file, pid_t *pid, int *fd)
{
	char *argv[] = { (char *)prog, "-a", "-f", "-C", "-i", "-e", (char *)file, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, dfl;
	int sv[2], rc, child;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return errno;
	child = sv[1];
	/* dup2 onto itself would keep close-on-exec: keep the child's end above 2. */
	if (child <= 2) {
		child = fcntl(sv[1], F_DUPFD_CLOEXEC, 3);
		close(sv[1]);
		if (child < 0) {
			rc = errno;
			close(sv[0]);
			return rc;
		}
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, child, 0);
	posix_spawn_file_actions_adddup2(&fa, child, 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	posix_spawnattr_init(&at);
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &dfl);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	rc = strchr(prog, '/') ? posix_spawn(pid, prog, &fa, &at, argv, environ) :
				 posix_spawnp(pid, prog, &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(child);
	if (rc) {
		close(sv[0]);
		return rc;
	}
	fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
	*fd = sv[0];
	return 0;
}

static int is_addr_line(const char *p, size_t n)
{
	size_t i;

	if (n < 3 || p[0] != '0' || p[1] != 'x')
		return 0;
	for (i = 2; i < n; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return 0;
	return 1;
}

/* Applies one address's last (outermost) function and location lines. */
static int a2l_apply(struct symbolizer *s, struct query *q, const char *fn, size_t fnlen,
		     const char *loc, size_t loclen)
{
	const char *colon, *disc;
	unsigned long line;

	if (!q->function && fn && !(fnlen == 2 && !memcmp(fn, "??", 2))) {
		q->function = intern(s, fn, fnlen);
		if (!q->function)
			return -1;
	}
	if (!loc)
		return 0;
	/* "FILE:LINE", "FILE:LINE (discriminator N)", "??:0", "FILE:?" */
	disc = memmem(loc, loclen, " (discriminator ", 16);
	if (disc)
		loclen = (size_t)(disc - loc);
	colon = memrchr(loc, ':', loclen);
	if (!colon || colon == loc || (colon - loc == 2 && !memcmp(loc, "??", 2)))
		return 0;
	q->file = intern(s, loc, (size_t)(colon - loc));
	if (!q->file)
		return -1;
	line = strtoul(colon + 1, NULL, 10);
	q->line = line <= UINT_MAX ? (unsigned)line : 0;
	return 0;
}

/* Reads addr2line's answers: per address "0xADDR", then function and location line
 * pairs, innermost inline first. */
static int a2l_parse(struct symbolizer *s, struct a2l_job *j)
{
	const char *p = j->in, *end = j->in + j->ilen, *fn = NULL, *loc = NULL;
	size_t fnlen = 0, loclen = 0, k = 0, pair = 0;
	struct query *cur = NULL;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n;

		if (!nl)
			break; /* a cut-off last line */
		n = (size_t)(nl - p);
		if (is_addr_line(p, n)) {
			if (cur && a2l_apply(s, cur, fn, fnlen, loc, loclen))
				return -1;
			cur = NULL;
			fn = loc = NULL;
			pair = 0;
			/* Answers come in order; one that does not match ends the reading. */
			if (k >= j->n || strtoull(p, NULL, 16) != j->m->q[j->idx[k]].vaddr)
				return 0;
			cur = &j->m->q[j->idx[k++]];
		} else if (cur && !(pair++ & 1)) {
			fn = p;
			fnlen = n;
		} else if (cur) {
			loc = p;
			loclen = n;
		}
		p = nl + 1;
	}
	if (cur && a2l_apply(s, cur, fn, fnlen, loc, loclen))
		return -1;
	return 0;
}

static void a2l_free(struct a2l_job *j)
{
	free(j->out);
	free(j->in);
	free(j->idx);
	memset(j, 0, sizeof(*j));
	j->fd = -1;
}

/* Prepares and starts the job of module m (none when it has nothing to ask). 1 started,
 * 0 nothing to do, -1 out of memory, -2 addr2line cannot be run. */
static int a2l_start(struct symbolizer *s, struct module *m, struct a2l_job *j)
{
	size_t i, cap = 0;
	int rc;

	a2l_free(j);
	j->m = m;
	for (i = m->ndone; i < m->nq; i++)
		if (m->q[i].has_vaddr)
			j->n++;
	if (!j->n)
		return 0;
	j->idx = malloc(j->n * sizeof(*j->idx));
	if (!j->idx || VEC_RESERVE(j->out, cap, j->n * 20))
		goto oom;
	for (j->n = 0, i = m->ndone; i < m->nq; i++) {
		if (!m->q[i].has_vaddr)
			continue;
		j->idx[j->n++] = i;
		j->olen += (size_t)sprintf(j->out + j->olen, "0x%llx\n",
					   (unsigned long long)m->q[i].vaddr);
	}
	rc = a2l_spawn(s->a2l, m->line_path, &j->pid, &j->fd);
	if (rc == ENOMEM)
		goto oom;
	if (rc) {
		a2l_free(j);
		return rc == ENOENT || rc == EACCES || rc == ENOEXEC ? -2 : 0;
	}
	return 1;
oom:
	a2l_free(j);
	return -1;
}

/* Ends a job: reaps the child and reads what it said. */
static int a2l_finish(struct symbolizer *s, struct a2l_job *j)
{
	int st, rc;

	close(j->fd);
	j->fd = -1;
	while (waitpid(j->pid, &st, 0) < 0 && errno == EINTR)
		;
	rc = a2l_parse(s, j);
	a2l_free(j);
	return rc;
}

/* Moves bytes for job j after poll said revents. 1 when it is done. */
static int a2l_step(struct a2l_job *j, short revents, int *oom)
{
	ssize_t got;

	if (j->opos < j->olen && (revents & (POLLOUT | POLLERR | POLLHUP))) {
		got = send(j->fd, j->out + j->opos, j->olen - j->opos,
			   MSG_NOSIGNAL | MSG_DONTWAIT);
		if (got > 0)
			j->opos += (size_t)got;
		else if (got < 0 && errno != EAGAIN && errno != EINTR)
			j->opos = j->olen; /* it is gone: read what it said */
		if (j->opos == j->olen)
			shutdown(j->fd, SHUT_WR);
	}
	if (!(revents & (POLLIN | POLLERR | POLLHUP)))
		return 0;
	for (;;) {
		if (VEC_RESERVE(j->in, j->icap, j->ilen + 65536)) {
			*oom = 1;
			return 1;
		}
		got = read(j->fd, j->in + j->ilen, j->icap - j->ilen);
		if (got > 0) {
			j->ilen += (size_t)got;
			continue;
		}
		if (got < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		return 1; /* end of file, or an error */
	}
}

/* file:line for every pending query of every module with line tables, A2L_PARALLEL
 * processes at a time. */
static int run_addr2line(struct symbolizer *s)
{
	struct a2l_job jobs[A2L_PARALLEL];
	struct pollfd pfd[A2L_PARALLEL];
	size_t next = 0, i, running = 0;
	int oom = 0, rc;

	for (i = 0; i < A2L_PARALLEL; i++) {
		memset(&jobs[i], 0, sizeof(jobs[i]));
		jobs[i].fd = -1;
	}
	for (;;) {
		/* Fill the free slots with the next modules that have something to ask. */
		for (i = 0; i < A2L_PARALLEL; i++) {
			while (jobs[i].fd < 0 && s->a2l && next < s->nmods && !oom) {
				struct module *m = s->mods[next++];
				if (m->state <= 0 || !m->line_path || m->ndone == m->nq)
					continue;
				rc = a2l_start(s, m, &jobs[i]);
				if (rc == -1)
					oom = 1;
				if (rc == -2) { /* not installed: names from ELF symbols only */
					free(s->a2l);
					s->a2l = NULL;
				}
				running += rc == 1;
			}
		}
		if (!running || oom)
			break;
		for (i = 0; i < A2L_PARALLEL; i++) {
			pfd[i].fd = jobs[i].fd;
			pfd[i].events = POLLIN;
			if (jobs[i].opos < jobs[i].olen)
				pfd[i].events |= POLLOUT;
			pfd[i].revents = 0;
		}
		if (poll(pfd, A2L_PARALLEL, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (i = 0; i < A2L_PARALLEL; i++) {
			if (jobs[i].fd < 0 || !pfd[i].revents ||
			    !a2l_step(&jobs[i], pfd[i].revents, &oom))
				continue;
			if (a2l_finish(s, &jobs[i]))
				oom = 1;
			running--;
		}
	}
	/* Only after an error: stop whatever still runs. */
	for (i = 0; i < A2L_PARALLEL; i++) {
		if (jobs[i].fd < 0)
			continue;
		kill(jobs[i].pid, SIGKILL);
		close(jobs[i].fd);
		while (waitpid(jobs[i].pid, NULL, 0) < 0 && errno == EINTR)
			;
		a2l_free(&jobs[i]);
	}
	return oom ? -1 : 0;
}

/* ---- the API ---- */

struct symbolizer *symbolizer_new(void)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	u64map_init(&s->by_path);
	u64map_init(&s->strs);
	s->debug_dir = strdup("/usr/lib/debug");
	s->a2l = strdup("addr2line");
	if (!s->debug_dir || !s->a2l) {
		symbolizer_free(s);
		return NULL;
	}
	return s;
}

void symbolizer_free(struct symbolizer *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nmods; i++) {
		struct module *m = s->mods[i];
		free(m->path);
		free(m->q);
		u64map_free(&m->by_off);
		free(m->segs);
		free(m->syms);
		free(m->sym_path);
		elf_close(&m->symf);
		u64map_free(&m->names);
		free(m->line_path);
		free(m);
	}
	free(s->mods);
	u64map_free(&s->by_path);
	u64map_free(&s->strs);
	while (s->blocks) {
		struct strblock *b = s->blocks;
		s->blocks = b->next;
		free(b);
	}
	free(s->debug_dir);
	free(s->a2l);
	free(s);
}

static int set_str(char **dst, const char *v)
{
	char *c = NULL;

	if (v && !(c = strdup(v)))
		return -1;
	free(*dst);
	*dst = c;
	return 0;
}

int symbolizer_set_debug_dir(struct symbolizer *s, const char *dir)
{
	return set_str(&s->debug_dir, dir && dir[0] ? dir : NULL);
}

int symbolizer_set_addr2line(struct symbolizer *s, const char *prog)
{
	return set_str(&s->a2l, prog && prog[0] ? prog : NULL);
}

/* The module of path; made when create (NULL only when out of memory), else NULL when
 * absent. */
static struct module *module_get(struct symbolizer *s, const char *path, int create)
{
	uint64_t h, *v;
	size_t i, len;
	struct module *m;
	int created;

	if (!path)
		path = "";
	if (s->last && !strcmp(s->last->path, path))
		return s->last;
	len = strlen(path);
	h = hash_bytes(path, len);
	v = u64map_find(&s->by_path, h);
	for (i = v ? (size_t)*v : 0; i; i = s->mods[i - 1]->next_same_hash)
		if (!strcmp(s->mods[i - 1]->path, path))
			return s->last = s->mods[i - 1];
	if (!create || VEC_RESERVE(s->mods, s->mcap, s->nmods + 1))
		return NULL;
	m = calloc(1, sizeof(*m));
	if (!m || !(m->path = strdup(path)))
		goto oom;
	u64map_init(&m->by_off);
	u64map_init(&m->names);
	v = u64map_upsert(&s->by_path, h, &created);
	if (!v)
		goto oom;
	m->next_same_hash = created ? 0 : (size_t)*v;
	s->mods[s->nmods++] = m;
	*v = s->nmods;
	return s->last = m;
oom:
	if (m)
		free(m->path);
	free(m);
	return NULL;
}

int symbolizer_add(struct symbolizer *s, const char *module, uint64_t file_off)
{
	struct module *m = module_get(s, module, 1);
	uint64_t *v;
	int created;

	if (!m || VEC_RESERVE(m->q, m->qcap, m->nq + 1))
		return -1;
	v = u64map_upsert(&m->by_off, file_off, &created);
	if (!v)
		return -1;
	if (!created)
		return 0;
	*v = m->nq;
	memset(&m->q[m->nq], 0, sizeof(m->q[0]));
	m->q[m->nq++].off = file_off;
	return 0;
}

int symbolizer_resolve(struct symbolizer *s)
{
	size_t i;

	for (i = 0; i < s->nmods; i++)
		if (module_resolve(s, s->mods[i]))
			return -1;
	if (run_addr2line(s))
		return -1;
	for (i = 0; i < s->nmods; i++)
		s->mods[i]->ndone = s->mods[i]->nq;
	return 0;
}

int symbolizer_get(struct symbolizer *s, const char *module, uint64_t file_off,
		   struct sym_frame *out)
{
	struct module *m = module_get(s, module, 0);
	uint64_t *v = m ? u64map_find(&m->by_off, file_off) : NULL;
	const struct query *q;

	memset(out, 0, sizeof(*out));
	if (!v)
		return -1;
	q = &m->q[*v];
	out->module = m->path;
	out->file_off = file_off;
	if ((size_t)*v >= m->ndone)
		return 0;
	out->function = q->function;
	out->offset = q->fn_off;
	out->has_offset = q->has_offset;
	out->file = q->file;
	out->line = q->line;
	return 0;
}

/* Appends to buf like snprintf, counting in *n what did not fit as well. */
__attribute__((format(printf, 4, 5))) static void put(char *buf, size_t len, size_t *n,
						       const char *fmt, ...)
{
	va_list ap;
	int w;

	va_start(ap, fmt);
	w = vsnprintf(*n < len ? buf + *n : NULL, *n < len ? len - *n : 0, fmt, ap);
	va_end(ap);
	if (w > 0)
		*n += (size_t)w;
}

size_t sym_frame_format(const struct sym_frame *f, char *buf, size_t len)
{
	const char *mod = f->module ? f->module : "", *base = strrchr(mod, '/');
	size_t n = 0;

	if (len)
		buf[0] = 0;
	if (f->function && f->has_offset)
		put(buf, len, &n, "%s+0x%llx", f->function, (unsigned long long)f->offset);
	else if (f->function)
		put(buf, len, &n, "%s", f->function);
	else
		put(buf, len, &n, "0x%llx", (unsigned long long)f->file_off);
	if (f->file && f->line)
		put(buf, len, &n, " (%s:%u)", f->file, f->line);
	else if (f->file)
		put(buf, len, &n, " (%s)", f->file);
	else if (mod[0])
		put(buf, len, &n, " (%s)", base ? base + 1 : mod);
	return n;
}
