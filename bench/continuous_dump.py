"""BENCH_ONLY=continuous_dump: what PROFILER_CONTINUOUS_DUMP costs a busy run (issue 15):
`bench/alloc_rate` makes 1 M malloc/free pairs a second (2 M events/s) for
BENCH_CD_SECONDS (default 20) under `prof record` (rings drop when full, the default),
with the outputs rewritten every second and without; events lost, the rewrites seen
(the tables' file changing) and the longest time between two, prof record's peak RSS
(the dump children's included). With BENCH_BASE=<another build's folder>, that build
too, side by side."""
import os
import re
import subprocess
import sys
import time

from torch_stacks import cpu_model

SECONDS = float(os.environ.get("BENCH_CD_SECONDS", "20"))
MAXRSS = ("import resource, subprocess, sys\n"
          "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
          "sys.stdout.write(p.stdout)\n"
          "sys.stderr.write(p.stderr)\n"
          "print('maxrss_kb=%d' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")


def one(build, work, env, dump):
    prof = os.path.join(build, "prof")
    prog = os.path.join(os.path.dirname(__file__), "..", "build", "bench", "alloc_rate")
    out = os.path.join(work, "cd")
    for ext in (".json", ".txt"):
        if os.path.exists(out + ext):
            os.unlink(out + ext)
    e = dict(env)
    if dump:
        e.update({"PROFILER_CONTINUOUS_DUMP": "1", "PROFILER_DUMP_PERIOD": "1"})
    p = subprocess.Popen([sys.executable, "-c", MAXRSS, prof, "record", "--force-overwrite",
                          "-o", out, "--", prog, "1000000", str(SECONDS)], env=e, cwd=work,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen, last = [], None
    while p.poll() is None:  # each rewrite of the tables, as a user polling them sees it
        try:
            m = os.stat(out + ".txt").st_mtime_ns
        except OSError:
            m = None
        if m is not None and m != last:
            seen.append(time.monotonic())
            last = m
        time.sleep(0.02)
    stdout, stderr = p.communicate()
    pairs = int(stdout.splitlines()[0])
    rss = int(re.search(r"^maxrss_kb=(\d+)$", stdout, re.M).group(1)) / 1024
    m = re.search(r"libprof: (\d+) events \((\d+) lost\)", stderr)
    events, lost = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    gaps = [b - a for a, b in zip(seen, seen[1:])]
    return {"made": 2 * pairs, "lost": lost, "events": events,
            "rewrites": max(len(seen) - 1, 0) if dump else 0,
            "max_gap": max(gaps) if gaps else 0.0, "rss": rss}


def continuous_dump(build, work, clean_env):
    builds = [("this build", build)]
    if os.environ.get("BENCH_BASE"):
        builds.append(("base " + os.environ["BENCH_BASE"], os.environ["BENCH_BASE"]))
    print("\nContinuous dump: bench/alloc_rate, 2 M events/s for %gs under prof record, "
          "outputs rewritten every 1 s or not; %s" % (SECONDS, cpu_model()))
    print("  %-28s %5s %11s %8s %9s %12s %8s" % ("build", "dump", "events M", "lost %",
                                                 "rewrites", "max gap (s)", "RSS MiB"))
    for label, b in builds:
        for dump in (False, True):
            r = one(b, work, clean_env({}), dump)
            print("  %-28s %5s %11.1f %8.2f %9d %12.1f %8.0f" % (
                label[:28], "on" if dump else "off", r["made"] / 1e6,
                100.0 * r["lost"] / max(r["made"], 1), r["rewrites"], r["max_gap"], r["rss"]))
            sys.stdout.flush()
