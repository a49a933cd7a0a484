"""BENCH_ONLY=start_exit (issue 32): the wall time a profiler adds to one short program,
from spawn to the last of its processes gone (the outputs written: libprof's collector
and tables child, heaptrack's interpreter, uftrace's writer), as a build or a test suite
running thousands of short programs pays it. /bin/true and `python3 -c pass`, natively,
under the bare command, under `prof record`, heaptrack and `uftrace record`; medians of
interleaved rounds, and what each adds to the native median. BENCH_BASE: another build's
libprof beside this one's."""
import ctypes
import os
import shutil
import statistics
import sys

from all_cpu import one
from torch_stacks import PR_SET_CHILD_SUBREAPER, cpu_model


def start_exit(build, work, clean_env, rounds):
    lib = os.path.join(build, "libprof.so")
    prof = os.path.join(build, "prof")
    out = os.path.join(work, "se")
    programs = [["/bin/true"], [sys.executable, "-c", "pass"]]  # the real interpreter
    # (name, wrapper, extra env)
    variants = [("native", [], {}),
                ("bare command", [], {"LD_PRELOAD": lib, "PROFILER_AUTOSTART": "1",
                                      "PROFILER_OUTPUT": out}),
                ("prof record", [prof, "record", "-o", out, "--"], {})]
    base = os.environ.get("BENCH_BASE")
    if base:
        variants.append(("base, bare command", [], {
            "LD_PRELOAD": os.path.join(base, "libprof.so"), "PROFILER_AUTOSTART": "1",
            "PROFILER_OUTPUT": out}))
    if shutil.which("heaptrack"):
        variants.append(("heaptrack", ["heaptrack", "-o", os.path.join(work, "ht")], {}))
    if shutil.which("uftrace"):
        variants.append(("uftrace record", ["uftrace", "record", "--force", "-d",
                                            os.path.join(work, "uft")], {}))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # the run's last process waited for
    try:
        measure(programs, variants, work, clean_env, rounds)
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def measure(programs, variants, work, clean_env, rounds):
    print(f"\nStart and exit of one short program, wall from spawn until all of its "
          f"processes are gone (issue 32); {cpu_model()}; medians of {rounds} interleaved "
          f"rounds")
    for prog in programs:
        walls = {name: [] for name, _, _ in variants}
        for _ in range(rounds):
            for name, wrap, extra in variants:
                wall, _, _ = one(wrap + prog, clean_env(extra), work)
                walls[name].append(wall)
        native = statistics.median(walls["native"])
        label = " ".join([os.path.basename(prog[0])] + prog[1:])
        print(f"  {label:22} {'ms':>8} {'added ms':>9}"
              f" {'min-max':>13}")
        for name, _, _ in variants:
            med = statistics.median(walls[name])
            print(f"    {name:20} {med * 1e3:8.1f} {(med - native) * 1e3:9.1f} "
                  f"{min(walls[name]) * 1e3:6.1f}-{max(walls[name]) * 1e3:.1f}")
