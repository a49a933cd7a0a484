"""BENCH_ONLY=loaded_rate: what libprof loses when no core is free (issue 32): bench/alloc_rate
makes 1 M malloc/free pairs a second (2 M events/s) for BENCH_LR_SECONDS (default 5) under
the bare command with the default settings (a full ring drops), while a busy loop runs on
every core; events lost in each run, this build and BENCH_BASE's (another build's folder)
or else the build before (bench/before, when bench/build_before.sh made it), interleaved
round by round."""
import os
import re
import subprocess
import sys

SECONDS = os.environ.get("BENCH_LR_SECONDS", "5")


def one(lib, prog, work, clean_env, tag):
    env = clean_env({"LD_PRELOAD": lib, "PROFILER_AUTOSTART": "1",
                     "PROFILER_OUTPUT": "loaded-" + tag})
    p = subprocess.run([prog, "1000000", SECONDS], env=env, cwd=work, capture_output=True,
                       text=True, check=True)
    m = re.search(r"libprof: (\d+) events \((\d+) lost\b", p.stderr)
    if not m:
        raise RuntimeError(f"no summary line: {p.stderr!r}")
    held = re.search(r"waited up to (\d+) ms", p.stderr)
    return int(m.group(2)) / (int(m.group(1)) + int(m.group(2))), held and int(held.group(1))


def loaded_rate(build, work, clean_env, rounds, cpu):
    prog = os.path.join(build, "bench", "alloc_rate")
    builds = [("now", os.path.join(build, "libprof.so"))]
    base = os.environ.get("BENCH_BASE")
    before = (os.path.join(base, "libprof.so") if base
              else os.path.join(build, "bench", "before", "libprof.so"))
    if os.path.exists(before):
        builds.append(("base" if base else "before", before))
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(os.cpu_count() or 1)]
    res = {tag: [] for tag, _ in builds}
    try:
        for _ in range(rounds):
            for tag, lib in builds:
                res[tag].append(one(lib, prog, work, clean_env, tag))
    finally:
        for b in busy:
            b.kill()
            b.wait()
    print(f"\nEvents lost at 2 M events/s ({SECONDS} s of bench/alloc_rate, default settings) "
          f"with a busy loop on each of {len(busy)} cores; {cpu}; each run's share lost "
          f"(and the collector's longest hold where said)")
    for tag, _ in builds:
        runs = ", ".join("%.2f%%%s" % (100 * lost, f" ({held} ms)" if held else "")
                         for lost, held in res[tag])
        clean = sum(1 for lost, _ in res[tag] if lost == 0)
        print(f"  {tag:7} {clean} of {len(res[tag])} runs lost nothing: {runs}")
