# torch_labels: torch.profiler's rows that are not ATen operators — record_function
# labels, the framework's own (ProfilerStep#N, Optimizer.step#SGD.step,
# enumerate(DataLoader)#...), autograd nodes and the engine's evaluate_function — which
# libprof takes from PyTorch's RecordFunction callbacks (preload/frameworks/
# torch_callbacks.c), on Debian's torch 1.13 and the PyPI 2.x of torch2.py.
# Run by test/e2e/run.py in the harness's namespace (see README.md).

LABELS_SCRIPT = os.path.join(ROOT, "test", "e2e", "frameworks", "torch_tutorial_labels.py")
LABELS_STEPS = 5


def on_both_torches(check_fn, name, serial=False):
    """Registers two cases running check_fn(c, python): name on Debian's torch 1.13 and
    torch2_<rest of name> on the PyPI 2.x of torch2.py (serial: each alone)."""
    def on_debian(c):
        need_torch()
        check_fn(c, "/usr/bin/python3")

    def on_pypi(c):
        py, version = torch2_python()
        check_fn(c, py)
        c.note("torch %s" % version)
    on_debian.__name__ = name
    on_pypi.__name__ = "torch2_" + name[len("torch_"):]
    case(on_debian, serial)
    case(on_pypi, serial)


def labels_rows(c):
    """{name: count} and {name: total_ns} of libprof's user and operator rows."""
    rep = c.report_json(c.path("libprof.prof"))
    rows = [x for x in rep["rows"] if x["category"] in ("user", "operator")]
    return ({x["name"]: x["count"] for x in rows}, {x["name"]: x["total_ns"] for x in rows},
            [x["name"] for x in rep["rows"] if x["category"] == "user"])


def labels_follow(c, python):
    """The tutorial's MyModule trained under torch.profiler with a schedule, libprof
    following it: every row of torch's key_averages() that is not an ATen operator is in
    libprof's tables with torch's count, and the user table is in torch's order."""
    r = c.run([python, LABELS_SCRIPT, "follow"], env={"PROFILER_FOLLOW": "1"}, timeout=300)
    check(r.rc == 0, "exit status %s: %r" % (r.rc, r))
    theirs, their_time = {}, {}
    for line in r.out.splitlines():
        for tag, into in (("TORCHPROF ", theirs), ("TORCHTIME ", their_time)):
            if line.startswith(tag):
                k, n = line[len(tag):].rsplit(" ", 1)
                into[k] = int(n)
    wanted = {k: n for k, n in theirs.items() if not k.startswith("aten::")}
    for k in ("LABEL1: linear pass", "LABEL2: masking", "ProfilerStep*",
              "Optimizer.step#SGD.step", "autograd::engine::evaluate_function: AddmmBackward0",
              "AddmmBackward0", "torch::autograd::AccumulateGrad"):
        check(k in wanted, "torch.profiler has no %r row: %r" % (k, sorted(wanted)))
    ours, our_time, user_order = labels_rows(c)
    eq({k: ours.get(k) for k in wanted}, wanted,
       "torch.profiler's rows that are not ATen operators, with libprof's counts")
    # the user table in torch's order, where torch's totals are not within 2x of each other
    user = [k for k in user_order if k in wanted]
    swapped = [(a, b) for i, a in enumerate(user) for b in user[i + 1:]
               if their_time[b] > 2 * their_time[a]]
    eq(swapped, [], "user rows libprof puts before rows torch.profiler times 2x longer")
    c.note("%d rows besides ATen operators, all with torch's counts; user table: %s"
           % (len(wanted), ", ".join(user)))


on_both_torches(labels_follow, "torch_labels_match_torch_profiler")


def engine_rows_bare(c, python):
    """The same script under the bare command (not following): libprof records the whole
    run, and the engine's evaluate_function rows, which cost every operator a
    RecordFunction, only while torch.profiler runs (torch's binding takes the address of
    its start and stop, hooked by address): their counts are torch's."""
    r = c.run([python, LABELS_SCRIPT, "follow"], timeout=300)
    check(r.rc == 0, "exit status %s: %r" % (r.rc, r))
    engine = "autograd::engine::evaluate_function: "
    theirs = {k: n for k, n in torchprof_counts(r.out).items() if k.startswith(engine)}
    check(len(theirs) >= 3, "torch.profiler's engine rows: %r" % theirs)
    ours, _, _ = labels_rows(c)
    eq({k: n for k, n in ours.items() if k.startswith(engine)}, theirs,
       "the engine's rows, libprof's (whole run) and torch.profiler's (its steps)")
    c.note("%d engine rows, e.g. %s" % (len(theirs), sorted(theirs.items())[0]))


on_both_torches(engine_rows_bare, "torch_engine_rows_bare_command")


def labels_bare(c, python):
    # no setting at all: the labels, optimizer and DataLoader rows, autograd nodes
    r = c.run([python, LABELS_SCRIPT, "bare"], timeout=300)
    check(r.rc == 0, "exit status %s: %r" % (r.rc, r))
    eq(r.kv("steps"), [str(LABELS_STEPS)], "the script's steps")
    ours, _, user_order = labels_rows(c)
    n = LABELS_STEPS
    # the tutorial's warm-up call is one more forward pass; four Linear layers
    want = {"LABEL1: linear pass": n + 1, "LABEL2: masking": n + 1,
            "Optimizer.step#SGD.step": n, "Optimizer.zero_grad#SGD.zero_grad": n,
            "AddmmBackward0": 4 * n, "ReluBackward0": 4 * n,
            "torch::autograd::AccumulateGrad": 8 * n}
    eq({k: ours.get(k) for k in want}, want, "rows of the bare command")
    # the engine's evaluate_function rows are there only while torch.profiler runs (the
    # dispatcher's RecordFunction costs +13% per operator: torch_callbacks.c)
    engine = sorted(k for k in ours if k.startswith("autograd::engine::"))
    eq(engine, [], "evaluate_function rows without torch.profiler")
    check(not any(k.startswith("ProfilerStep") for k in ours),
          "ProfilerStep rows without torch.profiler: %r" % user_order)
    text = text_rows(c.text())
    eq({k: text.get(("user", k)) for k in ("LABEL1: linear pass", "LABEL2: masking")},
       {k: want[k] for k in ("LABEL1: linear pass", "LABEL2: masking")},
       "the labels in libprof.txt's user table")
    c.note("user table: %s" % ", ".join(user_order))


on_both_torches(labels_bare, "torch_labels_bare_command")


@case
def torch_labels_framework_none(c):
    # PROFILER_FRAMEWORK=none: no callback added, no label or autograd row
    need_torch()
    r = c.run(["/usr/bin/python3", LABELS_SCRIPT, "bare"], env={"PROFILER_FRAMEWORK": "none"},
              timeout=300)
    check(r.rc == 0, "exit status %s: %r" % (r.rc, r))
    ours, _, _ = labels_rows(c)
    eq(sorted(ours), [], "user and operator rows with frameworks off")


@case
def torch_stack1_python_lines(c):
    # `prof report --group-by stack:1` of a PyTorch script names the script's lines, as
    # torch's key_averages(group_by_stack_n=1) does ("v0.py(30): forward"), not the
    # interpreter or the bindings: the innermost Python frame of each operator's stack
    need_torch()
    r = c.run(["/usr/bin/python3", LABELS_SCRIPT, "follow"],
              env={"PROFILER_FOLLOW": "1", "PROFILER_STACK": "all"}, timeout=300)
    check(r.rc == 0, "exit status %s: %r" % (r.rc, r))
    with open(LABELS_SCRIPT) as f:
        line = next(i for i, text in enumerate(f, 1) if ".nonzero(" in text)
    rep = c.report_json(c.path("libprof.prof"), "--group-by", "stack:1", "--category",
                        "operator")
    where = {}
    for row in rep["rows"]:
        where.setdefault(row["name"], []).append(row["stack"])
    eq(where.get("aten::nonzero"),
       [["MyModule.forward (%s:%d)" % (LABELS_SCRIPT, line)]],
       "aten::nonzero's innermost frame (the script's masking line)")
    addmm = where.get("aten::addmm") or []
    check(addmm and all(len(s) == 1 and s[0].startswith("Linear.forward (") and
                        "/torch/nn/modules/linear.py:" in s[0] for s in addmm),
          "aten::addmm's innermost frames: %r" % addmm)
    c.note("aten::nonzero at %s; aten::addmm at %s" % (where["aten::nonzero"][0][0],
                                                      addmm[0][0]))


def shapes_match(c, python):
    # PROFILER_RECORD_SHAPES=1 and `prof report --group-by shape`: torch.profiler's
    # record_shapes rows (key_averages(group_by_input_shape=True)) of the layers' operators,
    # with the same shapes and counts; the trace has them as args "Input Shapes"
    script = os.path.join(ROOT, "test", "e2e", "frameworks", "torch_shapes.py")
    r = c.run([python, script], env={"PROFILER_FOLLOW": "1", "PROFILER_RECORD_SHAPES": "1"},
              timeout=300)
    check(r.rc == 0, "exit status %s: %r" % (r.rc, r))
    layers = ("aten::conv2d", "aten::relu", "aten::max_pool2d", "aten::linear",
              "aten::addmm")
    theirs = {}
    for line in r.out.splitlines():
        if line.startswith("TORCHSHAPE "):
            name, shapes, n = line[len("TORCHSHAPE "):].rsplit("|", 2)
            if name in layers:
                theirs[(name, shapes)] = int(n)
    check(len(theirs) >= 2 * len(layers), "torch.profiler's shape rows: %r" % theirs)
    rep = c.report_json(c.path("libprof.prof"), "--group-by", "shape", "--category",
                        "operator")
    eq(rep["group_by"], "shape", "the report's grouping")
    ours = {(x["name"], x["input_shapes"]): x["count"] for x in rep["rows"]
            if x["name"] in layers}
    eq(ours, theirs, "(operator, input shapes): count, libprof vs torch.profiler")
    t, _ = c.outputs()
    conv = [e for e in t.select("X", "aten::conv2d", "operator")]
    check(conv and all("Input Shapes" in (e.get("args") or {}) for e in conv),
          "aten::conv2d events without Input Shapes: %r" % conv[:2])
    c.note("%d (operator, shapes) rows equal, e.g. aten::conv2d %s" % (
        len(ours), sorted(k[1] for k in ours if k[0] == "aten::conv2d")))


on_both_torches(shapes_match, "torch_shapes_match_torch_profiler")


@case
def torch_labels_unnested(c):
    # ranges ended out of order on one thread count once each; ranges ended on another
    # thread than began them are not recorded (no whole range on either thread) and do
    # not stop the thread's later labels (100 of them: more than the 64 levels kept)
    need_torch()
    script = os.path.join(ROOT, "test", "e2e", "frameworks", "torch_ranges_unnested.py")
    r = c.run(["/usr/bin/python3", script], timeout=300)
    check(r.rc == 0 and r.kv("done") == ["1"], "the script failed: %r" % r)
    ours, _, _ = labels_rows(c)
    want = {"crossed_a": 100, "crossed_b": 100, "worker_label": 1, "after": 3, "inner": 3,
            "handed_over": None}
    eq({k: ours.get(k) for k in want}, want, "user rows")


def schedule_over_optimizer_steps(c, python):
    """PROFILER_SCHEDULE=wait=1,active=2,repeat=1 on a training loop that never calls
    libprof: the end of each optimizer.step() is a step, so only the second and third
    iterations are recorded, with their step markers; the same with two optimizers an
    iteration (one wrapping another's step), and with the program's own prof_step()
    after optimizer.step() (its steps only). Without a schedule, no step of the
    framework's is counted (the outputs show the program's own)."""
    script = os.path.join(ROOT, "test", "e2e", "frameworks", "torch_schedule_steps.py")
    for mode in ("plain", "two", "marked"):
        r, t = run_out(c, [python, script, mode], "sched_" + mode,
                       {"PROFILER_SCHEDULE": "wait=1,active=2,repeat=1"})
        labels = sorted(e["name"] for e in t.select("X", cat="user")
                        if e["name"].startswith("iter"))
        eq(labels, ["iter1", "iter2"], mode + ": the labels recorded")
        # marked: the framework's first step (its marker) came just before the program's
        # first prof_step(), which took over and counted from 1 again
        eq(sorted(e["args"]["step"] for e in t.select("i", cat="step")),
           [1, 1, 2, 3] if mode == "marked" else [1, 2, 3], mode + ": step markers")
        if mode == "plain":
            steps = [e for e in t.select("X", cat="user")
                     if e["name"].startswith("Optimizer.step#")]
            eq(len(steps), 2, "optimizer steps recorded")
    if python == "/usr/bin/python3":  # the rule is libprof's: one torch shows it
        r, t = run_out(c, [python, script, "plain"], "nosched", {})
        eq(t.select("i", cat="step"), [], "step markers without a schedule")


on_both_torches(schedule_over_optimizer_steps, "torch_schedule_over_optimizer_steps")


HEAVY_SCRIPT = os.path.join(ROOT, "test", "e2e", "frameworks", "torch_heavy_stacks.py")
HEAVY_STEPS = 12


def heavy_import_stacks(c, python):
    # issue 29: a heavy import (torch._dynamo and torch._inductor on 2.x, transformers
    # where installed) then a training loop, under the bare command with
    # PROFILER_STACK=alloc: no <unnamed> anywhere, no name or stack counted lost, the
    # labels' and autograd nodes' counts those of torch.profiler (profile_memory,
    # with_stack) on the same loop, the loop's marked allocation found by its Python
    # function at --group-by stack:1 with its exact count, and the page finds the steps
    r = c.run([python, HEAVY_SCRIPT, "bare"], env={"PROFILER_STACK": "alloc",
                                                 "PROFILER_BLOCK": "1"}, timeout=600)
    check(r.rc == 0, "exit status %s: %r" % (r.rc, r))
    eq(r.kv("steps"), [str(HEAVY_STEPS)], "the script's steps")
    check("no name" not in r.err and "no call stack" not in r.err and "full" not in r.err,
          "stderr: %r" % r.err[-1000:])
    rep = c.report_json(c.path("libprof.prof"))
    eq((rep.get("unnamed_events"), rep.get("unstacked_events"), rep.get("lost_events")),
       (0, 0, 0), "events without a name, without a stack, lost")
    unnamed = [x for x in rep["rows"] if x["name"] == "<unnamed>"]
    eq(unnamed, [], "<unnamed> rows")
    ours = {x["name"]: x["count"] for x in rep["rows"] if x["category"] in ("user", "operator")}
    t = c.run([python, HEAVY_SCRIPT, "follow"], timeout=600, preload=False)
    check(t.rc == 0, "torch.profiler's run: %r" % t)
    theirs = {}
    for line in t.out.splitlines():
        if line.startswith("TORCHPROF "):
            k, n = line[len("TORCHPROF "):].rsplit(" ", 1)
            theirs[k] = int(n)
    # (the engine's evaluate_function rows exist only while torch.profiler runs: see
    # labels_bare)
    wanted = {k: n for k, n in theirs.items()
              if (k in ("train_step", "fwd", "bwd") or k.endswith("Backward0") or
                  k.startswith("Optimizer.") or k == "torch::autograd::AccumulateGrad") and
              not k.startswith("autograd::engine::evaluate_function")}
    for k in ("train_step", "fwd", "bwd", "AddmmBackward0"):
        check(k in wanted, "torch.profiler has no %r row: %r" % (k, sorted(theirs)[:40]))
    eq({k: ours.get(k) for k in wanted}, wanted,
       "labels, optimizer and autograd rows, with libprof's counts")
    with open(HEAVY_SCRIPT) as f:
        line = next(i for i, text in enumerate(f, 1) if "torch.empty(MARK_BYTES" in text)
    site = "marked_alloc (%s:%d)" % (HEAVY_SCRIPT, line)
    st = c.report_json(c.path("libprof.prof"), "--group-by", "stack:1", "--category", "memory")
    marked = [x for x in st["rows"] if x.get("stack") == [site] and x["name"] != "free"]
    big = [x for x in marked if x["name"] in ("posix_memalign", "malloc", "aligned_alloc")
           and x["count"] == HEAVY_STEPS]
    check(big, "the marked allocation at %s, %d times: %r" % (site, HEAVY_STEPS, marked))
    # (a page of millions of events with stacks: over a minute here, two under load)
    page = c.path("report.html")
    h = c.prof("html", c.path("libprof.prof"), "-o", page, timeout=600)
    eq(h.rc, 0, "prof html: %r" % h)
    steps = html_island(page)["steps"]
    # the ends of Optimizer.step# (no torch.profiler schedule, no step marks)
    eq((steps["source"], steps["count"]), ("ends of Optimizer.step#", HEAVY_STEPS),
       "the page's steps")
    c.note("%d events; %d rows checked against torch.profiler; %s x%d"
           % (rep["events"], len(wanted), big[0]["name"], HEAVY_STEPS))


# serial: millions of events with stacks, and the page made of them, load the machine for
# minutes (TensorBoard beside them ran past its time to load a run)
on_both_torches(heavy_import_stacks, "torch_heavy_import_stacks", serial=True)


GIL_STACKS_SCRIPT = os.path.join(ROOT, "test", "e2e", "frameworks", "torch_gil_stacks.py")


def python_frames_in_gil_releases(c, python):
    """torch's operators and backward pass allocate with the GIL given up, where libprof
    takes a stack's Python part again from the thread's last walk (preload/stacks/gil.c:
    torch's GIL calls redirected): each marked tensor has its own Python frames, with its
    exact count, under two callers of one frame and in a hook the backward pass calls,
    and walks were kept."""
    r = c.run([python, GIL_STACKS_SCRIPT], env={"PROFILER_STACK": "alloc",
                                                "PROFILER_DEBUG": "stack"}, timeout=300)
    check(r.rc == 0, "exit status %s: %r" % (r.rc, r))
    steps = int(r.kv("steps")[0])
    st = c.report_json(c.path("libprof.prof"), "--group-by", "stack:3", "--category", "memory")
    want = {("site", "from_a", "<module>"): steps, ("site", "from_b", "<module>"): steps,
            ("made_in_hook", "hook", None): steps}
    # the data blocks are the only posix_memalign under those frames (the tensor objects
    # come through malloc, torch's first-use set-up too); the hook's caller is torch's
    aligned = {}
    for x in st["rows"]:
        key = tuple(fn(f) for f in x.get("stack") or [])
        if x["name"] == "posix_memalign" and key and key[0] in ("site", "made_in_hook"):
            aligned[key if key[0] == "site" else key[:2] + (None,)] = x["count"]
    eq(aligned, want, "posix_memalign by (function, caller, its caller): count")
    kept = KEPT_SAY.search(r.err)
    check(kept and int(kept.group(1)) > 0, "no Python part kept from the last walk: %r"
          % r.err[-800:])
    c.note("%s Python parts kept; %d data blocks each under from_a, from_b, the hook"
           % (kept.group(1), steps))


on_both_torches(python_frames_in_gil_releases, "torch_python_frames_in_gil_releases")
