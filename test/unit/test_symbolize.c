/* The symbolizer on this very program: its own function by name, offset and file:line
 * (the tests are built with -g), a C++ name from libstdc++'s .dynsym demangled, libc's
 * alias choice, separate debug files by .gnu_debuglink and by build id on stripped
 * copies, a few thousand addresses in one batch, modules that cannot be read (missing,
 * "[vdso]", not ELF, cut short, corrupted), no addr2line, and the formatting. */
#define _GNU_SOURCE /* dl_iterate_phdr, RTLD_DEFAULT, memmem */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "formats/symbols/symbolize.h"

extern char **environ;

/* On one line, so every address in it has this line. */
enum { PROBE_LINE = __LINE__ + 1 };
__attribute__((noinline)) int symbolize_probe(int x) { return x * 7 + (int)getpid(); }

/* The module path and file offset of a code address, from /proc/self/maps. */
static void where(const void *addr, char *path, size_t len, uint64_t *off)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	uintptr_t a = (uintptr_t)addr;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, pgoff;
		int n = 0;
		char *p;

		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &lo, &hi, &pgoff, &n) < 3 || !n)
			continue;
		if (a < lo || a >= hi)
			continue;
		p = line + n;
		p[strcspn(p, "\n")] = 0;
		snprintf(path, len, "%s", p);
		*off = a - lo + pgoff;
		fclose(f);
		return;
	}
	fclose(f);
	fail_msg("%p is in no mapping", addr);
}

static int have_prog(const char *name)
{
	const char *path = getenv("PATH");
	char buf[4096];

	while (path && *path) {
		size_t n = strcspn(path, ":");
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, name);
		if (!access(buf, X_OK))
			return 1;
		path += n + (path[n] == ':');
	}
	return 0;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void spill(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	fclose(f);
}

/* This program was built with line tables (-g) and addr2line is there to read them. */
static int expect_lines(const char *self)
{
	size_t n;
	char *b = slurp(self, &n);
	int yes = memmem(b, n, ".debug_line", 12) != NULL && have_prog("addr2line");

	free(b);
	return yes;
}

/* Runs argv (no shell); its exit status. */
static int run(char *const argv[])
{
	pid_t pid;
	int st;

	if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ))
		return -1;
	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void get(struct symbolizer *s, const char *mod, uint64_t off, struct sym_frame *f)
{
	assert_int_equal(symbolizer_get(s, mod, off, f), 0);
	assert_string_equal(f->module, mod ? mod : "");
	assert_true(f->file_off == off);
}

static void check_probe(const struct sym_frame *f, uint64_t delta, int lines)
{
	const char *tail = "test_symbolize.c";

	assert_non_null(f->function);
	assert_string_equal(f->function, "symbolize_probe");
	assert_true(f->has_offset);
	assert_true(f->offset == delta);
	if (!lines)
		return;
	assert_non_null(f->file);
	assert_true(strlen(f->file) >= strlen(tail));
	assert_string_equal(f->file + strlen(f->file) - strlen(tail), tail);
	assert_int_equal(f->line, PROBE_LINE);
}

static void test_own_function(void **state)
{
	struct symbolizer *s = symbolizer_new();
	struct sym_frame f;
	char mod[4096], buf[4096], want[64];
	uint64_t off;
	int lines;

	(void)state;
	assert_non_null(s);
	where((const void *)symbolize_probe, mod, sizeof(mod), &off);
	lines = expect_lines(mod);
	assert_int_equal(symbolizer_add(s, mod, off), 0);
	assert_int_equal(symbolizer_add(s, mod, off + 1), 0);
	assert_int_equal(symbolizer_add(s, mod, off), 0); /* twice is once */
	/* Added, not resolved yet: unresolved, not an error. */
	get(s, mod, off, &f);
	assert_null(f.function);
	assert_int_equal(symbolizer_resolve(s), 0);
	get(s, mod, off, &f);
	check_probe(&f, 0, lines);
	get(s, mod, off + 1, &f);
	check_probe(&f, 1, lines);
	sym_frame_format(&f, buf, sizeof(buf));
	if (lines) {
		snprintf(want, sizeof(want), ".c:%d)", PROBE_LINE);
		assert_non_null(strstr(buf, "symbolize_probe+0x1 ("));
		assert_non_null(strstr(buf, want));
	}
	/* Never added. */
	assert_int_equal(symbolizer_get(s, mod, off + 2, &f), -1);
	assert_int_equal(symbolizer_get(s, "/nowhere", off, &f), -1);
	/* A second round resolves only what is new, and keeps the first round's results. */
	assert_int_equal(symbolizer_add(s, mod, off + 2), 0);
	assert_int_equal(symbolizer_resolve(s), 0);
	get(s, mod, off + 2, &f);
	check_probe(&f, 2, lines);
	get(s, mod, off, &f);
	check_probe(&f, 0, lines);
	symbolizer_free(s);
}

static void test_cxx_and_libc(void **state)
{
	struct symbolizer *s = symbolizer_new();
	struct sym_frame f;
	char cxx[4096], libc[4096], buf[256], want[256];
	uint64_t cxx_off, libc_off;
	void *term = dlsym(RTLD_DEFAULT, "_ZSt9terminatev");
	void *gp = dlsym(RTLD_DEFAULT, "getpid");

	(void)state;
	assert_non_null(term);
	assert_non_null(gp);
	where(term, cxx, sizeof(cxx), &cxx_off);
	where(gp, libc, sizeof(libc), &libc_off);
	assert_int_equal(symbolizer_add(s, cxx, cxx_off), 0);
	assert_int_equal(symbolizer_add(s, libc, libc_off + 1), 0);
	assert_int_equal(symbolizer_resolve(s), 0);
	/* Demangled with parameters, as __cxa_demangle gives it. */
	get(s, cxx, cxx_off, &f);
	assert_non_null(f.function);
	assert_string_equal(f.function, "std::terminate()");
	assert_true(f.has_offset && f.offset == 0);
	/* libc's getpid is WEAK beside a GLOBAL __getpid: fewer underscores win. */
	get(s, libc, libc_off + 1, &f);
	assert_non_null(f.function);
	assert_string_equal(f.function, "getpid");
	assert_true(f.offset == 1);
	if (!f.file) {
		snprintf(want, sizeof(want), "getpid+0x1 (%s)", strrchr(libc, '/') + 1);
		sym_frame_format(&f, buf, sizeof(buf));
		assert_string_equal(buf, want);
	}
	symbolizer_free(s);
}

static void test_unreadable_modules(void **state)
{
	struct symbolizer *s = symbolizer_new();
	struct sym_frame f;
	char mod[4096], text[64], empty[64];
	uint64_t off;
	const char *bad[] = { "/nonexistent/libnothing.so", "[vdso]", "[heap]", "", "/",
			      "/dev/null", "/proc/self/maps", text, empty };
	size_t i;

	(void)state;
	snprintf(text, sizeof(text), "/tmp/libprof-sym-text-%d", (int)getpid());
	snprintf(empty, sizeof(empty), "/tmp/libprof-sym-empty-%d", (int)getpid());
	spill(text, "not an ELF file, just text long enough to pass a header's size\n", 64);
	spill(empty, "", 0);
	where((const void *)symbolize_probe, mod, sizeof(mod), &off);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(symbolizer_add(s, bad[i], 0x1234), 0);
	assert_int_equal(symbolizer_add(s, NULL, 0x10), 0);
	/* Past every PT_LOAD of a good module. */
	assert_int_equal(symbolizer_add(s, mod, 1ull << 40), 0);
	assert_int_equal(symbolizer_resolve(s), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		get(s, bad[i], 0x1234, &f);
		assert_null(f.function);
		assert_null(f.file);
		assert_int_equal(f.line, 0);
	}
	get(s, NULL, 0x10, &f);
	assert_null(f.function);
	get(s, mod, 1ull << 40, &f);
	assert_null(f.function);
	assert_null(f.file);
	unlink(text);
	unlink(empty);
	symbolizer_free(s);
}

/* Copies of this program cut short and with bytes overwritten: nothing may read out of
 * bounds (the ASan build checks) or crash. */
static void test_damaged_elf(void **state)
{
	char mod[4096], path[64];
	uint64_t off;
	size_t n, i, j;
	char *b;
	Elf64_Ehdr eh;

	(void)state;
	where((const void *)symbolize_probe, mod, sizeof(mod), &off);
	b = slurp(mod, &n);
	memcpy(&eh, b, sizeof(eh));
	snprintf(path, sizeof(path), "/tmp/libprof-sym-cut-%d", (int)getpid());
	for (i = 0; i < 40; i++) {
		struct symbolizer *s = symbolizer_new();
		struct sym_frame f;
		char *c = malloc(n);
		size_t len = n;

		assert_non_null(c);
		memcpy(c, b, n);
		if (i < 8) {
			size_t cuts[8] = { 16, 64, 65, 200, 4096, n / 2, eh.e_shoff + 100, n - 1 };
			len = cuts[i] < n ? cuts[i] : n;
		} else {
			/* Scribble over the header, the section headers or the symbols. */
			unsigned seed = (unsigned)i * 2654435761u;
			for (j = 0; j < 64; j++) {
				size_t at;
				seed = seed * 1103515245u + 12345u;
				at = i % 3 == 0 ? (seed >> 8) % sizeof(eh) :
				     i % 3 == 1 ? eh.e_shoff + (seed >> 8) % (n - eh.e_shoff) :
						  (seed >> 4) % n;
				c[at] = (char)(seed >> 16);
			}
		}
		spill(path, c, len);
		assert_non_null(s);
		assert_int_equal(symbolizer_add(s, path, off), 0);
		assert_int_equal(symbolizer_add(s, path, 0), 0);
		assert_int_equal(symbolizer_resolve(s), 0);
		get(s, path, off, &f);
		symbolizer_free(s);
		free(c);
	}
	free(b);
	unlink(path);
}

/* Thousands of addresses over this program's code in one batch: a pipe to addr2line that
 * would fill both ways if it were written before being read. */
static void test_many_addresses(void **state)
{
	int fds = count_fds();
	struct symbolizer *s = symbolizer_new();
	struct sym_frame f;
	char mod[4096];
	uint64_t off, o, lo;
	unsigned named = 0, lined = 0, total = 0;
	int lines;

	(void)state;
	where((const void *)symbolize_probe, mod, sizeof(mod), &off);
	lines = expect_lines(mod);
	lo = off > 12000 ? off - 12000 : 0;
	for (o = lo; o < off + 12000; o += 3)
		assert_int_equal(symbolizer_add(s, mod, o), 0);
	assert_int_equal(symbolizer_add(s, mod, off), 0);
	assert_int_equal(symbolizer_resolve(s), 0);
	for (o = lo; o < off + 12000; o += 3) {
		get(s, mod, o, &f);
		total++;
		named += f.function != NULL;
		lined += f.line != 0;
		/* (addr2line may name the padding after it, without an offset.) */
		if (f.function && !strcmp(f.function, "symbolize_probe") && f.has_offset)
			assert_true(f.offset == o - off);
	}
	/* The text segment starts after a page or so of headers; most of it is named. */
	assert_true(named > total / 2);
	if (lines)
		assert_true(lined > 0);
	get(s, mod, off, &f);
	check_probe(&f, 0, lines);
	/* Nothing left open, no child left unreaped. */
	assert_int_equal(count_fds(), fds);
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
	symbolizer_free(s);
}

static void test_no_addr2line(void **state)
{
	struct symbolizer *s = symbolizer_new();
	struct sym_frame f;
	char mod[4096];
	uint64_t off;

	(void)state;
	where((const void *)symbolize_probe, mod, sizeof(mod), &off);
	assert_int_equal(symbolizer_set_addr2line(s, "/nonexistent/addr2line"), 0);
	assert_int_equal(symbolizer_add(s, mod, off + 1), 0);
	assert_int_equal(symbolizer_resolve(s), 0);
	get(s, mod, off + 1, &f);
	check_probe(&f, 1, 0);
	assert_null(f.file);
	assert_int_equal(f.line, 0);
	symbolizer_free(s);
}

static int note_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	char *hex = data;
	int i;

	(void)size;
	if (info->dlpi_name && info->dlpi_name[0])
		return 0; /* the first object is the program */
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
		size_t at = 0;

		if (ph->p_type != PT_NOTE)
			continue;
		while (at + 12 <= ph->p_memsz) {
			uint32_t nh[3]; /* namesz, descsz, type */
			size_t name, desc, k;

			memcpy(nh, p + at, sizeof(nh));
			name = (nh[0] + 3) & ~3u;
			desc = (nh[1] + 3) & ~3u;
			if (nh[2] == NT_GNU_BUILD_ID && nh[0] == 4 && nh[1] <= 64 &&
			    !memcmp(p + at + 12, "GNU", 4)) {
				for (k = 0; k < nh[1]; k++)
					sprintf(hex + 2 * k, "%02x", p[at + 12 + name + k]);
				return 1;
			}
			at += 12 + name + desc;
		}
	}
	return 1;
}

/* Stripped copies of this program find names and lines in a separate debug file: by
 * .gnu_debuglink next to it, and by build id under the debug directory. */
static void test_separate_debug(void **state)
{
	char mod[4096], dir[64], exe[128], dbg[256], id[160] = "", bid[1024], sub[512];
	char exe2[128];
	uint64_t off;
	struct sym_frame f;
	struct symbolizer *s;
	int lines;

	(void)state;
	if (!have_prog("objcopy")) {
		skip();
		return;
	}
	where((const void *)symbolize_probe, mod, sizeof(mod), &off);
	lines = expect_lines(mod);
	snprintf(dir, sizeof(dir), "/tmp/libprof-sym-%d", (int)getpid());
	snprintf(exe, sizeof(exe), "%s/prog", dir);
	snprintf(exe2, sizeof(exe2), "%s/prog2", dir);
	snprintf(dbg, sizeof(dbg), "%s/prog.debug", dir);
	mkdir(dir, 0700);
	{
		size_t n;
		char *b = slurp(mod, &n);
		spill(exe, b, n);
		spill(exe2, b, n);
		free(b);
	}
	{
		char *keep[] = { "objcopy", "--only-keep-debug", exe, dbg, NULL };
		char link[300];
		snprintf(link, sizeof(link), "--add-gnu-debuglink=%s", dbg);
		char *strip[] = { "objcopy", "--strip-all", link, exe, NULL };
		char *strip2[] = { "objcopy", "--strip-all", exe2, NULL };
		assert_int_equal(run(keep), 0);
		assert_int_equal(run(strip), 0);
		assert_int_equal(run(strip2), 0);
	}

	/* .gnu_debuglink: prog.debug beside prog, with no debug directory at all. */
	s = symbolizer_new();
	assert_int_equal(symbolizer_set_debug_dir(s, NULL), 0);
	assert_int_equal(symbolizer_add(s, exe, off + 1), 0);
	assert_int_equal(symbolizer_resolve(s), 0);
	get(s, exe, off + 1, &f);
	check_probe(&f, 1, lines);
	symbolizer_free(s);

	/* Build id: DIR/.build-id/xx/rest.debug, and prog2 has no debuglink. */
	dl_iterate_phdr(note_cb, id);
	if (strlen(id) < 4) {
		skip();
		return;
	}
	snprintf(sub, sizeof(sub), "%s/.build-id", dir);
	mkdir(sub, 0700);
	snprintf(sub, sizeof(sub), "%s/.build-id/%.2s", dir, id);
	mkdir(sub, 0700);
	snprintf(bid, sizeof(bid), "%s/%s.debug", sub, id + 2);
	assert_int_equal(rename(dbg, bid), 0);
	s = symbolizer_new();
	assert_int_equal(symbolizer_set_debug_dir(s, dir), 0);
	assert_int_equal(symbolizer_add(s, exe2, off + 2), 0);
	/* prog's debuglink now leads nowhere, but it has the same build id. */
	assert_int_equal(symbolizer_add(s, exe, off), 0);
	assert_int_equal(symbolizer_resolve(s), 0);
	get(s, exe2, off + 2, &f);
	check_probe(&f, 2, lines);
	get(s, exe, off, &f);
	check_probe(&f, 0, lines);
	symbolizer_free(s);

	unlink(bid);
	rmdir(sub);
	snprintf(sub, sizeof(sub), "%s/.build-id", dir);
	rmdir(sub);
	unlink(exe);
	unlink(exe2);
	rmdir(dir);
}

static void test_format(void **state)
{
	struct sym_frame f = { "ns::f(int)", 0x1c, 1, "/src/a.cc", 42, "/usr/lib/libx.so", 0x9a1c };
	char buf[128], small[8];
	size_t n;

	(void)state;
	n = sym_frame_format(&f, buf, sizeof(buf));
	assert_string_equal(buf, "ns::f(int)+0x1c (/src/a.cc:42)");
	assert_int_equal(n, strlen(buf));
	assert_int_equal(sym_frame_format(&f, small, sizeof(small)), n);
	assert_string_equal(small, "ns::f(i");
	assert_int_equal(sym_frame_format(&f, NULL, 0), n);
	f.file = NULL;
	f.line = 0;
	sym_frame_format(&f, buf, sizeof(buf));
	assert_string_equal(buf, "ns::f(int)+0x1c (libx.so)");
	f.has_offset = 0;
	sym_frame_format(&f, buf, sizeof(buf));
	assert_string_equal(buf, "ns::f(int) (libx.so)");
	f.function = NULL;
	sym_frame_format(&f, buf, sizeof(buf));
	assert_string_equal(buf, "0x9a1c (libx.so)");
	f.module = "[vdso]";
	sym_frame_format(&f, buf, sizeof(buf));
	assert_string_equal(buf, "0x9a1c ([vdso])");
	f.module = "";
	sym_frame_format(&f, buf, sizeof(buf));
	assert_string_equal(buf, "0x9a1c");
	f.file = "a.c";
	sym_frame_format(&f, buf, sizeof(buf));
	assert_string_equal(buf, "0x9a1c (a.c)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_own_function),
		cmocka_unit_test(test_cxx_and_libc),
		cmocka_unit_test(test_unreadable_modules),
		cmocka_unit_test(test_damaged_elf),
		cmocka_unit_test(test_many_addresses),
		cmocka_unit_test(test_no_addr2line),
		cmocka_unit_test(test_separate_debug),
		cmocka_unit_test(test_format),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
