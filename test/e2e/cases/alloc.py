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
        n = len(t.select("X", fn, "memory"))
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
