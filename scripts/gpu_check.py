#!/usr/bin/env python3
"""The real-GPU checks of docs/GPU.md, in one run, for a machine with an NVIDIA GPU and
PyTorch for CUDA: `make && python3 scripts/gpu_check.py [--python PY] [--steps N]`.
Runs scripts/gpu_workload.py with and without libprof (and torch.profiler), compares,
and prints a Markdown report to paste into docs/GPU.md. Exit status: 0 every check
passed, 1 some failed, 2 nothing could be checked (no CUDA device, no build)."""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOAD = os.path.join(ROOT, "scripts", "gpu_workload.py")
results = []  # (check, ok, detail)


def say(check, ok, detail):
    results.append((check, ok, detail))
    print("- **%s**: %s — %s" % (check, "PASS" if ok else "FAIL", detail), flush=True)


class Runner:
    def __init__(self, a):
        self.py, self.build, self.work, self.steps = a.python, a.build, a.work, a.steps
        self.n = 0

    def run(self, args, libprof=True, env=None, timeout=180):
        """Runs the workload; returns (rc, out, err, kv, prefix). Its output is kept
        beside the prefix (runNN.out), and a run that hangs costs one check, not the
        machine's whole lease."""
        self.n += 1
        prefix = os.path.join(self.work, "run%02d" % self.n)
        e = {k: v for k, v in os.environ.items() if not k.startswith("PROFILER_")}
        e.pop("LD_PRELOAD", None)
        if libprof:
            e.update({"LD_PRELOAD": os.path.join(self.build, "libprof.so"),
                      "PROFILER_AUTOSTART": "1", "PROFILER_OUTPUT": prefix})
        e.update(env or {})
        p = subprocess.run([self.py, WORKLOAD] + [str(x) for x in args], env=e,
                           capture_output=True, text=True, timeout=timeout)
        with open(prefix + ".out", "w") as f:
            f.write("$ %s%s %s\nexit %d\n--- stdout\n%s--- stderr\n%s" % (
                "".join("%s=%s " % kv for kv in sorted((env or {}).items())),
                "libprof" if libprof else "native", " ".join(map(str, args)),
                p.returncode, p.stdout, p.stderr))
        kv = dict(re.findall(r"(\w+)=(\S+)", p.stdout))
        return p.returncode, p.stdout, p.stderr, kv, prefix

    def trace(self, prefix):
        with open(prefix + ".json") as f:
            return json.load(f)["traceEvents"]

    def report(self, prefix):
        p = subprocess.run([os.path.join(self.build, "prof"), "report", prefix + ".prof",
                            "--format", "json"], capture_output=True, text=True)
        return json.loads(p.stdout)


def libprof_lines(err):
    """libprof's lines on stderr other than its summary and the trace-cap note."""
    return [l for l in err.splitlines() if l.startswith("libprof:") and
            not re.match(r"libprof: (\d+ events|the trace keeps)", l)]


GPU_WORK = ("cuda_kernel", "cuda_memset", "cuda_memcpy")


def gpu_work_name(name):
    """torch.profiler's name for a memset or copy, as libprof names it: "Memset (Device)"
    is "Memset", "Memcpy HtoD (Pinned -> Device)" is "Memcpy HtoD"."""
    return re.sub(r"^(Memset|Memcpy \w+) \(.*\)$", r"\1", name)


def measured_kernels(ev):
    """Kernels, memsets and copies that ran inside the NVTX range "measured": {name: count}."""
    ranges = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "nvtx" and
              e.get("name") == "measured"]
    if not ranges:
        return None
    r = ranges[0]
    lo, hi = r["ts"], r["ts"] + r["dur"]
    out = {}
    for e in ev:
        if e.get("ph") == "X" and e.get("cat") in GPU_WORK and lo <= e["ts"] <= hi:
            out[e["name"]] = out.get(e["name"], 0) + 1
    return out


def torch_gpu_work(theirs, ev):
    """torch.profiler's CUDA rows less its GPU-side spans of record_function ranges
    (Optimizer.step#SGD.step): libprof has those as CPU "user" ranges, not GPU work."""
    annotations = {e["name"] for e in ev if e.get("cat") == "user"}
    out = {}
    for k, v in theirs.items():
        if k not in annotations:
            out[gpu_work_name(k)] = out.get(gpu_work_name(k), 0) + v
    return out, sorted(annotations & set(theirs))


def compare_counts(check, ours, theirs, set_aside=()):
    if ours is None:
        say(check, False, "no NVTX range \"measured\" in libprof's trace")
        return
    diff = sorted(set(ours) | set(theirs), key=lambda k: -max(ours.get(k, 0), theirs.get(k, 0)))
    bad = [(k, ours.get(k, 0), theirs.get(k, 0)) for k in diff if ours.get(k, 0) != theirs.get(k, 0)]
    detail = "%d kernel names, %d launches (libprof) vs %d names, %d launches (torch.profiler)" % (
        len(ours), sum(ours.values()), len(theirs), sum(theirs.values()))
    if set_aside:
        detail += "; set aside, torch.profiler's GPU spans of record_function: %s" % (
            ", ".join(set_aside))
    if bad:
        detail += "; differing: " + "; ".join("%s libprof %d torch %d" % (k[:60], a, b)
                                             for k, a, b in bad[:8])
    say(check, not bad and ours, detail)


def check_kernels(r, mode):
    counts_path = os.path.join(r.work, "torch-%s.json" % mode)
    rc, _, err, _, _ = r.run([mode, r.steps], libprof=False,
                             env={"GPU_CHECK_TORCHPROF": counts_path})
    if rc:
        say("kernels vs torch.profiler (%s)" % mode, False, "torch.profiler run failed: %s"
            % err[-300:])
        return None
    with open(counts_path) as f:
        theirs = json.load(f)
    rc, _, err, _, prefix = r.run([mode, r.steps])
    if rc:
        say("kernels vs torch.profiler (%s)" % mode, False, "libprof run failed: %s" % err[-300:])
        return None
    ev = r.trace(prefix)
    theirs, set_aside = torch_gpu_work(theirs, ev)
    compare_counts("kernels vs torch.profiler (%s, %d steps)" % (mode, r.steps),
                   measured_kernels(ev), theirs, set_aside)
    return prefix, ev, err


def check_timeline(ev):
    """Every kernel after the launch its flow arrow starts at; GPU work inside the run."""
    starts = {e["id"]: e["ts"] for e in ev if e.get("ph") == "s" and e.get("cat") == "cuda_flow"}
    ends = [(e["id"], e["ts"]) for e in ev if e.get("ph") == "f" and e.get("cat") == "cuda_flow"]
    kernels = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "cuda_kernel"]
    host = [e["ts"] for e in ev if e.get("ph") == "X" and e.get("cat") not in
            ("cuda_kernel", "cuda_memcpy", "cuda_memset")]
    early = [i for i, t in ends if i in starts and t < starts[i]]
    unmatched = [i for i, _ in ends if i not in starts]
    lo, hi = (min(host), max(e["ts"] + e.get("dur", 0) for e in ev if "ts" in e)) if host else (0, 0)
    outside = [e for e in kernels if not lo <= e["ts"] <= hi]
    say("timeline", kernels and not early and not unmatched and not outside,
        "%d kernels, %d flow arrows; %d kernels before their launch, %d arrows without a "
        "launch, %d kernels outside the session" % (len(kernels), len(ends), len(early),
                                                    len(unmatched), len(outside)))


def check_api(ev, err):
    api = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "cuda_api"]
    names = {}
    for e in api:
        names[e["name"]] = names.get(e["name"], 0) + 1
    on_gpu_rows = [e for e in api if e["tid"] >= 0x40000000]
    top = ", ".join("%s %d" % kv for kv in sorted(names.items(), key=lambda kv: -kv[1])[:8])
    say("API records", api and not on_gpu_rows and not libprof_lines(err),
        "%d cuda_api events (%s); %d on GPU rows; other libprof lines: %r"
        % (len(api), top, len(on_gpu_rows), libprof_lines(err)))
    drv = sorted(n for n in names if n.startswith("cu") and not n.startswith("cuda"))
    say("driver names", all(not n.startswith("?") for n in names),
        "driver functions seen: %s" % (", ".join(drv[:12]) or "none"))


def check_copies(r):
    rc, _, err, kv, prefix = r.run(["copies"])
    ev = r.trace(prefix) if rc == 0 else []
    sizes = {(e["name"], e.get("args", {}).get("bytes")) for e in ev
             if e.get("ph") == "X" and e.get("cat") == "cuda_memcpy"}
    want = {("Memcpy HtoD", 64 << 20), ("Memcpy DtoH", 16 << 20)}
    rep = r.report(prefix) if rc == 0 else {}
    bw = ", ".join("%s %.1f GB/s" % (c["kind"], c["bandwidth_gbps"]) for c in rep.get("copies", []))
    say("copies", rc == 0 and want <= sizes, "copies seen %s; %s" % (sorted(sizes)[:6], bw))


def check_nvtx(r):
    rc, _, err, _, prefix = r.run(["emit_nvtx"])
    ev = r.trace(prefix) if rc == 0 else []
    aten = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "nvtx" and
            e["name"].startswith("aten::")]
    say("NVTX (emit_nvtx)", rc == 0 and len(aten) >= 10,
        "%d nvtx ranges named aten::*, e.g. %r" % (len(aten), [e["name"] for e in aten[:3]]))


def check_conflicts(r):
    path = os.path.join(r.work, "torch-conflict.json")
    rc, _, err, _, prefix = r.run(["matmul", 5], env={"GPU_CHECK_TORCHPROF": path})
    kernels = [e for e in r.trace(prefix) if e.get("cat") == "cuda_kernel"] if rc == 0 else []
    lines = libprof_lines(err)
    say("torch.profiler while libprof holds CUPTI", rc == 0 and len(lines) == 1 and kernels,
        "libprof lines %r; libprof kernels %d" % (lines, len(kernels)))
    rc, _, err, _, prefix = r.run(["matmul", 5], env={"GPU_CHECK_TORCHPROF": path,
                                                      "PROFILER_CUPTI": "0"})
    theirs = json.load(open(path)) if rc == 0 and os.path.exists(path) else {}
    ours = [e for e in r.trace(prefix) if e.get("cat") == "cuda_kernel"] if rc == 0 else []
    say("PROFILER_CUPTI=0 hands CUPTI to torch.profiler", rc == 0 and theirs and not ours,
        "torch.profiler kernels %d, libprof kernels %d" % (sum(theirs.values()), len(ours)))


def check_memory(r):
    api_peak = None
    for env, tag in (({}, "caching allocator"),
                     ({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
                      "expandable segments (cuMemCreate)"),
                     ({"PROFILER_CUDA": "0"}, "PROFILER_CUDA=0 (CUPTI's records)")):
        rc, _, err, kv, prefix = r.run(["train", 5], env=env)
        gm = r.report(prefix)["processes"][0].get("gpu_memory", []) if rc == 0 else []
        peak = gm[0]["peak_live_bytes"] if gm else 0
        source = gm[0]["source"] if gm else "-"
        reserved = int(kv.get("max_reserved", 0))
        ok = rc == 0 and gm and peak >= reserved > 0
        if not env:
            api_peak = peak
        if "PROFILER_CUDA" in env:
            # the same blocks as the wrapped calls saw (cuBLAS's own among them)
            ok = ok and source == "cupti" and peak == api_peak
        say("GPU memory, %s" % tag, ok,
            "libprof gpu/0 peak %d bytes (source %s), torch max_memory_reserved %d, "
            "max_memory_allocated %s" % (peak, source, reserved, kv.get("max_allocated")))


def check_memory_sites(r):
    rc, _, err, kv, prefix = r.run(["train", 5], env={"PROFILER_STACK": "alloc"})
    gm = r.report(prefix)["processes"][0].get("gpu_memory", []) if rc == 0 else []
    sites = gm[0].get("allocation_sites", []) if gm else []
    top = sorted(sites, key=lambda x: -x["bytes_at_peak"])[:3]
    say("GPU allocation sites (PROFILER_STACK=alloc)",
        rc == 0 and sites and sum(x["bytes_at_peak"] for x in sites) == gm[0]["peak_live_bytes"],
        "%d sites; top at the peak: %s; libprof lines %r" % (
            len(sites), "; ".join("%s %d" % (x["site"][:300], x["bytes_at_peak"]) for x in top),
            libprof_lines(err)))


def check_overhead(r, rounds=3):
    times = {"native": [], "libprof": [], "torch.profiler": []}
    for _ in range(rounds):
        times["native"].append(float(r.run(["train", r.steps], libprof=False)[3]["step_us"]))
        times["libprof"].append(float(r.run(["train", r.steps])[3]["step_us"]))
        times["torch.profiler"].append(float(r.run(
            ["train", r.steps], libprof=False,
            env={"GPU_CHECK_TORCHPROF": os.path.join(r.work, "t.json")})[3]["step_us"]))
    med = {k: statistics.median(v) for k, v in times.items()}
    base = med["native"]
    print("\n| training step (median of %d runs of %d steps) | us | vs native |\n|---|---|---|"
          % (rounds, r.steps))
    for k, v in med.items():
        print("| %s | %.1f | %+.1f%% |" % (k, v, 100 * (v / base - 1)))
    print()
    say("overhead", True, "libprof %+.1f%%, torch.profiler %+.1f%% per training step"
        % (100 * (med["libprof"] / base - 1), 100 * (med["torch.profiler"] / base - 1)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default=sys.executable, help="a Python with CUDA PyTorch")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--work", default=None, help="where outputs go (default: a temp dir)")
    ap.add_argument("--only", default=None,
                    help="comma-separated checks to run (injection, train, matmul, copies, "
                    "nvtx, conflicts, memory, sites, overhead); default all")
    a = ap.parse_args()
    for f in ("libprof.so", "prof"):
        if not os.path.exists(os.path.join(a.build, f)):
            print("gpu_check: %s/%s is missing: run make first" % (a.build, f))
            return 2
    probe = subprocess.run([a.python, "-c", "import torch; print(torch.__version__, "
                            "torch.version.cuda, torch.cuda.is_available() and "
                            "torch.cuda.get_device_name(0))"], capture_output=True, text=True)
    if probe.returncode or probe.stdout.split()[-1] == "False":
        said = ((probe.stdout or probe.stderr).strip().splitlines() or ["?"])[-1]
        print("gpu_check: no CUDA device for %s (%s): nothing checked" % (a.python, said[-200:]))
        return 2
    a.work = a.work or tempfile.mkdtemp(prefix="libprof-gpu-")
    os.makedirs(a.work, exist_ok=True)
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    print("## GPU checks: torch %s, %s\n" % (probe.stdout.strip(), smi))
    r = Runner(a)

    def guarded(name, fn, *args):
        """A check that breaks (a run that fails, an output not there) is a failed check,
        not the end of the others: a GPU machine's time is short."""
        try:
            return fn(*args)
        except Exception as e:  # noqa: BLE001 (reported, then the next check)
            say(name, False, "the check itself failed: %s: %s" % (type(e).__name__, e))
            return None

    def injection():
        rc, _, err, _, prefix = r.run(["matmul", 5])
        ev = r.trace(prefix) if rc == 0 else []
        say("injection", rc == 0 and not libprof_lines(err) and
            any(e.get("cat") == "cuda_kernel" for e in ev),
            "exit %d, libprof lines %r, %d kernels, stderr tail %r"
            % (rc, libprof_lines(err), sum(e.get("cat") == "cuda_kernel" for e in ev),
               err[-200:] if rc else ""))

    def after_train(train):
        check_timeline(train[1])
        check_api(train[1], train[2])
        lost = r.report(train[0]).get("lost_events")
        say("nothing lost at exit", lost == 0, "lost events %r" % lost)

    only = set(a.only.split(",")) if a.only else None

    def wanted(name):
        return only is None or name in only

    if wanted("injection"):
        guarded("injection", injection)
    train = None
    if wanted("train"):
        train = guarded("kernels vs torch.profiler (train)", check_kernels, r, "train")
    if wanted("matmul"):
        guarded("kernels vs torch.profiler (matmul)", check_kernels, r, "matmul")
    if train:
        guarded("timeline and API records", after_train, train)
    for name, title, fn in (("copies", "copies", check_copies),
                            ("nvtx", "NVTX (emit_nvtx)", check_nvtx),
                            ("conflicts", "CUPTI conflicts", check_conflicts),
                            ("memory", "GPU memory", check_memory),
                            ("sites", "GPU allocation sites", check_memory_sites),
                            ("overhead", "overhead", check_overhead)):
        if wanted(name):
            guarded(title, fn, r)
    failed = [c for c, ok, _ in results if not ok]
    print("\n%d checks, %d failed%s; outputs in %s" % (len(results), len(failed),
                                                     (": " + ", ".join(failed)) if failed else "",
                                                     a.work))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
