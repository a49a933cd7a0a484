"""What call stacks on allocations cost per training step, measured in one process so that
the VM's drift (its neighbours, its clock) falls on every variant alike (issue 29).

One process under the bare command with PROFILER_STACK=alloc (`import torch` with stacks,
as a user gets it) runs blocks of BENCH_BLOCK steps of bench/torch_stacks_model.py's
model, round by round: libprof paused (preloaded, not recording: the base), libprof
recording with PROFILER_STACK=alloc, libprof recording without stacks (the events alone),
and torch.profiler(activities=[CPU],
profile_memory=True, with_stack=True) around the block with libprof paused (its start
and its stop-and-parse outside the timed steps). The rounds begin once the machine's
other CPUs are idle again (libprof's collector done with the import's millions of events:
until then its processes take the program's CPU on a 2-core machine, the cost
bench/torch_stacks.py's short runs see). Each block's median step, then the
median over BENCH_ROUNDS rounds (min-max), and the median of each round's block over
that round's paused block ("by round": the VM's drift falls on both). A separate native
process (libprof not preloaded) gives the paused state's own cost beside it.

    BUILD=$PWD/build python3 bench/torch_step_blocks.py  # the venv's torch 2.x (else Debian's)
    BENCH_TORCH_PYTHON=/usr/bin/python3 BUILD=$PWD/build python3 bench/torch_step_blocks.py
    BENCH_ONLY=torch_step_blocks BUILD=$PWD/build python3 bench/run.py  # the same
    BENCH_STACKS_MODELS=cnn,gpt2 (default cnn)
"""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

CHILD = r"""
import ctypes, json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
import torch
import torch_stacks_model as m
model, block_n, rounds = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
preloaded = hasattr(ctypes.CDLL(None), "prof_pause")
lib = ctypes.CDLL(None)
torch.manual_seed(0)
torch.set_num_threads(1)
step = {"cnn": m.cnn, "gpt2": m.gpt2}[model]()

def block():
    times = []
    for _ in range(block_n):
        t = time.perf_counter_ns()
        step()
        times.append(time.perf_counter_ns() - t)
    return statistics.median(times) / 1e6

def paused():
    lib.prof_pause()
    return block()

def recording():
    lib.prof_resume()
    ms = block()
    lib.prof_pause()
    return ms

def recording_no_stacks():
    lib.prof_set_config(b"stack", b"off")
    lib.prof_resume()
    ms = block()
    lib.prof_pause()
    lib.prof_set_config(b"stack", b"alloc")
    return ms

def torch_profiler():
    from torch.profiler import ProfilerActivity, profile
    if preloaded:
        lib.prof_pause()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, with_stack=True):
        return block()

variants = ([("libprof paused", paused), ("libprof, PROFILER_STACK=alloc", recording),
             ("libprof, no stacks", recording_no_stacks),
             ("torch.profiler, memory+stack", torch_profiler)] if preloaded else
            [("native", block)])
for _, f in variants:  # warm-up: every variant once
    f()
if preloaded:
    lib.prof_pause()
print("ready", flush=True)
sys.stdin.readline()  # the parent's go: libprof's processes have caught up with the import
res = {name: [] for name, _ in variants}
for _ in range(rounds):
    for name, f in variants:
        res[name].append(f())
print(json.dumps({"torch": torch.__version__, "rows": res}))
"""


def busy_cpus_besides(pid, seconds):
    """CPUs busy over the next seconds, the process pid's own time left out."""
    def sample():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        with open(f"/proc/{pid}/stat") as f:
            st = f.read().rsplit(")", 1)[1].split()
        hz = os.sysconf("SC_CLK_TCK")
        return sum(v) - v[3] - v[4], sum(v), (int(st[11]) + int(st[12])) * 100 / hz
    b0, t0, p0 = sample()
    time.sleep(seconds)
    b1, t1, p1 = sample()
    cpus = os.cpu_count() or 1
    return max(0.0, (b1 - b0) - (p1 - p0)) / max(1, t1 - t0) * cpus


def run(py, model, block_n, rounds, env):
    """One process: its rounds begin once the rest of the machine is idle again (libprof's
    collector and tables done with the import's events; at most BENCH_SETTLE_S), so that
    every variant's steps see the live cost, not the import's backlog."""
    p = subprocess.Popen([py, "-c", CHILD, HERE, model, str(block_n), str(rounds)], env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    line = p.stdout.readline()
    settled = None
    if line.strip() == "ready":
        t0 = time.monotonic()
        limit = float(os.environ.get("BENCH_SETTLE_S", "180"))
        while time.monotonic() - t0 < limit:
            if busy_cpus_besides(p.pid, 1.0) < 0.15:
                settled = time.monotonic() - t0
                break
        try:
            p.stdin.write("go\n")
            p.stdin.flush()
        except BrokenPipeError:
            pass
    out, err = p.communicate(timeout=3600)
    if p.returncode == 3:
        return None, err.strip(), settled
    if p.returncode:
        sys.exit(f"bench: {py} exited {p.returncode}:\n{err[-2000:]}")
    return json.loads((line + out).strip().splitlines()[-1]), err, settled


def step_blocks(build, rounds=None):
    """The table for each Python of BENCH_TORCH_PYTHON with torch (default: the suite's
    torch 2.x venv, else Debian's) and each model of BENCH_STACKS_MODELS (default cnn)."""
    import statistics
    sys.path.insert(0, HERE)
    import torch_stacks  # noqa: E402 (the CPU model, as the other tables give it)
    build = os.path.abspath(build)
    pys = [py for py in (os.environ.get("BENCH_TORCH_PYTHON", "").split(",")
                         if os.environ.get("BENCH_TORCH_PYTHON")
                         else torch_stacks.default_pythons())
           if torch_stacks.has(py, "torch")]
    models = os.environ.get("BENCH_STACKS_MODELS", "cnn").split(",")
    rounds = rounds or int(os.environ.get("BENCH_ROUNDS", "15"))
    work = tempfile.mkdtemp(prefix="libprof-step-blocks-")
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith("PROFILER_") and k != "LD_PRELOAD"}
    clean["OMP_NUM_THREADS"] = "1"
    bare = dict(clean, LD_PRELOAD=os.path.join(build, "libprof.so"), PROFILER_AUTOSTART="1",
                PROFILER_STACK="alloc", PROFILER_OUTPUT=os.path.join(work, "blocks"))
    print(f"\nTraining steps in blocks, one process (issue 29); {torch_stacks.cpu_model()}")
    if not pys:
        print("  skipped: no Python with torch (BENCH_TORCH_PYTHON)")
    for py in pys:
        for model in models:
            block_n = int(os.environ.get("BENCH_BLOCK", {"cnn": "40", "gpt2": "6"}[model]))
            got, err, settled = run(py, model, block_n, rounds, bare)
            if got is None:
                print(f"\n{py}, {model}: skipped ({err})")
                continue
            native, _, _ = run(py, model, block_n, rounds, clean)
            rows = dict(got["rows"])
            rows.update(native["rows"])
            base = statistics.median(rows["libprof paused"])
            print(f"\ntorch {got['torch']} ({py}), {model}: blocks of {block_n} steps, each "
                  f"block's median step, median of {rounds} rounds (min-max); rounds began "
                  + (f"{settled:.0f} s after the set-up, when the other CPUs were idle again"
                     if settled is not None else "without the other CPUs idle (BENCH_SETTLE_S)"))
            # x paused by round: each round's block over the paused block of the same
            # round, the median of those (a VM's slow spell falls on both)
            print(f"  {'variant':32} {'ms/step':>8} {'x paused':>9} {'by round':>9} "
                  f"{'min':>7} {'max':>7}")
            for name in ("native", "libprof paused", "libprof, no stacks",
                         "libprof, PROFILER_STACK=alloc", "torch.profiler, memory+stack"):
                v = rows[name]
                med = statistics.median(v)
                note = "  (its own process)" if name == "native" else ""
                by_round = ("" if name == "native" else "%.2f" % statistics.median(
                    x / p for x, p in zip(v, rows["libprof paused"])))
                print(f"  {name:32} {med:8.2f} {med / base:9.2f} {by_round:>9} {min(v):7.2f} "
                      f"{max(v):7.2f}{note}")
            for line in err.splitlines():
                if line.startswith("libprof:"):
                    print("  " + line)


if __name__ == "__main__":
    step_blocks(os.environ.get("BUILD", "build"))
