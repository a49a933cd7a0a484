"""BENCH_ONLY=thread_start: what a new thread costs (issue 15): bench/thread_start makes
N threads one after the other, each with one malloc/free pair (its first event, so the
profiler's per-thread set-up is paid), natively, under libprof, under BENCH_BASE's
libprof when given, and under heaptrack; microseconds per thread, medians of rounds."""
import os
import shutil
import statistics
import subprocess


def thread_start(build, clean_env, rounds, work):
    prog = os.path.join(build, "bench", "thread_start")
    lib = os.path.join(build, "libprof.so")
    variants = [("native", {}, []),
                ("libprof", {"LD_PRELOAD": lib, "PROFILER_AUTOSTART": "1",
                             "PROFILER_QUIET": "1"}, [])]
    if os.environ.get("BENCH_BASE"):
        variants.append(("base libprof", {"LD_PRELOAD": os.path.join(
            os.environ["BENCH_BASE"], "libprof.so"), "PROFILER_AUTOSTART": "1",
            "PROFILER_QUIET": "1"}, []))
    if shutil.which("heaptrack"):
        variants.append(("heaptrack", {}, ["heaptrack", "-o", os.path.join(work, "ht")]))
    import torch_stacks  # the CPU model, as the other tables give it
    print("\n%s" % torch_stacks.cpu_model())
    print("Thread start: us per thread, created to joined, one malloc/free each; then "
          "800 threads\nin waves of 8, 500 malloc/free pairs each (the issue's 400 k calls "
          "over 800 threads), ms in all;\nthen the same 800 threads started at once (issue "
          "32: more threads than libprof's 256 rings), ms in all")
    print("  %-14s %12s %14s %16s %16s" % ("", "200 threads", "20000 threads", "800 x 500 (ms)",
                                          "800 at once (ms)"))
    runs = {200: ["200"], 20000: ["20000"], 800: ["800", "8", "500"],
            "800 at once": ["800", "800", "500"]}
    res = {v[0]: {k: [] for k in runs} for v in variants}
    for _ in range(rounds):
        for name, env, wrap in variants:
            for k, args in runs.items():
                p = subprocess.run(wrap + [prog] + args, env=clean_env(env), cwd=work,
                                   capture_output=True, text=True, check=True)
                # heaptrack prints lines of its own around the program's number
                nums = [w for w in p.stdout.split() if w.replace(".", "", 1).isdigit()]
                res[name][k].append(float(nums[0]) * (1 if k in (200, 20000) else 800 / 1e3))
    first = os.path.join(build, "bench", "first_call")
    firsts = {v[0]: [] for v in variants}
    for _ in range(rounds * 3):
        for name, env, wrap in variants:
            p = subprocess.run(wrap + [first], env=clean_env(env), cwd=work,
                               capture_output=True, text=True, check=True)
            nums = [w for w in p.stdout.split() if w.replace(".", "", 1).isdigit()]
            firsts[name].append(float(nums[0]))
    for name, _, _ in variants:
        print("  %-14s %12.1f %14.1f %16.1f %16.1f"
              % (name, statistics.median(res[name][200]), statistics.median(res[name][20000]),
                 statistics.median(res[name][800]), statistics.median(res[name]["800 at once"])))
    print("  the first malloc of a program, us (its thread's set-up inside it):")
    for name, _, _ in variants:
        print("  %-14s %12.1f" % (name, statistics.median(firsts[name])))
