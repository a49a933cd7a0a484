#!/usr/bin/env python3
"""libprof end-to-end tests: the built libprof.so preloaded into real programs, the
`prof` command run on real captures, and every check made on the outputs' content
(parsed Chrome trace, report JSON/CSV/text rows), never on timings.

    BUILD=/abs/build python3 test/e2e/run.py [-k] [-v] [-j N] [substring...]

BUILD defaults to <repo>/build. This file is the runner only: the harness (helpers,
builders, sanitizer modes) is in harness/, the cases are in cases/ (one file per area; see
cases/README.md). Programs from test/e2e/progs/*.c are compiled into $BUILD/e2e/ (never
sanitized: libprof is what is under test). Sanitized builds: see harness/sanitizers.py.

Only the cases whose names contain one of the substrings run (all without one). -j N runs
N cases at a time (default: the number of CPUs); cases marked serial run after them, one
at a time. Each case runs in its own temporary directory (kept when the case fails, or
always with -k; -v prints it); after each case every process it started (collectors
included, found by a token in their environment) must be gone, no output of it may hold a
sanitizer report, and the /dev/shm segments its sessions left are removed, by session id
(never another program's: harness/shm.py).

Ends with the line "N passed, N failed"; the exit status is non-zero when a case failed.
"""
import os
import queue
import sys
import threading
import time
import traceback

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import harness  # noqa: E402 (test/e2e is on sys.path: this file's folder)
from harness.build import compile_programs  # noqa: E402
from harness.case import Case  # noqa: E402
from harness.outputs import Fail, Skip  # noqa: E402
from harness.paths import BUILD, HERE, LIB, PROF, setup_failed  # noqa: E402
from harness.sanitizers import Setup, setup_sanitizers  # noqa: E402


def usage(msg):
    print("run.py: %s\nusage: run.py [-k] [-v] [-j N] [substring...]" % msg)
    sys.exit(2)


def parse_args(args):
    """(keep, verbose, jobs, substrings)."""
    keep = verbose = False
    jobs = os.cpu_count() or 1
    pats = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-k":
            keep = True
        elif a == "-v":
            verbose = True
        elif a in ("-j", "--jobs") or a.startswith("-j") or a.startswith("--jobs="):
            if a in ("-j", "--jobs"):  # the number is the next argument
                i += 1
                v = args[i] if i < len(args) else ""
            else:
                v = a.split("=", 1)[1] if a.startswith("--jobs=") else a[2:]
            if not v.isdigit() or int(v) < 1:
                usage("-j wants a number of jobs, 1 or more, got '%s'" % v)
            jobs = int(v)
        elif a.startswith("-"):
            usage("unknown option '%s'" % a)
        else:
            pats.append(a)
        i += 1
    return keep, verbose, jobs, pats


class Suite:
    """The results so far; output is one line per case (its details when it failed), each
    printed whole."""

    def __init__(self, keep, verbose):
        self.keep, self.verbose = keep, verbose
        self.passed = self.failed = self.skipped = 0
        self.failures = []
        self.removed = []  # (case, sid, segments) left by the cases' sessions, removed
        self.kept = []     # (case, sid, why) the same, still mapped: left alone
        self.lock = threading.Lock()

    def run(self, fn):
        name = fn.__name__.rstrip("_")
        c = Case(name, self.keep)
        t0 = time.monotonic()
        err = skipped = None
        try:
            fn(c)
        except Skip as e:
            skipped = str(e)
        except Fail as e:
            err = str(e)
        except Exception:
            err = traceback.format_exc()
        if c.errors:
            err = "\n".join(c.errors + ([err] if err else []))
        try:
            c.cleanup_check()
        except Fail as e:
            err = (err + "\n" if err else "") + str(e)
        removed, kept = c.remove_sessions()
        dt = time.monotonic() - t0
        notes = ("  [" + "; ".join(c.notes) + "]") if c.notes else ""
        if err is None and skipped:
            line = "SKIP  %-28s %6.2fs  [%s]" % (name, dt, skipped)
            if not self.keep:
                c.remove()
        elif err is None:
            line = "PASS  %-28s %6.2fs%s" % (name, dt, notes)
            if not self.keep:
                c.remove()
        else:
            line = ("FAIL  %-28s %6.2fs%s\n      %s\n      (files kept in %s)"
                    % (name, dt, notes, err.replace("\n", "\n      "), c.root))
        if self.verbose:
            line += "\n      dir: %s" % c.root
        with self.lock:
            if err is None and skipped:
                self.skipped += 1
            elif err is None:
                self.passed += 1
            else:
                self.failed += 1
                self.failures.append(name)
            self.removed += [(name, sid, len(names)) for sid, names in removed]
            self.kept += [(name, sid, why) for sid, why in kept]
            print(line, flush=True)

    def run_all(self, fns, jobs):
        """Runs fns on jobs threads (each case's programs are subprocesses)."""
        todo = queue.Queue()
        for fn in fns:
            todo.put(fn)

        def worker():
            while True:
                try:
                    fn = todo.get_nowait()
                except queue.Empty:
                    return
                self.run(fn)
        threads = [threading.Thread(target=worker, daemon=True)
                   for _ in range(max(1, min(jobs, len(fns))))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


def main():
    keep, verbose, jobs, pats = parse_args(sys.argv[1:])
    for f in (LIB, PROF):
        if not os.path.exists(f):
            setup_failed("%s is missing (build first: make all)" % f)
    compile_programs()
    setup_sanitizers()
    print("libprof e2e: BUILD=%s, mode %s%s" % (BUILD, Setup.mode,
                                                ": " + Setup.why if Setup.why else ""))
    cases = harness.load_cases(os.path.join(HERE, "cases"), harness.namespace())
    chosen = [fn for fn in cases
              if not pats or any(p in fn.__name__.rstrip("_") for p in pats)]
    suite = Suite(keep, verbose)
    t_all = time.monotonic()
    suite.run_all([fn for fn in chosen if not getattr(fn, "serial", False)], jobs)
    suite.run_all([fn for fn in chosen if getattr(fn, "serial", False)], 1)
    if suite.removed:
        print("note: removed the /dev/shm segments the suite's sessions left: %s"
              % ", ".join("%s (%s, %d)" % (sid, name, n) for name, sid, n in suite.removed))
    if suite.kept:
        print("note: segments of the suite's sessions still in use, left: %s"
              % ", ".join("%s (%s: %s)" % (sid, name, why) for name, sid, why in suite.kept))
    print("suite time %.1fs (-j%d)" % (time.monotonic() - t_all, jobs))
    if suite.failures:
        print("failed: " + " ".join(suite.failures))
    print("%d passed, %d failed%s" % (suite.passed, suite.failed,
                                      ", %d skipped" % suite.skipped if suite.skipped else ""))
    sys.exit(1 if suite.failed or not suite.passed else 0)


if __name__ == "__main__":
    main()
