# PROFILER_DEBUG (preload/common/debug.c): each thing libprof gives up on is named on
# stderr, one line, in the domain asked for; nothing is said without it.
import os
import re
import subprocess


def debug90_cc(c, out, source, *flags):
    """Compiles C source text into the case directory with cc and flags."""
    src = c.path(out + ".c")
    with open(src, "w") as f:
        f.write(source)
    return c.cc(out, [src], flags)


# A library whose GOT cannot be written: linked with full RELRO (-z now puts its PLT slots
# in RELRO), its constructor puts a read-only shared mapping of a file opened read-only
# in place of its RELRO pages, so mprotect(PROT_WRITE) there fails (EACCES), as it would
# for a sealed page.
DEBUG90_SEALED_LIB = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int sealed_state = -1; /* 1: its RELRO pages refuse PROT_WRITE; negative: where it failed */

struct range { uintptr_t lo, hi; };

static int find_self(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	uintptr_t me = (uintptr_t)&sealed_state, relro_lo = 0, relro_hi = 0;
	int mine = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t at = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && me >= at && me < at + ph->p_memsz)
			mine = 1;
		if (ph->p_type == PT_GNU_RELRO)
			relro_lo = at, relro_hi = at + ph->p_memsz;
	}
	if (!mine)
		return 0;
	struct range *r = ctx;
	r->lo = relro_lo;
	r->hi = relro_hi;
	return 1;
}

__attribute__((constructor)) static void seal(void)
{
	struct range r = {0, 0};
	uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE);
	dl_iterate_phdr(find_self, &r);
	/* the pages the loader made read-only */
	uintptr_t lo = r.lo & ~(ps - 1), hi = r.hi & ~(ps - 1);
	if (!r.lo || hi <= lo) {
		sealed_state = -2;
		return;
	}
	int fd = memfd_create("sealed-relro", MFD_CLOEXEC);
	if (fd < 0 || write(fd, (void *)lo, hi - lo) != (ssize_t)(hi - lo)) {
		sealed_state = -3;
		return;
	}
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	int ro = open(path, O_RDONLY | O_CLOEXEC);
	close(fd);
	if (ro < 0 || mmap((void *)lo, hi - lo, PROT_READ, MAP_SHARED | MAP_FIXED, ro, 0) ==
			      MAP_FAILED) {
		sealed_state = -4;
		return;
	}
	close(ro);
	sealed_state = mprotect((void *)lo, ps, PROT_READ | PROT_WRITE) && errno == EACCES
			       ? 1 : -5;
}

void sealed_hello(void)
{
	puts("hello from the sealed library");
}
"""

DEBUG90_MAIN = r"""
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 3;
	}
	int *state = dlsym(h, "sealed_state");
	void (*hello)(void) = (void (*)(void))dlsym(h, "sealed_hello");
	if (!state || !hello)
		return 4;
	hello();
	printf("sealed=%d\n", *state);
	fflush(stdout);
	return 0;
}
"""

DEBUG90_LINE = re.compile(r"^libprof\[debug (\w+)\]: .*$", re.M)


@case
def debug_got_read_only_slot(c):
    lib = debug90_cc(c, "libsealed.so", DEBUG90_SEALED_LIB, "-shared", "-fPIC",
                     "-Wl,-z,relro,-z,now")
    prog = debug90_cc(c, "sealed_main", DEBUG90_MAIN, "-ldl")
    native = c.run([prog, lib], preload=False, autostart=False)
    want = "hello from the sealed library\nsealed=1\n"
    eq((native.rc, native.out), (0, want), "native run (%r)" % native)

    # asked for: the one slot libprof could not write, named with its object and why
    r = c.run([prog, lib], env={"PROFILER_TRACE": "puts", "PROFILER_DEBUG": "got",
                                "PROFILER_OUTPUT": "got"})
    eq((r.rc, r.out), (0, want), "traced with PROFILER_DEBUG=got (%r)" % r)
    lines = DEBUG90_LINE.findall(r.err)
    got = [m.group(0) for m in DEBUG90_LINE.finditer(r.err)]
    eq(lines, ["got"], "debug lines with PROFILER_DEBUG=got: %r" % got)
    check(re.match(r"^libprof\[debug got\]: cannot patch puts in %s: slot 0x[0-9a-f]+ in a "
                   r"read-only mapping \(mprotect: Permission denied\)$" % re.escape(lib),
                   got[0]), "the line names the function, object and reason: %r" % got[0])
    c.outputs("got", wait=10)

    # "all" says it too; another domain alone does not
    r = c.run([prog, lib], env={"PROFILER_TRACE": "puts", "PROFILER_DEBUG": "trace,all",
                                "PROFILER_OUTPUT": "all"})
    eq(r.out, want, "stdout with PROFILER_DEBUG=trace,all (%r)" % r)
    check(any("cannot patch puts in " in l for l in r.err.splitlines()),
          "PROFILER_DEBUG=all names the slot: %r" % r.err)
    r = c.run([prog, lib], env={"PROFILER_TRACE": "puts", "PROFILER_DEBUG": "drain,shm",
                                "PROFILER_OUTPUT": "other"})
    eq(r.out, want, "stdout with PROFILER_DEBUG=drain,shm (%r)" % r)
    check("[debug got]" not in r.err, "no got line with PROFILER_DEBUG=drain,shm: %r" % r.err)

    # not asked for: not a word, and the program runs as natively
    r = c.run([prog, lib], env={"PROFILER_TRACE": "puts", "PROFILER_OUTPUT": "quiet"})
    eq((r.rc, r.out), (0, want), "traced without PROFILER_DEBUG (%r)" % r)
    check("libprof[debug" not in r.err, "debug lines without PROFILER_DEBUG: %r" % r.err)
    c.outputs("quiet", wait=10)


@case
def debug_unknown_domain(c):
    # one line names what is not a domain, from the process that starts the session only
    r = c.run([c.prog("basic"), "3", "52999", "exit:0"],
              env={"PROFILER_DEBUG": "got,nosuch,bogus"})
    eq(r.rc, 0, "exit status (%r)" % r)
    bad = [l for l in r.err.splitlines() if "nosuch" in l]
    eq(len(bad), 1, "lines naming the unknown domains: %r" % r.err)
    check("nosuch,bogus" in bad[0] and "got, trace, drain, cupti, shm, alloc" in bad[0],
          "the line names the unknown domains and the known ones: %r" % bad[0])
