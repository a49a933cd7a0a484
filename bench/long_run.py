"""BENCH_ONLY=long_run: what a long run costs after it ends (issue 15): for runs of 1 M,
10 M and 40 M allocator events under `prof record --block`, the collector's peak RSS and
the time from the program's last call to prof record's exit (the outputs written), the
program's own time per call (what the collector and the live outputs beside it cost it),
then `prof report` and `prof export` on the capture (peak RSS, events per second). With
BENCH_BASE=<another build's folder>, the same runs with that build, side by side."""
import os
import re
import subprocess
import sys
import time

from torch_stacks import cpu_model

MAXRSS = ("import resource, subprocess, sys\n"
          "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
          "sys.stdout.write(p.stdout)\n"
          "print('maxrss_kb=%d' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
SIZES = [int(x) for x in os.environ.get("BENCH_LONG_PAIRS", "500000,5000000,20000000")
         .split(",")]


def measured(argv, env, cwd):
    """(wall seconds, peak RSS MiB of argv and what it waited for, stdout)."""
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-c", MAXRSS] + argv, env=env, cwd=cwd,
                       capture_output=True, text=True, check=True)
    wall = time.monotonic() - t0
    rss = int(re.search(r"^maxrss_kb=(\d+)$", p.stdout, re.M).group(1)) / 1024
    return wall, rss, p.stdout


def one_build(build, pairs, work, env):
    prof, loop = os.path.join(build, "prof"), os.path.join(build, "bench", "alloc_loop")
    if not os.path.exists(loop):  # an older build: the current one's program
        loop = os.path.join(os.path.dirname(__file__), "..", "build", "bench", "alloc_loop")
    out = os.path.join(work, "long")
    wall, rss, stdout = measured([prof, "record", "--block", "-q", "--force-overwrite",
                                  "-o", out, "--", loop, str(pairs)], env, work)
    ns_per_call = float(stdout.splitlines()[0])
    program = ns_per_call * 2 * pairs / 1e9
    events = 2 * pairs
    rep_wall, rep_rss, _ = measured([prof, "report", out + ".prof"], env, work)
    exp_wall, exp_rss, _ = measured([prof, "export", "--force-overwrite", out + ".prof", "-o",
                                     os.path.join(work, "again.json")], env, work)
    return {"events": events, "record_rss": rss, "end": wall - program, "ns": ns_per_call,
            "report_rss": rep_rss, "report_rate": events / rep_wall / 1e6,
            "export_rss": exp_rss, "export_rate": events / exp_wall / 1e6}


def long_run(build, work, clean_env):
    builds = [("this build", build)]
    if os.environ.get("BENCH_BASE"):
        builds.append(("base " + os.environ["BENCH_BASE"], os.environ["BENCH_BASE"]))
    print("\nLong runs: prof record --block on alloc_loop, then prof report / prof export "
          "of its capture; %s" % cpu_model())
    print("  %-28s %9s %8s %12s %10s %11s %10s %11s %10s" % (
        "build", "events", "ns/call", "record MiB", "end (s)", "report MiB", "M ev/s",
        "export MiB", "M ev/s"))
    for pairs in SIZES:
        for label, b in builds:
            r = one_build(b, pairs, work, clean_env({}))
            print("  %-28s %9s %8.1f %12.0f %10.2f %11.0f %10.1f %11.0f %10.1f" % (
                label[:28], "%dM" % (r["events"] // 1000000), r["ns"], r["record_rss"], r["end"],
                r["report_rss"], r["report_rate"], r["export_rss"], r["export_rate"]))
            sys.stdout.flush()


def paced_end(build, seconds, work, env, pairs_per_s=1000000):
    """A steady 2 x pairs_per_s events/s for `seconds` (bench/alloc_rate): the seconds
    from the program's end to prof record's exit, and the events lost."""
    prof = os.path.join(build, "prof")
    rate = os.path.join(os.path.dirname(__file__), "..", "build", "bench", "alloc_rate")
    out = os.path.join(work, "paced")
    t0 = time.monotonic()
    p = subprocess.run([prof, "record", "-o", out, "--force-overwrite", "--", rate, str(pairs_per_s),
                        str(seconds)], env=env, cwd=work, capture_output=True, text=True,
                       check=True)
    wall = time.monotonic() - t0
    m = re.search(r"(\d+) events \((\d+) lost\)", p.stderr)
    return wall - seconds, int(m.group(1)), int(m.group(2))


def long_run_paced(build, work, clean_env):
    builds = [("this build", build)]
    if os.environ.get("BENCH_BASE"):
        builds.append(("base " + os.environ["BENCH_BASE"], os.environ["BENCH_BASE"]))
    secs = [int(x) for x in os.environ.get("BENCH_PACED_SECONDS", "5,20").split(",")]
    # BENCH_PACED_RATES (M events/s): where the live outputs stop keeping up, the end
    # grows with the run again
    rates = [float(x) for x in os.environ.get("BENCH_PACED_RATES", "2").split(",")]
    print("\nPaced runs: prof record on bench/alloc_rate, the outputs' wait after the "
          "program's end; %s" % cpu_model())
    print("  %-28s %9s %9s %12s %10s %10s" % ("build", "M ev/s", "seconds", "events", "lost",
                                             "end (s)"))
    for r in rates:
        for n in secs:
            for label, b in builds:
                end, events, lost = paced_end(b, n, work, clean_env({}), int(r * 5e5))
                print("  %-28s %9g %9d %12d %10d %10.2f" % (label[:28], r, n, events, lost,
                                                            end))
                sys.stdout.flush()

