# alloc: the allocator family: exact counts, peak live bytes.
# Run by test/e2e/run.py in the harness's namespace (see README.md).


# ---------------------------------------------------------------------------------------
# 1. the allocator family, exact counts


@case
def alloc_family_exact_counts(c):
    T, K = 4, 10
    r, t = profile(c, [c.prog("alloc_family"), T, K])
    t.wellformed()
    pid = pid_of(r)
    check(t.other.get("lost_events") == 0, "events lost: %r" % t.other.get("lost_events"))
    for fn, size in FAMILY_SIZES.items():
        evs = t.allocs(fn, size, pid)
        eq(len(evs), T * K, "trace: %s(%d bytes) events" % (fn, size))
        eq(len({e["tid"] for e in evs}), T, "trace: threads doing %s(%d)" % (fn, size))
        for e in evs:
            check(ptr(e["args"]["ptr"]) != 0, "%s returned NULL in the trace: %r" % (fn, e))
    aligns = {"posix_memalign": 64, "aligned_alloc": 256, "memalign": 128, "valloc": 4096,
              "pvalloc": 4096}
    for fn, al in aligns.items():
        for e in t.allocs(fn, FAMILY_SIZES[fn], pid):
            eq(ptr(e["args"]["ptr"]) % al, 0, "%s block alignment" % fn)
    # realloc's old block (from malloc(100)) is recorded as released
    for e in t.allocs("realloc", FAMILY_SIZES["realloc"], pid):
        check("old_ptr" in e["args"], "realloc without old_ptr: %r" % e)
    eq(matched_frees(t, pid, FAMILY_SIZES), 9 * T * K, "trace: frees of the marked blocks")

    rep = c.report_json(c.path("libprof.prof"))
    for k in ("events", "lost_events", "processes", "rows"):
        check(k in rep, "report JSON has no %s" % k)
    eq(rep["lost_events"], 0, "report lost_events")
    text = text_rows(c.text())
    for fn in RARE:
        row = report_row(rep, "memory", fn)
        check(row is not None, "no memory/%s row in the report" % fn)
        eq(row["count"], T * K, "report JSON %s count" % fn)
        eq(text.get(("memory", fn)), T * K, "libprof.txt %s count" % fn)
    # the common functions are also called by libc and the loader: the report must agree
    # with the trace exactly
    for fn in ("malloc", "calloc", "realloc", "free"):
        n = len(t.select("X", fn, "cpu_memory"))
        row = report_row(rep, "memory", fn)
        check(row is not None, "no memory/%s row in the report" % fn)
        eq(row["count"], n, "report JSON %s count vs the trace's %s events" % (fn, fn))
        check(row["count"] >= T * K, "report %s count below the marked calls" % fn)
        eq(text.get(("memory", fn)), n, "libprof.txt %s count" % fn)
    proc = report_process(rep, pid)[0]
    marked_bytes = T * K * sum(FAMILY_SIZES.values())
    check(proc["allocations"] >= 9 * T * K, "process allocations %r < %d"
          % (proc["allocations"], 9 * T * K))
    check(proc["frees"] >= 8 * T * K, "process frees %r" % proc["frees"])
    check(proc["bytes_allocated"] >= marked_bytes, "bytes_allocated %r < %d marked"
          % (proc["bytes_allocated"], marked_bytes))


@case
def peak_live_bytes(c):
    K, S = 40, 100003
    r, t = profile(c, [c.prog("peak"), K, S])
    t.wellformed()
    pid = pid_of(r)
    eq(t.count("malloc", S, pid), K + K // 2, "marked mallocs")
    eq(matched_frees(t, pid, {"malloc": S}), K + K // 2, "marked frees")
    slack = 256 << 10  # whatever else the process holds at its peak (stdio, loader)
    rep = c.report_json(c.path("libprof.prof"))
    proc = report_process(rep, pid)[0]
    peak = proc["peak_live_bytes"]
    check(K * S <= peak <= K * S + slack,
          "peak_live_bytes %d not in [%d, %d]" % (peak, K * S, K * S + slack))
    check(proc["allocations"] >= K + K // 2 and proc["frees"] >= K + K // 2,
          "allocations/frees %r" % proc)
    heap = sorted(t.select("C", "live heap bytes", pid=pid), key=lambda e: e["ts"])
    check(heap, "no 'live heap bytes' counter for pid %d" % pid)
    vals = [int(e["args"]["bytes"]) for e in heap]
    check(K * S <= max(vals) <= K * S + slack,
          "live heap counter max %d not in [%d, %d]" % (max(vals), K * S, K * S + slack))
    eq(max(vals), peak, "counter max vs report peak_live_bytes")
    marks = t.select("i", "peak live heap", pid=pid)
    eq([int(m["args"]["bytes"]) for m in marks], [peak], "the peak's marker")
    top = [e for e in heap if int(e["args"]["bytes"]) == peak]
    check(any(abs(e["ts"] - marks[0]["ts"]) < 0.002 for e in top),
          "the peak marker at %r is not where the counter peaks" % marks[0]["ts"])
    check(vals[-1] < S, "live heap at the end %d: the blocks were all freed" % vals[-1])
    tr = text_rows(c.text())
    check(("memory", "malloc") in tr, "libprof.txt has no memory/malloc row")


# ---------------------------------------------------------------------------------------
# 2. one timestamp per allocator call (PROFILER_ALLOC_TIMING off, the default)


@case
def alloc_untimed_loses_nothing(c):
    """Allocator calls carry their start only by default: every count, byte, peak and
    site the tables show is the same as with PROFILER_ALLOC_TIMING=1 on the same program;
    the time columns say they were not measured."""
    K, S, T = 64, 100003, 10
    reps, texts, caps = {}, {}, {}
    for mode in ("0", "1"):
        env = {"PROFILER_STACK": "alloc", "PROFILER_OUTPUT": "timing" + mode}
        if mode == "1":
            env["PROFILER_ALLOC_TIMING"] = "1"
        r = c.run([c.prog("alloc_sites"), K, S, T], env=env)
        eq(r.rc, 0, "exit status with PROFILER_ALLOC_TIMING=%s: %r" % (mode, r))
        caps[mode] = c.path("timing%s.prof" % mode)
        reps[mode] = c.report_json(caps[mode])
        texts[mode] = c.text("timing" + mode)

    def memory_view(rep):
        rows = sorted((x["name"], x["count"]) for x in rep["rows"] if x["category"] == "memory")
        procs = []
        for p in rep["processes"]:
            procs.append({k: p.get(k) for k in ("allocations", "frees", "bytes_allocated",
                                                 "peak_live_bytes", "live_bytes_at_end",
                                                 "size_histogram")})
            procs[-1]["sites"] = sorted(
                (s["site"], s["allocations"], s["bytes"], s["bytes_at_peak"],
                 s["live_blocks_at_end"], s["live_bytes_at_end"])
                for s in p.get("allocation_sites", []))
        return rows, procs

    untimed, timed = memory_view(reps["0"]), memory_view(reps["1"])
    check(untimed[1][0]["sites"], "no allocation sites: %r" % untimed[1])
    eq(untimed, timed, "memory rows, processes and sites without and with durations")
    mem0 = [x for x in reps["0"]["rows"] if x["category"] == "memory"]
    mem1 = [x for x in reps["1"]["rows"] if x["category"] == "memory"]
    check(all(x.get("timed") is False and x["total_ns"] == 0 for x in mem0),
          "untimed memory rows: %r" % mem0)
    check(all("timed" not in x for x in mem1) and sum(x["total_ns"] for x in mem1) > 0,
          "timed memory rows: %r" % mem1)
    check("(calls not timed: PROFILER_ALLOC_TIMING=1 times them)" in texts["0"] and
          "calls not timed" not in texts["1"], "the text tables' memory header")
    # the other table views say so too: rows by stack (sorted by count), CSV (empty times)
    by_stack = c.report_json(caps["0"], "--group-by", "stack")
    rows = [x for x in by_stack["rows"] if x["category"] == "memory"]
    check(rows and all(x.get("timed") is False for x in rows) and
          [x["count"] for x in rows] == sorted((x["count"] for x in rows), reverse=True),
          "--group-by stack, memory rows: %r" % rows[:3])
    csv = c.prof("report", caps["0"], "--format", "csv")
    eq(csv.rc, 0, "prof report --format csv: %r" % csv)
    mem = [ln for ln in csv.out.splitlines() if ln.startswith('"memory"')]
    check(mem and all(",,,,,,,," in ln for ln in mem), "CSV memory rows: %r" % mem[:2])
    # the capture: each allocator call's end is its start, unless timed
    for mode, want_same in (("0", True), ("1", False)):
        calls = [e for e in read_capture(caps[mode]) if e["type"] == 1 and e["cat"] == "memory"]
        same = sum(e["t1"] == e["t0"] for e in calls)
        check(calls and (same == len(calls) if want_same else same < len(calls) / 2),
              "PROFILER_ALLOC_TIMING=%s: %d of %d allocator calls without duration"
              % (mode, same, len(calls)))
    c.note("%d allocator calls, %d sites, the same with and without durations"
           % (sum(n for _, n in untimed[0]), len(untimed[1][0]["sites"])))


# ---------------------------------------------------------------------------------------
# 3. threads handing blocks to each other, on a busy machine


@case(serial=True)
def handoff_merged_in_time_order(c):
    # Blocks allocated on one thread and released microseconds later on another (two
    # producer/consumer pairs), with a busy loop on every core besides: the collector's
    # passes come late and each reads 65,536 events of a ring at most, so a thread's
    # events reach the capture long after another's of the same instant. The live-heap
    # analysis merges them in time order holding only what the capture's CAP_DRAINED
    # marks leave open, not seconds: every release matched, none applied out of order, and
    # the collector's processes under what holding the whole run used to take.
    n, pairs = 1500000, 2
    cores = max(2, len(os.sched_getaffinity(0)))
    loops = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(cores)]
    try:
        r, rss = prof_maxrss(c, "record", "--block", "-q", "-o", "handoff", "--",
                             c.prog("handoff"), n, pairs, env={"PROFILER_TRACE_ALLOC": None})
    finally:
        for p in loops:
            p.kill()
            p.wait()
    eq(r.rc, 0, "prof record (%r)" % r)
    check("done=%d" % (n * pairs) in r.out, "the program's output: %r" % r.out[-300:])
    rep = c.report_json(c.path("handoff.prof"))
    eq(rep["lost_events"], 0, "lost events")
    proc = max(rep["processes"], key=lambda p: p["allocations"])
    check(proc["allocations"] >= n * pairs and proc["frees"] >= n * pairs,
          "allocations %d, frees %d" % (proc["allocations"], proc["frees"]))
    eq(proc["frees_unmatched"], 0, "releases of blocks never seen allocated")
    eq(proc["ops_out_of_order"], 0, "operations applied out of time order")
    check(proc["live_bytes_at_end"] < 1 << 20, "live at end %d" % proc["live_bytes_at_end"])
    # the live outputs' own tables say the same, with no warning on the order
    text = open(c.path("handoff.txt")).read()
    check("out of time order" not in text, "the tables warn: %r" % text[:800])
    # 6 M operations held for 2 s were 190 MB of the tables child alone
    check(rss < 160 << 10, "the collector's processes peaked at %d MiB" % (rss >> 10))
    c.note("%d allocator calls across threads; peak RSS of prof record's processes %d MiB"
           % (proc["allocations"] + proc["frees"], rss >> 10))
