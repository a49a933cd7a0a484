# long_runs: what a long training run needs (issue 15): the back half's memory bounded
# whatever the run's length.


# Runs argv and prints the largest resident set of any process it waited for, in KiB.
MAXRSS = ("import resource, subprocess, sys\n"
          "rc = subprocess.run(sys.argv[1:]).returncode\n"
          "print('maxrss_kb=%d' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
          "sys.exit(rc)\n")
GIB_KB = 1 << 20


def prof_maxrss(c, *args, timeout=300, env=None):
    """`prof ARGS` under MAXRSS: (result, peak RSS in KiB of prof and what it waited for)."""
    e = Setup.prof_env()
    e.update(env or {})
    r = c.run([sys.executable, "-c", MAXRSS, Setup.prof] + [str(a) for a in args],
              env=e, preload=False, autostart=False, timeout=timeout)
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
    # what stays: stdio's buffer, libstdc++'s 72 KiB emergency pool, a thread's calloc
    check(proc["allocations"] - proc["frees"] <= 8 and proc["live_bytes_at_end"] < 1 << 20
          and proc["peak_live_bytes"] > 64 * 16, "allocations %d, frees %d, live at end %d, "
          "peak %d" % (proc["allocations"], proc["frees"], proc["live_bytes_at_end"],
                       proc["peak_live_bytes"]))
    eq(proc["ops_out_of_order"], 0, "operations applied out of time order")
    check(rss < GIB_KB, "prof record peaked at %d MiB for the run" % (rss >> 10))
    r2, rss_report = prof_maxrss(c, "report", c.path("big.prof"))
    eq(r2.rc, 0, "prof report (%r)" % r2)
    check(rss_report < GIB_KB, "prof report peaked at %d MiB" % (rss_report >> 10))
    r3, rss_export = prof_maxrss(c, "export", c.path("big.prof"), "-o", c.path("x.json"))
    eq(r3.rc, 0, "prof export (%r)" % r3)
    check(rss_export < GIB_KB, "prof export peaked at %d MiB" % (rss_export >> 10))
    c.note("%s events; peak RSS: prof record %d MiB, report %d MiB, export %d MiB"
           % (events, rss >> 10, rss_report >> 10, rss_export >> 10))


@case(serial=True)
def collector_memory_200m_events(c):
    # 200 M allocator events (100 M malloc/free pairs on one thread) under prof record
    # --block: the collector (drain, a 0.75 GB capture, then the tables and the trace) and
    # prof report each stay under 1 GiB, and prof record exits within 2 s of the program's
    # last call with the outputs written: under --block the program is held while the
    # live outputs fall more than half a second behind (it took 6.3 s when the end read
    # the backlog after the program). The trace by its default rule (the bounded
    # window): with every allocator call in it, it is a 0.5 GB file to write at the end.
    pairs = 100000000
    t0 = time.monotonic()
    r, rss = prof_maxrss(c, "record", "--block", "-q", "-o", "huge", "--", c.prog("pairs"),
                         pairs, timeout=900, env={"PROFILER_TRACE_ALLOC": None})
    wall = time.monotonic() - t0
    eq(r.rc, 0, "prof record's exit status (%r)" % r)
    ns = float(r.kv("ns_per_call")[0])
    end = wall - ns * 2 * pairs / 1e9
    check(rss < GIB_KB, "prof record peaked at %d MiB for 200 M events" % (rss >> 10))
    check(end < 2.0, "prof record exited %.2f s after the program's last call" % end)
    check(os.path.getsize(c.path("huge.txt")) > 0 and os.path.getsize(c.path("huge.json")) > 0,
          "the outputs are written")
    r2, rss_report = prof_maxrss(c, "report", c.path("huge.prof"), "--format", "json",
                                 timeout=900)
    eq(r2.rc, 0, "prof report (%r)" % r2)
    rep = json.loads(r2.out[:r2.out.rindex("maxrss_kb=")])
    check(rep["events"] >= 2 * pairs and rep["lost_events"] == 0, "events %r, lost %r"
          % (rep["events"], rep["lost_events"]))
    check(report_row(rep, "memory", "malloc")["count"] >= pairs, "malloc row")
    check(rss_report < GIB_KB, "prof report peaked at %d MiB" % (rss_report >> 10))
    c.note("%d events, capture %.0f MB; peak RSS prof record %d MiB, prof report %d MiB; "
           "outputs %.1f s after the program's last call" % (
               rep["events"], os.path.getsize(c.path("huge.prof")) / 1e6, rss >> 10,
               rss_report >> 10, end))


def window_check(c, r, t, start_s, end_s, period_s):
    """The trace, tables and summary of a run of ticks kept from start_s to end_s."""
    ticks = t.select("X", "tick", "user")
    origin = t.other["start_ns"]
    w = t.other.get("window")
    check(w and w["start_ns"] - origin == int(start_s * 1e9) and
          w["end_ns"] - origin == int(end_s * 1e9), "otherData.window: %r" % w)
    for e in t.events:
        if e.get("ph") == "X":
            check(e["ts"] >= start_s * 1e6 and e["ts"] + e["dur"] <= end_s * 1e6,
                  "an event outside the window: %r" % e)
    span = (end_s - start_s) / period_s
    check(span - 2 <= len(ticks) <= span + 1, "%d ticks in a %gs window of %gs ticks"
          % (len(ticks), end_s - start_s, period_s))
    mallocs = [e for e in t.events if e.get("ph") == "X" and e.get("name") == "malloc"]
    eq(len([e for e in mallocs if e["args"].get("bytes") == 100]), len(ticks),
       "the ticks' mallocs, as many as the ticks kept")
    check(w["left_out"] > 2 * len(ticks), "left out: %r" % w)
    return ticks, w


@case(serial=True)
def window_delay_duration(c):
    # PROFILER_DELAY=1 PROFILER_DURATION=1 on a 3 s run of ticks 50 ms apart: only the
    # events wholly inside [1 s, 2 s] of the session, the tables and the summary say so.
    r, t = profile(c, [c.prog("ticks"), 60, 50],
                   env={"PROFILER_DELAY": "1", "PROFILER_DURATION": "1"})
    ticks, w = window_check(c, r, t, 1.0, 2.0, 0.05)
    text = c.text()
    check(re.search(r"^Window: the events from \+1\.00s to \+2\.00s of the session .*; "
                    r"[\d,]+ outside it left out \(live bytes", text, re.M), "tables header: %r"
          % text[:600])
    eq(report_row(c.report_json(c.path("libprof.prof")), "user", "tick")["count"],
       len(ticks), "the tables' ticks")
    check(re.search(r"^libprof: kept the events from 1\.000s to 2\.000s of the session", r.err, re.M),
          "summary: %r" % r.err)
    # prof record's flags; no duration: to the end
    r = c.prof("record", "--delay", "2.5", "-o", "rec", "--", c.prog("ticks"), 60, 50)
    eq(r.rc, 0, "prof record (%r)" % r)
    t2, _ = c.outputs("rec")
    w2 = t2.other["window"]
    check(w2["end_ns"] is None and w2["start_ns"] - t2.other["start_ns"] == int(2.5e9),
          "window of --delay 2.5: %r" % w2)
    n2 = len(t2.select("X", "tick", "user"))
    check(8 <= n2 <= 11, "%d ticks after 2.5 s of a 3 s run" % n2)
    c.note("ticks kept: %d in [1 s, 2 s], %d after 2.5 s; %d events left out"
           % (len(ticks), n2, w["left_out"]))


@case
def window_settings_rejected(c):
    for var, value in (("PROFILER_DELAY", "-1"), ("PROFILER_DURATION", "soon")):
        r = c.run([c.prog("basic"), 10, 52101, "exit:0"], env={var: value})
        eq(r.rc, 0, "the program runs")
        check(re.search(r"^libprof: %s=%s: not a time in seconds.*, ignored$"
                        % (var, re.escape(value)), r.err, re.M), "%s: %r" % (var, r.err))


IMPORT_HEAVY = ("import ctypes, json, email.mime.multipart, http.server, xml.etree.ElementTree, "
                "unittest, asyncio, decimal, argparse, logging, sqlite3, csv, pickle, typing, "
                "dataclasses, pathlib, tarfile, zipfile, difflib, inspect, ast\n"
                "big = bytearray(3 << 20)\n"
                "x = json.loads(json.dumps([dict(a=i, b=str(i)) for i in range(20000)]))\n"
                "ctypes.CDLL(None).prof_mark(b'imported')\n")


def memory_x(t):
    return [e for e in t.events if e.get("ph") == "X" and e.get("cat") == "cpu_memory"]


@case
def trace_alloc_default_small(c):
    # An import-heavy Python program: by default the trace shows the allocator calls that
    # matter (docs/FORMATS.md) and the rest as counter tracks, so it stays small; the
    # tables and the capture keep every call, and PROFILER_TRACE_ALLOC=all shows them.
    # PYTHONMALLOC=malloc: Python's objects through malloc, as a C++ framework's are
    # PROFILER_BLOCK: beside other cases a full ring could drop the very calls checked
    env = {"PYTHONMALLOC": "malloc", "PROFILER_TRACE_ALLOC": None, "PROFILER_BLOCK": "1"}
    r, t = profile(c, [sys.executable, "-c", IMPORT_HEAVY], env=env)
    size = os.path.getsize(c.path("libprof.json"))
    rep = c.report_json(c.path("libprof.prof"))
    calls = sum(w["count"] for w in rep["rows"] if w["category"] == "memory")
    shown = memory_x(t)
    hidden = t.other["json_alloc_hidden"]
    check(calls > 50000, "only %d allocator calls in the import" % calls)
    eq(len(shown) + hidden, calls, "allocator calls shown + left to the counters")
    check(len(shown) < calls / 20, "%d of %d allocator calls shown" % (len(shown), calls))
    large = set()
    for e in shown:  # each for a reason the rule names
        a = e.get("args", {})
        big = a.get("bytes", 0) >= 1 << 20 and a.get("ptr") != "0x0"
        if big:
            large.add(a["ptr"])
        check(big or e["dur"] >= 20 or a.get("ptr") == "0x0" and a.get("bytes") or
              a.get("ptr") in large or a.get("old_ptr") in large,
              "an allocator call the rule does not show: %r" % e)
    check(any(e["args"].get("bytes", 0) >= 3 << 20 for e in shown), "the 3 MiB bytearray")
    eq(len(t.select("i", "imported", "mark")), 1, "the program's mark")
    for track in ("live heap bytes", "allocator calls/s"):
        check(t.select("C", track), "no %r counter track" % track)
    check(size < 2 << 20, "default trace of %d bytes" % size)
    # every call, when asked
    env.update({"PROFILER_TRACE_ALLOC": "all", "PROFILER_OUTPUT": "all"})
    r2 = c.run([sys.executable, "-c", IMPORT_HEAVY], env=env)
    eq(r2.rc, 0, "the program with PROFILER_TRACE_ALLOC=all (%r)" % r2)
    t2, _ = c.outputs("all")
    rep2 = c.report_json(c.path("all.prof"))
    calls2 = sum(w["count"] for w in rep2["rows"] if w["category"] == "memory")
    eq(len(memory_x(t2)), calls2, "PROFILER_TRACE_ALLOC=all: every allocator call")
    eq(t2.other["json_alloc_hidden"], 0, "none hidden")
    c.note("%d allocator calls: %d shown, trace %.1f kB (all: %.1f MB)"
           % (calls, len(shown), size / 1e3, os.path.getsize(c.path("all.json")) / 1e6))


@case
def schedule_over_steps(c):
    # torch.profiler.schedule(skip_first=1, wait=1, warmup=1, active=2, repeat=2) over
    # prof_step(): steps 3, 4 and 7, 8 recorded, nothing else
    spec = "skip_first=1,wait=1,warmup=1,active=2,repeat=2"
    r, t = profile(c, [c.prog("steps"), 12], env={"PROFILER_SCHEDULE": spec})
    ranges = sorted(e["name"] for e in t.select("X", cat="user"))
    eq(ranges, ["s03", "s04", "s07", "s08"], "the active steps' ranges")
    sizes = sorted(e["args"]["bytes"] for e in t.select("X", "malloc", "cpu_memory"))
    eq(sizes, [1003, 1004, 1007, 1008], "their allocations, and no other")
    # each active step's two step markers (its start and its end)
    marks = sorted(e["args"]["step"] for e in t.select("i", cat="step"))
    eq(marks, [3, 4, 5, 7, 8, 9], "step markers")
    check(re.search(r"^Schedule: only the active steps of PROFILER_SCHEDULE=%s were "
                    r"recorded \(live bytes" % re.escape(spec), c.text(), re.M), "tables header: %r"
          % c.text()[:500])
    # prof record's flag; a bad spec is one line and no schedule
    r = c.prof("record", "--schedule", "active=1,repeat=1", "-o", "rec", "--",
               c.prog("steps"), 5)
    eq(r.rc, 0, "prof record (%r)" % r)
    t2, _ = c.outputs("rec")
    eq(sorted(e["name"] for e in t2.select("X", cat="user")), ["s00"], "active=1,repeat=1")
    # the program's prof_pause() holds over the schedule's active steps
    r = c.run([c.prog("steps"), 6, "pause"], env={"PROFILER_SCHEDULE": "wait=1,active=2",
                                                   "PROFILER_OUTPUT": "paused"})
    t3, _ = c.outputs("paused")
    eq(t3.select("X", cat="user"), [], "ranges recorded while the program paused")
    r = c.run([c.prog("steps"), 3], env={"PROFILER_SCHEDULE": "active=0"})
    check(re.search(r"^libprof: PROFILER_SCHEDULE=active=0: use wait=N.*, ignored$", r.err,
                    re.M), "bad schedule: %r" % r.err)
