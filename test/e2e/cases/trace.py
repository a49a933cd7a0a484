# trace: tracing functions by name (PROFILER_TRACE).
# Run by test/e2e/run.py in the harness's namespace (see README.md).


# ---------------------------------------------------------------------------------------
# 14. tracing functions by name (PROFILER_TRACE)


@case
def cxx_exceptions_in_local_libraries(c):
    # libprof exports the unwinder wrappers even when it traces nothing: a C++ library
    # loaded RTLD_LOCAL must still find the real unwinder through them
    so, main = build_local_thrower()
    for env in ({}, {"PROFILER_TRACE": "thrower_*"}):
        env["PROFILER_OVERWRITE"] = "1"  # the second run replaces the first's outputs
        r, t = profile(c, [main, so], env=env)
        eq(r.kv("caught"), ["5"], "exceptions caught with %r" % env)


@case
def trace_by_name(c):
    lib, plugin, main = build_trace_programs()
    adds, threads = 500, 3
    r, t = profile(c, [main, plugin, adds, threads],
                   env={"PROFILER_TRACE": "tl_*,mylib=t2_*,tl::*"})
    check("tracemain: ok" in r.out, "a traced function computed something else: %r" % r)
    t.wellformed()
    got = trace_counts(t, "trace")
    want = {"tl_add": 5 + 2 + adds * threads, "tl_raise": 1, "tl_sum": 1, "tl_avg": 1,
            "tl_mix": 1,
            "tl_fact": 10, "tl_fact_b": 9, "tl_pair": 1, "tl::scaled(int, int)": 1,
            # an exception through 4 frames, a longjmp out of 5: each frame ends once
            "tl_throw": 4 + 2, "tl_throw_b": 3 + 1, "tl_jump": 5, "tl_jump_b": 4,
            # tail calls: tl_tail2 -> tl_tail1 -> tl_add (and tl_tail1 once more), and
            # tl_tail_throw -> tl_throw -> tl_throw_b -> tl_throw, which throws
            "tl_tail2": 1, "tl_tail1": 2, "tl_tail_throw": 1}
    eq(got, want, "traced calls per function (category trace)")
    eq(trace_counts(t, "mylib"), {"t2_mul": 2}, "calls through dlsym'd pointers (category mylib)")
    # nesting: each tl_fact_b lies inside a tl_fact one level up, on the same thread
    fact = sorted(t.select("X", "tl_fact", "trace") + t.select("X", "tl_fact_b", "trace"),
                  key=lambda e: e["ts"])
    for outer, inner in zip(fact, fact[1:]):
        check(outer["ts"] <= inner["ts"] and
              inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + 0.001,
              "recursion not nested: %r then %r" % (outer, inner))
    # the tail-call chain nests: tl_tail2 holds the first tl_tail1, which holds a tl_add
    chain = t.select("X", "tl_tail2", "trace")[0]
    inside = lambda o, i: o["ts"] <= i["ts"] and i["ts"] + i["dur"] <= o["ts"] + o["dur"] + 0.001
    t1 = [e for e in t.select("X", "tl_tail1", "trace") if inside(chain, e)]
    eq(len(t1), 1, "tl_tail1 calls inside tl_tail2")
    check(any(inside(t1[0], e) and e["tid"] == chain["tid"]
              for e in t.select("X", "tl_add", "trace")), "no tl_add inside tl_tail1")
    rep = c.report_json(c.path("libprof.prof"))
    eq(report_row(rep, "trace", "tl_fact")["count"], 10, "report count of tl_fact")
    outer = report_row(rep, "trace", "tl_fact")
    check(outer["self_ns"] < outer["total_ns"], "tl_fact self %d not below total %d"
          % (outer["self_ns"], outer["total_ns"]))
    # the same program without PROFILER_TRACE traces nothing by name
    r2 = c.run([main, plugin, 10, 1], env={"PROFILER_OUTPUT": "plain"})
    check(r2.rc == 0 and "tracemain: ok" in r2.out, "untraced run: %r" % r2)
    t2, _ = c.outputs("plain")
    eq(t2.select("X", cat="trace"), [], "traced calls without PROFILER_TRACE")


@case
def trace_with_stacks_everywhere(c):
    # stacks taken in every traced return and allocation, through exceptions, longjmp,
    # tail calls, a signal handler on its own stack and threads: the program computes
    # the same and every call is still counted
    lib, plugin, main = build_trace_programs()
    counts = []
    for stack in ("off", "all"):
        r = c.run([main, plugin, 200, 2],
                  env={"PROFILER_TRACE": "tl_*,mylib=t2_*,tl::*", "PROFILER_STACK": stack,
                       "PROFILER_OUTPUT": "st-" + stack})
        check(r.rc == 0 and "tracemain: ok" in r.out, "PROFILER_STACK=%s: %r" % (stack, r))
        t, _ = c.outputs("st-" + stack)
        counts.append(trace_counts(t, "trace"))
    eq(counts[1], counts[0], "traced calls with stacks vs without")
    rep = c.report_json(c.path("st-all.prof"), "--group-by", "stack:3", "--category", "trace")
    fact = [x for x in rep["rows"] if x["name"] == "tl_fact_b" and x["stack"]]
    check(fact and all(x["stack"][0].startswith("tl_fact ") for x in fact),
          "tl_fact_b's callers: %r" % [x["stack"] for x in fact])


@case
def trace_through_ctypes(c):
    lib, _, _ = build_trace_programs()
    script = c.path("ct.py")
    with open(script, "w") as f:
        f.write("import ctypes, sys\n"
                "lib = ctypes.CDLL(sys.argv[1], ctypes.RTLD_LOCAL)\n"
                "s = sum(lib.tl_add(i, 1) for i in range(100))\n"
                "lib.tl_avg.restype = ctypes.c_double\n"
                "a = lib.tl_avg(3, ctypes.c_double(1.0), ctypes.c_double(2.0), ctypes.c_double(6.0))\n"
                "print('result=%d,%g' % (s, a))\n")
    r, t = profile(c, [sys.executable, script, lib], env={"PROFILER_TRACE": "API=tl_*"})
    eq(r.kv("result"), ["5050,3"], "ctypes results")
    eq(trace_counts(t, "API"), {"tl_add": 100, "tl_avg": 1}, "calls made through ctypes")
