/* Raw code addresses -> "function+0xOFF (file:line)". For the collector and the report
 * tools only (it allocates, opens files and runs addr2line): the profiled program just
 * records (module path, file offset) pairs.
 *
 * Two phases, because file:line costs one addr2line process per module: add every
 * address, resolve once, then get each result. One thread at a time per symbolizer. */
#ifndef PROF_FORMATS_SYMBOLIZE_H
#define PROF_FORMATS_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

struct symbolizer;

struct symbolizer *symbolizer_new(void);
void symbolizer_free(struct symbolizer *s);

/* Where separate debug files live (default /usr/lib/debug): DIR/.build-id/xx/yyyy.debug
 * and DIR/MODULE_DIR/DEBUGLINK; NULL or "" looks only beside the module (MODULE_DIR/
 * DEBUGLINK, MODULE_DIR/.debug/DEBUGLINK). 0, or -1 when out of memory. */
int symbolizer_set_debug_dir(struct symbolizer *s, const char *dir);
/* The addr2line program (default "addr2line", searched in PATH); NULL turns file:line
 * off. 0, or -1 when out of memory. */
int symbolizer_set_addr2line(struct symbolizer *s, const char *prog);

/* Phase 1: an address to resolve, as the module path found in /proc/PID/maps and the
 * address's offset in that file (pc - mapping start + mapping file offset). Adding the
 * same pair again is free. 0, or -1 when out of memory. */
int symbolizer_add(struct symbolizer *s, const char *module, uint64_t file_off);

/* Phase 2: resolves everything added since the last call. Function names come from the
 * module's ELF symbols (.symtab, else a separate debug file's .symtab, else .dynsym);
 * file:line from addr2line, for modules with DWARF line tables in the module or in a
 * debug file found by build-id or .gnu_debuglink. Unreadable or missing modules ("[vdso]",
 * "", deleted files) and a missing addr2line are not errors: those frames stay
 * unresolved. 0, or -1 when out of memory. */
int symbolizer_resolve(struct symbolizer *s);

struct sym_frame {
	const char *function; /* demangled as __cxa_demangle gives it (parameters kept:
			       * "std::terminate()"), or NULL when unknown */
	uint64_t offset;      /* bytes from the function's start, when has_offset */
	int has_offset;       /* 0 when only addr2line named the function (no ELF symbol
			       * covers the address, so its start is unknown) */
	const char *file;     /* source file as the line table names it, or NULL */
	unsigned line;        /* 0 when unknown */
	const char *module;   /* the module path given */
	uint64_t file_off;    /* the file offset given */
};

/* The result for an added (module, file_off): 0, or -1 when that pair was never added. A
 * pair added but not yet resolved reads as unresolved. Strings live as long as s. When
 * an address lies in inlined code, function, offset, file and line describe the outermost
 * (real) function, so that file:line is a line of that function. */
int symbolizer_get(struct symbolizer *s, const char *module, uint64_t file_off,
		   struct sym_frame *out);

/* "function+0xOFF (file:line)", "function+0xOFF (module basename)" or
 * "0xFILE_OFF (module basename)" into buf (always NUL-terminated when len > 0). Returns
 * the length the whole text needs, as snprintf does. */
size_t sym_frame_format(const struct sym_frame *f, char *buf, size_t len);

#endif
