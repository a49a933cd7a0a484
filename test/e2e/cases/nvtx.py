# nvtx: NVTX v3 ranges and marks.
# Run by test/e2e/run.py in the harness's namespace (see README.md).


# ---------------------------------------------------------------------------------------
# NVTX v3 ranges and marks, with no change to the program (header-only NVTX from the
# CUDA toolkit; no GPU needed)


def direct_children(t, s):
    """The X events directly inside slice s (start/end ranges stand apart)."""
    within = [e for e in t.select("X", pid=s["pid"], tid=s["tid"])
              if e is not s and e["cat"] != "nvtx_startend" and inside(s, e)]
    return [e for e in within
            if not any(inside(o, e) and ns(o["dur"]) > ns(e["dur"]) for o in within)]


def self_matches_children(rep, t, pid, cat, name):
    """The report's self time of cat/name is its total less its direct children's time, as
    the trace shows them (what a range at the wrong depth would get wrong)."""
    row = report_row(rep, cat, name)
    check(row, "no report row %s/%s" % (cat, name))
    slices = t.select("X", name, cat, pid)
    eq(len(slices), row["count"], "%s/%s slices vs the report's count" % (cat, name))
    kids = [k for s in slices for k in direct_children(t, s)]
    check(kids, "%s/%s: nothing inside it to check" % (cat, name))
    # Self keeps the time of the allocator calls inside (formats/model/stats.c), as
    # torch's Self CPU does
    kid_ns = sum(ns(k["dur"]) for k in kids if k.get("cat") != "cpu_memory")
    tol = 2 * (len(slices) + len(kids))
    want = row["total_ns"] - kid_ns
    check(abs(row["self_ns"] - want) <= tol,
          "%s/%s: self %d ns, total %d ns less %d ns in %d children is %d"
          % (cat, name, row["self_ns"], row["total_ns"], kid_ns, len(kids), want))


def nvtx_counts(t, pid):
    out = {}
    for e in t.events:
        if e.get("pid") == pid and e.get("ph") in ("X", "i") and \
                e.get("cat") in ("nvtx", "nvtx_startend", "user"):
            k = (e["ph"], e["cat"], e["name"])
            out[k] = out.get(k, 0) + 1
    return out


@case
def nvtx_ranges_marks_domains(c):
    main, _ = build_nvtx_programs()
    R = 7
    r, t = profile(c, [main, R])
    t.wellformed()
    eq(r.kv("done"), ["1"], "the program's end: %r" % r)
    eq(r.kv("child_failed"), [], "the exec'd child")
    lib = os.path.realpath(Setup.lib)
    eq(r.kv("nvtx_env"), [lib], "NVTX_INJECTION64_PATH in the profiled program")
    # what push/pop return: the level in the thread's stack of that domain
    eq(r.kv("levels"), ["0,1,1,0"], "default-domain push/pop levels")
    eq(r.kv("domain_levels"), ["0,1"], "named-domain push levels")
    eq(r.kv("lib_levels"), ["0,0"], "the two libraries' NVTX instances found libprof")
    pid, tid, wtid = pid_of(r), int(r.kv("main_tid")[0]), int(r.kv("worker_tid")[0])
    X, I, S = ("X", "nvtx"), ("i", "nvtx"), ("X", "nvtx_startend")
    want = {X + (n,): k for n, k in (
        ("outer", 1), ("inner", 1), ("MyDomain:registered_range", 1),
        ("MyDomain:ascii_in_domain", 1), ("default_registered", 1), ("wide_\u00fc\u20ac", 1),
        ("MyDomain:wide_in_domain", 1), ("with_alloc", R), ("cross_default", 1),
        ("MyDomain:cross_domain", 1), ("after_cross", 1), ("nvtx_in_prof", 1),
        ("pp_overlap", 1), ("lib_a_work", 2), ("lib_b_work", 2), ("LibA:step", 5),
        ("LibB:step", 5), ("resumed_inner", 1), ("final", 1))}
    want.update({I + (n,): k for n, k in (
        ("inner_mark", 1), ("MyDomain:domain_mark", 1), ("wide_mark", 1), ("se_mark", 1),
        ("before_thread", 1), ("worker_mark", 1), ("lib_a_mark", 2), ("lib_b_mark", 2))})
    want.update({S + (n,): 1 for n in ("se_same", "MyDomain:se_registered", "se_overlap",
                                       "se_cross")})
    want.update({("X", "user", "prof_outer"): 1, ("X", "user", "prof_in_nvtx"): 1})
    # paused_outer (pushed while paused) and popped_paused (popped while paused) are not
    # recorded; se_same ended twice and an unknown id add nothing
    eq(nvtx_counts(t, pid), want, "NVTX events of the program (ph, cat, name)")
    one = lambda *k: t.select(*k, pid=pid)[0]
    # nesting on the thread: by time, on the same tid
    for outer, inner in ((("X", "outer", "nvtx"), ("X", "inner", "nvtx")),
                         (("X", "inner", "nvtx"), ("i", "inner_mark", "nvtx")),
                         (("X", "MyDomain:registered_range", "nvtx"),
                          ("X", "MyDomain:ascii_in_domain", "nvtx")),
                         (("X", "prof_outer", "user"), ("X", "nvtx_in_prof", "nvtx")),
                         (("X", "nvtx_in_prof", "nvtx"), ("X", "prof_in_nvtx", "user")),
                         (("X", "se_same", "nvtx_startend"), ("i", "se_mark", "nvtx"))):
        o, i = one(*outer), one(*inner)
        check(o["tid"] == tid and inside(o, dict(i, dur=i.get("dur", 0))),
              "%s not inside %s: %r %r" % (inner[1], outer[1], i, o))
    for lib_ in ("a", "b"):
        works = t.select("X", "lib_%s_work" % lib_, "nvtx", pid)
        eq(sorted(e["tid"] for e in works), sorted([tid, wtid]), "lib_%s_work threads" % lib_)
        for s in t.select("X", "Lib%s:step" % lib_.upper(), "nvtx", pid):
            check(any(inside(w, s) for w in works), "a step outside lib_%s_work: %r" % (lib_, s))
    # a start/end range ended on another thread: written by the thread that ended it,
    # spanning from before that thread existed
    se = one("X", "se_cross", "nvtx_startend")
    eq(se["tid"], wtid, "se_cross's thread (the one that ended it)")
    check(ns(se["ts"]) <= ns(one("i", "before_thread", "nvtx")["ts"]) and
          ns(one("i", "worker_mark", "nvtx")["ts"]) <= ns(se["ts"]) + ns(se["dur"]),
          "se_cross does not span from its start to its end: %r" % se)
    eq(one("X", "se_same", "nvtx_startend")["tid"], tid, "se_same's thread")
    # the exec'd child (empty environment) set the variable itself and recorded its range
    cpid = int(r.kv("child_pid")[0])
    eq(r.kv("child_env"), [lib], "NVTX_INJECTION64_PATH in the exec'd child")
    eq(nvtx_counts(t, cpid), {X + ("child_range",): 1}, "the child's NVTX events")
    # the report: rows, self time (allocations and libprof ranges inside NVTX ranges are
    # one level down), marks, the text table
    cap = c.path("libprof.prof")
    rep = c.report_json(cap)
    for cat in ("nvtx", "nvtx_startend"):
        got = {x["name"]: x["count"] for x in rep["rows"] if x["category"] == cat}
        exp = {}
        for (ph, ct, n), k in list(want.items()) + [(X + ("child_range",), 1)]:
            if ph == "X" and ct == cat:
                exp[n] = exp.get(n, 0) + k
        eq(got, exp, "report rows of category %s" % cat)
    for row in rep["rows"]:
        if row["category"] == "nvtx_startend":
            check(abs(row["self_ns"] - row["total_ns"]) <= 1, "start/end self != total: %r" % row)
    for name in ("with_alloc", "after_cross", "nvtx_in_prof", "resumed_inner", "final",
                 "LibA:step", "lib_a_work"):
        self_matches_children(rep, t, pid, "nvtx", name)
    self_matches_children(rep, t, pid, "user", "prof_outer")
    marks = {m["name"]: m["count"] for m in rep.get("marks") or []}
    for (ph, ct, n), k in want.items():
        if ph == "i":
            eq(marks.get(n), k, "report mark %s" % n)
    eq(text_rows(c.text()).get(("nvtx", "with_alloc")), R, "libprof.txt row nvtx/with_alloc")
    only = c.report_json(cap, "--category", "nvtx")
    eq({x["category"] for x in only["rows"]}, {"nvtx"}, "--category nvtx")


@case
def nvtx_left_alone(c):
    main, _ = build_nvtx_programs()
    # the user's NVTX_INJECTION64_PATH is kept (here: nothing loads, NVTX does nothing)
    r, t = profile(c, [main, 3], env={"NVTX_INJECTION64_PATH": "/nonexistent.so"})
    eq(r.kv("done"), ["1"], "the program's end: %r" % r)
    eq(r.kv("nvtx_env"), ["/nonexistent.so"], "the user's NVTX_INJECTION64_PATH")
    eq(r.kv("levels"), ["-2,-2,-2,-2"], "push/pop levels with no NVTX tool")
    eq(r.kv("lib_levels"), ["-2,-2"], "the libraries' levels with no NVTX tool")
    pid = pid_of(r)
    eq([k for k in nvtx_counts(t, pid) if k[1] != "user"], [], "NVTX events recorded")
    check(t.select("X", "malloc", "cpu_memory", pid), "libprof recorded nothing else either")
    # preloaded but not profiling: the variable is not set
    r = c.run([main, 3], autostart=False, env={"PROFILER_OUTPUT": "idle"})
    eq((r.rc, r.kv("done"), r.kv("nvtx_env")), (0, ["1"], ["(unset)"]),
       "preloaded, idle: %r" % r)
    eq(r.kv("levels"), ["-2,-2,-2,-2"], "levels when idle")
    # without libprof
    r = c.run([main, 3], preload=False, autostart=False)
    eq((r.rc, r.kv("done"), r.kv("nvtx_env")), (0, ["1"], ["(unset)"]), "no libprof: %r" % r)
    eq(r.kv("levels"), ["-2,-2,-2,-2"], "levels without libprof")
    eq(sorted(f for f in os.listdir(c.dir) if f.startswith(("libprof", "idle"))),
       ["libprof.json", "libprof.prof", "libprof.txt"], "outputs")


@case
def nvtx_many_pairs(c):
    # every push/pop pair recorded, none lost, from a tight loop
    _, bench = build_nvtx_programs()
    B, P = 5, 20000
    r, t = profile(c, [bench, B, P], env={"PROFILER_BLOCK": "1"})
    eq(r.kv("pairs"), [str(B * P + 1)], "pairs: %r" % r)
    eq(t.other.get("lost_events"), 0, "lost events")
    rep = c.report_json(c.path("libprof.prof"))
    eq({x["name"]: x["count"] for x in rep["rows"] if x["category"] == "nvtx"},
       {"bench": B * P, "warm-up": 1}, "report rows of category nvtx")
