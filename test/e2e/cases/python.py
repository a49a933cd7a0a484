# python: the Python module, and Python without libprof.
# Run by test/e2e/run.py in the harness's namespace (see README.md).


# ---------------------------------------------------------------------------------------
# 7. Python


@case
def python_module(c):
    N = 25
    script = os.path.join(PROGS, "annotate.py")
    r, t = profile(c, [sys.executable, script, N], env={"PYTHONPATH": SCRIPTS})
    info = json.loads(r.out.strip().splitlines()[-1])
    eq(info["available"], True, "libprof.available()")
    eq(info["steps"], [1, 2, 3], "libprof.step() numbers")
    eq(info["dumps_has_label"], True, "libprof.dumps() has the range label")
    ranges = t.select("X", "LABEL1: linear pass", "user")
    eq(len(ranges), 1, "LABEL1 ranges")
    rg = ranges[0]
    inside = t.allocs("malloc", 51001)
    eq(len(inside), N, "mallocs in the range")
    for e in inside:
        check(rg["ts"] - 0.001 <= e["ts"] and e["ts"] + e["dur"] <= rg["ts"] + rg["dur"] + 0.001,
              "a malloc of the range lies outside it: %r vs %r" % (e, rg))
        eq((e["pid"], e["tid"]), (rg["pid"], rg["tid"]), "range and malloc thread")
    eq(t.count("malloc", 51002), 0, "mallocs while paused")
    eq(t.count("malloc", 51003), N, "mallocs after resume")
    eq(len(t.select("i", "checkpoint saved", "mark")), 1, "marks")
    steps = t.select("i", cat="step")
    eq(sorted((e.get("args") or {}).get("step") for e in steps), [1, 2, 3], "step instants")
    loss = sorted(t.select("C", "loss"), key=lambda e: e["ts"])
    eq([list((e.get("args") or {}).values()) for e in loss], [[0.5], [0.25]], "loss counter")
    outer = t.select("X", "LABEL2: outer", "user")
    inner = t.select("X", "LABEL3: inner", "user")
    eq((len(outer), len(inner)), (1, 1), "nested ranges")
    check(outer[0]["ts"] <= inner[0]["ts"] and
          inner[0]["ts"] + inner[0]["dur"] <= outer[0]["ts"] + outer[0]["dur"] + 0.001,
          "inner range not inside the outer one")
    rep = c.report_json(c.path("libprof.prof"))
    for name in ("LABEL1: linear pass", "LABEL2: outer", "LABEL3: inner"):
        row = report_row(rep, "user", name)
        check(row and row["count"] == 1, "report user row %r: %r" % (name, row))
    check("LABEL1: linear pass" in c.text(), "libprof.txt lacks the range label")
    t.wellformed()


@case
def python_without_libprof(c):
    script = os.path.join(PROGS, "annotate.py")
    r = c.run([sys.executable, script, 5], env={"PYTHONPATH": SCRIPTS}, preload=False)
    eq(r.rc, 0, "exit status: %r" % r)
    info = json.loads(r.out.strip().splitlines()[-1])
    eq(info, {"available": False, "steps": [0, 0, 0], "dumps_has_label": False,
              "dumps_len": 0}, "the module without libprof")
    eq(r.err, "", "stderr")
    eq(os.listdir(c.dir), [], "files made")
