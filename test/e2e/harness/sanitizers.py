"""The sanitizer modes (`make asan`): what the cases preload and run, and the
environment of each (Setup), probed once before the cases."""
import os
import re
import shutil
import subprocess
import tempfile

from .outputs import Fail, Trace, load_json
from .paths import BIN, LIB, PROF, ROOT, SCRIPTS, setup_failed


def needed(path):
    """The DT_NEEDED names of a binary."""
    try:
        out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True).stdout
    except OSError:
        return []
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def sanitizers(path):
    n = " ".join(needed(path))
    return [name for lib, name in (("libasan", "ASan"), ("libubsan", "UBSan")) if lib in n]


def asan_runtime():
    """The path of libasan when libprof.so is built with ASan, else None."""
    if "ASan" not in sanitizers(LIB):
        return None
    cc = os.environ.get("CC", "cc")
    path = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True,
                          text=True).stdout.strip()
    if not os.path.isabs(path) or not os.path.exists(path):
        m = re.search(r"libasan\.so\S* => (\S+)",
                      subprocess.run(["ldd", LIB], capture_output=True, text=True).stdout)
        path = m.group(1) if m else None
    if not path:
        setup_failed("libprof.so is sanitized but libasan.so was not found")
    return os.path.realpath(path)


class Setup:
    """What the cases run: the library programs preload, the prof command, and the extra
    environment of each. Three modes:

    plain          BUILD/libprof.so and BUILD/prof, as built (`make asan` builds libprof.so
                   with UBSan only and prof with ASan+UBSan: that is this mode too).
    asan-preload   a sanitized build whose libprof.so can be preloaded: LD_PRELOAD is
                   "libprof.so:libasan.so" (libprof first, so its malloc wins the lookup and
                   ASan's allocator sits behind it as RTLD_NEXT), ASAN_OPTIONS with
                   verify_asan_link_order=0.
    ubsan-preload  a sanitized build whose libprof.so cannot be preloaded (ASan's start-up
                   calls malloc through libprof's instrumented wrapper before the shadow
                   memory exists: SIGSEGV in every program). The preloaded library is then
                   built from the same sources by the Makefile's own rule with UBSan only
                   (BUILD/e2e/ubsan/libprof.so), next to a copy of the ASan+UBSan `prof`,
                   so the collector, `prof record/report/export` and formats/ run under
                   ASan (leak checks on) and the library under UBSan.
    """
    mode = "plain"
    lib = LIB
    prof = PROF
    asan = None
    why = ""

    @staticmethod
    def program_env():
        if Setup.mode == "asan-preload":
            return {"ASAN_OPTIONS": "verify_asan_link_order=0:detect_leaks=0:handle_segv=0:"
                                    "handle_abort=0:handle_sigbus=0:allow_user_segv_handler=1",
                    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}
        if Setup.mode == "ubsan-preload":
            # the collector (ASan) inherits this: leaks are reported, a report fails the case
            return {"ASAN_OPTIONS": "detect_leaks=1",
                    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}
        if sanitizers(Setup.lib) or sanitizers(Setup.prof):
            return {"UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}
        return {}

    @staticmethod
    def prof_env():
        e = Setup.program_env()
        if Setup.mode == "asan-preload":
            # prof record hands LD_PRELOAD on after libprof.so: "libprof.so:libasan.so"
            e["LD_PRELOAD"] = Setup.asan
        return e

    @staticmethod
    def preload_value():
        return Setup.lib + (":" + Setup.asan if Setup.mode == "asan-preload" else "")


def probe_asan_preload(asan):
    """Whether the ASan libprof.so works preloaded: a program runs and its mallocs are
    in the trace. Returns (ok, why)."""
    d = tempfile.mkdtemp(prefix="libprof-e2e-probe-")
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILER_")}
        env.update({"LD_PRELOAD": LIB + ":" + asan, "PROFILER_AUTOSTART": "1",
                    "PROFILER_QUIET": "1"})
        Setup.mode, Setup.asan = "asan-preload", asan
        env.update(Setup.program_env())
        try:
            r = subprocess.run([os.path.join(BIN, "basic"), "3", "52999", "exit:0"], cwd=d,
                               env=env, capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            return False, "a preloaded program timed out"
        if r.returncode != 0:
            return False, "a preloaded program exits with %d (%s)" % (
                r.returncode, (r.stderr.strip().splitlines() or ["no message"])[-1])
        try:
            t = Trace(load_json(os.path.join(d, "libprof.json")))
        except (OSError, ValueError, Fail) as e:
            return False, "no trace: %s" % e
        n = t.count("malloc", 52999)
        return n == 3, "%d of 3 mallocs captured" % n
    finally:
        Setup.mode, Setup.asan = "plain", None
        shutil.rmtree(d, ignore_errors=True)


def build_ubsan_library():
    out = os.path.join(BIN, "ubsan")
    san = "-fsanitize=undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
    r = subprocess.run(["make", "-C", ROOT, "--no-print-directory", "BUILD=" + out,
                        "SAN=" + san, "PRELOAD_SAN=" + san, "CFLAGS=-O1 -g",
                        os.path.join(out, "libprof.so")],
                       capture_output=True, text=True)
    if r.returncode:
        setup_failed("cannot build the UBSan libprof.so:\n" + r.stdout + r.stderr)
    shutil.copy2(PROF, os.path.join(out, "prof"))
    link = os.path.join(BIN, "scripts")  # prof record adds <lib>/../scripts to PYTHONPATH
    if not os.path.islink(link):
        os.symlink(SCRIPTS, link)
    return os.path.join(out, "libprof.so"), os.path.join(out, "prof")


def setup_sanitizers():
    asan = asan_runtime()
    if not asan:
        sl, sp = sanitizers(LIB), sanitizers(PROF)
        if sl or sp:
            Setup.why = "libprof.so with %s, prof with %s" % ("+".join(sl) or "no sanitizer",
                                                              "+".join(sp) or "no sanitizer")
        return
    ok, why = probe_asan_preload(asan)
    if ok:
        Setup.mode, Setup.asan = "asan-preload", asan
        Setup.why = "LD_PRELOAD=libprof.so:%s" % asan
        return
    Setup.mode = "ubsan-preload"
    Setup.lib, Setup.prof = build_ubsan_library()
    Setup.why = ("the ASan libprof.so cannot be preloaded (%s); programs preload %s "
                 "(UBSan) and the collector and prof commands are the ASan+UBSan %s"
                 % (why, Setup.lib, PROF))
