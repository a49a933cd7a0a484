# kineto: the traces the PyTorch profiler's tools read: `prof export --format kineto`
# loaded by TensorBoard's PyTorch profiler plugin (through its HTTP API) and by Holistic
# Trace Analysis, and the default Chrome trace loaded by TensorBoard without breaking it.
# Both tools come from the Python package index in a venv of their own (install-deps:
# ~/.cache/libprof/tbenv); the cases are skipped, saying so, only where install-deps
# could not make it. Run by test/e2e/run.py in the harness's namespace (see README.md).

KT_TRAIN = r"""
import sys, torch, libprof
torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
opt = torch.optim.SGD(m.parameters(), lr=0.01)
x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
for i in range(int(sys.argv[1])):
    with libprof.range("LABEL1: forward"):
        loss = torch.nn.functional.cross_entropy(m(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    libprof.step()
"""


def kt_free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def kt_get(port, path, timeout=5):
    import urllib.request
    with urllib.request.urlopen("http://127.0.0.1:%d/data/plugin/pytorch_profiler/%s"
                                % (port, path), timeout=timeout) as f:
        return json.loads(f.read().decode())


def kt_tensorboard(c, logdir):
    """TensorBoard on logdir, its runs loaded: (process, port, its log file)."""
    py = tools_python("torch_tb_profiler")
    port = kt_free_port()
    log = open(c.path("tensorboard.log"), "w")
    tb = subprocess.Popen([py, "-m", "tensorboard.main", "--logdir", logdir, "--port",
                           str(port), "--host", "127.0.0.1"], stdout=log, stderr=log,
                          env=dict(os.environ, **c.env), cwd=c.path())
    deadline = time.monotonic() + 120
    runs = None
    while time.monotonic() < deadline:
        check(tb.poll() is None, "tensorboard ended: %s" % read_text(c.path("tensorboard.log")))
        try:
            runs = kt_get(port, "runs")
            if runs["runs"] and not runs["loading"]:
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.5)
    check(runs and runs["runs"] and not runs["loading"], "tensorboard did not load the runs in "
          "120 s: %r" % runs)
    return tb, port, log


def kt_steps(port, run, worker):
    spans = kt_get(port, "spans?run=%s&worker=%s" % (run, worker))
    o = kt_get(port, "overview?run=%s&worker=%s&span=%s" % (run, worker, spans[0]))
    return [row[0] for row in o["steps"]["rows"]], o


@case
def kineto_tensorboard_loads_torch_run(c):
    # A PyTorch CPU run (Debian's torch, libprof.step() per iteration) exported with
    # --format kineto: TensorBoard's plugin loads it with no error, sees one step per
    # libprof.step(), and its operator table has prof report's operators with their
    # counts. The default trace of the same run loads too (it broke the plugin before:
    # allocator calls were category memory).
    script = c.path("train.py")
    with open(script, "w") as f:
        f.write(KT_TRAIN)
    steps = 6
    # the trace's own default for allocator calls (the big ones, the rest as counters):
    # with every call of `import torch` in it (the suite's PROFILER_TRACE_ALLOC=all) the
    # two files were 290 and 490 MB, which TensorBoard did not load in 120 s on a loaded
    # machine
    r = c.run(["/usr/bin/python3", script, steps],
              env={"PYTHONPATH": os.path.join(ROOT, "scripts"), "PROFILER_TRACE_ALLOC": None})
    eq(r.rc, 0, "the training script: %r" % r)
    x = c.prof("export", c.path("libprof.prof"), "--format", "kineto")
    eq(x.rc, 0, "prof export --format kineto: %r" % x)
    kin = c.path("libprof.pt.trace.json")
    with open(kin) as f:
        doc = json.load(f)
    check(doc.get("schemaVersion") == 1 and "deviceProperties" in doc, "the head: %r"
          % {k: doc[k] for k in doc if k != "traceEvents"})
    cats = {e.get("cat") for e in doc["traceEvents"]}
    check({"cpu_op", "user_annotation", "cpu_instant_event"} <= cats, "categories %r" % cats)
    rep = c.report_json(c.path("libprof.prof"))
    eq(rep["steps"]["count"], steps, "prof report's steps")
    logdir = c.path("logs")
    for run, src in (("kineto", kin), ("default", c.path("libprof.json"))):
        os.makedirs(os.path.join(logdir, run))
        shutil.copy(src, os.path.join(logdir, run, "worker0.pt.trace.json"))
    tb, port, log = kt_tensorboard(c, logdir)
    try:
        eq(sorted(kt_get(port, "runs")["runs"]), ["default", "kineto"], "runs")
        names, o = kt_steps(port, "kineto", "worker0")
        eq(len(names), steps, "TensorBoard's steps (%r)" % names)
        table = kt_get(port, "operation/table?run=kineto&worker=worker0&span=%s&group_by="
                       "Operation" % kt_get(port, "spans?run=kineto&worker=worker0")[0])
        tb_ops = {row["name"]: row["calls"] for row in table["data"]}
        ops = {row["name"]: row["count"] for row in rep["rows"] if row["category"] == "operator"}
        eq(tb_ops, ops, "TensorBoard's operator table (name: calls) vs prof report's")
        # the default trace: loaded, its overview made (no operator events matter here)
        dnames, _ = kt_steps(port, "default", "worker0")
        check(dnames, "the default trace's overview: %r" % dnames)
    finally:
        tb.terminate()
        tb.wait(timeout=30)
        log.close()
    errors = [l for l in read_text(c.path("tensorboard.log")).splitlines()
              if "Traceback" in l or "Failed to parse" in l or "Exception" in l]
    eq(errors, [], "errors in TensorBoard's log")
    c.note("%d steps, %d operators equal in TensorBoard and prof report" % (steps, len(ops)))


@case
def kineto_hta_fake_gpu(c):
    # A fake-GPU capture (the fake CUPTI's kernels, copies and sets on two streams)
    # exported with --format kineto: Holistic Trace Analysis loads it and runs its
    # temporal and kernel breakdowns, which see the kernels libprof recorded.
    py = tools_python("hta")
    out, bins = build_cupti_programs()
    kernels = 12
    r, t = profile(c, [bins["gpu_app"], "plain", kernels])
    os.makedirs(c.path("hta"))
    x = c.prof("export", c.path("libprof.prof"), "--format", "kineto", "-o",
               c.path("hta", "rank0.pt.trace.json"))
    eq(x.rc, 0, "prof export --format kineto: %r" % x)
    with open(c.path("hta", "rank0.pt.trace.json")) as f:
        doc = json.load(f)
    gpu = [e for e in doc["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy",
                                                            "gpu_memset")]
    eq(sorted({(e["pid"], e["tid"]) for e in gpu}), [(0, 7), (0, 13)],
       "GPU work on pid = device, tid = stream")
    eq([d["id"] for d in doc["deviceProperties"]], [0], "deviceProperties")
    code = r"""
import json, sys
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
temporal = a.get_temporal_breakdown(visualize=False)
kernels = a.get_gpu_kernel_breakdown(visualize=False)
with open(sys.argv[2], "w") as f:
    json.dump({"temporal": temporal.to_dict(orient="records"),
               "kernel_types": kernels[0].to_dict(orient="records"),
               "kernels": sorted(set(kernels[1]["name"]))}, f, default=str)
"""
    # the answer goes to a file of its own: HTA's logging and any progress output of the
    # libraries under it stay on stdout and stderr, and are not parsed
    res_file = c.path("hta-result.json")
    h = subprocess.run([py, "-c", code, c.path("hta"), res_file], capture_output=True,
                       text=True, timeout=300, cwd=c.path())
    eq(h.returncode, 0, "HTA: %s" % h.stderr[-3000:])
    try:
        res = load_json(res_file)
    except (OSError, ValueError) as e:
        raise Fail("HTA's result %s: %s (stdout %r)" % (res_file, e, h.stdout[-2000:]))
    check(res["temporal"] and res["temporal"][0].get("rank") == 0,
          "temporal breakdown %r" % res["temporal"])
    check(VECADD in res["kernels"] and GEMM in res["kernels"],
          "HTA's kernels %r" % res["kernels"])
    c.note("HTA: temporal %r; kernels %r" % (res["temporal"][0], res["kernels"]))
