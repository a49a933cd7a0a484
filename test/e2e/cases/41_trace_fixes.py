# Tracing fixes of issue 12 ("do no harm"): a traced call reaches the function the
# program would have called, GOT writes never fault, libprof's own blocks never hide
# the program's.
import os
import subprocess


def trace41_cc(c, out, source, *flags):
    """Compiles C source text into the case directory with cc and flags."""
    src = c.path(out + ".c")
    with open(src, "w") as f:
        f.write(source)
    path = c.path(out)
    cmd = [os.environ.get("CC", "cc"), "-O1", "-g", "-pthread"] + list(flags) + \
        ["-o", path, src]
    p = subprocess.run(cmd, capture_output=True, text=True)
    check(p.returncode == 0, "cannot build %s: %s" % (out, p.stderr))
    return path


TRACE41_AFFINITY = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>

int (*volatile set_affinity)(pid_t, size_t, const cpu_set_t *);

int main(void)
{
	/* the address taken in non-PIC code (an absolute immediate): the executable's PLT
	 * entry is made the function's address, its JUMP_SLOT the way to libc */
	set_affinity = sched_setaffinity;
	cpu_set_t s;
	CPU_ZERO(&s);
	if (sched_getaffinity(0, sizeof s, &s))
		return 2;
	int rc = set_affinity(0, sizeof s, &s);
	printf("rc=%d errno=%d\n", rc, rc ? errno : 0);
	return 0;
}
"""


@case
def trace_versioned_symbol(c):
    # libc keeps sched_setaffinity@GLIBC_2.3.3 (a compatibility copy, failing with EFAULT
    # here) beside @@GLIBC_2.3.4: the traced call must reach the default one, as the
    # program's own call does
    prog = trace41_cc(c, "affinity", TRACE41_AFFINITY, "-no-pie", "-fno-pic")
    native = c.run([prog], preload=False, autostart=False)
    eq((native.rc, native.out), (0, "rc=0 errno=0\n"), "native run (%r)" % native)
    for pattern, prefix in (("sched_setaffinity", "one"), ("*", "all")):
        r = c.run([prog], env={"PROFILER_TRACE": pattern, "PROFILER_OUTPUT": prefix})
        eq((r.rc, r.out), (native.rc, native.out),
           "traced (PROFILER_TRACE=%s) vs native: %r" % (pattern, r))
        t, _ = c.outputs(prefix, wait=10)
        eq(len(t.select("X", "sched_setaffinity", "trace")), 1,
           "sched_setaffinity calls traced (PROFILER_TRACE=%s)" % pattern)


@case
def internal_block_freed_behind(c):
    # libprof's own environment array released without its free wrapper (as a DEEPBIND
    # library's free would): the program's next block at that address is its own, its
    # free an event, not a leak
    r, t = profile(c, [c.prog("internal_freed_behind")])
    eq(r.kv("reused"), ["1"], "the program's block landed on libprof's freed one (%r)" % r)
    size = int(r.kv("size")[0])
    eq(matched_frees(t, pid_of(r), {"malloc": size}), 1,
       "frees of the program's malloc(%d) at the freed address" % size)
