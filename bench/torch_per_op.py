"""What one recorded ATen op costs (issue 32), in one process under the bare command:
blocks of BENCH_OP_N torch.add on 4-element tensors, alternating round by round between
libprof paused (preloaded, not recording: the base), libprof recording operators and
allocator calls (the default), libprof recording operators only (profile_memory off,
what torch.profiler's CPU activity records), and torch.profiler's CPU activity with
libprof paused, each round in another order; the median of BENCH_ROUNDS rounds, ns an op,
each one's added ns over the base, and "by round" (the median of each round's block less
that round's paused block). Also the events libprof wrote per op.

    BUILD=$PWD/build python3 bench/torch_per_op.py          # PyPI's torch 2.x (the venv)
    BENCH_TORCH_PYTHON=/usr/bin/python3 BUILD=$PWD/build python3 bench/torch_per_op.py
"""
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import ctypes, statistics, sys, time
import torch
from torch.profiler import ProfilerActivity, profile
lib = ctypes.CDLL(None)
n, rounds = int(sys.argv[1]), int(sys.argv[2])
a, b = torch.ones(4), torch.ones(4)
torch.set_num_threads(1)

def block():
    t0 = time.perf_counter_ns()
    for _ in range(n):
        torch.add(a, b)
    return (time.perf_counter_ns() - t0) / n

def paused():
    lib.prof_pause()
    return block()

def ops_and_memory():
    lib.prof_set_config(b"profile_memory", b"1")
    lib.prof_resume()
    ns = block()
    lib.prof_pause()
    return ns

def ops_only():
    lib.prof_set_config(b"profile_memory", b"0")
    lib.prof_resume()
    ns = block()
    lib.prof_pause()
    lib.prof_set_config(b"profile_memory", b"1")
    return ns

def torch_profiler():
    lib.prof_pause()
    with profile(activities=[ProfilerActivity.CPU]):
        return block()

variants = [("libprof paused", paused), ("libprof, ops + allocator", ops_and_memory),
            ("libprof, ops only", ops_only), ("torch.profiler CPU", torch_profiler)]
for _, f in variants:  # warm-up: torch.profiler's first start, libprof's first ring
    f()
res = {name: [] for name, _ in variants}
for r in range(rounds):
    # each variant first in turn: the one after a torch.profiler block reads differently
    for name, f in variants[r % len(variants):] + variants[:r % len(variants)]:
        res[name].append(f())
for name, _ in variants:
    # added by round: each round's block less the same round's paused one, the median of
    # those (this VM's slow spells fall on both)
    by_round = statistics.median(x - p for x, p in zip(res[name], res["libprof paused"]))
    print("%s\t%.1f\t%.1f\t%.1f\t%.1f" % (name, statistics.median(res[name]), min(res[name]),
                                           max(res[name]), by_round))
print("torch\t" + torch.__version__)
"""


def main():
    build = os.path.abspath(os.environ.get("BUILD", "build"))
    py = os.environ.get("BENCH_TORCH_PYTHON") or os.path.expanduser(
        "~/.cache/libprof/torch2env/bin/python")
    n = int(os.environ.get("BENCH_OP_N", "5000"))
    rounds = int(os.environ.get("BENCH_ROUNDS", "30"))
    work = tempfile.mkdtemp(prefix="libprof-per-op-")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PROFILER_") and k != "LD_PRELOAD"}
    env.update(LD_PRELOAD=os.path.join(build, "libprof.so"), PROFILER_AUTOSTART="1",
               PROFILER_OUTPUT=os.path.join(work, "per_op"), OMP_NUM_THREADS="1")
    p = subprocess.run([py, "-c", CHILD, str(n), str(rounds)], env=env, capture_output=True,
                       text=True, timeout=1800)
    if p.returncode:
        sys.exit(f"bench: {py} exited {p.returncode}:\n{p.stderr[-2000:]}")
    rows, version = [], "?"
    for line in p.stdout.splitlines():
        f = line.split("\t")
        if f[0] == "torch":
            version = f[1]
        elif len(f) == 5:
            rows.append((f[0], float(f[1]), float(f[2]), float(f[3]), float(f[4])))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch_stacks  # noqa: E402 (the CPU model, as the other tables give it)
    print(f"torch {version} ({py}); {torch_stacks.cpu_model()}; torch.add on 4-element "
          f"tensors, blocks of {n}, median of {rounds} interleaved rounds (min-max)")
    base = rows[0][1]
    print(f"  {'variant':28} {'ns/op':>8} {'added':>8} {'by round':>9} {'min':>8} {'max':>8}")
    for name, med, lo, hi, by_round in rows:
        print(f"  {name:28} {med:8.1f} {med - base:8.1f} {by_round:9.1f} {lo:8.1f} {hi:8.1f}")
    ops = [r for r in rows if r[0] == "libprof, ops only"][0][4]
    tp = [r for r in rows if r[0] == "torch.profiler CPU"][0][4]
    if tp > 0:
        print(f"  by round, libprof's operators alone add {ops / tp:.2f} of what torch.profiler "
              f"adds (issue 32's goal: <= 0.25)")
    for line in p.stderr.splitlines():
        if line.startswith("libprof:"):
            print("  " + line)


if __name__ == "__main__":
    main()
