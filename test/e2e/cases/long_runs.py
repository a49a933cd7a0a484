# long_runs: what a long training run needs (issue 15): the back half's memory bounded
# whatever the run's length.


# Runs argv and prints the largest resident set of any process it waited for, in KiB.
MAXRSS = ("import resource, subprocess, sys\n"
          "rc = subprocess.run(sys.argv[1:]).returncode\n"
          "print('maxrss_kb=%d' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
          "sys.exit(rc)\n")
GIB_KB = 1 << 20


def prof_maxrss(c, *args, timeout=300):
    """`prof ARGS` under MAXRSS: (result, peak RSS in KiB of prof and what it waited for)."""
    r = c.run([sys.executable, "-c", MAXRSS, Setup.prof] + [str(a) for a in args],
              env=Setup.prof_env(), preload=False, autostart=False, timeout=timeout)
    m = re.search(r"^maxrss_kb=(\d+)$", r.out, re.M)
    check(m, "no maxrss line: %r" % r)
    return r, int(m.group(1))


@case(serial=True)
def collector_memory_bounded(c):
    # 40 M allocator events (two threads, 10 M malloc/free pairs each): the collector
    # (prof record itself) drains them, writes the capture, the tables and the trace; then
    # prof report and prof export read the capture. Each stays under 1 GiB: the end of the
    # run used to hold every allocator operation (~55 bytes an event: 2.2 GB here).
    pairs = 10000000
    r, rss = prof_maxrss(c, "record", "--block", "-q", "-o", "big", "--",
                         c.prog("alloc_storm"), pairs, 2)
    eq(r.rc, 0, "prof record's exit status (%r)" % r)
    rep = c.report_json(c.path("big.prof"))
    events = rep["events"]
    check(events >= 4 * pairs and rep["lost_events"] == 0, "events %r, lost %r"
          % (events, rep["lost_events"]))
    malloc = [w for w in rep["rows"] if w["category"] == "memory" and w["name"] == "malloc"]
    check(malloc and malloc[0]["count"] >= 2 * pairs, "malloc row: %r" % malloc)
    # the live-heap analysis, streamed, still matches every release to its allocation
    proc = max(rep["processes"], key=lambda p: p["allocations"])
    eq(proc["frees_unmatched"], 0, "releases of blocks never seen allocated")
    check(proc["live_bytes_at_end"] < 65536 and proc["peak_live_bytes"] > 64 * 16,
          "live at end %d, peak %d" % (proc["live_bytes_at_end"], proc["peak_live_bytes"]))
    check(rss < GIB_KB, "prof record peaked at %d MiB for the run" % (rss >> 10))
    r2, rss_report = prof_maxrss(c, "report", c.path("big.prof"))
    eq(r2.rc, 0, "prof report (%r)" % r2)
    check(rss_report < GIB_KB, "prof report peaked at %d MiB" % (rss_report >> 10))
    r3, rss_export = prof_maxrss(c, "export", c.path("big.prof"), "-o", c.path("x.json"))
    eq(r3.rc, 0, "prof export (%r)" % r3)
    check(rss_export < GIB_KB, "prof export peaked at %d MiB" % (rss_export >> 10))
    c.note("%s events; peak RSS: prof record %d MiB, report %d MiB, export %d MiB"
           % (events, rss >> 10, rss_report >> 10, rss_export >> 10))
