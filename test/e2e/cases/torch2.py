# torch2: the current PyTorch 2.x from PyPI (its own venv, made by scripts/install-deps.sh
# and found by the harness's torch2_python()), beside Debian's 1.13 of frameworks.py.
# Run by test/e2e/run.py in the harness's namespace (see README.md).

T2_IMPORT = ("import time, torch\n"
             "x = torch.ones(64, 64) @ torch.ones(64, 64)\n"
             "print('sum=%d' % x.sum().item())\n"
             "print('end=%.6f' % time.monotonic(), flush=True)\n")


def t2_exit_wait(c, py, env=None, preload=True):
    """Runs T2_IMPORT; (result, seconds from its last line to the process's exit)."""
    argv = [py, "-c", T2_IMPORT]
    p, out, err, t0 = c.start(argv, env, preload=preload, autostart=preload)
    r = c.finish(argv, p, out, err, t0, 120)
    check(r.rc == 0 and r.kv("sum") == ["262144"], "the program failed: %r" % r)
    return r, t0 + r.elapsed - float(r.kv("end")[0])


# serial: it measures time (the wait at exit beside the unprofiled run's)
@case(serial=True)
def torch2_import_exits(c):
    # `import torch` (2.x) runs /sbin/ldconfig -p (ctypes.util.find_library), a static
    # binary: under the bare command the program must exit, outputs written, without
    # waiting on a child that never joins (issue 12's hang: 3184b9f times out here at 120 s)
    py, version = torch2_python()
    r, wait = t2_exit_wait(c, py)
    _, native = t2_exit_wait(c, py, preload=False)
    s = parse_summary(r.err)
    check(s, "no summary line: %r" % r.err[-2000:])
    eq(s[2], 1, "processes (ldconfig is not one)")
    # complete when the program has exited (the trace of millions of events is not parsed)
    for ext in (".txt", ".prof", ".json"):
        check(os.path.exists(c.path("libprof" + ext)), "libprof%s missing" % ext)
    with open(c.path("libprof.json"), "rb") as f:
        f.seek(-16, os.SEEK_END)
        check(f.read().rstrip().endswith(b"}"), "libprof.json is cut short")
    c.note("torch %s: exit %.2fs after the last line (%.2fs unprofiled: %.2fs more, writing "
           "the outputs of %d events), %.1fs in all; %d events lost in the bare import"
           % (version, wait, native, wait - native, s[0], r.elapsed, s[1]))
    # the outputs of a few million events are written before the exit returns
    check(wait - native < 20, "exit waited %.2fs more than unprofiled" % (wait - native))


# serial, as torch_ops_match_torch_profiler (frameworks.py): exact counts at the region's
# edge need a quiet machine
@case(serial=True)
def torch2_ops_match_torch_profiler(c):
    # frameworks.py's torch_ops_match_torch_profiler, on torch 2.x: every op both see
    # counted alike, nothing outside torch.profiler's region
    py, version = torch2_python()
    ours, theirs = torch_follow(c, "cnn", ("aten::conv2d", "aten::addmm", "aten::max_pool2d",
                                           "aten::relu"), python=py)
    missing = sorted(k for k in theirs if k.startswith("aten::") and k not in ours)
    eq(missing, [], "aten ops torch.profiler shows and libprof does not")
    # its rows that are not ATen operators are compared by torch_labels.py
    c.note("torch %s" % version)


# serial, with the 1.13 case's slack of two, for the 1.13 case's reasons (frameworks.py)
@case(serial=True)
def torch2_resnet_ops_match_torch_profiler(c):
    py, version = torch2_python()
    torch_follow(c, "resnet", ("aten::conv2d", "aten::batch_norm", "aten::add",
                               "aten::adaptive_avg_pool2d", "aten::convolution_backward"),
                 slack=2, python=py)
    c.note("torch %s" % version)


T2_TRAIN_STEPS = 10
# ops of torch_train_loop.py's steps whose count is exact: two Linear layers, one ReLU
T2_TRAIN_OPS = {"aten::linear": 2 * T2_TRAIN_STEPS, "aten::addmm": 2 * T2_TRAIN_STEPS,
                "aten::relu": T2_TRAIN_STEPS, "aten::threshold_backward": T2_TRAIN_STEPS,
                "aten::cross_entropy_loss": T2_TRAIN_STEPS}


def t2_train_ops(c, env):
    """torch_train_loop.py under env: its operator rows in libprof.txt and prof report
    (the trace of the bare command's few million allocations is not parsed here)."""
    py, version = torch2_python()
    script = os.path.join(ROOT, "test", "e2e", "frameworks", "torch_train_loop.py")
    r = c.run([py, script, T2_TRAIN_STEPS], env=env, timeout=300)
    check(r.rc == 0, "exit status %s: %r" % (r.rc, r))
    eq(r.kv("steps"), [str(T2_TRAIN_STEPS)], "the loop's steps")
    s = parse_summary(r.err)
    check(s, "no summary line: %r" % r.err[-2000:])
    rows = text_rows(c.text())
    eq({k: rows.get(("operator", k)) for k in T2_TRAIN_OPS}, T2_TRAIN_OPS,
       "operator rows in libprof.txt")
    rep = c.report_json(c.path("libprof.prof"), "--category", "operator")
    got = {x["name"]: x["count"] for x in rep["rows"] if x["category"] == "operator"}
    eq({k: got.get(k) for k in T2_TRAIN_OPS}, T2_TRAIN_OPS, "operator rows of prof report")
    c.note("torch %s: %d operator rows, %d events (%d lost)" % (version, len(got), s[0], s[1]))


@case
def torch2_bare_command_records_ops(c):
    # the promise: no setting at all, and the operators are there (frameworks on by default)
    t2_train_ops(c, {})


@case
def torch2_auto_records_ops(c):
    # the same with the framework asked for (what the bare command must do by default)
    t2_train_ops(c, {"PROFILER_FRAMEWORK": "auto"})


@case
def torch2_follows_kineto_on_demand(c):
    # Follow mode follows torch's profiler however it starts: here Kineto's on-demand
    # trace (KINETO_USE_DAEMON=1, asked for by dynolog's `dyno gputrace`), which starts
    # torch's profiler from Kineto's own thread (LibKinetoClient::start ->
    # enableProfiler). A stand-in daemon in the case's socket folder asks for a 1 s trace:
    # libprof records that second only, op for op what Kineto's trace holds.
    py, version = torch2_python()
    fw = os.path.join(ROOT, "test", "e2e", "frameworks")

    def attempt(k):
        """One run of the loop with the stand-in: (the run, Kineto's ops by name, the
        stand-in's output, the capture)."""
        folder = tempfile.mkdtemp(prefix="kd", dir="/tmp")  # socket paths: 108 bytes at most
        try:
            daemon = subprocess.Popen([sys.executable, os.path.join(fw, "dynolog_standin.py"),
                                       folder, os.path.join(folder, "kineto.json"), "1000",
                                       "90"], stdout=subprocess.PIPE, text=True)
            try:
                check(daemon.stdout.readline().startswith("listening="),
                      "the stand-in did not start")
                prefix = c.path("run%d" % k)
                r = c.run([py, os.path.join(fw, "torch_ondemand_loop.py"), folder, "kineto", 60],
                          env={"PROFILER_FOLLOW": "1", "KINETO_USE_DAEMON": "1",
                               "KINETO_IPC_SOCKET_DIR": folder, "PROFILER_OUTPUT": prefix},
                          timeout=120)
            finally:
                daemon.kill()
                said = daemon.communicate()[0]
            check(r.rc == 0, "the loop failed: %r" % r)
            eq(r.kv("traced"), ["1"], "Kineto wrote its on-demand trace (stand-in said %r)" % said)
            check("served_pid=%s" % r.kv("pid")[0] in said, "the stand-in served: %r" % said)
            traces = glob.glob(os.path.join(folder, "kineto*.json"))
            eq(len(traces), 1, "Kineto's trace files")
            with open(traces[0]) as f:
                theirs = {}
                for e in json.load(f)["traceEvents"]:
                    if e.get("cat") == "cpu_op":
                        theirs[e["name"]] = theirs.get(e["name"], 0) + 1
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return r, theirs, prefix + ".prof"

    # On a loaded machine Kineto's on-demand trace sometimes comes out empty (its
    # metadata only: torch's profiler was never started, and libprof, following it,
    # records no operator either): asked again, up to three times.
    for k in range(3):
        r, theirs, capture = attempt(k)
        rep = c.report_json(capture)
        ours = {x["name"]: x["count"] for x in rep["rows"] if x["category"] == "operator"}
        if theirs:
            break
        eq(ours, {}, "operators libprof recorded while Kineto's trace was empty")
    else:
        c.note("Kineto's on-demand trace was empty in 3 runs (a loaded machine?): libprof "
               "recorded no operator either; the op-for-op comparison was not made")
        return
    iters = int(r.kv("iters")[0])
    check(0 < theirs.get("aten::mm", 0) < iters, "Kineto's aten::mm %r of %d iterations"
          % (theirs.get("aten::mm"), iters))
    # an op at the window's edge may fall either side of the hooks (torch_follow's slack)
    differ = [(k, ours.get(k), n) for k, n in sorted(theirs.items())
              if abs(ours.get(k, 0) - n) > 2]
    eq(differ, [], "ops whose count differs from Kineto's trace (name, libprof, Kineto)")
    eq(sorted(set(ours) - set(theirs)), [], "ops libprof recorded that Kineto's trace lacks")
    c.note("torch %s: %d iterations, the on-demand second held aten::mm x%d (libprof %d)%s"
           % (version, iters, theirs["aten::mm"], ours.get("aten::mm", 0),
              "; Kineto's trace was empty in %d run%s before" % (k, "s" if k > 1 else "")
              if k else ""))


T2_COMPILE_STEPS = 5


@case
def torch2_compiled_rows(c):
    # a torch.compile'd MLP training loop under the bare command: the compiled code's rows
    # torch.profiler shows (CompiledFunction, CompiledFunctionBackward, the compiled
    # region, dynamo's cache lookup) and inductor's generated CPU kernels by name (libprof
    # sets TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE=1, so torch.profiler names them too),
    # counted over the whole run: torch.profiler's count of its steps, plus the steps run
    # outside it
    py, version = torch2_python()
    script = os.path.join(FRAMEWORKS, "torch_compile_mlp.py")
    r = c.run([py, script, T2_COMPILE_STEPS], timeout=400,
              env={"TORCHINDUCTOR_CACHE_DIR": c.path("inductor")})
    check(r.rc == 0, "exit status %s: %r" % (r.rc, r))
    outside = int(r.kv("outside")[0])
    theirs = torchprof_counts(r.out)
    rep = c.report_json(c.path("libprof.prof"), "--category", "operator")
    ours = {x["name"]: x["count"] for x in rep["rows"] if x["category"] == "operator"}
    compiled = ["CompiledFunction", "CompiledFunctionBackward", "Torch-Compiled Region: 0/0"]
    kernels = sorted(k for k in theirs if k.startswith("graph_0_cpp_fused_"))
    check(kernels, "no inductor kernel in torch.profiler's table: %r" % sorted(theirs))
    eq({k: theirs.get(k) for k in compiled + kernels},
       {k: T2_COMPILE_STEPS for k in compiled + kernels}, "torch.profiler's counts")
    eq({k: ours.get(k) for k in compiled + kernels},
       {k: theirs[k] + outside for k in compiled + kernels},
       "libprof's counts (torch.profiler's + %d steps outside it)" % outside)
    # the first call compiles: its frame has no cache entry to look up yet
    eq(ours.get("TorchDynamo Cache Lookup"), theirs.get("TorchDynamo Cache Lookup", 0) + outside - 1,
       "dynamo's cache lookups (every call but the first)")
    eq(sorted(k for k in ours if k.startswith("graph_0_cpp_fused_")), kernels,
       "the kernels libprof names")
    c.note("torch %s: %s" % (version, ", ".join("%s x%d" % (k, ours[k]) for k in kernels)))
