# Tracing never breaks the program (issue 12, items 6 and 7d): PROFILER_TRACE='*' over
# code that does not return normally (the setjmp family, swapcontext coroutines, vfork,
# C++ exceptions through _Unwind_Resume, bash), a tracing pattern that used to make
# `import torch` crash, and hooks that follow dlclose and a reload at the same address.
# Run in run.py's namespace (its helpers are in scope).

TRACE40_SRC = os.path.join(HERE, "cases", "trace_safety_src")


def trace40_build(c, kind, out, *srcs):
    """Compiles srcs into the case directory: kind 'c++' (a program), 'no-pie' (a C
    program built -no-pie -fno-pic) or 'so' (cc -shared)."""
    srcs = [os.path.join(TRACE40_SRC, s) for s in srcs]
    flags = {"c++": [], "no-pie": ["-no-pie", "-fno-pic"]}.get(kind, ["-fPIC", "-shared"])
    return c.cc(out, srcs, flags, cxx=kind == "c++")


def trace40_native(c, argv, env=None):
    """The program's own output and status, without libprof."""
    r = c.run(argv, env=env, preload=False, autostart=False)
    return r


def trace40_same_as_native(c, argv, prefix, env=None, pattern="*", timeout=180):
    """Runs argv natively and traced with PROFILER_TRACE=pattern (its own output prefix):
    same stdout and exit status, the outputs written. Returns (traced result, trace)."""
    native = trace40_native(c, argv, env)
    e = dict(env or {})
    e.update({"PROFILER_TRACE": pattern, "PROFILER_OUTPUT": prefix})
    r = c.run(argv, env=e, timeout=timeout)
    eq(r.rc, native.rc, "exit status traced vs native (%s)" % r)
    eq(r.out, native.out, "stdout traced vs native")
    check("unknown to the shadow stack" not in r.err, "the shadow stack lost a frame: %r" % r)
    t, _ = c.outputs(prefix, wait=10)
    t.wellformed()
    return r, t


def trace40_count(t, name):
    return len(t.select("X", name, "trace"))


@case
def trace_all_sigsetjmp(c):
    # siglongjmp out of a traced qsort's comparator and out of a signal handler (raise);
    # __sigsetjmp/siglongjmp themselves are recorded at entry only
    r, t = trace40_same_as_native(c, [c.prog("trace_nonlocal"), "sigjmp", 6], "sj")
    eq(r.out.count("came back"), 6, "jumps that came back")
    eq(trace40_count(t, "__sigsetjmp"), 6, "__sigsetjmp calls in the trace")
    eq(trace40_count(t, "siglongjmp"), 6, "siglongjmp calls in the trace")
    eq(trace40_count(t, "qsort"), 3, "qsort calls (each left by a siglongjmp)")
    eq(trace40_count(t, "raise"), 3, "raise calls (each left by a siglongjmp)")
    check(trace40_count(t, "printf") >= 6, "printf calls that returned: %d"
          % trace40_count(t, "printf"))


@case
def trace_all_setjmp(c):
    r, t = trace40_same_as_native(c, [c.prog("trace_nonlocal"), "setjmp", 5], "j")
    eq(r.out.count("came back"), 5, "jumps that came back")
    eq(trace40_count(t, "_setjmp"), 5, "_setjmp calls in the trace")
    eq(trace40_count(t, "longjmp"), 5, "longjmp calls in the trace")
    eq(trace40_count(t, "qsort"), 5, "qsort calls (each left by a longjmp)")


@case
def trace_all_swapcontext(c):
    # two coroutines on neighbouring malloc'd stacks switch inside traced qsort calls: a
    # qsort of one is open while the other's runs and returns
    n = 6
    r, t = trace40_same_as_native(c, [c.prog("trace_nonlocal"), "ucontext", n], "uc")
    check("main back" in r.out, "the coroutines did not end: %r" % r)
    # co1's open qsort was given up for dead when co0's returned, and came back
    check("returned after its frame was taken for gone" in r.err,
          "the given-up path was not taken: %r" % r.err)
    eq(trace40_count(t, "swapcontext"), 2 * n + 1, "swapcontext calls in the trace")
    # co0's n qsorts and co1's first n-1 returned; co1's last, left suspended, is ended
    # when the shadow stack gives it up (when its stack lies below co0's)
    q = trace40_count(t, "qsort")
    check(2 * n - 1 <= q <= 2 * n, "qsort calls in the trace: %d, want %d or %d"
          % (q, 2 * n - 1, 2 * n))


@case
def trace_all_vfork_exec(c):
    r, t = trace40_same_as_native(c, [c.prog("trace_nonlocal"), "vfork", 3], "vf")
    eq(r.out.count("exited 0"), 3, "children that exited 0")
    eq(trace40_count(t, "vfork"), 3, "vfork calls in the parent's trace")
    check(trace40_count(t, "waitpid") >= 3, "waitpid calls that returned: %d"
          % trace40_count(t, "waitpid"))


@case
def trace_all_thread_exit_cancel(c):
    # glibc unwinds these threads with libgcc_s's own unwinder, past libprof's wrappers,
    # through a traced frame (qsort, sleep) whose return address libprof had replaced
    n = 3
    r, t = trace40_same_as_native(c, [c.prog("trace_nonlocal"), "threads", n], "th",
                                  timeout=60)
    eq(r.out.count("cleanup exit"), n, "cleanups of pthread_exit")
    eq(r.out.count("cleanup cancel"), n, "cleanups of the cancellation")
    eq(r.out.count("exited with 7"), n, "pthread_exit values")
    eq(trace40_count(t, "pthread_exit"), n, "pthread_exit calls (entry only)")
    eq(trace40_count(t, "pthread_cancel"), n, "pthread_cancel calls")


@case
def trace_all_cxx_rethrow(c):
    # each exception unwinds a frame with a destructor (its landing pad calls
    # _Unwind_Resume through the PLT), is rethrown from catch (...) and caught in main
    prog = trace40_build(c, "c++", "rethrow", "rethrow.cpp")
    n = 4
    r, t = trace40_same_as_native(c, [prog, n], "cx")
    eq(r.out.count("unwound"), n, "destructors run")
    check(("caught=%d" % n) in r.out, "exceptions caught: %r" % r)
    # two landing pads each: middle's destructor and rethrower's catch (...), which ends
    # its catch while the rethrown exception passes
    eq(trace40_count(t, "_Unwind_Resume"), 2 * n, "_Unwind_Resume calls (entry only)")
    eq(trace40_count(t, "__cxa_rethrow"), n, "__cxa_rethrow calls (entry only)")
    check(trace40_count(t, "printf") >= 3 * n, "printf calls that returned: %d"
          % trace40_count(t, "printf"))


@case
def trace_all_bash(c):
    # bash starting the session itself (it defines its own getenv: PROFILER_TRACE must
    # still be seen), then bash exec'd by sh (a process joining the session): `(exit 3)`
    # longjmps to a __sigsetjmp bash called through its PLT
    script = "for i in 1 2 3; do echo $i; done; (exit 3); echo done"
    r, t = trace40_same_as_native(c, ["bash", "-c", script], "sh")
    eq(r.out, "1\n2\n3\ndone\n", "bash's output")
    check(trace40_count(t, "__sigsetjmp") >= 1, "bash's __sigsetjmp calls not in the trace")
    check(trace40_count(t, "waitpid") >= 1, "bash's waitpid calls not in the trace")
    exec_bash = ["sh", "-c", 'exec bash -c "$0"', script]
    r, t = trace40_same_as_native(c, exec_bash, "sh2")
    eq(r.out, "1\n2\n3\ndone\n", "bash's output (exec'd by sh)")
    # functions returning through `return` (a longjmp), a subshell's status, command
    # substitution, an EXIT trap and an exit status
    script = ('f() { echo "in f $1"; return 3; echo no; }; f a; echo "f gave $?"; '
              'x=$(f b); echo "sub: $x"; (exit 4); echo "status $?"; '
              'trap "echo trapped" EXIT; exit 5')
    r, t = trace40_same_as_native(c, ["sh", "-c", 'exec bash -c "$0"', script], "sh3")
    eq(r.rc, 5, "bash's exit status")
    check("status 4" in r.out, "the subshell's status: %r" % r.out)


@case
def trace_all_canonical_plt(c):
    # puts and malloc looked up by name give the executable's PLT entries: a stub whose
    # "real function" is such an entry, put in that same executable's GOT, called itself
    # forever (Debian's python3 is built this way: PROFILER_TRACE='*' hung every run)
    prog = trace40_build(c, "no-pie", "canonical", "canonical.c")
    n = 3
    r, t = trace40_same_as_native(c, [prog, n], "cp", timeout=60)
    eq(trace40_count(t, "puts"), 2 * n, "puts calls (direct and through the pointer)")
    r, t = trace40_same_as_native(c, ["/usr/bin/python3", "-c", "print('py', 6 * 7)"], "py",
                                  timeout=120)
    eq(r.out, "py 42\n", "python's output")


@case
def trace_torch_c10d_import(c):
    # PROFILER_TRACE='c10d=c10d::*' patches libtorch_python's GOT from the dlsym call of
    # a constructor that runs while torch's libraries load: no dlopen there
    py = "/usr/bin/python3"
    probe = c.run([py, "-c", "import torch"], preload=False, autostart=False, timeout=300)
    if probe.rc != 0:
        c.note("skipped: torch is not importable by %s" % py)
        return
    r = c.run([py, "-c", "import torch; print('torch', torch.__version__)"],
              env={"PROFILER_TRACE": "c10d=c10d::*", "PROFILER_OUTPUT": "torch"},
              timeout=300)
    eq(r.rc, 0, "import torch traced with c10d::* (%r)" % r)
    check(r.out.startswith("torch "), "import torch printed: %r" % r.out)
    c.outputs("torch", wait=30)


@case
def trace_follows_dlclose(c):
    # two libraries of one layout, loaded one after the other at the same address: the
    # second is traced under its own names, its own PLT calls included
    a = trace40_build(c, "so", "libreload_a.so", "reload_a.c")
    b = trace40_build(c, "so", "libreload_b.so", "reload_b.c")
    n = 4
    # ASLR may put the second elsewhere: the reload path is exercised only when it lands
    # where the first was, so the run is repeated (each its own outputs) until it does
    for attempt in range(8):
        prefix = "rl%d" % attempt
        r = c.run([c.prog("trace_reload"), a, "entry_a", b, "entry_b", n],
                  env={"PROFILER_TRACE": "entry_*,inner_*", "PROFILER_OUTPUT": prefix})
        eq(r.rc, 0, "trace_reload (%r)" % r)
        bases = r.kv("base1") + r.kv("base2")
        eq(len(bases), 2, "bases printed")
        if bases[0] == bases[1]:
            break
        c.note("attempt %d: the second library landed elsewhere (%s, %s)"
               % ((attempt,) + tuple(bases)))
    check(bases[0] == bases[1], "the second library never landed where the first was in "
          "8 runs: the reload path was not exercised")
    eq(r.kv("sum1") + r.kv("sum2"), [str(3 * n * (n - 1) // 2 + n)] * 2, "sums")
    t, _ = c.outputs(prefix)
    got = {k: v for k, v in trace_counts(t, "trace").items()}
    eq(got, {"entry_a": n, "inner_a": n, "entry_b": n, "inner_b": n},
       "traced calls per function")


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
