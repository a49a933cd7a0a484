# frameworks_default: the bare command (PROFILER_AUTOSTART=1 LD_PRELOAD=libprof.so, no
# PROFILER_FRAMEWORK) records every supported framework the program loads, whenever it
# loads it; the summary line names them; PROFILER_FRAMEWORK=none turns it off.
# Run by test/e2e/run.py in the harness's namespace (see README.md); uses frameworks.py's
# helpers (need_torch, need_module, FRAMEWORKS, ort_library, ort_model).

# A small torch 1.13 training loop (Debian's /usr/bin/python3): every op of it is an
# at::_ops entry point the torch preset traces.
TORCH_LOOP = """
import sys
import torch
import torch.nn as nn
torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
for step in range(int(sys.argv[1])):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
print("loss=%.4f" % loss.item())
"""

TORCH_OPS = ("aten::linear", "aten::addmm", "aten::relu", "aten::cross_entropy_loss")


def torch_loop(c, name="loop.py"):
    path = c.path(name)
    with open(path, "w") as f:
        f.write(TORCH_LOOP)
    return path


@case
def frameworks_default_torch_training_loop(c):
    need_torch()
    script, steps = torch_loop(c), 6
    r, t = profile(c, ["/usr/bin/python3", script, steps])
    check(r.kv("loss"), "the script did not finish: %r" % r)
    ops = trace_counts(t, "operator")
    for name in TORCH_OPS:
        check(ops.get(name, 0) >= steps, "%s: %s calls under the bare command, want >= %d "
              "(operators: %r)" % (name, ops.get(name), steps, sorted(ops.items())[:12]))
    eq(summary_frameworks(r.err), ["torch"], "the frameworks the summary line names")
    eq(text_rows(c.text()).get(("operator", "aten::addmm")), ops["aten::addmm"],
       "aten::addmm in the text table")
    # the default records what the explicit preset does, op for op
    r2 = c.run(["/usr/bin/python3", script, steps],
               env={"PROFILER_FRAMEWORK": "torch", "PROFILER_OUTPUT": "preset"})
    check(r2.rc == 0 and r2.kv("loss"),
          "the script did not finish with PROFILER_FRAMEWORK=torch: %r" % r2)
    t2, _ = c.outputs("preset")
    eq(ops, trace_counts(t2, "operator"), "operators: bare command vs PROFILER_FRAMEWORK=torch")
    eq(summary_frameworks(r2.err), ["torch"], "the summary line with PROFILER_FRAMEWORK=torch")


@case
def frameworks_default_mxnet(c):
    need_module("mxnet", "pip install mxnet==1.9.1 numpy==1.23.5")
    script = os.path.join(FRAMEWORKS, "mxnet_trace_example.py")
    r, t = profile(c, [sys.executable, script])
    api = trace_counts(t, "MXNET_C_API")
    eq(api.get("MXImperativeInvokeEx"), 2, "MXImperativeInvokeEx (diag, sum)")
    check(api.get("MXSymbolGetAtomicSymbolInfo", 0) > 1000,
          "MXNet's start-up calls are missing: %r" % sorted(api.items())[:20])
    ops = trace_counts(t, "operator")
    for name in ("diag", "sum"):
        eq(ops.get(name), 1, "operator %s" % name)
    eq(summary_frameworks(r.err), ["mxnet"], "the frameworks the summary line names")
    rows = text_rows(c.text())
    eq(rows.get(("MXNET_C_API", "MXImperativeInvokeEx")), 2, "the MXNET_C_API table's row")


@case
def frameworks_default_none(c):
    need_torch()
    script = torch_loop(c)
    r, t = profile(c, ["/usr/bin/python3", script, 3], env={"PROFILER_FRAMEWORK": "none"})
    check(r.kv("loss"), "the script did not finish: %r" % r)
    check("PROFILER_FRAMEWORK" not in r.err, "none refused: %r" % r.err[-600:])
    eq(t.select("X", cat="operator"), [], "operator events with PROFILER_FRAMEWORK=none")
    eq(summary_frameworks(r.err), [], "the frameworks the summary line names")
    check(not any(cat == "operator" for cat, _ in text_rows(c.text())),
          "an operator table with PROFILER_FRAMEWORK=none")


@case
def frameworks_default_loaded_after_start(c):
    # torch imported after the program started the session itself (prof_set_state through
    # scripts/libprof.py; no autostart): its objects are found when they are loaded
    need_torch()
    script = c.path("late.py")
    with open(script, "w") as f:
        f.write("import sys\nsys.path.insert(0, %r)\nimport libprof\n"
                "assert libprof.set_state('run')\n" % os.path.join(ROOT, "scripts") +
                "import torch\nx = torch.ones(4, 4)\nfor _ in range(3):\n    x = torch.mm(x, x)\n"
                "print('done=%d' % int(x.sum().item()))\n")
    r = c.run(["/usr/bin/python3", script], autostart=False)
    check(r.rc == 0 and r.kv("done"), "the script failed: %r" % r)
    t, _ = c.outputs()
    eq(trace_counts(t, "operator").get("aten::mm"), 3, "aten::mm after the session started")
    eq(summary_frameworks(r.err), ["torch"], "the frameworks the summary line names")
    # ONNX Runtime dlopen'ed by a C program after the session started at load: its
    # OrtApi calls are recorded, as with PROFILER_FRAMEWORK=onnxruntime
    lib = ort_library()
    _, dl = build_ort_programs(lib)
    model = c.path("add.onnx")
    ort_model(model)
    r2 = c.run([dl, model, 3, lib], env={"PROFILER_OUTPUT": "ort", "PROFILER_PROFILE_MEMORY": "0"})
    check(r2.rc == 0 and r2.kv("wrong") == ["0"], "ONNX Runtime's run: %r" % r2)
    t2, _ = c.outputs("ort")
    got = trace_counts(t2, "ORT_API")
    eq(got.get("OrtApi::Run"), 3, "OrtApi::Run calls of the dlopen'ed ONNX Runtime")
    eq(summary_frameworks(r2.err), ["onnxruntime"], "the frameworks the summary line names")


@case
def frameworks_default_tensorflow(c):
    # TensorFlow's eager ops and C API under the bare command, as with its preset
    py = tf_python()
    steps = 5
    r, t = profile(c, [py, os.path.join(FRAMEWORKS, "tf_eager.py"), steps],
                   env={"TF_CPP_MIN_LOG_LEVEL": "2", "PROFILER_PROFILE_MEMORY": "0"})
    check(r.kv("sum"), "the script did not finish: %r" % r)
    ops = trace_counts(t, "operator")
    check(ops.get("MatMul", 0) >= 2 * steps and "TFE_Execute" not in ops,
          "eager ops (category operator): %r" % sorted(ops.items())[:20])
    eq(trace_counts(t, "TF_C_API").get("TFE_NewContext"), 1, "TFE_NewContext (TF_C_API)")
    eq(summary_frameworks(r.err), ["tensorflow"], "the frameworks the summary line names")
