"""Builders: the test programs of test/e2e/progs and the helper programs and libraries
some areas need (trace, CUDA, CUPTI, NVTX, ONNX Runtime), each built once into
$BUILD/e2e and rebuilt when a source is newer. One lock per builder: cases running
in parallel never build the same files at once."""
import functools
import os
import shutil
import subprocess
import sys
import threading

from .outputs import Fail, check
from .paths import BIN, PROGS, ROOT, setup_failed


_build_locks = {}
_build_locks_lock = threading.Lock()


def one_at_a_time(fn):
    """Serializes the calls of a builder: two cases running at once never build the same
    files together; the second finds them built (up to date) and returns at once."""
    with _build_locks_lock:
        lock = _build_locks.setdefault(fn.__name__, threading.Lock())

    @functools.wraps(fn)
    def locked(*args, **kw):
        with lock:
            return fn(*args, **kw)
    return locked


def build_if_stale(out, path, cmd_tail, after=(), deps=()):
    """Builds the source path into out with cmd_tail (a list: compiler and flags) and
    after (flags after the source: libraries) when out is missing, older than path or
    deps (paths it links), or was built by another command. Returns out. Callers hold
    their own @one_at_a_time lock."""
    newest = max(os.path.getmtime(p) for p in [path] + list(deps))
    cmd = cmd_tail + ["-o", out + ".tmp", path] + list(after)
    try:
        with open(out + ".cmd") as f:
            same = f.read() == " ".join(cmd)
    except OSError:
        same = False
    if not same or not os.path.exists(out) or os.path.getmtime(out) < newest:
        r = subprocess.run(cmd, capture_output=True, text=True)
        check(r.returncode == 0, "cannot build %s: %s" % (os.path.basename(path),
                                                          r.stderr[-2000:]))
        os.replace(out + ".tmp", out)
        with open(out + ".cmd", "w") as f:
            f.write(" ".join(cmd))
    return out


def compile_programs():
    os.makedirs(BIN, exist_ok=True)
    cc = os.environ.get("CC", "cc")
    procs = []
    for name in sorted(os.listdir(PROGS)):
        if not name.endswith(".c"):
            continue
        src = os.path.join(PROGS, name)
        out = os.path.join(BIN, name[:-2])
        deps = [src, os.path.join(PROGS, "e2e.h"), os.path.join(ROOT, "include", "prof.h")]
        if os.path.exists(out) and all(os.path.getmtime(d) <= os.path.getmtime(out) for d in deps):
            continue
        # the programs are never sanitized: only libprof.so is under test
        cmd = [cc, "-O1", "-g", "-pthread", "-Wall", "-I", os.path.join(ROOT, "include"),
               "-o", out, src]
        procs.append((name, subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                             stderr=subprocess.STDOUT, text=True)))
    bad = []
    for name, p in procs:
        out, _ = p.communicate()
        if p.returncode:
            bad.append("%s:\n%s" % (name, out))
    if bad:
        setup_failed("cannot compile the test programs\n" + "\n".join(bad))


TRACE_SRC = os.path.join(ROOT, "test", "e2e", "trace")


@one_at_a_time
def build_trace_programs():
    """tracelib (C++, called through the PLT), plugin.so (dlopen + dlsym only) and
    tracemain, built once per suite run into BIN."""
    out = os.path.join(BIN, "trace")
    os.makedirs(out, exist_ok=True)
    lib, plugin, main = (os.path.join(out, n) for n in ("libtracelib.so", "plugin.so", "tracemain"))
    srcs = [os.path.join(TRACE_SRC, n) for n in sorted(os.listdir(TRACE_SRC))]
    if all(os.path.exists(f) and all(os.path.getmtime(x) <= os.path.getmtime(f) for x in srcs)
           for f in (lib, plugin, main)):
        return lib, plugin, main
    cxx = os.environ.get("CXX", "g++")
    for cmd in (
        [cxx, "-O1", "-g", "-fPIC", "-shared", "-fno-optimize-sibling-calls", "-o", lib,
         os.path.join(TRACE_SRC, "tracelib.cpp"), os.path.join(TRACE_SRC, "tracelib_b.cpp")],
        [os.environ.get("CC", "cc"), "-O1", "-fPIC", "-shared", "-o", plugin,
         os.path.join(TRACE_SRC, "plugin.c")],
        [cxx, "-O1", "-g", "-o", main, os.path.join(TRACE_SRC, "tracemain.cpp"), "-L" + out,
         "-ltracelib", "-Wl,-rpath," + out, "-ldl", "-lpthread"],
    ):
        p = subprocess.run(cmd, capture_output=True, text=True)
        check(p.returncode == 0, "cannot build %s: %s" % (cmd[-1], p.stderr))
    return lib, plugin, main


@one_at_a_time
def build_local_thrower():
    out = os.path.join(BIN, "trace")
    os.makedirs(out, exist_ok=True)
    so, main = os.path.join(out, "local_thrower.so"), os.path.join(out, "local_loader")
    for cmd in ([os.environ.get("CXX", "g++"), "-O1", "-fPIC", "-shared", "-o", so,
                 os.path.join(TRACE_SRC, "local_thrower.cpp")],
                [os.environ.get("CC", "cc"), "-O1", "-o", main,
                 os.path.join(TRACE_SRC, "local_loader.c"), "-ldl"]):
        p = subprocess.run(cmd, capture_output=True, text=True)
        check(p.returncode == 0, "cannot build %s: %s" % (cmd[-1], p.stderr))
    return so, main


MPI_SRC = os.path.join(ROOT, "test", "e2e", "mpi")


@one_at_a_time
def build_mpi_program():
    """BIN/mpi/mpi_steps, built with mpicc (Debian's openmpi: scripts/install-deps.sh);
    returns (program, mpirun)."""
    mpicc, mpirun = shutil.which("mpicc"), shutil.which("mpirun")
    if not mpicc or not mpirun:
        raise Fail("the MPI tests need mpicc and mpirun (Debian: openmpi-bin libopenmpi-dev, "
                   "installed by scripts/install-deps.sh)")
    out = os.path.join(BIN, "mpi")
    os.makedirs(out, exist_ok=True)
    prog, src = os.path.join(out, "mpi_steps"), os.path.join(MPI_SRC, "mpi_steps.c")
    if not os.path.exists(prog) or os.path.getmtime(src) > os.path.getmtime(prog):
        p = subprocess.run([mpicc, "-O1", "-g", "-Wall", "-I", os.path.join(ROOT, "include"),
                            "-o", prog, src], capture_output=True, text=True)
        check(p.returncode == 0, "cannot build %s: %s" % (prog, p.stderr))
    return prog, mpirun


CUDA_SRC = os.path.join(ROOT, "test", "e2e", "cuda")


@one_at_a_time
def cuda_home():
    home = os.environ.get("CUDA_HOME") or "/usr/local/cuda"
    for need in ("include/cuda.h", "include/cuda_runtime_api.h", "lib64/libcudart.so.13"):
        if not os.path.exists(os.path.join(home, need)):
            raise Fail("the CUDA tests need the CUDA 13 toolkit (headers and libcudart.so.13): "
                       "no %s under %s; install it at /usr/local/cuda or set CUDA_HOME"
                       % (need, home))
    return home


@one_at_a_time
def build_cuda_programs():
    """BIN/cuda: lib/ (fake libcuda.so.1 and libcudart.so.13), lib-symbolic/ (the same
    libcuda linked -Bsymbolic: its table of entry points holds its own functions, not the
    global definitions, libprof's), and the programs. Returns a dict of paths."""
    home = cuda_home()
    out = os.path.join(BIN, "cuda")
    p = {"lib": os.path.join(out, "lib"), "lib_symbolic": os.path.join(out, "lib-symbolic"),
         "rt": os.path.join(out, "cuda_rt"), "drv": os.path.join(out, "cuda_drv"),
         "drv_dl": os.path.join(out, "cuda_drv_dl"), "real": os.path.join(out, "cuda_real"),
         "static": os.path.join(out, "cuda_static"), "home": home}
    for d in (p["lib"], p["lib_symbolic"]):
        os.makedirs(d, exist_ok=True)
    cuda, cudart = os.path.join(p["lib"], "libcuda.so.1"), os.path.join(p["lib"], "libcudart.so.13")
    cuda_sym = os.path.join(p["lib_symbolic"], "libcuda.so.1")
    cudart_sym = os.path.join(p["lib_symbolic"], "libcudart.so.13")
    made = [cuda, cudart, cuda_sym, cudart_sym, p["rt"], p["drv"], p["drv_dl"], p["real"],
            p["static"]]
    srcs = [os.path.join(CUDA_SRC, n) for n in os.listdir(CUDA_SRC)]
    if all(os.path.exists(f) and all(os.path.getmtime(s) <= os.path.getmtime(f) for s in srcs)
           for f in made):
        return p
    cc = os.environ.get("CC", "cc")
    src = lambda n: os.path.join(CUDA_SRC, n)
    base = [cc, "-O1", "-g", "-Wall", "-I", os.path.join(home, "include")]
    so = base + ["-fPIC", "-shared"]
    for cmd in (
        so + ["-Wl,-soname,libcuda.so.1", "-o", cuda, src("fake_cuda.c")],
        so + ["-Wl,-soname,libcuda.so.1", "-Wl,-Bsymbolic", "-o", cuda_sym, src("fake_cuda.c")],
        so + ["-Wl,-soname,libcudart.so.13", "-Wl,--version-script=" + src("fake_cudart.map"),
              "-o", cudart, src("fake_cudart.c"), "-ldl", "-lpthread"],
        base + ["-o", p["rt"], src("cuda_rt.c"), cudart, "-ldl"],
        base + ["-o", p["drv"], src("cuda_drv.c"), cuda, "-ldl"],
        base + ["-DUSE_DLOPEN", "-o", p["drv_dl"], src("cuda_drv.c"), "-ldl"],
        base + ["-o", p["real"], src("cuda_real.c"), os.path.join(home, "lib64", "libcudart.so.13"),
                "-Wl,-rpath," + os.path.join(home, "lib64"), "-ldl"],
        base + ["-o", p["static"], src("cuda_static.c"),
                os.path.join(home, "lib64", "libcudart_static.a"), "-ldl", "-lpthread", "-lrt"],
    ):
        r = subprocess.run(cmd, capture_output=True, text=True)
        check(r.returncode == 0, "cannot build %s: %s" % (cmd[cmd.index("-o") + 1], r.stderr))
    shutil.copy2(cudart, cudart_sym)
    return p


CUPTI_SRC = os.path.join(ROOT, "test", "e2e", "cupti")


@one_at_a_time
def cupti_include():
    """The include directory holding cupti.h: the CUDA toolkit's (CUDA_HOME or
    /usr/local/cuda, in include/ or extras/CUPTI/include/), else the PyPI wheel
    nvidia-cuda-cupti's (nvidia/cu13/include)."""
    cands = []
    for d in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if d:
            cands += [os.path.join(d, "include"), os.path.join(d, "extras", "CUPTI", "include")]
    cands += [os.path.join(p, "nvidia", "cu13", "include") for p in sys.path if p]
    for d in cands:
        if os.path.exists(os.path.join(d, "cupti_activity.h")):
            return d
    raise Fail("the CUPTI tests need CUDA 13's CUPTI headers (cupti_activity.h): not in %s; "
               "install the CUDA toolkit at /usr/local/cuda (or set CUDA_HOME), or the PyPI "
               "package nvidia-cuda-cupti" % ", ".join(cands[:3]))


@one_at_a_time
def build_cupti_programs():
    """BIN/cupti: the fake libcupti.so.13, gpu_app linked with it (as PyTorch links CUPTI)
    and gpu_app_dl (finds it only if libprof loads it), no_cuda; and layout, whose
    compilation checks libprof's mirror of CUPTI's ABI against the real headers."""
    inc = cupti_include()
    out = os.path.join(BIN, "cupti")
    os.makedirs(out, exist_ok=True)
    src = lambda n: os.path.join(CUPTI_SRC, n)
    fake = os.path.join(out, "libcupti.so.13")
    bins = {n: os.path.join(out, n) for n in ("gpu_app", "gpu_app_dl", "no_cuda", "layout")}
    deps = ([src(n) for n in os.listdir(CUPTI_SRC)] +
            [os.path.join(ROOT, "preload", "gpu", "cupti_abi.h")])
    if all(os.path.exists(f) and all(os.path.getmtime(d) <= os.path.getmtime(f) for d in deps)
           for f in [fake] + list(bins.values())):
        return out, bins
    cc = os.environ.get("CC", "cc")
    flags = ["-O1", "-g", "-Wall", "-Wextra", "-Werror"]
    cmds = [
        [cc] + flags + ["-I", inc, "-I", ROOT, "-o", bins["layout"],
                        src("layout.c")],
        [cc] + flags + ["-fPIC", "-shared", "-Wl,-Bsymbolic", "-Wl,-soname,libcupti.so.13",
                        "-Wl,--version-script=" + src("fake_cupti.map"), "-I", inc, "-o", fake,
                        src("fake_cupti.c"), "-pthread"],
        [cc] + flags + ["-DLINKED", "-o", bins["gpu_app"], src("gpu_app.c"), fake,
                        "-Wl,-rpath," + out, "-pthread", "-ldl"],
        [cc] + flags + ["-o", bins["gpu_app_dl"], src("gpu_app.c"), "-pthread", "-ldl"],
        [cc] + flags + ["-o", bins["no_cuda"], src("no_cuda.c")],
    ]
    for cmd in cmds:
        p = subprocess.run(cmd, capture_output=True, text=True)
        check(p.returncode == 0, "cannot build %s: %s" % (cmd[cmd.index("-o") + 1], p.stderr))
    p = subprocess.run([bins["layout"]], capture_output=True, text=True)
    check(p.returncode == 0 and "layout=ok" in p.stdout, "layout check: %r" % p)
    return out, bins


ORT_SRC = os.path.join(ROOT, "test", "e2e", "ort", "ort_main.c")


@one_at_a_time
def build_ort_programs(lib):
    """ort_link (OrtGetApiBase through the PLT) and ort_dlopen (through dlsym)."""
    out = os.path.join(BIN, "ort")
    os.makedirs(out, exist_ok=True)
    soname = os.path.join(out, "libonnxruntime.so.1")  # the wheel has only .so.<version>
    if os.path.lexists(soname):
        os.remove(soname)
    os.symlink(lib, soname)
    cc = os.environ.get("CC", "cc")
    link, dl = os.path.join(out, "ort_link"), os.path.join(out, "ort_dlopen")
    for cmd in ([cc, "-O1", "-g", "-Wall", "-o", link, ORT_SRC, lib, "-Wl,-rpath," + out, "-ldl"],
                [cc, "-O1", "-g", "-Wall", "-DUSE_DLOPEN", "-o", dl, ORT_SRC, "-ldl"]):
        p = subprocess.run(cmd, capture_output=True, text=True)
        check(p.returncode == 0, "cannot build %s: %s" % (cmd[5], p.stderr))
    return link, dl


NVTX_SRC = os.path.join(ROOT, "test", "e2e", "nvtx")


@one_at_a_time
def nvtx_include():
    """The include directory holding nvtx3/: the CUDA toolkit's (CUDA_HOME or
    /usr/local/cuda), else the PyPI wheel nvidia-nvtx's (nvidia/cu13/include)."""
    toolkit = [os.path.join(d, "include") for d in (os.environ.get("CUDA_HOME"), "/usr/local/cuda")
               if d]
    toolkit = sorted(set(toolkit), key=toolkit.index)
    cands = toolkit + [os.path.join(p, "nvidia", "cu13", "include") for p in sys.path if p]
    for d in cands:
        if os.path.exists(os.path.join(d, "nvtx3", "nvToolsExt.h")):
            return d
    raise Fail("the NVTX tests need the CUDA toolkit's header-only NVTX v3 (nvtx3/nvToolsExt.h)"
               ": not in %s; install the CUDA toolkit at /usr/local/cuda (or set CUDA_HOME), "
               "or the PyPI package nvidia-nvtx" % ", ".join(toolkit))


@one_at_a_time
def build_nvtx_programs():
    """libnvtx_a.so and libnvtx_b.so (one NVTX instance each), nvtx_main linked with both,
    and nvtx_bench, built against the real NVTX headers into BIN/nvtx."""
    inc = nvtx_include()
    out = os.path.join(BIN, "nvtx")
    os.makedirs(out, exist_ok=True)
    src = lambda n: os.path.join(NVTX_SRC, n)
    libs = [os.path.join(out, "libnvtx_%s.so" % x) for x in ("a", "b")]
    main, bench = os.path.join(out, "nvtx_main"), os.path.join(out, "nvtx_bench")
    deps = [src(n) for n in os.listdir(NVTX_SRC)] + [os.path.join(ROOT, "include", "prof.h")]
    if all(os.path.exists(f) and all(os.path.getmtime(d) <= os.path.getmtime(f) for d in deps)
           for f in libs + [main, bench]):
        return main, bench
    cc = os.environ.get("CC", "cc")
    flags = ["-O1", "-g", "-Wall", "-I", inc]
    cmds = [[cc] + flags + ["-fPIC", "-shared", "-DLIB=" + x,
                            '-DDOMAIN_NAME="Lib%s"' % x.upper(), "-o", lib, src("nvtx_lib.c")]
            for x, lib in zip("ab", libs)]
    cmds.append([cc] + flags + ["-pthread", "-I", os.path.join(ROOT, "include"), "-o", main,
                                src("nvtx_main.c"), "-L" + out, "-lnvtx_a", "-lnvtx_b",
                                "-Wl,-rpath," + out, "-ldl"])
    cmds.append([cc] + flags + ["-o", bench, src("nvtx_bench.c"), "-ldl"])
    for cmd in cmds:
        p = subprocess.run(cmd, capture_output=True, text=True)
        check(p.returncode == 0, "cannot build %s: %s" % (cmd[cmd.index("-o") + 1], p.stderr))
    return main, bench
