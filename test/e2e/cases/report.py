# report: prof report and prof export: rows, sorts, nesting, bad and truncated files, help texts.
# Run by test/e2e/run.py in the harness's namespace (see README.md).


# ---------------------------------------------------------------------------------------
# 10. prof report / export


@case
def range_pushed_while_paused(c):
    r, t = profile(c, [c.prog("paused_range")])
    inner, sib = t.select("X", "inner", "user"), t.select("X", "sibling", "user")
    eq((len(inner), len(sib)), (1, 1), "recorded ranges")
    eq(t.select("X", "unrecorded outer", "user"), [], "the range pushed while paused")
    rep = c.report_json(c.path("libprof.prof"))
    row = report_row(rep, "user", "sibling")
    eq(row["self_ns"], row["total_ns"], "the sibling's self time (nothing nested in it)")
    row = report_row(rep, "user", "inner")
    eq(row["self_ns"], row["total_ns"], "inner's self time")


def ranges_capture(c, threads=2, reps=20, shorts=50):
    r, t = profile(c, [c.prog("ranges"), threads, reps, shorts])
    return r, t, c.path("libprof.prof")


ROW_KEYS = ("category", "name", "count", "total_ns", "self_ns", "min_ns", "max_ns", "avg_ns",
            "median_ns", "percent")
SORT_KEY = {"total": "total_ns", "self": "self_ns", "count": "count", "avg": "avg_ns",
            "max": "max_ns"}


def by_category(rows):
    out = {}
    for row in rows:
        out.setdefault(row["category"], []).append(row)
    return out


@case
def report_rows_and_sorts(c):
    T, R, M = 2, 20, 50
    r, t, cap = ranges_capture(c, T, R, M)
    rep = c.report_json(cap)
    for k in ("events", "lost_events", "lost_gaps", "processes", "rows"):
        check(k in rep, "report JSON has no %r" % k)
    check(isinstance(rep["rows"], list) and rep["rows"], "no rows")
    for row in rep["rows"]:
        for k in ROW_KEYS:
            check(k in row, "row without %s: %r" % (k, row))
        check(row["min_ns"] <= row["median_ns"] <= row["max_ns"], "median outside: %r" % row)
        check(row["min_ns"] <= row["avg_ns"] <= row["max_ns"], "avg outside: %r" % row)
        check(abs(row["avg_ns"] * row["count"] - row["total_ns"]) <= row["count"],
              "avg*count != total: %r" % row)
        check(0 <= row["self_ns"] <= row["total_ns"], "self outside [0, total]: %r" % row)
        check(0 <= row["percent"] <= 100.0001, "percent: %r" % row)
    want = {"outer": T * R, "inner": T * R, "sibling": T * R, "short": T * M}
    eq({x["name"]: x["count"] for x in rep["rows"] if x["category"] == "user"}, want,
       "user rows")
    eq(report_row(rep, "memory", "malloc")["count"], len(t.select("X", "malloc", "cpu_memory")),
       "report malloc count vs trace")
    eq(rep["events"], t.other["events"], "report events vs otherData.events")
    p = report_process(rep, pid_of(r))[0]
    check("ranges" in str(p.get("command")), "process command %r" % p.get("command"))
    eq(len(t.select("i", cat="step")), 1, "steps")
    # sorts: rows of each category ordered by the key
    for how, key in SORT_KEY.items():
        rs = c.report_json(cap, "--sort", how)
        eq(sorted((x["category"], x["name"]) for x in rs["rows"]),
           sorted((x["category"], x["name"]) for x in rep["rows"]), "rows with --sort %s" % how)
        for cat, rows in by_category(rs["rows"]).items():
            vals = [x[key] for x in rows]
            eq(vals, sorted(vals, reverse=True), "--sort %s order in %s" % (how, cat))
    # --top and --category
    top = c.report_json(cap, "--sort", "count", "--top", "1")
    for cat, rows in by_category(top["rows"]).items():
        eq(len(rows), 1, "--top 1 rows in %s" % cat)
    eq(report_row(top, "user", "short")["count"], T * M, "--top 1 --sort count user row")
    only = c.report_json(cap, "--category", "user")
    eq({x["category"] for x in only["rows"]}, {"user"}, "--category user")
    eq(len(only["rows"]), 4, "--category user rows")
    # text
    rt = c.prof("report", cap)
    eq(rt.rc, 0, "prof report (text): %r" % rt)
    tr = text_rows(rt.out)
    for name, n in want.items():
        eq(tr.get(("user", name)), n, "text row user/%s" % name)
    eq(tr, text_rows(c.text()), "prof report text rows vs libprof.txt")
    rt = c.prof("report", cap, "--top", "2", "--sort", "count")
    eq(rt.rc, 0, "prof report --top 2: %r" % rt)
    user = [n for (cat, n) in text_rows(rt.out) if cat == "user"]
    eq(len(user), 2, "text --top 2 user rows: %r" % user)
    check("short" in user, "text --top 2 --sort count lacks the most frequent row: %r" % user)
    # csv
    rc_ = c.prof("report", cap, "--format", "csv")
    eq(rc_.rc, 0, "prof report --format csv: %r" % rc_)
    rows = list(csv.reader(io.StringIO(rc_.out)))
    header = [h.strip().lower() for h in rows[0]]
    for k in ("category", "name", "count"):
        check(k in header, "csv header %r lacks %s" % (rows[0], k))
    data = [dict(zip(header, x)) for x in rows[1:] if x]
    eq(len(data), len(rep["rows"]), "csv rows")
    jc = {(x["category"], x["name"]): x["count"] for x in rep["rows"]}
    eq({(d["category"], d["name"]): int(d["count"]) for d in data}, jc, "csv counts vs json")
    quoted = c.report_json(cap, "--category", "user", "--format", "json")
    eq(len(quoted["rows"]), 4, "--format given twice")


@case
def report_nested_self_total(c):
    # twenty rounds of two fresh threads: ring slots are reused, each exiting thread's
    # last calls (libc's free(NULL)s after the thread-exit hooks) may land in another
    # slot, and the collector drains each thread's ring between the last inner range and
    # its outer range (TAIL): the table must still pair every range with its own children
    T, R, ITER, TAIL = 2, 20, 20, 2000000
    r, t = profile(c, [c.prog("ranges"), T, R, 0, ITER, TAIL])
    cap = c.path("libprof.prof")
    rep = c.report_json(cap)
    outer, inner = report_row(rep, "user", "outer"), report_row(rep, "user", "inner")
    sib = report_row(rep, "user", "sibling")
    check(outer and inner and sib, "rows: %r" % rep["rows"])
    check(outer["total_ns"] >= inner["total_ns"], "outer total < inner total")
    # nothing but inner runs inside outer (no allocation, no call): exact up to rounding
    eq(outer["count"], T * R * ITER, "outer ranges")
    tol = 2 * outer["count"]
    check(abs(outer["self_ns"] - (outer["total_ns"] - inner["total_ns"])) <= tol,
          "outer self %d != outer total %d - inner total %d (off by %d ns)"
          % (outer["self_ns"], outer["total_ns"], inner["total_ns"],
             outer["self_ns"] - (outer["total_ns"] - inner["total_ns"])))
    check(abs(inner["self_ns"] - inner["total_ns"]) <= tol, "inner self != total: %r" % inner)
    check(abs(sib["self_ns"] - sib["total_ns"]) <= tol, "sibling self != total: %r" % sib)
    # and the trace agrees with the table: totals are the sums of the slices
    for row in (outer, inner, sib):
        evs = t.select("X", row["name"], "user")
        eq(len(evs), row["count"], "%s slices" % row["name"])
        us = sum(e["dur"] for e in evs)
        check(abs(us * 1000 - row["total_ns"]) <= max(2 * len(evs), 1),
              "%s: trace sum %.3f us vs total %d ns" % (row["name"], us, row["total_ns"]))
        for e in evs:
            check(e["tid"] != e["pid"], "ranges ran on the worker threads: %r" % e)
    # every inner slice lies inside an outer slice of its thread
    outs = t.select("X", "outer", "user")
    for e in t.select("X", "inner", "user"):
        check(any(o["tid"] == e["tid"] and o["ts"] <= e["ts"] and
                  e["ts"] + e["dur"] <= o["ts"] + o["dur"] + 0.001 for o in outs),
              "inner slice not inside an outer one: %r" % e)


@case
def export_again(c):
    r, t, cap = ranges_capture(c)
    x = c.prof("export", cap, "-o", c.path("again.json"))
    eq(x.rc, 0, "prof export: %r" % x)
    a = Trace(load_json(c.path("again.json")))
    a.wellformed()

    def key(tr):
        out = {}
        for e in tr.events:
            if e.get("ph") in ("X", "i", "C"):
                k = (e["ph"], e.get("cat"), e.get("name"), e.get("pid"), e.get("tid"))
                out[k] = out.get(k, 0) + 1
        return out
    eq(key(a), key(t), "events of the export vs libprof.json")
    eq(a.other.get("events"), t.other.get("events"), "otherData events")
    full_mem = t.select("X", cat="cpu_memory")
    full_user = t.select("X", cat="user")

    def written(tr):
        return len([e for e in tr.events if e.get("ph") != "M"])
    eq(t.other.get("json_events"), written(t), "otherData json_events vs events written")
    eq(t.other.get("json_dropped"), 0, "json_dropped without a cap")
    check(len(full_user) > 50 and len(full_mem) > 150, "the capture is too small for the caps")
    # a cap below the number of user ranges: every allocator event is left out, the ranges
    # (always kept by the documented rule) stay
    x = c.prof("export", cap, "-o", c.path("small.json"), "--max-events", 50)
    eq(x.rc, 0, "prof export --max-events 50: %r" % x)
    s = Trace(load_json(c.path("small.json")))
    s.wellformed()
    eq(len(s.select("X", cat="cpu_memory")), 0, "allocator events kept under a cap of 50")
    eq(len(s.select("X", cat="user")), len(full_user), "user ranges kept under a cap of 50")
    eq(s.other.get("json_dropped"), len(full_mem), "json_dropped under a cap of 50")
    eq(s.other.get("json_events"), written(s), "json_events vs events written (cap 50)")
    eq(s.other.get("json_max_events"), 50, "json_max_events")
    eq(s.other.get("events"), t.other.get("events"), "otherData events with a cap")
    check(s.other.get("json_rule"), "otherData json_rule")
    # a cap between: some allocator events stay, the rest are counted as dropped (what is
    # always kept: the ranges, markers and counter tracks, whose length depends on how
    # long the run took: the allocator calls/s track has a point per millisecond)
    cap_n = written(t) - len(full_mem) + len(full_mem) // 2
    x = c.prof("export", cap, "-o", c.path("mid.json"), "--max-events", cap_n)
    eq(x.rc, 0, "prof export --max-events %d: %r" % (cap_n, x))
    m = Trace(load_json(c.path("mid.json")))
    kept_mem = len(m.select("X", cat="cpu_memory"))
    check(0 < kept_mem < len(full_mem), "allocator events kept under a cap of %d: %d of %d"
          % (cap_n, kept_mem, len(full_mem)))
    eq(m.other.get("json_dropped"), len(full_mem) - kept_mem, "json_dropped (cap %d)" % cap_n)
    n = len([e for e in m.events if e.get("ph") in ("X", "i")])
    check(n <= cap_n, "%d complete and instant events under a cap of %d" % (n, cap_n))
    eq(len(m.select("X", cat="user")), len(full_user), "user ranges kept (cap %d)" % cap_n)
    # what is kept is an unchanged subset of the full trace
    full_keys = {(e["tid"], e["ts"], e["dur"], e["name"]) for e in full_mem}
    check(all((e["tid"], e["ts"], e["dur"], e["name"]) in full_keys
              for e in m.select("X", cat="cpu_memory")), "kept allocator events differ from the full trace")
    # the session's own cap says so on stderr, counting captured events only (not the
    # trace's metadata and live-heap counter points)
    r2 = c.run([c.prog("ranges"), 2, 20, 50], env={"PROFILER_OUTPUT": "capped",
                                                   "PROFILER_TRACE_MAX_EVENTS": "50"})
    t2 = Trace(load_json(c.path("capped.json")))
    said = re.findall(r"the trace keeps (\d+) of (\d+) events", r2.err)
    eq([tuple(int(x) for x in said[0])] if said else said,
       [(t2.other["events"] - t2.other["json_dropped"], t2.other["events"])],
       "the trace-cap line: %r" % r2.err)


@case
def report_bad_files(c):
    with open(c.path("text.prof"), "w") as f:
        f.write("hello, not a capture\n" * 10)
    open(c.path("empty.prof"), "w").close()
    os.makedirs(c.path("adir"))
    for path in ("missing.prof", "text.prof", "empty.prof", "adir"):
        for cmd in (["report", c.path(path)], ["export", c.path(path), "-o", c.path("o.json")]):
            r = c.prof(*cmd)
            eq(r.rc, 2, "prof %s %s: exit status: %r" % (cmd[0], path, r))
            eq(len(r.err.splitlines()), 1, "prof %s %s: stderr lines %r" % (cmd[0], path, r.err))
            check(not os.path.exists(c.path("o.json")), "prof export %s made o.json" % path)
    for args in (["report"], ["report", "x.prof", "--sort", "bogus"],
                 ["report", "x.prof", "--top", "abc"], ["report", "x.prof", "--format", "xml"],
                 ["export", "x.prof"], ["bogus-command"], ["report", "x.prof", "--bogus"]):
        r = c.prof(*args)
        eq(r.rc, 2, "prof %s: exit status: %r" % (" ".join(args), r))
        eq(len(r.err.splitlines()), 1, "prof %s: stderr lines %r" % (" ".join(args), r.err))


@case
def report_truncated_capture(c):
    # enough events for several frames of the capture (about 1 MiB of records each; a
    # malloc/free pair packs into ~12 bytes)
    r, t = profile(c, [c.prog("overload"), 300000, 71003], env={"PROFILER_BLOCK": "1"})
    cap = c.path("libprof.prof")
    full = c.report_json(cap)
    whole = report_row(full, "memory", "malloc")["count"]
    with open(cap, "rb") as f:
        data = f.read()
    c.note("capture %d bytes" % len(data))
    with open(c.path("half.prof"), "wb") as f:
        f.write(data[:len(data) // 2])
    r = c.prof("report", c.path("half.prof"), "--format", "json")
    eq(r.rc, 1, "prof report on a truncated capture: exit status: %r" % r)
    check(r.err.strip(), "no word on stderr about the damage")
    rep = json.loads(r.out)
    row = report_row(rep, "memory", "malloc")
    check(row and 0 < row["count"] < whole,
          "malloc rows of the readable part: %r (whole: %d)" % (row, whole))
    rt = c.prof("report", c.path("half.prof"))
    eq(rt.rc, 1, "text report on a truncated capture: %r" % rt)
    check(("memory", "malloc") in text_rows(rt.out), "no malloc row in the text: %r" % rt)
    x = c.prof("export", c.path("half.prof"), "-o", c.path("half.json"))
    eq(x.rc, 1, "prof export on a truncated capture: %r" % x)
    h = Trace(load_json(c.path("half.json")))
    check(0 < h.count("malloc", 71003) < 300000, "export of the readable part")
    # a flipped byte in the middle of the compressed bytes of a middle frame (file: 16-byte
    # header; frame: u32 magic, u32 compressed length, u32 raw length, u32 reserved, bytes)
    frames, at = [], 16
    while at + 16 <= len(data):
        magic, clen = struct.unpack_from("<II", data, at)
        eq(magic, 0x3146504C, "frame magic at offset %d" % at)
        frames.append((at + 16, clen))
        at += 16 + clen
    eq(at, len(data), "the capture ends on a frame boundary")
    check(len(frames) >= 3, "only %d frames in the capture" % len(frames))
    c.note("%d frames" % len(frames))
    start, clen = frames[len(frames) // 2]
    bad = bytearray(data)
    bad[start + clen // 2] ^= 0xFF
    with open(c.path("flip.prof"), "wb") as f:
        f.write(bytes(bad))
    r = c.prof("report", c.path("flip.prof"), "--format", "json")
    eq(r.rc, 1, "prof report on a corrupt capture: exit status: %r" % r)
    row = report_row(json.loads(r.out), "memory", "malloc")
    check(row and 0 < row["count"] < whole, "rows before the corruption: %r" % row)


@case
def help_texts(c):
    r = c.prof("--help")
    eq(r.rc, 0, "prof --help: %r" % r)
    for w in ("record", "report", "export"):
        check(w in r.out, "prof --help does not mention %s" % w)
    r = c.prof("report", "--help")
    eq(r.rc, 0, "prof report --help: %r" % r)
    for w in ("--sort", "--top", "--category", "--format", "total", "self", "count", "avg",
              "max", "csv", "json"):
        check(w in r.out, "prof report --help does not mention %s" % w)
    r = c.prof("export", "--help")
    eq(r.rc, 0, "prof export --help: %r" % r)
    for w in ("-o", "--max-events"):
        check(w in r.out, "prof export --help does not mention %s" % w)
    r = c.prof("record", "--help")
    eq(r.rc, 0, "prof record --help: %r" % r)
    for w in ("-o", "--ring-size", "--block", "-q"):
        check(w in r.out, "prof record --help does not mention %s" % w)
    r = c.prof()
    eq(r.rc, 2, "prof with no command: %r" % r)


@case
def tree_call_paths(c):
    # prof tree: ranges/3 threads x 4 times outer { inner } and sibling, 5 short ranges:
    # one tree per process, the threads merged (calls summed), inner under outer, self
    # times that add up, --max-depth and --threads
    r = c.run([c.prog("ranges"), 3, 4, 5, 1, 0])
    eq(r.rc, 0, "ranges (%r)" % r)
    t = c.prof("tree", c.path("libprof.prof"))
    eq(t.rc, 0, "prof tree (%r)" % t)
    rows = []
    for line in t.out.splitlines():
        m = re.match(r"^\s*(\S+)\s+(\S+)\s+(\d+)  ( *)(.+?)  \[(\S+)\]$", line)
        if m:
            rows.append((len(m.group(4)) // 2, m.group(5), int(m.group(3)), m.group(6)))
    got = {(lvl, name): (calls, cat) for lvl, name, calls, cat in rows}
    eq(got.get((0, "outer")), (12, "user"), "outer at the root, 3 threads x 4 (%r)" % rows)
    eq(got.get((1, "inner")), (12, "user"), "inner under outer (%r)" % rows)
    eq(got.get((0, "sibling")), (12, "user"), "sibling at the root (%r)" % rows)
    eq(got.get((0, "short")), (15, "user"), "short ranges (%r)" % rows)
    eq(sum(1 for lvl, name, _, _ in rows if name == "inner"), 1, "one inner line")
    check(not any(cat == "memory" for _, _, _, cat in rows), "allocator calls by default")
    d = c.prof("tree", c.path("libprof.prof"), "--max-depth", "1")
    check("inner" not in d.out and "outer" in d.out, "--max-depth 1: %r" % d.out)
    th = c.prof("tree", c.path("libprof.prof"), "--threads")
    eq(len(re.findall(r"^pid \d+, thread \d+", th.out, re.M)), 3, "--threads: a tree per "
       "thread with ranges: %r" % th.out[:600])
    m = c.prof("tree", c.path("libprof.prof"), "--memory")
    check(re.search(r"\bmalloc  \[memory\]", m.out), "--memory: allocator calls: %r"
          % m.out[-600:])
    b = c.prof("tree", c.path("libprof.prof"), "--min-percent", "x")
    eq((b.rc, b.err.strip()), (2, "prof tree: --min-percent wants a percentage from 0 to 100, "
                                  "got 'x'"), "a bad --min-percent")
    c.note("%d lines" % len(rows))
