# overload: tiny rings: events lost (or the writer blocked) and counted.
# Run by test/e2e/run.py in the harness's namespace (see README.md).


# ---------------------------------------------------------------------------------------
# 8. overload


def overload(c, block):
    pairs, size = 200000, 71001
    env = {"PROFILER_RING_SIZE": "4K"}
    if block:
        env["PROFILER_BLOCK"] = "1"
    r, t = profile(c, [c.prog("overload"), pairs, size], env=env, timeout=180)
    pid, tid = pid_of(r), int(r.kv("tid")[0])
    s = parse_summary(r.err)
    check(s is not None, "no summary line: %r" % r)
    rep = c.report_json(c.path("libprof.prof"))
    mine = [e for e in t.select(pid=pid, tid=tid) if e.get("ph") in ("X", "i", "C")
            and e.get("cat") != "lost"]
    others = [e for e in mine if not (e.get("cat") == "cpu_memory" and (
        (e["name"] == "malloc" and e["args"].get("bytes") == size) or e["name"] == "free"))]
    check(not others, "the worker thread has events other than its pairs: %r" % others[:5])
    kept = len(mine)
    lost_here = t.lost_by_thread().get((pid, tid), 0)
    c.note("ring 4K%s: kept %d, lost %d of %d (summary: %d lost of %d)"
           % (" block" if block else "", kept, lost_here, 2 * pairs, s[1], s[0] + s[1]))
    eq(t.other.get("json_dropped", 0), 0, "events left out of the JSON")
    if block:
        eq(s[1], 0, "summary lost")
        eq(rep["lost_events"], 0, "report lost_events")
        eq(t.other["lost_events"], 0, "otherData lost_events")
        eq(t.count("malloc", size, pid), pairs, "mallocs kept")
        eq(kept, 2 * pairs, "events of the worker")
        eq(lost_here, 0, "lost instants")
    else:
        check(s[1] > 0, "summary says nothing lost with a 4K ring: %r" % r.err)
        # the loss said with what keeps it
        check(re.search(r"^libprof: %d events lost to full rings(: the collector waited up to "
                        r"\d+ ms between two drains .*)?; a bigger PROFILER_RING_SIZE \(now 4 "
                        r"KiB a thread\) or PROFILER_BLOCK=1 keeps them$" % s[1], r.err, re.M),
              "no line naming the loss and its remedy: %r" % r.err)
        eq(rep["lost_events"], s[1], "report lost_events vs summary")
        eq(t.other["lost_events"], s[1], "otherData lost_events vs summary")
        check(t.other.get("lost_gaps"), "otherData lost_gaps empty")
        eq(sum(t.lost_by_thread().values()), s[1], "lost instants in all vs summary")
        if not t.other.get("lost_gaps_not_listed"):
            eq(t.gaps_by_thread(), t.lost_by_thread(), "otherData lost_gaps vs lost instants")
        check(lost_here > 0, "no loss recorded for the worker thread")
        eq(kept + lost_here, 2 * pairs, "kept + lost for the worker thread")
        eq(s[0] + s[1] >= 2 * pairs, True, "summary events + lost")
    t.wellformed()


@case
def overload_tiny_ring(c):
    overload(c, block=False)


@case
def overload_tiny_ring_block(c):
    overload(c, block=True)
