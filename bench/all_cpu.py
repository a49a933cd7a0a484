"""BENCH_ONLY=all_cpu (issue 32): the CPU a profiler costs in all of its processes, per
event. A run's program, libprof's collector and its live-tables child (or heaptrack's
interpreter, uftrace's writer threads) are all reaped here, this process being their
subreaper, with their rusage: CPU seconds of everything the run started, less the
native program's, over the events recorded. Paced loops (work after each call), so the
collector keeps up and nothing is lost; medians of interleaved rounds; ns of CPU an event
and the same in units of this machine's floor (one rdtsc and a 48-byte store, the least a
recorded event costs, measured in the same run). BENCH_BASE: another build's libprof
beside this one's."""
import ctypes
import os
import re
import shutil
import statistics
import subprocess
import time

from torch_stacks import PR_SET_CHILD_SUBREAPER, cpu_model, reap_all

PAIRS = int(os.environ.get("BENCH_CPU_PAIRS", "2000000"))
PACE = 200
WARM = 10000  # the loops' warm-up calls before the timed ones, recorded too
SPAWNS = 100  # short programs the shell loop runs
TIMEOUT = 600
# Seconds before each run: memory a run freed is cheap to the next for a while (a guest's
# pages still backed by its host: here a run just after another libprof run read 20-25%
# less CPU), so each run starts as a user's would, from memory at rest.
SETTLE = float(os.environ.get("BENCH_SETTLE_S", "3"))


def one(cmd, env, work):
    """(wall s, all processes' CPU s, stderr) of one run."""
    with open(os.path.join(work, "err"), "w") as err:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=err)
        st, ru, others = reap_all(p.pid, t0 + TIMEOUT)
        wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(st)
    with open(os.path.join(work, "err")) as f:
        stderr = f.read()
    if p.returncode:
        raise RuntimeError(f"{cmd} exited {p.returncode}:\n{stderr[-2000:]}")
    return wall, ru.ru_utime + ru.ru_stime + others, stderr


def libprof_events(stderr):
    m = re.search(r"libprof: (\d+) events \((\d+) lost\b", stderr)
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def all_cpu(build, work, clean_env, rounds):
    alloc = os.path.join(build, "bench", "alloc_loop")
    trace = os.path.join(build, "bench", "trace_loop")
    lib = os.path.join(build, "libprof.so")
    rec = {"LD_PRELOAD": lib, "PROFILER_AUTOSTART": "1"}
    args = [str(PAIRS), str(PACE)]
    # (name, command, extra env, events the run records: None = libprof's summary says)
    cases = {"allocator": [("native", [alloc] + args, {}, 0),
                           ("libprof", [alloc] + args, rec, None)],
             "traced calls": [("native", [trace] + args, {}, 0),
                              ("libprof", [trace] + args, dict(rec, PROFILER_TRACE="bench_fn"),
                               None)]}
    # a shell loop of short programs (a build, a test suite): each a process to set up
    spawn = ["sh", "-c", "i=0; while [ $i -lt %d ]; do /bin/true; i=$((i+1)); done" % SPAWNS]
    cases["processes"] = [("native", spawn, {}, 0), ("libprof", spawn, rec, None)]
    base = os.environ.get("BENCH_BASE")  # another build, measured beside this one
    if base:
        brec = dict(rec, LD_PRELOAD=os.path.join(base, "libprof.so"))
        cases["allocator"].append(("base", [alloc] + args, brec, None))
        cases["traced calls"].append(("base", [trace] + args, dict(brec, PROFILER_TRACE="bench_fn"),
                                      None))
        cases["processes"].append(("base", spawn, brec, None))
    if shutil.which("heaptrack"):
        # heaptrack records every malloc and free (2 events a pair, as libprof)
        cases["allocator"].append(("heaptrack", ["heaptrack", "-o", os.path.join(work, "ht")]
                                   + [alloc] + args, {}, 2 * (PAIRS + WARM)))
        cases["processes"].append(("heaptrack", ["heaptrack", "-o", os.path.join(work, "ht")]
                                   + spawn, {}, 0))
    if shutil.which("uftrace"):
        # uftrace records the PLT call's entry and exit (libprof: one event a call)
        cases["traced calls"].append(("uftrace", ["uftrace", "record", "--force", "-d",
                                                  os.path.join(work, "uft")] + [trace] + args,
                                      {}, 2 * (PAIRS + WARM)))
    floor = float(subprocess.run([os.path.join(build, "bench", "clock_floor")],
                                 capture_output=True, text=True, check=True).stdout.split()[2])
    # the exact live-heap analysis alone, per operation: a floor under the tables child's
    # share of an allocator event (one block reused, as alloc_loop's; a million live)
    heap = [float(x) for x in subprocess.run(
        [os.path.join(build, "bench", "heap_floor"), str(PAIRS)], capture_output=True,
        text=True, check=True).stdout.split()]
    res = {(c, v[0]): {"cpu": [], "wall": [], "events": [], "lost": []}
           for c, vs in cases.items() for v in vs}
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    try:
        for rnd in range(rounds):
            for c, vs in cases.items():
                # each variant first in turn: a run after another's big one found its
                # memory warm (a guest's pages backed already) and read ~25% cheaper
                turn = rnd % len(vs)
                for name, cmd, extra, events in vs[turn:] + vs[:turn]:
                    time.sleep(SETTLE)
                    wall, cpu, stderr = one(cmd, clean_env(extra), work)
                    r = res[(c, name)]
                    r["wall"].append(wall)
                    r["cpu"].append(cpu)
                    if events is None:
                        events, lost = libprof_events(stderr)
                        if events is None:
                            raise RuntimeError(f"no libprof summary line: {stderr[-500:]!r}")
                        r["lost"].append(lost)
                    r["events"].append(events)
                    for d in ("ht", "uft"):
                        shutil.rmtree(os.path.join(work, d), ignore_errors=True)
                    for f in os.listdir(work):
                        if f.startswith(("libprof", "ht.")):
                            os.unlink(os.path.join(work, f))
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
    med = statistics.median
    print(f"\n{cpu_model()}")
    print(f"CPU of all of a run's processes (program, collector, tables child, a peer's own), "
          f"{PAIRS:,} paced iterations\n(work {PACE} after each), medians of {rounds} "
          f"interleaved rounds; floor: one rdtsc + 48-byte store = {floor:.2f} ns")
    print(f"  {'':13} {'':10} {'events':>9} {'lost':>5} {'wall s':>7} {'CPU s':>6} "
          f"{'spread':>10} {'CPU ns/call added':>18} {'floors':>7} {'x native CPU':>13}")
    out = {}
    for c, vs in cases.items():
        base = med(res[(c, "native")]["cpu"])
        # the calls each run makes: a malloc and a free a pair, one traced call an
        # iteration; the shell loop's: one a program it runs
        calls = SPAWNS if c == "processes" else (2 if c == "allocator" else 1) * (PAIRS + WARM)
        for name, _, _, _ in vs:
            r = res[(c, name)]
            cpu, ev = med(r["cpu"]), med(r["events"])
            added = (cpu - base) * 1e9 / calls
            spread = f"{min(r['cpu']):.2f}-{max(r['cpu']):.2f}"
            lost = f"{max(r['lost'])}" if r["lost"] else ""
            if name == "native":
                per, fl = f"{'':18}", f"{'':7}"
            elif c == "processes":
                per, fl = f"{added / 1e3:15.1f} us", f"{'':7}"
            else:
                per, fl = f"{added:18.1f}", f"{added / floor:7.1f}"
            print(f"  {c:13} {name:10} {ev:9.0f} {lost:>5} {med(r['wall']):7.2f} {cpu:6.2f} "
                  f"{spread:>10} {per} {fl} {cpu / base:13.2f}")
            out[(c, name)] = added
    print(f"  the live-heap analysis alone (bench/heap_floor, formats/model/memtrack.c): "
          f"{heap[0]:.1f} ns an operation ({heap[0] / floor:.1f} floors) on one block reused, "
          f"{heap[1]:.1f} with a million live")
    print("  added: all processes' CPU beyond the native program's, per call the program makes "
          "(a malloc or a free;\n  a call of the traced function; processes: us per program "
          f"the shell loop runs, {SPAWNS} in all); events: as each "
          "profiler counts them (uftrace: an entry and an exit a call)")
    return out
