# areas: a process's names and call stacks past the first chunk of their areas, and past
# PROFILER_AREA_MAX (issue 29: a real model filled fixed tables during `import torch`).
# Run by test/e2e/run.py in the harness's namespace (see README.md).


def unnamed_warning(text):
    m = re.search(r"^WARNING: ([\d,]+) events have no name \(<unnamed>\)", text, re.M)
    return int(m.group(1).replace(",", "")) if m else 0


def unstacked_warning(text):
    m = re.search(r"^WARNING: ([\d,]+) events have no call stack", text, re.M)
    return int(m.group(1).replace(",", "")) if m else 0


@case(serial=True)
def names_past_the_first_chunk(c):
    # 800,000 distinct names (~10 MB: far past the strings area's first chunk, three
    # times the index's old fixed size) on four threads: every one kept, none <unnamed>
    T, N = 4, 100000
    r, t = profile(c, [c.prog("names"), T, N], env={"PROFILER_BLOCK": "1"})
    check("no name" not in r.err and "<unnamed>" not in r.err, "stderr: %r" % r.err[-600:])
    rep = c.report_json(c.path("libprof.prof"))
    eq(rep.get("unnamed_events"), 0, "unnamed_events in the report")
    user = {x["name"]: x["count"] for x in rep["rows"] if x["category"] == "user"}
    want = {"t%d-%d" % (i, n): 1 for i in range(T) for n in range(N)}
    bad = sorted(n for n in user if n not in want)
    check(not bad, "%d user rows are not the program's names: %s" % (len(bad), bad[:5]))
    eq(len(user), len(want), "user rows")
    eq(user, want, "user rows of the report")
    marks = {e["name"] for e in t.select("i", cat="mark")}
    eq(len(marks), T * N, "distinct mark names in the trace")
    check("m3-99999" in marks and "m0-0" in marks, "the first and last marks")
    check(unnamed_warning(c.text()) == 0, "a warning in the tables")


@case(serial=True)
def names_past_area_max_are_counted(c):
    # PROFILER_AREA_MAX keeps names to 1 MiB (the first chunks): the names past it are
    # <unnamed>, and the tables, the JSON report, the summary line and the page count
    # exactly those events
    T, N = 2, 100000
    r, t = profile(c, [c.prog("names"), T, N],
                   env={"PROFILER_BLOCK": "1", "PROFILER_AREA_MAX": "1M"})
    rep = c.report_json(c.path("libprof.prof"))
    unnamed = rep.get("unnamed_events")
    rows = [x for x in rep["rows"] if x["name"] == "<unnamed>"]
    in_rows = sum(x["count"] for x in rows)
    check(unnamed and unnamed > 100000, "unnamed_events: %r" % unnamed)
    marks = [e["name"] for e in t.select("i", cat="mark")]
    eq(in_rows + marks.count("<unnamed>"), unnamed, "events of the <unnamed> rows and marks")
    named = sum(x["count"] for x in rep["rows"] if x["category"] == "user"
                and x["name"] != "<unnamed>")
    eq(named + sum(x["count"] for x in rows if x["category"] == "user"), T * N,
       "ranges named and unnamed")
    eq(unnamed_warning(c.text()), unnamed, "the tables' warning")
    m = re.search(r"^libprof: (\d+) events have no name and (\d+) no call stack", r.err, re.M)
    check(m, "the summary's line: %r" % r.err[-600:])
    eq(int(m.group(1)), unnamed, "events without a name on the summary's line")
    h = c.prof("html", c.path("libprof.prof"), "-o", c.path("page.html"))
    eq(h.rc, 0, "prof html: %r" % h)
    page = open(c.path("page.html"), encoding="utf-8").read()
    check('"unnamed_events"' in page, "the page's advice names the unnamed events")


def stacks_many_run(c, depth, forked, env):
    e = {"PROFILER_STACK": "alloc", "PROFILER_BLOCK": "1"}
    e.update(env)
    r, _ = profile(c, [c.prog("stacks_many"), depth, forked], env=e)
    return r


@case(serial=True)
def stacks_past_the_first_chunk(c):
    # 2^17 distinct stacks of ~38 frames (~40 MB: the stack area's first chunk is 32 MiB),
    # then a forked child with its parent's 2^17 and 2^17 more (~80 MB: a third chunk):
    # every allocation has its own stack, in the parent and in the child
    depth = 17
    r = stacks_many_run(c, depth, 1, {})
    check("no stack" not in r.err and "no call stack" not in r.err, "stderr: %r" % r.err[-600:])
    pid = pid_of(r)
    x = c.prof("export", c.path("libprof.prof"), "--format", "folded", "--weight", "count")
    eq(x.rc, 0, "prof export --format folded: %r" % x)
    per_pid = {}
    leaves = {}
    for frames, v in folded_lines(x.out):
        eq(v, 1, "allocations of one stack")
        p = int(re.search(r"\((\d+)\)$", frames[0]).group(1))
        per_pid[p] = per_pid.get(p, 0) + 1
        if fn(frames[-2]) == "descend":
            leaves[p] = leaves.get(p, 0) + 1
    child = [p for p in per_pid if p != pid]
    eq(len(child), 1, "processes with stacks: %r" % per_pid)
    eq(leaves.get(pid), 1 << depth, "the parent's distinct leaf stacks")
    eq(leaves.get(child[0]), 2 << depth, "the child's distinct leaf stacks")
    rep = c.report_json(c.path("libprof.prof"))
    eq(rep.get("unstacked_events"), 0, "unstacked_events")
    check("(no stack)" not in c.text(), "a (no stack) row in the tables")


@case(serial=True)
def stacks_past_area_max_are_counted(c):
    # stacks kept to the first chunk (32 MiB) by PROFILER_AREA_MAX: the allocations past
    # it have no stack, and exactly they are counted
    r = stacks_many_run(c, 18, 0, {"PROFILER_AREA_MAX": "1M"})
    rep = c.report_json(c.path("libprof.prof"))
    lost = rep.get("unstacked_events")
    check(lost and 100000 < lost < 1 << 18, "unstacked_events: %r" % lost)
    text = c.text()
    eq(unstacked_warning(text), lost, "the tables' warning")
    m = re.search(r"^\(no stack\)\s+([\d,]+)\s", text, re.M)
    check(m, "a (no stack) site in the tables")
    eq(int(m.group(1).replace(",", "")), lost, "allocations at the (no stack) site")
    check("no call stack" in r.err, "the summary's line: %r" % r.err[-600:])
