"""BENCH_ONLY=merge_ranks: reading a job's per-rank captures as one (issue 16): jobs of 8,
16 and 64 synthetic ranks (test/e2e/cases/ranks/gen_ranks.c: 200 steps of 503 events per
rank, 8 ranks per host, each host on its own clock) given to `prof report`, `prof export`
and, where the pyarrow venv of scripts/install-deps.sh is, `prof export --format parquet`
as a directory: wall time, events per second, peak RSS (of prof and its children). The
events stream through; what grows with the ranks is per process (figures, each rank's
collectives)."""
import os
import shutil

from long_run import measured
from torch_stacks import cpu_model

RANKS = [int(x) for x in os.environ.get("BENCH_MERGE_RANKS", "8,16,64").split(",")]
STEPS, FILLER = 200, 500


def merge_ranks(build, work, clean_env):
    gen, prof = os.path.join(build, "bench", "gen_ranks"), os.path.join(build, "prof")
    env = clean_env({})
    print()
    print(f"Per-rank captures read as one job ({STEPS} steps x {FILLER + 3} events per rank, "
          f"8 ranks a host; {cpu_model()})")
    arrow = os.path.join(os.environ.get("LIBPROF_ARROWENV") or os.path.join(
        os.environ.get("HOME", "/tmp"), ".cache", "libprof", "arrowenv"), "bin", "python")
    parquet = os.path.exists(arrow)
    print(f"{'ranks':>6} {'events':>11} {'capture MB':>11}   {'report s':>9} {'M ev/s':>7} "
          f"{'peak MiB':>9}   {'export s':>9} {'M ev/s':>7} {'peak MiB':>9}"
          + (f"   {'parquet s':>9} {'M ev/s':>7} {'peak MiB':>9}" if parquet else ""))
    for n in RANKS:
        job = os.path.join(work, f"job{n}")
        os.makedirs(job)
        measured([gen, job, str(n), str(max(1, n // 8)), str(STEPS), str(FILLER), "1000",
                  "1", "20000"], env, work)
        size = sum(os.path.getsize(os.path.join(job, f)) for f in os.listdir(job)) / 1e6
        events = n * STEPS * (FILLER + 3)
        rw, rr, _ = measured([prof, "report", job], env, work)
        trace = job + ".json"
        ew, er, _ = measured([prof, "export", job, "-o", trace], env, work)
        if not os.path.exists(trace):
            raise SystemExit(f"bench: prof export {job} wrote no trace")
        line = (f"{n:>6} {events:>11,} {size:>11.1f}   {rw:>9.2f} {events / rw / 1e6:>7.1f} "
                f"{rr:>9.0f}   {ew:>9.2f} {events / ew / 1e6:>7.1f} {er:>9.0f}")
        if parquet:
            pq_dir = job + ".parquet"
            pw, pr, _ = measured([prof, "export", "--format", "parquet", job, "-o", pq_dir],
                                 dict(env, PROF_PYTHON=arrow), work)
            if not os.path.exists(os.path.join(pq_dir, "events.parquet")):
                raise SystemExit(f"bench: prof export --format parquet {job} wrote nothing")
            line += f"   {pw:>9.2f} {events / pw / 1e6:>7.1f} {pr:>9.0f}"
            shutil.rmtree(pq_dir)
        print(line)
        shutil.rmtree(job)
        os.unlink(trace)
