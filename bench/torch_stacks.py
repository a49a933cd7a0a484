#!/usr/bin/env python3
"""Issue 29: what PROFILER_STACK=alloc (a call stack on every allocation: torch.profiler's
profile_memory + with_stack without touching the script) costs a real PyTorch training
step, against the native step and against torch.profiler(activities=[CPU],
profile_memory=True, with_stack=True) on the same steps.

    BUILD=$PWD/build python3 bench/torch_stacks.py
    BENCH_ONLY=torch_stacks BUILD=$PWD/build python3 bench/run.py     # the same, in make bench

Models (bench/torch_stacks_model.py): a HuggingFace GPT-2 from a small GPT2Config with
random weights (AdamW; skipped, saying so, where transformers cannot be imported) and a
dispatch-bound small CNN (batch 8). Besides the bare command with PROFILER_STACK=alloc, a
variant turns the same stacks on just before the first step (prof_set_config from the
script: not what a user without changes gets, but what the steps' stacks cost where the
import's allocations did not fill the call-stack area first). Each configuration is its
own process; the configurations are interleaved round by round so the machine's slow
phases hit them all alike; each run's median step (warm-up dropped), then the median over
rounds. Beside the step: the run's wall time until every process it started has ended
(libprof's collector writes the outputs after the program exits), the program's own CPU
and that of libprof's processes (the collector and its 'prof tables' child, reparented to
this process, which makes itself their subreaper, and reaped here with their rusage).

Settings (environment):
  BENCH_TORCH_PYTHON   the Python(s) to run, comma-separated (default: the torch2env venv of
                       scripts/install-deps.sh where it imports torch, else /usr/bin/python3)
  BENCH_ROUNDS         interleaved rounds (3)
  BENCH_STACKS_MODELS  cnn,gpt2
  BENCH_STACKS_STEPS   training steps per run (CNN 100, GPT-2 20), BENCH_STACKS_WARMUP
                       the first ones dropped (CNN 20, GPT-2 5)
  BENCH_TORCH_THREADS  torch.set_num_threads (1: a core left to the collector on 2 cores)
"""
import ctypes
import errno
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "torch_stacks_model.py")
TORCH2ENV = os.path.join(os.path.expanduser("~"), ".cache", "libprof", "torch2env", "bin",
                         "python")
PR_SET_CHILD_SUBREAPER = 36
RUN_TIMEOUT = 900  # seconds for one run, its collector's outputs included

MODEL_DESC = {
    "cnn": "small CNN (3 Conv2d+BatchNorm2d+ReLU, 3x16x16 images), batch 8, SGD momentum",
    "gpt2": "GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=2000, "
            "n_positions=128)), random weights, batch 4x64 token ids, AdamW",
}


def configs(lib):
    bare = {"LD_PRELOAD": lib, "PROFILER_AUTOSTART": "1"}
    return [("native", {}, "plain"),
            ("libprof, no stacks", bare, "plain"),
            ("libprof, PROFILER_STACK=alloc", dict(bare, PROFILER_STACK="alloc"), "plain"),
            # the same stacks turned on by prof_set_config just before the first step: the
            # import's allocations leave the call-stack area to the steps
            ("libprof, stack=alloc from step 1", bare, "stacks_from_steps"),
            ("torch.profiler, memory+stack", {}, "torchprof")]


def default_pythons():
    env = os.environ.get("BENCH_TORCH_PYTHON")
    if env:
        return [p for p in env.split(",") if p]
    if os.path.exists(TORCH2ENV) and not subprocess.run(
            [TORCH2ENV, "-c", "import torch"], capture_output=True).returncode:
        return [TORCH2ENV]
    return ["/usr/bin/python3"]


def default_clean_env(extra):
    """bench/run.py's clean_env, for a run of this file alone."""
    sys.path.insert(0, HERE)
    from run import clean_env
    return clean_env(extra)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            names = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
        return f"{names[0]} x {len(names)}" if names else "?"
    except OSError:
        return "?"


def cpu_s(ru):
    return ru.ru_utime + ru.ru_stime


def reap_all(first_pid, deadline):
    """Waits for first_pid and for every process reparented to us (we are a subreaper),
    until none is left: returns (first's status, first's rusage, others' CPU seconds)."""
    status, ru_first, others = None, None, 0.0
    while True:
        try:
            pid, st, ru = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return status, ru_first, others
        except OSError as e:
            if e.errno == errno.EINTR:
                continue
            raise
        if pid == 0:
            if time.monotonic() > deadline:
                raise RuntimeError("a run or its collector did not end in time")
            time.sleep(0.005)
            continue
        if pid == first_pid:
            status, ru_first = st, ru
        else:
            others += cpu_s(ru)


def run_one(py, model, extra, mode, work, steps, warmup, threads, clean_env):
    env = clean_env(extra)
    out_path, err_path = os.path.join(work, "out"), os.path.join(work, "err")
    with open(out_path, "w") as out, open(err_path, "w") as err:
        t0 = time.monotonic()
        p = subprocess.Popen([py, MODEL, model, mode, str(steps), str(warmup), str(threads)],
                             env=env, cwd=work, stdout=out, stderr=err)
        st, ru, others = reap_all(p.pid, t0 + RUN_TIMEOUT)
        wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(st)  # reaped here: Popen must not wait
    with open(out_path) as f:
        stdout = f.read()
    with open(err_path) as f:
        stderr = f.read()
    if p.returncode:
        raise RuntimeError(f"{py} {model} {mode} {extra} exited {p.returncode}:\n{stderr[-3000:]}")
    res = json.loads(stdout.strip().splitlines()[-1])
    lines, when = [], "before the steps"
    for ln in stderr.splitlines():
        if ln.startswith("torch_stacks_model: steps begin"):
            when = "in or after the steps"
        elif ln.startswith("libprof"):
            lines.append((when, ln))
    res.update(wall_s=wall, prog_cpu_s=cpu_s(ru), libprof_cpu_s=others, libprof_lines=lines)
    return res


def steps_of(model, defaults):
    steps, warmup = defaults[model]
    return (int(os.environ.get("BENCH_STACKS_STEPS", steps)),
            int(os.environ.get("BENCH_STACKS_WARMUP", warmup)))


def has(py, mod):
    return not subprocess.run([py, "-c", f"import {mod}"], capture_output=True).returncode


def torch_stacks(build, work, clean_env=default_clean_env, rounds=None, pythons=None):
    lib = os.path.abspath(os.path.join(build, "libprof.so"))
    rounds = rounds or int(os.environ.get("BENCH_ROUNDS", "3"))
    # the CNN's steps are a few ms: more of them, for a median that holds on a busy machine
    default_steps = {"cnn": (100, 20), "gpt2": (20, 5)}
    threads = int(os.environ.get("BENCH_TORCH_THREADS", "1"))
    models = [m for m in os.environ.get("BENCH_STACKS_MODELS", "cnn,gpt2").split(",") if m]
    print()
    print(f"PyTorch training steps with call stacks on allocations (issue 29); CPU: "
          f"{cpu_model()}")
    cases = []  # (python, torch version, model)
    for py in pythons or default_pythons():
        if not has(py, "torch"):
            print(f"{py}: skipped, no torch")
            continue
        ver = subprocess.run([py, "-c", "import torch; print(torch.__version__)"],
                             capture_output=True, text=True).stdout.strip()
        for m in models:
            if m == "gpt2" and not has(py, "transformers"):
                print(f"torch {ver} ({py}): GPT-2 skipped, transformers cannot be imported "
                      f"(scripts/install-deps.sh puts it in the torch2env venv)")
                continue
            cases.append((py, ver, m))
    if not cases:
        return {}
    cfgs = configs(lib)
    res = {(c, name): [] for c in cases for name, _, _ in cfgs}
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    try:
        for r in range(rounds):
            for c in cases:
                for name, extra, mode in cfgs:
                    d = os.path.join(work, f"ts-{r}")
                    os.makedirs(d, exist_ok=True)
                    steps, warmup = steps_of(c[2], default_steps)
                    res[(c, name)].append(run_one(c[0], c[2], extra, mode, d, steps, warmup,
                                                  threads, clean_env))
                shutil.rmtree(os.path.join(work, f"ts-{r}"), ignore_errors=True)
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
    med = statistics.median
    summary = {}
    for c in cases:
        py, ver, m = c
        print()
        print(f"torch {ver} ({py}), {m}: {MODEL_DESC[m]}")
        steps, warmup = steps_of(m, default_steps)
        print(f"  {steps} steps per run, the first {warmup} dropped, each run's median step; "
              f"median of {rounds} interleaved rounds; torch threads {threads}")
        print(f"  {'variant':32} {'ms/step':>9} {'x native':>9} {'wall s':>8} "
              f"{'prog CPU s':>10} {'libprof CPU s':>13}")
        base = med([x["median_ms"] for x in res[(c, "native")]])
        for name, _, _ in cfgs:
            xs = res[(c, name)]
            ms = med([x["median_ms"] for x in xs])
            summary[(ver, m, name)] = ms
            print(f"  {name:32} {ms:9.2f} {ms / base:9.2f} {med([x['wall_s'] for x in xs]):8.2f} "
                  f"{med([x['prog_cpu_s'] for x in xs]):10.2f} "
                  f"{med([x['libprof_cpu_s'] for x in xs]):13.2f}")
        tp = res[(c, "torch.profiler, memory+stack")]
        print(f"  torch.profiler leaving its context (stop and parse): "
              f"{med([x['profiler_exit_s'] for x in tp]):.2f} s")
        for name, _, _ in cfgs:
            lines = {}
            for x in res[(c, name)]:
                for when, ln in x["libprof_lines"]:
                    # the summary line's counts and paths change from run to run
                    if "events (" in ln:
                        when = "at exit"
                    key = (when, ln if "events (" not in ln else "summary")
                    lines.setdefault(key, []).append(ln)
            for (when, _), lns in lines.items():
                ln = lns[0].split(" -> ")[0]
                print(f"  [{name}, {when}, {len(lns)}/{len(res[(c, name)])} runs] {ln[:260]}")
    return summary


if __name__ == "__main__":
    b = os.environ.get("BUILD", os.path.join(HERE, "..", "build"))
    if not os.path.exists(os.path.join(b, "libprof.so")):
        sys.exit(f"bench: {b}/libprof.so is missing; run make")
    w = tempfile.mkdtemp(prefix="libprof-bench-")
    try:
        torch_stacks(b, w)
    finally:
        shutil.rmtree(w, ignore_errors=True)
