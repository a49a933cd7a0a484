#!/usr/bin/env python3
"""What detecting the frameworks costs at start-up: `import torch` (Debian's /usr/bin/python3,
torch 1.13; torch2: PyPI's torch 2.x in the venv $LIBPROF_TORCH2ENV, default
~/.cache/libprof/torch2env) and `import mxnet` (the python3 on PATH that has it) natively and under the bare
command (PROFILER_AUTOSTART=1 LD_PRELOAD=libprof.so), plus PROFILER_FRAMEWORK=none (libprof
without the presets) and =auto (every preset in every library, the old opt-in), variants
interleaved, medians of BENCH_ROUNDS (5). Two figures per run, both ending when the import
returns (the outputs written after it are excluded): the import alone, timed by the script,
and the process from exec (libprof's constructor and the session's start included), timed
from here. Prints each median and its ratio to native.

    BUILD=build python3 bench/import_cost.py [torch|torch2|mxnet ...]"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from torch_stacks import cpu_model

B = os.environ.get("BUILD", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build"))
LIB = os.path.abspath(os.path.join(B, "libprof.so"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
SCRIPT = "import time; t = time.time(); import {m}; e = time.time(); print(e - t, e)"


def python_with(module, candidates):
    """The first interpreter (its real binary: a pyenv shim would add its own processes)
    that imports module, or None."""
    for py in candidates:
        exe = shutil.which(py) if not os.path.isabs(py) else py
        if not exe:
            continue
        p = subprocess.run([exe, "-c", "import sys, %s; print(sys.executable)" % module],
                           capture_output=True, text=True)
        if p.returncode == 0:
            return p.stdout.strip().splitlines()[-1]
    return None


def env_for(extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILER_") and k != "LD_PRELOAD"}
    env["PROFILER_OVERWRITE"] = "1"
    env.update(extra)
    return env


VARIANTS = [
    ("native", {}),
    ("bare command", {"PROFILER_AUTOSTART": "1", "LD_PRELOAD": LIB}),
    ("PROFILER_FRAMEWORK=none", {"PROFILER_AUTOSTART": "1", "LD_PRELOAD": LIB,
                                 "PROFILER_FRAMEWORK": "none"}),
    ("PROFILER_FRAMEWORK=auto", {"PROFILER_AUTOSTART": "1", "LD_PRELOAD": LIB,
                                 "PROFILER_FRAMEWORK": "auto"}),
]


def one(py, module, extra, work):
    start = time.time()
    p = subprocess.run([py, "-c", SCRIPT.format(m=module)], env=env_for(extra), cwd=work,
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s -c 'import %s' failed: %s" % (py, module, p.stderr[-400:]))
    imp, end = (float(x) for x in p.stdout.split()[-2:])
    return imp, end - start


def bench(label, module, py):
    work = tempfile.mkdtemp(prefix="libprof-import-")
    res = {name: ([], []) for name, _ in VARIANTS}
    for _ in range(ROUNDS):
        for name, extra in VARIANTS:
            imp, whole = one(py, module, extra, work)
            res[name][0].append(imp)
            res[name][1].append(whole)
    shutil.rmtree(work, ignore_errors=True)
    native = [statistics.median(x) for x in res["native"]]
    print("import %s (%s, %s), median of %d, outputs excluded; %s:" % (module, label, py, ROUNDS,
                                                                      cpu_model()))
    print("  %-26s %12s %8s %16s %8s" % ("", "import (s)", "ratio", "exec->import (s)", "ratio"))
    for name, _ in VARIANTS:
        imp, whole = (statistics.median(x) for x in res[name])
        print("  %-26s %12.3f %7.2fx %16.3f %7.2fx" % (name, imp, imp / native[0], whole,
                                                     whole / native[1]))


def main():
    wanted = sys.argv[1:] or ["torch", "torch2", "mxnet"]
    venv = os.environ.get("LIBPROF_TORCH2ENV") or os.path.join(
        os.environ.get("HOME", "/tmp"), ".cache", "libprof", "torch2env")
    # label -> (module, interpreters to try)
    where = {"torch": ("torch", ["/usr/bin/python3", "python3"]),
             "torch2": ("torch", [os.path.join(venv, "bin", "python")]),
             "mxnet": ("mxnet", ["python3", "/usr/bin/python3"])}
    for label in wanted:
        module, candidates = where.get(label, (label, ["python3"]))
        py = python_with(module, candidates)
        if not py:
            print("import %s (%s): no interpreter here imports it; skipped" % (module, label))
            continue
        bench(label, module, py)


if __name__ == "__main__":
    main()
