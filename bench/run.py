#!/usr/bin/env python3
"""make bench: libprof's cost per intercepted call against the native program, a
do-nothing interposer and heaptrack, measured side by side in one run (variants
interleaved, medians of several rounds); then the collector's drain rate, raw bytes per
event and the Chrome export rate; then the cost of a call stack per allocation against
heaptrack at the same depth, and whether both tools find the same peak and sites; then
what a long run costs after it ends (bench/long_run.py), what continuous dumps cost a
busy run (bench/continuous_dump.py), what a new thread costs (bench/thread_cost.py), what
is lost at 2 M events/s with every core busy (bench/loaded_rate.py), the CPU of all of
a profiler's processes per event against heaptrack and uftrace (bench/all_cpu.py), the
wall a short program's start and exit add (bench/start_exit.py),
what call stacks on allocations cost PyTorch training steps against torch.profiler
(bench/torch_stacks.py), and what compiled graphs' steps cost: a torch.compile'd MLP
(bench/torch_compile_step.py) and a hybridized MXNet CNN (bench/mxnet_step.py)."""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import all_cpu  # noqa: E402
import continuous_dump  # noqa: E402
import loaded_rate  # noqa: E402
import long_run  # noqa: E402
import merge_ranks  # noqa: E402
import start_exit  # noqa: E402
import thread_cost  # noqa: E402
import torch_stacks  # noqa: E402
import torch_step_blocks  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
B = os.environ.get("BUILD", os.path.join(os.path.dirname(__file__), "..", "build"))
N = int(os.environ.get("BENCH_N", "2000000"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "7"))
LOOP = os.path.join(B, "bench", "alloc_loop")
LIB = os.path.join(B, "libprof.so")
PROF = os.path.join(B, "prof")
STACKS = os.path.join(B, "bench", "alloc_stacks")
STACKS_FP = os.path.join(B, "bench", "alloc_stacks_fp")  # built with frame pointers
# libprof as it was before (bench/build_before.sh, BENCH_BEFORE): measured beside the
# current build in the same run, where it could be built
BEFORE_LIB = os.path.join(B, "bench", "before", "libprof.so")
BEFORE_PROF = os.path.join(B, "bench", "before", "prof")
HAVE_BEFORE = os.path.exists(BEFORE_LIB) and os.path.exists(BEFORE_PROF)
STACK_N = int(os.environ.get("BENCH_STACK_N", "300000"))
STACK_DEPTHS = (5, 30)
BURST_PAIRS = 2000000  # malloc/free pairs of the burst


def clean_env(extra):
    """The environment without any libprof setting, plus extra."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PROFILER_") and k != "LD_PRELOAD"}
    # repeated runs replace their outputs (a taken name would otherwise get -2, -3, ...)
    env["PROFILER_OVERWRITE"] = "1"
    env.update(extra)
    return env


def interleaved_medians(variants, rounds, measure):
    """Runs measure(*variant[1:]) for every variant, round after round (so slow phases of
    the machine hit them all alike), and returns each variant's median."""
    res = {v[0]: [] for v in variants}
    for rnd in range(rounds):
        # each variant first in turn: a variant run after another one's reads differently
        # for its place alone (BENCH_BASE set to this same build read ~+20 ns paced)
        turn = rnd % len(variants)
        for v in variants[turn:] + variants[:turn]:
            res[v[0]].append(measure(*v[1:]))
    return {k: statistics.median(x) for k, x in res.items()}


def first_number(out, what):
    for line in out.splitlines():  # heaptrack prints its own lines too
        try:
            return float(line)
        except ValueError:
            pass
    raise RuntimeError(f"no timing in the output of {what}: {out!r}")


PACE = 200  # alloc_loop's steps of work after each pair in the paced variants


def run(env_extra, n, wrapper=()):
    args = [str(x) for x in n] if isinstance(n, tuple) else [str(n)]
    out = subprocess.run(list(wrapper) + [LOOP] + args, env=clean_env(env_extra), cwd=WORK,
                         capture_output=True, text=True, check=True)
    return first_number(out.stdout, f"{wrapper} {LOOP}")


def variants():
    v = [
        ("native", {}, N, ()),
        ("do-nothing interposer", {"LD_PRELOAD": os.path.join(B, "bench", "nop_preload.so")}, N, ()),
        ("libprof preloaded, idle", {"LD_PRELOAD": LIB}, N, ()),
        ("libprof recording, nothing lost", {"LD_PRELOAD": LIB, "PROFILER_AUTOSTART": "1",
                                             "PROFILER_QUIET": "1", "PROFILER_RING_SIZE": "256M"}, N, ()),
        ("libprof recording, default ring (drops)", {"LD_PRELOAD": LIB, "PROFILER_AUTOSTART": "1",
                                                     "PROFILER_QUIET": "1"}, N, ()),
        ("libprof recording, ALLOC_TIMING=1", {"LD_PRELOAD": LIB, "PROFILER_AUTOSTART": "1",
                                               "PROFILER_QUIET": "1", "PROFILER_RING_SIZE": "256M",
                                               "PROFILER_ALLOC_TIMING": "1"}, N, ()),
    ]
    if HAVE_BEFORE:
        v.append(("before: recording, nothing lost", {"LD_PRELOAD": BEFORE_LIB,
                                                      "PROFILER_AUTOSTART": "1",
                                                      "PROFILER_QUIET": "1",
                                                      "PROFILER_RING_SIZE": "256M"}, N, ()))
    if shutil.which("heaptrack"):
        v.append(("heaptrack", {}, N // 10, ("heaptrack", "-o", os.path.join(WORK, "ht"))))
    # Paced: work after each pair, so the collector keeps up with the default ring, which
    # then stays resident: the cost of a call without the first touch of fresh ring pages
    # (which the flat-out variants above pay, ~25 ns per event on this VM)
    rec = {"LD_PRELOAD": LIB, "PROFILER_AUTOSTART": "1", "PROFILER_QUIET": "1"}
    paced = (N, PACE)
    v += [("paced: native", {}, paced, ()),
          # the floors in this same loop: each call's TSC read and 48-byte record inline
          # (no interposer), and the least an interposer that records can do
          ("paced: floor, rdtsc + record inline", {}, (N, PACE, "floor"), ()),
          ("paced: least recording interposer",
           {"LD_PRELOAD": os.path.join(B, "bench", "min_recorder.so")}, paced, ()),
          ("paced: do-nothing interposer",
           {"LD_PRELOAD": os.path.join(B, "bench", "nop_preload.so")}, paced, ()),
          ("paced: libprof recording", rec, paced, ()),
          ("paced: libprof, ALLOC_TIMING=1", dict(rec, PROFILER_ALLOC_TIMING="1"), paced, ())]
    if HAVE_BEFORE:
        v.append(("paced: before", dict(rec, LD_PRELOAD=BEFORE_LIB), paced, ()))
    if shutil.which("heaptrack"):
        v.append(("paced: heaptrack", {}, (N // 10, PACE),
                  ("heaptrack", "-o", os.path.join(WORK, "htp"))))
    return v


def clock_floors():
    """This machine's floors, measured now (bench/clock_floor): (two rdtsc + 48-byte store,
    two clock_gettime + store, one rdtsc + store), ns."""
    out = subprocess.run([os.path.join(B, "bench", "clock_floor")], capture_output=True,
                         text=True, check=True).stdout.split()
    return float(out[0]), float(out[1]), float(out[2])


def overhead():
    med = interleaved_medians(variants(), ROUNDS, run)
    native, nop = med["native"], med["do-nothing interposer"]
    floor = clock_floors()
    # an allocator call is one event: one timestamp and its record, the floor's one rdtsc
    # and store
    print(f"Intercepted call cost: malloc(64)+free pairs, {N:,} pairs, median of {ROUNDS} "
          f"interleaved rounds; {torch_stacks.cpu_model()}")
    print(f"{'variant':40} {'ns/call':>8} {'vs native':>10} {'vs nop':>8} {'x native':>9} "
          f"{'floors':>7}")
    for name, v in med.items():
        if name.startswith("paced: "):
            native, nop = med["paced: native"], med["paced: do-nothing interposer"]
        print(f"{name:40} {v:8.2f} {v - native:+10.2f} {v - nop:+8.2f} {v / native:9.2f} "
              f"{(v - native) / floor[2]:7.2f}")
    print(f"floor on this machine: two rdtsc + 48-byte store {floor[0]:.2f} ns, "
          f"one rdtsc + store {floor[2]:.2f} ns (the floors column: ns added over it), two "
          f"clock_gettime + store {floor[1]:.2f} ns")
    # A tight loop of TSC reads overlaps them; in the paced loop a read and its record
    # cost more, so the paced calls are also given in the floor measured in that loop.
    pn = med["paced: native"]
    inline, least = med["paced: floor, rdtsc + record inline"] - pn, \
        med["paced: least recording interposer"] - pn
    added = med["paced: libprof recording"] - pn
    if inline > 0 and least > 0:
        print(f"paced floors in the same loop: rdtsc + record inline +{inline:.2f} ns, the "
              f"least recording interposer +{least:.2f} ns; libprof +{added:.2f} ns = "
              f"{added / inline:.2f}x the first (issue 32's goal: <= 1.25), "
              f"{added / least:.2f}x the second")
    lost = subprocess.run([LOOP, str(N), str(PACE)], cwd=WORK, capture_output=True, text=True,
                          env=clean_env({"LD_PRELOAD": LIB, "PROFILER_AUTOSTART": "1",
                                         "PROFILER_OUTPUT": "paced"}), check=True).stderr
    m = re.search(r"libprof: (\d+) events \((\d+) lost\b", lost)
    print(f"paced, default ring: {m.group(2) if m else '?'} of "
          f"{int(m.group(1)) + int(m.group(2)) if m else '?'} events lost")
    return med


def traced_calls():
    """Issue 3 and 18: the generic entry/exit mechanism against the untraced call, flat
    out (a 256 MiB ring: every event on a fresh page) and paced (work after each call:
    the collector keeps up and the default ring stays resident)."""
    loop = os.path.join(B, "bench", "trace_loop")
    n = N
    rec = {"LD_PRELOAD": LIB, "PROFILER_AUTOSTART": "1", "PROFILER_QUIET": "1",
           "PROFILER_TRACE": "bench_fn"}
    v = [("native call through the PLT", {}, 0),
         ("libprof preloaded, not tracing", {"LD_PRELOAD": LIB, "PROFILER_AUTOSTART": "1",
                                             "PROFILER_QUIET": "1"}, 0),
         ("libprof tracing bench_fn", dict(rec, PROFILER_RING_SIZE="256M"), 0)]
    if HAVE_BEFORE:
        v.append(("before: libprof tracing bench_fn",
                  dict(rec, LD_PRELOAD=BEFORE_LIB, PROFILER_RING_SIZE="256M"), 0))
    v += [("paced: native", {}, PACE),
          # the floor in this same loop: two TSC reads and a record around the call, inline
          ("paced: floor, two rdtsc + record inline", {}, (PACE, "floor")),
          ("paced: libprof tracing bench_fn", rec, PACE)]
    if HAVE_BEFORE:
        v.append(("paced: before", dict(rec, LD_PRELOAD=BEFORE_LIB), PACE))

    def measure(extra, work):
        work = [str(x) for x in work] if isinstance(work, tuple) else [str(work)]
        out = subprocess.run([loop, str(n)] + work, env=clean_env(extra), cwd=WORK,
                             capture_output=True, text=True, check=True)
        return float(out.stdout.split()[0])

    med = interleaved_medians(v, ROUNDS, measure)
    floor = clock_floors()[0]  # a traced call is one record with two timestamps
    print()
    print(f"Traced call cost: {n:,} calls of a tiny function through the PLT, median of {ROUNDS}; "
          f"{torch_stacks.cpu_model()}")
    print(f"{'variant':40} {'ns/call':>8} {'added':>8} {'floors':>7}")
    for name, x in med.items():
        base = med["paced: native" if name.startswith("paced") else "native call through the PLT"]
        print(f"{name:40} {x:8.2f} {x - base:+8.2f} {(x - base) / floor:7.2f}")
    print(f"floor on this machine: two rdtsc + 48-byte store {floor:.2f} ns (the floors "
          f"column: ns added over it)")
    inline = med["paced: floor, two rdtsc + record inline"] - med["paced: native"]
    added = med["paced: libprof tracing bench_fn"] - med["paced: native"]
    if inline > 0:
        print(f"paced floor in the same loop: two rdtsc + record inline +{inline:.2f} ns; "
              f"libprof +{added:.2f} ns = {added / inline:.2f}x it (issue 32's goal: <= 1.5)")


def mpi_calls():
    """Issue 16: an MPI call recorded with its bytes, datatype and communicator size (the
    mpi preset's hooks) against the same call unprofiled and merely traced."""
    mpicc = shutil.which("mpicc")
    if not mpicc:
        print("\nMPI call cost: skipped (no mpicc: apt-get install libopenmpi-dev)")
        return
    loop = os.path.join(WORK, "mpi_loop")
    subprocess.run([mpicc, "-O2", "-o", loop, os.path.join(os.path.dirname(__file__),
                                                           "mpi_loop.c")], check=True)
    n = N // 10
    rec = {"LD_PRELOAD": LIB, "PROFILER_AUTOSTART": "1", "PROFILER_QUIET": "1",
           "PROFILER_RING_SIZE": "256M"}
    v = [("native (singleton MPI, no mpirun)", {}),
         ("libprof, no preset (not traced)", dict(rec, PROFILER_FRAMEWORK="none")),
         ("libprof, traced without the hook", dict(rec, PROFILER_FRAMEWORK="none",
                                                   PROFILER_TRACE="MPI_Allreduce")),
         ("libprof, mpi preset (bytes, type, size)", rec)]

    def measure(extra):
        out = subprocess.run([loop, str(n)], env=clean_env(extra), cwd=WORK,
                             capture_output=True, text=True, check=True)
        return first_number(out.stdout, loop)

    med = interleaved_medians(v, ROUNDS, measure)
    base = med[v[0][0]]
    print()
    print(f"MPI call cost: {n:,} MPI_Allreduce of one int on one rank, median of {ROUNDS}")
    print(f"{'variant':40} {'ns/call':>8} {'added':>8}")
    for name, x in med.items():
        print(f"{name:40} {x:8.2f} {x - base:+8.2f}")


def torch_overhead():
    """Issues 3 and 14: a PyTorch training loop's slowdown under libprof's bare command,
    with frameworks off (the allocator only) and under torch.profiler, side by side."""
    py = "/usr/bin/python3"
    if subprocess.run([py, "-c", "import torch"], capture_output=True).returncode:
        print("\nPyTorch benchmark: skipped, /usr/bin/python3 has no torch (python3-torch)")
        return
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_step.py")
    bare = {"LD_PRELOAD": LIB, "PROFILER_AUTOSTART": "1", "PROFILER_QUIET": "1"}
    v = [("native", {}, []),
         # the bare command: ATen ops, labels and autograd nodes (RecordFunction
         # callbacks), the allocator
         ("libprof, bare command", bare, []),
         ("libprof, frameworks off", dict(bare, PROFILER_FRAMEWORK="none"), []),
         ("libprof, PROFILER_RECORD_SHAPES=1", dict(bare, PROFILER_RECORD_SHAPES="1"), []),
         ("torch.profiler (CPU)", {}, ["torchprof"]),
         ("torch.profiler, record_shapes", {}, ["torchprof_shapes"])]
    framework_steps("PyTorch CNN, batch 1, one thread, median of 500 iterations", py, script,
                    [], v)


def framework_steps(title, py, script, args, variants, warm=()):
    """A framework step benchmark: script's median step (us) under each variant's extra
    environment (name, extra[, more arguments]), interleaved round by round (run once
    each first for the variants in warm), printed beside native's."""
    rounds = max(3, ROUNDS // 2)

    def measure(extra, more=()):
        argv = [py, script] + [str(a) for a in args] + list(more)
        out = subprocess.run(argv, env=clean_env(extra), cwd=WORK, capture_output=True,
                             text=True, check=True)
        return float(out.stdout.split()[-1])

    for w in warm:
        measure(*w[1:])
    med = interleaved_medians(variants, rounds, measure)
    base = med["native"]
    print()
    print(f"{title}, median of {rounds} runs")
    print(f"{'variant':36} {'us/step':>9} {'slowdown':>9}")
    for name, x in med.items():
        print(f"{name:36} {x:9.1f} {100 * (x / base - 1):+8.1f}%")


def torch_compile_overhead():
    """Issue 33: a torch.compile'd MLP's training step (torch 2.x venv) under the bare
    command, which names the compiled regions and inductor's kernels (it sets
    TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE=1: each kernel makes a RecordFunction), against
    native, native with that variable (its cost without libprof) and libprof without it
    (PROFILER_INDUCTOR_KERNELS=0)."""
    py = os.path.join(os.environ.get("LIBPROF_TORCH2ENV", os.path.expanduser(
        "~/.cache/libprof/torch2env")), "bin", "python")
    if not os.path.exists(py) or subprocess.run([py, "-c", "import torch"],
                                                capture_output=True).returncode:
        print(f"\ntorch.compile benchmark: skipped, no torch 2.x at {py}")
        return
    cache = {"TORCHINDUCTOR_CACHE_DIR": os.path.join(WORK, "inductor")}
    bare = dict(cache, LD_PRELOAD=LIB, PROFILER_AUTOSTART="1", PROFILER_QUIET="1")
    v = [("native", cache),
         ("native, kernel profile variable",
          dict(cache, TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE="1")),
         ("libprof, bare command", bare),
         ("libprof, PROFILER_INDUCTOR_KERNELS=0", dict(bare, PROFILER_INDUCTOR_KERNELS="0"))]
    # both compiles into the cache before anything is timed
    framework_steps("torch.compile MLP (inductor, CPU, one thread), median of 300 steps", py,
                    os.path.join(HERE, "torch_compile_step.py"), [300], v, warm=v[:2])


def mxnet_overhead():
    """Issue 33: a hybridized Gluon CNN's training step under the bare command, which turns
    MXNet's bulk execution off so the layers are operators (PROFILER_MXNET_BULK=0, the
    default), against native, native with bulk off (what that costs without libprof) and
    libprof keeping MXNet's bulk segments (PROFILER_MXNET_BULK=1)."""
    py = sys.executable
    if subprocess.run([py, "-c", "import mxnet"], capture_output=True).returncode:
        print(f"\nMXNet benchmark: skipped, {py} has no mxnet")
        return
    bare = {"LD_PRELOAD": LIB, "PROFILER_AUTOSTART": "1", "PROFILER_QUIET": "1"}
    bulk_off = {k: "0" for k in ("MXNET_EXEC_BULK_EXEC_TRAIN", "MXNET_EXEC_BULK_EXEC_INFERENCE",
                                 "MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_FWD",
                                 "MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN_BWD")}
    v = [("native", {}), ("native, bulk execution off", bulk_off),
         ("libprof, bare command", bare),
         ("libprof, PROFILER_MXNET_BULK=1", dict(bare, PROFILER_MXNET_BULK="1"))]
    for batch, steps in ((64, 40), (1, 400)):
        framework_steps(f"MXNet hybridized Gluon CNN, batch {batch}, median of {steps} steps",
                        py, os.path.join(HERE, "mxnet_step.py"), [steps, batch], v)


def throughput():
    """Issue 18: the collector's drain (blocking writers: the loop runs at the collector's
    pace), its own CPU per event, raw bytes per event, the report and export rates, and
    what a flat-out burst loses with the default ring; before (BENCH_BEFORE) and now,
    interleaved round by round (this VM's speed moves by 2x between phases)."""
    builds = [("now", LIB, PROF)]
    if HAVE_BEFORE:
        builds.insert(0, ("before", BEFORE_LIB, BEFORE_PROF))
    n = 3000000
    events = 2 * n + 20000
    res = {tag: {"block": [], "cpu": [], "lost": [], "burst_ns": []} for tag, _, _ in builds}
    for _ in range(max(ROUNDS, 3)):
        for tag, lib, _ in builds:
            r = res[tag]
            env = {"LD_PRELOAD": lib, "PROFILER_AUTOSTART": "1", "PROFILER_QUIET": "1",
                   "PROFILER_BLOCK": "1", "PROFILER_OUTPUT": "tp" + tag,
                   "PROFILER_DEBUG": "drain"}
            out = subprocess.run([LOOP, str(n)], env=clean_env(env), cwd=WORK,
                                 capture_output=True, text=True, check=True)
            r["block"].append(float(out.stdout.split()[0]))
            # the collector's own CPU for the capture (builds that say it)
            m = re.search(r"captured \d+ events with [\d.]+ s of CPU \(([\d.]+) ns an event\)",
                          out.stderr)
            if m:
                r["cpu"].append(float(m.group(1)))
            # the default: a full ring drops; a tight loop writes as fast as one core can,
            # so the share it loses says how well the collector keeps up
            b = subprocess.run([LOOP, str(BURST_PAIRS)], cwd=WORK, capture_output=True,
                               text=True, check=True,
                               env=clean_env({"LD_PRELOAD": lib, "PROFILER_AUTOSTART": "1",
                                              "PROFILER_AGGREGATE_STATS": "0",
                                              "PROFILER_OUTPUT": "burst"}))
            m = re.search(r"libprof: (\d+) events \((\d+) lost\b", b.stderr)
            if not m:
                raise RuntimeError(f"no summary line: {b.stderr!r}")
            r["lost"].append(int(m.group(2)) / (int(m.group(1)) + int(m.group(2))))
            r["burst_ns"].append(float(b.stdout.split()[0]))
    med = statistics.median
    print()
    print(f"Collector and capture ({events:,} events under PROFILER_BLOCK=1, then a burst of "
          f"{2 * BURST_PAIRS / 1e6:.0f} M events flat out with each build's default ring; "
          f"medians of {len(res['now']['block'])} interleaved rounds)")
    print(f"{'build':8} {'drain M ev/s':>13} {'CPU ns/ev':>10} {'burst lost':>11} "
          f"{'burst ns/call':>14} {'bytes/ev':>9} {'report M ev/s':>14} {'export M ev/s':>14}")
    for tag, lib, prof in builds:
        r = res[tag]
        raw = os.path.getsize(os.path.join(WORK, f"tp{tag}.prof"))
        t0 = time.monotonic()
        subprocess.run([prof, "export", f"tp{tag}.prof", "-o", f"tp{tag}2.json"], cwd=WORK,
                       check=True, capture_output=True)
        t_export = time.monotonic() - t0
        t0 = time.monotonic()
        subprocess.run([prof, "report", f"tp{tag}.prof"], cwd=WORK, check=True,
                       capture_output=True)
        t_report = time.monotonic() - t0
        cpu = f"{med(r['cpu']):10.1f}" if r["cpu"] else f"{'-':>10}"
        print(f"{tag:8} {1e3 / med(r['block']):13.1f} {cpu} "
              f"{100 * med(r['lost']):10.1f}% {med(r['burst_ns']):14.2f} {raw / events:9.2f} "
              f"{events / t_report / 1e6:14.2f} {events / t_export / 1e6:14.2f}")
    print("drain: events/s the blocked writer ran at; CPU: the collector's own (drain loop "
          "and compressing) per event, from PROFILER_DEBUG=drain")


def stack_variants():
    lp = {"LD_PRELOAD": LIB, "PROFILER_AUTOSTART": "1", "PROFILER_RING_SIZE": "256M"}
    v = []
    for d in STACK_DEPTHS:
        n, depth = str(STACK_N), str(d)
        v += [(f"native|{d}", {}, [n, depth], ()),
              (f"libprof, no stacks|{d}", dict(lp, PROFILER_STACK="off"), [n, depth], ()),
              # 64 frames: the whole chain, as heaptrack (which unwinds up to 64)
              (f"libprof, stacks (depth 64)|{d}",
               dict(lp, PROFILER_STACK="alloc", PROFILER_STACK_DEPTH="64"), [n, depth], ())]
        if shutil.which("heaptrack"):
            v.append((f"heaptrack|{d}", {}, [n, depth],
                      ("heaptrack", "-o", os.path.join(WORK, "hts"))))
        # one unw_backtrace per pair: the floor under both tools, whatever they add
        v.append((f"unw_backtrace alone|{d}", {}, ["unwind", n, depth], ()))
        # 128 stacks in turn: what a stack costs when it was not just seen; the program
        # built without frame pointers (Debian's default) and with them (STACKS_FP)
        for fp, tag in (("", ""), ("fp:", ", frame pointers")):
            varied = [fp + "varied", n, depth]
            st = dict(lp, PROFILER_STACK="alloc", PROFILER_STACK_DEPTH="64")
            v += [(f"native, varied{tag}|{d}", {}, varied, ()),
                  (f"libprof, stacks, varied{tag}|{d}", st, varied, ())]
            if HAVE_BEFORE:
                v.append((f"before: stacks, varied{tag}|{d}", dict(st, LD_PRELOAD=BEFORE_LIB),
                          varied, ()))
            if shutil.which("heaptrack"):
                v.append((f"heaptrack, varied{tag}|{d}", {}, varied,
                          ("heaptrack", "-o", os.path.join(WORK, "htv"))))
    return v


LOST = {"events": 0, "lost": 0}
FRAMES = {}


def stack_run(env_extra, args, wrapper):
    prog = STACKS
    if args[0].startswith("fp:"):
        prog, args = STACKS_FP, [args[0][3:]] + args[1:]
    out = subprocess.run(list(wrapper) + [prog] + args, env=clean_env(env_extra), cwd=WORK,
                         capture_output=True, text=True, check=True)
    # libprof's summary line: a variant that lost events would be measured short
    m = re.search(r"libprof: (\d+) events \((\d+) lost\b", out.stderr)
    if m:
        LOST["events"] += int(m.group(1))
        LOST["lost"] += int(m.group(2))
    if args[0] == "unwind":  # "<ns per backtrace> <frames>"; one backtrace per two calls
        ns, frames = out.stdout.split()
        FRAMES[args[2]] = int(frames)
        return float(ns) / 2
    return first_number(out.stdout, f"{wrapper} {STACKS}")


def stacks_overhead():
    """A call stack per allocation: libprof (PROFILER_STACK=alloc) against heaptrack, the
    same program, the same depth, interleaved rounds."""
    med = interleaved_medians(stack_variants(), ROUNDS, stack_run)
    print()
    print(f"Call stacks on allocations: {STACK_N:,} malloc/free pairs from 4 sites, "
          f"D frames below main, median of {ROUNDS} interleaved rounds")
    print(f"{'D':>3} {'variant':32} {'ns/call':>8} {'vs native':>10}")
    for d in STACK_DEPTHS:
        native = med[f"native|{d}"]
        for key, x in med.items():
            name, depth = key.split("|")
            if int(depth) == d and name != "unw_backtrace alone":
                base = native
                if "varied" in name:
                    base = med[f"native, varied{', frame pointers' if 'frame' in name else ''}|{d}"]
                print(f"{d:3} {name:32} {x:8.2f} {x - base:+10.2f}")
        floor = med[f"unw_backtrace alone|{d}"]
        print(f"{d:3} {'unw_backtrace alone, per call':32} {floor:8.2f}"
              f"  ({FRAMES.get(str(d), 0)} frames, one backtrace per pair)")
        lp = med[f"libprof, stacks (depth 64)|{d}"] - native
        ht = med.get(f"heaptrack|{d}")
        if ht is not None:
            print(f"{d:3} heaptrack added / libprof added: {(ht - native) / lp:.2f}x")
        for tag in ("", ", frame pointers"):
            vn = med[f"native, varied{tag}|{d}"]
            lpv = med[f"libprof, stacks, varied{tag}|{d}"] - vn
            htv = med.get(f"heaptrack, varied{tag}|{d}")
            bv = med.get(f"before: stacks, varied{tag}|{d}")
            if htv is not None:
                print(f"{d:3} heaptrack added / libprof added, 128 stacks in turn{tag}: "
                      f"{(htv - vn) / lpv:.2f}x" +
                      (f" (before: {(htv - vn) / (bv - vn):.2f}x)" if bv is not None else ""))
    print(f"libprof: {LOST['events']:,} events over all its runs, {LOST['lost']:,} lost")
    return med


def heaptrack_report(path):
    """Peak (bytes) and the top function names by calls and by peak, from heaptrack_print
    (sizes printed with decimal suffixes: 6.40M is 6,400,000 bytes)."""
    out = subprocess.run(["heaptrack_print", "-f", path, "-n", "3", "-s", "0", "-T", "0"],
                         capture_output=True, text=True, check=True).stdout
    units = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}
    m = re.search(r"^peak heap memory consumption: ([\d.]+)([KMG]?)", out, re.M)
    peak = int(float(m.group(1)) * units[m.group(2)]) if m else None
    tops = {}
    for section, key in (("MOST CALLS TO ALLOCATION FUNCTIONS", "calls"),
                         ("PEAK MEMORY CONSUMERS", "peak")):
        part = out.split(section, 1)[1] if section in out else ""
        part = re.split(r"^[A-Z][A-Z ]+$", part, maxsplit=1, flags=re.M)[0]
        # each entry: a line "<figure> ... from", the function alone on the next line, then
        # "  at FILE:LINE" where known and "  in BINARY"; an address stands for its binary
        found = re.findall(r"^\S.* from\n(\S+)\n(?:  at .*\n)?  in (\S+)", part, re.M)
        tops[key] = [f if not f.startswith("0x") else f"({os.path.basename(b)})"
                     for f, b in found[:3]]
    return peak, tops


def same_peak_and_sites():
    """One run of each tool on a pattern whose peak and sites are known by construction."""
    depth = "5"
    out = subprocess.run([STACKS, "peak", depth], capture_output=True, text=True,
                         check=True).stdout
    expect = int(re.search(r"program_peak_bytes=(\d+)", out).group(1))
    env = {"LD_PRELOAD": LIB, "PROFILER_AUTOSTART": "1", "PROFILER_QUIET": "1",
           "PROFILER_STACK": "alloc", "PROFILER_STACK_DEPTH": "64", "PROFILER_OUTPUT": "peak"}
    subprocess.run([STACKS, "peak", depth], env=clean_env(env), cwd=WORK, capture_output=True,
                   check=True)
    rep = json.loads(subprocess.run([PROF, "report", "peak.prof", "--format", "json"],
                                    cwd=WORK, capture_output=True, text=True,
                                    check=True).stdout)
    proc = rep["processes"][0]
    sites = proc.get("allocation_sites", [])

    def top3(key):
        return [s["site"].split(" ")[0] for s in sorted(sites, key=lambda s: -s[key])[:3]]

    lp_calls, lp_peak = top3("allocations"), top3("bytes_at_peak")
    print()
    print(f"Same peak, same sites: bench/alloc_stacks peak {depth} (the program's own blocks "
          f"peak at {expect:,} bytes)")
    print(f"{'':26} {'peak bytes':>12}  top 3 sites by calls / by bytes at the peak")
    print(f"{'libprof':26} {proc['peak_live_bytes']:>12,}  {', '.join(lp_calls)} / "
          f"{', '.join(lp_peak)}")
    if not shutil.which("heaptrack"):
        return
    subprocess.run(["heaptrack", "-o", os.path.join(WORK, "hpeak"), STACKS, "peak", depth],
                   env=clean_env({}), cwd=WORK, capture_output=True, check=True)
    peak, tops = heaptrack_report(os.path.join(WORK, "hpeak.zst"))
    print(f"{'heaptrack (3 digits)':26} {peak if peak is not None else 0:>12,}  "
          f"{', '.join(tops['calls'])} / {', '.join(tops['peak'])}")
    print(f"same top 3 by calls: {'yes' if tops['calls'] == lp_calls else 'no'}; by bytes at "
          f"the peak: {'yes' if tops['peak'] == lp_peak else 'no'}; heaptrack's peak - "
          f"libprof's: {(peak or 0) - proc['peak_live_bytes']:+,} bytes")


if __name__ == "__main__":
    # BENCH_ONLY=torch_stacks (or torch_step_blocks) needs only make's libprof.so
    needed = (LIB,) if os.environ.get("BENCH_ONLY") in ("torch_stacks", "torch_step_blocks") \
        else (LOOP, LIB, PROF, STACKS)
    for p in needed:
        if not os.path.exists(p):
            sys.exit(f"bench: {p} is missing; run make bench")
    WORK = tempfile.mkdtemp(prefix="libprof-bench-")
    # BENCH_ONLY=name[,name...] runs only those parts (names as below)
    parts = {"overhead": overhead, "traced_calls": traced_calls, "mpi_calls": mpi_calls,
             "torch": torch_overhead, "mxnet": mxnet_overhead,
             "torch_compile": torch_compile_overhead,
             # PROFILER_STACK=alloc on PyTorch training steps vs torch.profiler's
             # profile_memory+with_stack (BENCH_TORCH_PYTHON picks the Python)
             "torch_stacks": lambda: torch_stacks.torch_stacks(B, WORK, clean_env,
                                                               rounds=max(3, ROUNDS // 2)),
             # the same steps in blocks in one process (the VM's drift on all alike)
             "torch_step_blocks": lambda: torch_step_blocks.step_blocks(B),
             "throughput": throughput, "stacks": stacks_overhead,
             "peak_sites": same_peak_and_sites,
             "long_run": lambda: long_run.long_run(B, WORK, clean_env),
             "long_run_paced": lambda: long_run.long_run_paced(B, WORK, clean_env),
             "continuous_dump": lambda: continuous_dump.continuous_dump(B, WORK, clean_env),
             "merge_ranks": lambda: merge_ranks.merge_ranks(B, WORK, clean_env),
             "thread_start": lambda: thread_cost.thread_start(B, clean_env, min(ROUNDS, 3),
                                                              WORK),
             # issue 32: all of a profiler's processes' CPU per event, against heaptrack
             # and uftrace
             "all_cpu": lambda: all_cpu.all_cpu(B, WORK, clean_env, min(ROUNDS, 5)),
             # issue 32: the wall one short program's start and exit add
             "start_exit": lambda: start_exit.start_exit(B, WORK, clean_env, max(ROUNDS, 9)),
             "loaded_rate": lambda: loaded_rate.loaded_rate(B, WORK, clean_env,
                                                            min(ROUNDS, 5),
                                                            torch_stacks.cpu_model())}
    only = [p for p in os.environ.get("BENCH_ONLY", "").split(",") if p]
    for p in only:
        if p not in parts:
            sys.exit(f"bench: BENCH_ONLY: unknown part {p!r} (known: {', '.join(parts)})")
    try:
        for name, part in parts.items():
            if not only or name in only:
                part()
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
