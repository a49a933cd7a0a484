#!/usr/bin/env python3
"""make bench: libprof's cost per intercepted call against the native program, a
do-nothing interposer and heaptrack, measured side by side in one run (variants
interleaved, medians of several rounds); then the collector's drain rate, raw bytes per
event and the Chrome export rate."""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

B = os.environ.get("BUILD", os.path.join(os.path.dirname(__file__), "..", "build"))
N = int(os.environ.get("BENCH_N", "2000000"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "7"))
LOOP = os.path.join(B, "bench", "alloc_loop")
LIB = os.path.join(B, "libprof.so")
PROF = os.path.join(B, "prof")


def clean_env(extra):
    """The environment without any libprof setting, plus extra."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PROFILER_") and k != "LD_PRELOAD"}
    env.update(extra)
    return env


def interleaved_medians(variants, rounds, measure):
    """Runs measure(*variant[1:]) for every variant, round after round (so slow phases of
    the machine hit them all alike), and returns each variant's median."""
    res = {v[0]: [] for v in variants}
    for _ in range(rounds):
        for v in variants:
            res[v[0]].append(measure(*v[1:]))
    return {k: statistics.median(x) for k, x in res.items()}


def run(env_extra, n, wrapper=()):
    out = subprocess.run(list(wrapper) + [LOOP, str(n)], env=clean_env(env_extra), cwd=WORK,
                         capture_output=True, text=True, check=True)
    for line in out.stdout.splitlines():  # heaptrack prints its own lines too
        try:
            return float(line)
        except ValueError:
            pass
    raise RuntimeError(f"no timing in the output of {wrapper} {LOOP}: {out.stdout!r}")


def variants():
    v = [
        ("native", {}, N, ()),
        ("do-nothing interposer", {"LD_PRELOAD": os.path.join(B, "bench", "nop_preload.so")}, N, ()),
        ("libprof preloaded, idle", {"LD_PRELOAD": LIB}, N, ()),
        ("libprof recording, nothing lost", {"LD_PRELOAD": LIB, "PROFILER_AUTOSTART": "1",
                                             "PROFILER_QUIET": "1", "PROFILER_RING_SIZE": "256M"}, N, ()),
        ("libprof recording, 4M ring (drops)", {"LD_PRELOAD": LIB, "PROFILER_AUTOSTART": "1",
                                                "PROFILER_QUIET": "1"}, N, ()),
    ]
    if shutil.which("heaptrack"):
        v.append(("heaptrack", {}, N // 10, ("heaptrack", "-o", os.path.join(WORK, "ht"))))
    return v


def overhead():
    med = interleaved_medians(variants(), ROUNDS, run)
    native, nop = med["native"], med["do-nothing interposer"]
    floor = subprocess.run([os.path.join(B, "bench", "clock_floor")], capture_output=True,
                           text=True, check=True).stdout.split()
    print(f"Intercepted call cost: malloc(64)+free pairs, {N:,} pairs, median of {ROUNDS} "
          f"interleaved rounds")
    print(f"{'variant':40} {'ns/call':>8} {'vs native':>10} {'vs nop':>8} {'x native':>9}")
    for name, v in med.items():
        print(f"{name:40} {v:8.2f} {v - native:+10.2f} {v - nop:+8.2f} {v / native:9.2f}")
    print(f"floor on this machine: two rdtsc + 48-byte store {float(floor[0]):.2f} ns, "
          f"two clock_gettime + store {float(floor[1]):.2f} ns")
    return med


def traced_calls():
    """Issue 3: the generic entry/exit mechanism against the untraced call."""
    loop = os.path.join(B, "bench", "trace_loop")
    n = N
    v = [("native call through the PLT", {}),
         ("libprof preloaded, not tracing", {"LD_PRELOAD": LIB, "PROFILER_AUTOSTART": "1",
                                             "PROFILER_QUIET": "1"}),
         ("libprof tracing bench_fn", {"LD_PRELOAD": LIB, "PROFILER_AUTOSTART": "1",
                                       "PROFILER_QUIET": "1", "PROFILER_TRACE": "bench_fn",
                                       "PROFILER_RING_SIZE": "256M"})]
    def measure(extra):
        out = subprocess.run([loop, str(n)], env=clean_env(extra), cwd=WORK,
                             capture_output=True, text=True, check=True)
        return float(out.stdout.split()[0])

    med = interleaved_medians(v, ROUNDS, measure)
    base = med["native call through the PLT"]
    print()
    print(f"Traced call cost: {n:,} calls of a tiny function through the PLT, median of {ROUNDS}")
    print(f"{'variant':40} {'ns/call':>8} {'added':>8}")
    for name, x in med.items():
        print(f"{name:40} {x:8.2f} {x - base:+8.2f}")


def torch_overhead():
    """Issue 3: a PyTorch training loop's slowdown under libprof (ATen operators and the
    allocator traced) and under torch.profiler, side by side in one run."""
    py = "/usr/bin/python3"
    if subprocess.run([py, "-c", "import torch"], capture_output=True).returncode:
        print("\nPyTorch benchmark: skipped, /usr/bin/python3 has no torch (python3-torch)")
        return
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_step.py")
    v = [("native", {}, []),
         ("libprof: ATen ops + allocator", {"LD_PRELOAD": LIB, "PROFILER_AUTOSTART": "1",
                                             "PROFILER_QUIET": "1",
                                             "PROFILER_FRAMEWORK": "torch"}, []),
         ("torch.profiler (CPU)", {}, ["torchprof"])]
    rounds = max(3, ROUNDS // 2)

    def measure(extra, args):
        out = subprocess.run([py, script] + args, env=clean_env(extra), cwd=WORK,
                             capture_output=True, text=True, check=True)
        return float(out.stdout.split()[-1])

    med = interleaved_medians(v, rounds, measure)
    base = med["native"]
    print()
    print(f"PyTorch CNN, batch 1, one thread, median of 500 iterations, median of {rounds} runs")
    print(f"{'variant':32} {'us/iter':>9} {'slowdown':>9}")
    for name, x in med.items():
        print(f"{name:32} {x:9.1f} {100 * (x / base - 1):+8.1f}%")


def throughput():
    n = 3000000
    env = {"LD_PRELOAD": LIB, "PROFILER_AUTOSTART": "1", "PROFILER_QUIET": "1",
           "PROFILER_BLOCK": "1", "PROFILER_OUTPUT": "tp"}
    full = dict(os.environ, **env)
    t0 = time.monotonic()
    subprocess.run([LOOP, str(n)], env=full, cwd=WORK, capture_output=True, check=True)
    t_run = time.monotonic() - t0
    # the program's own loop time bounds the drain: with blocking writers the loop runs
    # at the collector's pace
    loop_ns = run(env, n) * 2 * n
    events = 2 * n + 20000
    raw = os.path.getsize(os.path.join(WORK, "tp.prof"))
    t0 = time.monotonic()
    subprocess.run([PROF, "export", "tp.prof", "-o", "tp2.json"], cwd=WORK, check=True,
                   capture_output=True)
    t_export = time.monotonic() - t0
    t0 = time.monotonic()
    subprocess.run([PROF, "report", "tp.prof"], cwd=WORK, check=True, capture_output=True)
    t_report = time.monotonic() - t0
    json_mb = os.path.getsize(os.path.join(WORK, "tp2.json")) / 1e6
    print()
    print(f"Collector drain rate (blocking writers, {events:,} events): "
          f"{events / (loop_ns / 1e9) / 1e6:.1f} M events/s")
    print(f"Whole run with outputs: {t_run:.2f} s")
    print(f"Raw capture: {raw / events:.2f} bytes/event (zstd), 48 bytes/event in the ring")
    print(f"Chrome export: {events / t_export / 1e6:.2f} M events/s ({json_mb:.0f} MB JSON)")
    print(f"Tables (prof report): {events / t_report / 1e6:.2f} M events/s")


if __name__ == "__main__":
    for p in (LOOP, LIB, PROF):
        if not os.path.exists(p):
            sys.exit(f"bench: {p} is missing; run make bench")
    WORK = tempfile.mkdtemp(prefix="libprof-bench-")
    try:
        overhead()
        traced_calls()
        torch_overhead()
        throughput()
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
