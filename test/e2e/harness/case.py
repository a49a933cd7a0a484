"""One case: its temporary directory, its runs (Case, Result), the @case registry with
the serial mark, and the checks after it (its processes gone, no sanitizer report,
its sessions' leftover segments removed)."""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid

from .outputs import Fail, Trace, check, load_json
from .paths import BIN, DEFAULT_PREFIX, SANITIZER_RE
from .sanitizers import Setup
from .shm import remove_sessions as shm_remove_sessions


def clip(text, head=1200, tail=2000):
    """text's start and end: a launcher's summary comes last, the failing process's own
    words (its error, an abort's message) first."""
    if len(text) <= head + tail:
        return text
    return "%s\n  [... %d characters ...]\n%s" % (text[:head], len(text) - head - tail,
                                                  text[-tail:])


class Result:
    def __init__(self, argv, rc, out, err, elapsed):
        self.argv, self.rc, self.out, self.err, self.elapsed = argv, rc, out, err, elapsed

    def __repr__(self):
        return "command %s\n  exit %s\n  stdout: %s\n  stderr: %s" % (
            " ".join(self.argv), self.rc, clip(self.out), clip(self.err))

    def kv(self, key):
        """Values of 'key=value' tokens printed by the program."""
        return re.findall(r"\b%s=(\S+)" % re.escape(key), self.out)


class Case:
    def __init__(self, name, keep):
        self.name = name
        self.root = tempfile.mkdtemp(prefix="libprof-e2e-%s-" % name)
        self.dir = os.path.join(self.root, "work")
        self.io = os.path.join(self.root, "io")
        os.makedirs(self.dir)
        os.makedirs(self.io)
        self.token = uuid.uuid4().hex
        self.keep = keep
        self.nrun = 0
        self.notes = []
        self.errors = []
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("PROFILER_") and k not in ("LD_PRELOAD", "PYTHONPATH")}
        env["LIBPROF_E2E_TOKEN"] = self.token
        env["LC_ALL"] = "C"
        # the cases look for the allocator calls they made in the trace: every one is
        # there (the default's choice has its own case, trace_alloc_default_small)
        env["PROFILER_TRACE_ALLOC"] = "all"
        self.env = env

    def note(self, msg):
        self.notes.append(msg)

    def defer(self, msg):
        """A failure that does not stop the case: the checks after it still run."""
        self.errors.append(msg)

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def write(self, name, text):
        """Writes text into the case's directory as name; its path."""
        path = self.path(name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def prog(self, name):
        return os.path.join(BIN, name)

    def cc(self, out, srcs, flags=(), cxx=False):
        """Compiles srcs into the case's directory as out (cc -O1 -g -pthread, or the C++
        compiler) with flags; the path, or a failure naming the compiler's complaint."""
        path = self.path(out)
        compiler = os.environ.get("CXX", "g++") if cxx else os.environ.get("CC", "cc")
        cmd = [compiler, "-O1", "-g", "-pthread"] + list(flags) + ["-o", path] + list(srcs)
        p = subprocess.run(cmd, capture_output=True, text=True)
        check(p.returncode == 0, "cannot build %s: %s" % (out, p.stderr))
        return path

    def start(self, argv, env=None, preload=True, autostart=True, cwd=None):
        e = dict(self.env)
        e.update(Setup.program_env())
        if preload:
            e["LD_PRELOAD"] = Setup.preload_value()
        if autostart:
            e["PROFILER_AUTOSTART"] = "1"
        for k, v in (env or {}).items():
            if v is None:
                e.pop(k, None)
            else:
                e[k] = v
        self.nrun += 1
        base = os.path.join(self.io, "%02d" % self.nrun)
        out, err = open(base + ".out", "w+"), open(base + ".err", "w+")
        t0 = time.monotonic()
        p = subprocess.Popen(argv, cwd=cwd or self.dir, env=e, stdin=subprocess.DEVNULL,
                             stdout=out, stderr=err)
        return p, out, err, t0

    def finish(self, argv, p, out, err, t0, timeout):
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise Fail("timed out after %ss: %s" % (timeout, " ".join(argv)))
        elapsed = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        r = Result(argv, rc, out.read(), err.read(), elapsed)
        out.close()
        err.close()
        return r

    def run(self, argv, env=None, preload=True, autostart=True, timeout=120, cwd=None):
        """Runs argv (in the work directory) and waits for it; stdout and stderr go to
        files, so a collector that outlives the program cannot hold a pipe open."""
        argv = [str(a) for a in argv]
        p, out, err, t0 = self.start(argv, env, preload, autostart, cwd)
        return self.finish(argv, p, out, err, t0, timeout)

    def prof(self, *args, timeout=120, env=None, cwd=None):
        e = Setup.prof_env()
        e.update(env or {})
        return self.run([Setup.prof] + [str(a) for a in args], env=e, preload=False,
                        autostart=False, timeout=timeout, cwd=cwd)

    def report_json(self, capture, *args):
        r = self.prof("report", capture, "--format", "json", *args)
        check(r.rc == 0, "prof report failed: %r" % r)
        try:
            return json.loads(r.out)
        except ValueError as e:
            raise Fail("prof report --format json: not JSON (%s): %r" % (e, r))

    def outputs(self, prefix=DEFAULT_PREFIX, wait=0.0):
        """The parsed trace of prefix.json after checking the three outputs exist. With
        wait, polls for up to that many seconds (the program died: the collector writes
        them after noticing). Returns (trace, seconds waited)."""
        t0 = time.monotonic()
        last = None
        while True:
            names = [self.path(prefix + ext) for ext in (".json", ".txt", ".prof")]
            if all(os.path.exists(n) for n in names):
                try:
                    doc = load_json(names[0])
                    if isinstance(doc, dict) and "otherData" in doc:
                        return Trace(doc, names[0]), time.monotonic() - t0
                except ValueError as e:
                    last = e
            if time.monotonic() - t0 >= wait:
                missing = [os.path.basename(n) for n in names if not os.path.exists(n)]
                raise Fail("outputs %s not complete after %.1fs: missing %s%s; directory: %s"
                           % (prefix, wait, missing, " (json: %s)" % last if last else "",
                              sorted(os.listdir(self.dir))))
            time.sleep(0.02)

    def text(self, prefix=DEFAULT_PREFIX):
        with open(self.path(prefix + ".txt"), encoding="utf-8", errors="replace") as f:
            return f.read()

    # -- after the case

    def leftover_processes(self):
        mine = []
        needle = ("LIBPROF_E2E_TOKEN=" + self.token).encode()
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open("/proc/%s/environ" % d, "rb") as f:
                    if needle in f.read().split(b"\0"):
                        mine.append(int(d))
            except OSError:
                pass
        return mine

    def cleanup_check(self):
        """Every process this case started has ended (collectors included) within a few
        seconds, and no stderr of the case holds a sanitizer report."""
        deadline = time.monotonic() + 8
        left = self.leftover_processes()
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = self.leftover_processes()
        problems = []
        if left:
            desc = []
            for pid in left:
                try:
                    with open("/proc/%d/cmdline" % pid, "rb") as f:
                        desc.append("%d: %s" % (pid, f.read().replace(b"\0", b" ").decode()))
                except OSError:
                    desc.append(str(pid))
                try:
                    os.kill(pid, signal.SIGKILL)  # started by this case (token in its env)
                except OSError:
                    pass
            problems.append("processes of this case still running 8 s after it ended: "
                            + "; ".join(desc))
        for n in sorted(os.listdir(self.io)):
            with open(os.path.join(self.io, n), errors="replace") as f:
                text = f.read()
            if SANITIZER_RE.search(text):
                problems.append("sanitizer report in %s:\n%s" % (n, text[-4000:]))
        if problems:
            raise Fail("\n".join(problems))

    def remove(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def remove_sessions(self):
        """Removes the /dev/shm segments its sessions left (a killed session's), found by
        session id: ([(sid, names)], [(sid, why kept)]). Never another program's (shm.py)."""
        return shm_remove_sessions(self.root)


CASES = []


def case(fn=None, serial=False):
    """Registers a case: @case, or @case(serial=True) for one that runs alone (see serial)."""
    if fn is None:
        return lambda f: case(f, serial)
    if serial:
        fn.serial = True
    CASES.append(fn)
    return fn


def serial(fn):
    """Marks a case to run alone, after the parallel batch: it measures time, needs the
    machine quiet (a global figure such as Shmem) or loads it heavily. Above or below
    @case, or @case(serial=True)."""
    fn.serial = True
    return fn
