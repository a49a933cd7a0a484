"""The Python environments scripts/install-deps.sh makes beside the system's own: found
by the same path it uses, probed once per run, and a case that needs a missing one fails
with one line saying how to make it."""
import os
import re
import subprocess
import threading

from .outputs import check, skip

_probed = {}
_lock = threading.Lock()


def _cache_dir(var, name):
    return os.environ.get(var) or os.path.join(os.environ.get("HOME", "/tmp"), ".cache",
                                               "libprof", name)


def _probe(py, code):
    """(returncode, last line of output) of py -c code, remembered for the run."""
    with _lock:
        if py not in _probed:
            if not os.path.exists(py):
                _probed[py] = (None, "no such venv")
            else:
                try:
                    p = subprocess.run([py, "-c", code], capture_output=True, text=True,
                                       timeout=300)
                except subprocess.TimeoutExpired:
                    _probed[py] = (None, "timed out after 300 s")
                    return _probed[py]
                lines = (p.stdout if p.returncode == 0 else p.stderr).strip().splitlines()
                _probed[py] = (p.returncode, lines[-1] if lines else "")
        return _probed[py]


def torch2_python():
    """(python, version): the venv's python that scripts/install-deps.sh made for the
    current PyTorch 2.x from PyPI (LIBPROF_TORCH2ENV, default ~/.cache/libprof/torch2env),
    beside Debian's torch 1.13 of /usr/bin/python3. Fails when it is missing or older."""
    env = _cache_dir("LIBPROF_TORCH2ENV", "torch2env")
    py = os.path.join(env, "bin", "python")
    rc, last = _probe(py, "import torch; print(torch.__version__)")
    major = re.match(r"(\d+)\.", last) if rc == 0 else None
    check(major and int(major.group(1)) >= 2,
          "PyTorch 2.x is not importable from %s (%s): scripts/install-deps.sh installs it "
          "(python3 -m venv %s && %s -m pip install torch numpy)" % (py, last, env, py))
    return py, last


def arrow_python():
    """The venv's python that scripts/install-deps.sh made with pyarrow and duckdb
    (LIBPROF_ARROWENV, default ~/.cache/libprof/arrowenv): prof export --format parquet
    runs it (PROF_PYTHON), the tests query its output with DuckDB. Fails when missing."""
    env = _cache_dir("LIBPROF_ARROWENV", "arrowenv")
    py = os.path.join(env, "bin", "python")
    rc, last = _probe(py, "import pyarrow, duckdb; print(pyarrow.__version__, duckdb.__version__)")
    check(rc == 0, "pyarrow and duckdb are not importable from %s (%s): scripts/install-deps.sh "
          "installs them (python3 -m venv %s && %s -m pip install pyarrow duckdb)"
          % (py, last, env, py))
    return py


def tools_python(module):
    """The venv's python that scripts/install-deps.sh made with the PyTorch profiler's
    tools (LIBPROF_TBENV, default ~/.cache/libprof/tbenv: torch-tb-profiler, TensorBoard,
    HolisticTraceAnalysis), when module imports there. Where install-deps could not make
    it (it says so, and leaves a note in the venv's folder), the case is skipped with a
    line saying why; a venv that was never made fails as the others do."""
    env = _cache_dir("LIBPROF_TBENV", "tbenv")
    py = os.path.join(env, "bin", "python")
    rc, last = _probe(py, "import torch_tb_profiler, tensorboard, hta; print('ok')")
    if rc != 0 and os.path.exists(os.path.join(env, "NOT-INSTALLED")):
        with open(os.path.join(env, "NOT-INSTALLED")) as f:
            skip("%s could not be installed in %s: %s" % (module, env, f.read().strip()))
    check(rc == 0, "%s is not importable from %s (%s): scripts/install-deps.sh installs it "
          "(python3 -m venv %s && %s -m pip install torch-tb-profiler tensorboard "
          "HolisticTraceAnalysis)" % (module, py, last, env, py))
    return py
