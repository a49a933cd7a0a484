# control: idle and control from the program (set_state, dumps), signals, the clock, continuous dumps, vfork/posix_spawn, set_config.
# Run by test/e2e/run.py in the harness's namespace (see README.md).


# ---------------------------------------------------------------------------------------
# 12. idle, and control from the program


@case
def idle_without_autostart(c):
    r = c.run([c.prog("basic"), 50, 52301, "exit:0"], autostart=False)
    eq(r.rc, 0, "exit status: %r" % r)
    eq(r.err, "", "stderr")
    eq(sorted(os.listdir(c.dir)), [], "files made")
    left = c.leftover_processes()
    eq(left, [], "processes left behind")
    # the annotation calls are harmless when idle
    r = c.run([c.prog("ranges"), 1, 2, 2], autostart=False)
    eq((r.rc, r.err, sorted(os.listdir(c.dir))), (0, "", []), "ranges while idle: %r" % r)


@case
def set_state_dump_dumps(c):
    # a few rounds: prof_dump() comes a millisecond or so after the collector started,
    # which is when a late-found process segment would be missed
    for i in range(6):
        d = c.path("round%d" % i)
        os.makedirs(d)
        set_state_round(c, d, "round %d: " % i)


def set_state_round(c, d, tag):
    PRE, N = 5, 20
    r = c.run([c.prog("start_state"), PRE, N], autostart=False, cwd=d)
    eq(r.rc, 0, tag + "exit status: %r" % r)
    eq(r.kv("set_state"), ["0"], tag + "prof_set_state(PROF_RUN)")
    eq(r.kv("dump"), ["0"], tag + "prof_dump()")
    eq(r.kv("outputs_after_dump"), ["1"], tag + "outputs right after prof_dump()")
    eq(r.kv("copy"), ["0"], tag + "copy of the dumped trace")
    eq(r.kv("dumps_null"), ["0"], tag + "prof_dumps() NULL")
    text = r.out.split("----dumps----", 1)[1].split("----end----", 1)[0]
    check("started work" in text, tag + "prof_dumps() lacks the range: %r" % text)
    eq(text_rows(text).get(("user", "started work")), 1, tag + "prof_dumps() row of the range")
    check(("memory", "malloc") in text_rows(text), tag + "prof_dumps() has no malloc row")
    dumped = Trace(load_json(os.path.join(d, "dumped.json")))
    eq(dumped.count("malloc", 81001), 0, tag + "trace written by prof_dump(): mallocs before "
       "PROF_RUN")
    eq(dumped.count("malloc", 81002), N, tag + "trace written by prof_dump(): mallocs before "
       "the call (otherData %r)" % dumped.other)
    eq(len(dumped.select("X", "started work", "user")), 1,
       tag + "trace written by prof_dump(): the range")
    t = Trace(load_json(os.path.join(d, "libprof.json")))
    eq(t.count("malloc", 81001), 0, tag + "final: mallocs before PROF_RUN")
    eq(t.count("malloc", 81002), N, tag + "final: mallocs before prof_dump()")
    eq(t.count("malloc", 81003), N, tag + "final: mallocs after prof_dump()")
    t.wellformed()


# ---------------------------------------------------------------------------------------
# 13. signals, the clock, continuous dumps, more ways to start processes, set_config


ALLOC_FAMILY = {"malloc", "free", "calloc", "realloc", "reallocarray", "posix_memalign",
                "aligned_alloc", "memalign", "valloc", "pvalloc"}


@case
def signal_handler_reentrancy(c):
    # SIGALRM every 50 us while the main thread is mostly inside libprof's malloc/free
    # wrappers; the handler marks and counts. A mark is skipped only when the signal
    # interrupted libprof itself; then so is the counter point of that run. Then the
    # program spins (no call into libprof) for SPIN signals: each of those is recorded.
    # PROFILER_BLOCK: nothing may be lost; no cap on the trace: every count is exact.
    N, SIZE, SPIN = 30000, 56001, 100
    r, t = profile(c, [c.prog("sig_reentry"), N, SIZE, 50, 300, SPIN],
                   env={"PROFILER_BLOCK": "1", "PROFILER_TRACE_MAX_EVENTS": "100000000"})
    t.wellformed()
    eq(t.other.get("json_dropped"), 0, "events left out of the trace")
    pid = pid_of(r)
    pairs, delivered = int(r.kv("pairs")[0]), int(r.kv("deliveries")[0])
    check(pairs >= N, "pairs done %d < %d" % (pairs, N))
    eq(t.other.get("lost_events"), 0, "lost events")
    eq(t.other.get("processes"), 1, "processes")
    eq(t.count("malloc", SIZE, pid), pairs, "marked mallocs")
    eq(matched_frees(t, pid, {"malloc": SIZE}), pairs, "marked frees")
    ticks = t.select("i", "tick", pid=pid)
    points = t.select("C", "ticks", pid=pid)
    c.note("%d signals, %d marks (%d skipped inside libprof), %d pairs"
           % (delivered, len(ticks), delivered - len(ticks), pairs))
    check(delivered > 0, "no signal arrived: %r" % r)
    check(0 < len(ticks) <= delivered, "%d tick marks for %d signals" % (len(ticks), delivered))
    eq(len(points), len(ticks), "ticks counter points vs tick marks (a handler run records "
       "both or neither)")
    for e in ticks:
        eq((e.get("cat"), e.get("tid")), ("mark", pid), "tick mark category and thread")
    # in time order the handler runs' records alternate: mark, its counter point, mark, ...
    # and the counter values are the handler's own counts, increasing, within 1..delivered
    seq = sorted(ticks + points, key=lambda e: (e["ts"], e["ph"] == "C"))
    phs = "".join("m" if e["ph"] == "i" else "c" for e in seq)
    check(phs == "mc" * len(ticks), "tick marks and counter points do not alternate: %s..."
          % phs[:80])
    vals = [(e.get("args") or {}).get("ticks") for e in seq if e["ph"] == "C"]
    check(all(isinstance(v, (int, float)) and v == int(v) and 1 <= v <= delivered
              for v in vals), "counter values outside 1..%d: %r" % (delivered, vals[:20]))
    check(all(a < b for a, b in zip(vals, vals[1:])), "counter values not increasing: %r"
          % vals[:20])
    first, last = int(r.kv("spin_first")[0]), int(r.kv("spin_last")[0])
    eq(last - first + 1, SPIN, "signals of the spin phase")
    missing = sorted(set(range(first, last + 1)) - set(int(v) for v in vals))
    check(not missing, "handler runs that interrupted no libprof call but left no record: "
          "%d of %d (%r)" % (len(missing), SPIN, missing[:10]))
    # nothing but the names the program and libc use: none made up, none corrupted
    allowed = {"X": ALLOC_FAMILY, "i": {"tick", "peak live heap"},
               "C": {"ticks", "live heap bytes", "allocator calls/s"}}
    bad = [e for e in t.events if e.get("ph") in allowed
           and e.get("name") not in allowed[e["ph"]]]
    check(not bad, "%d events with unexpected names: %r" % (len(bad), bad[:5]))
    eq({e.get("pid") for e in t.events if e.get("ph") in allowed}, {pid}, "pids of events")
    rep = c.report_json(c.path("libprof.prof"))
    bad = [x for x in rep["rows"] if x["category"] != "memory" or x["name"] not in ALLOC_FAMILY]
    check(not bad, "report rows with unexpected names: %r" % bad[:5])
    eq(rep.get("marks"), [{"name": "tick", "count": len(ticks)}], "report marks")
    cnt = rep.get("counters") or []
    eq([(x["name"], x["count"], x["last"], x["max"]) for x in cnt],
       [("ticks", len(points), vals[-1], vals[-1])], "report counters")


def mono_pairs(r):
    return [(int(a), int(b)) for a, b in re.findall(r"^pair=\d+ (\d+) (\d+)$", r.out, re.M)]


@case
def clock_on_session_timeline(c):
    # docs/FORMATS.md: ts and dur are microseconds (three decimals) since the origin,
    # otherData.start_ns, and the session clock is CLOCK_MONOTONIC in ns: a mark's absolute
    # time lies between the program's own clock reads around it. SLACK covers the
    # tick->ns conversion (TSC) and rounding.
    N, SLACK = 100, 2000
    clocks = [None]
    worst = []
    for clock in clocks:
        d = c.path(clock or "default")
        os.makedirs(d)
        env = {"PROFILER_CLOCK": clock} if clock else {}
        lo = time.monotonic_ns()
        r = c.run([c.prog("clock_marks"), N, 20000], env=env, cwd=d)
        hi = time.monotonic_ns()
        eq(r.rc, 0, "exit status: %r" % r)
        t = Trace(load_json(os.path.join(d, "libprof.json")))
        t.wellformed()
        used = t.other.get("clock")
        if clock is None and not str(used).startswith("mono"):
            clocks.append("mono")  # CLOCK_MONOTONIC read directly, too
        tag = "clock %s (%s): " % (clock or "default", used)
        pid = pid_of(r)
        pairs = mono_pairs(r)
        eq(len(pairs), N, tag + "pairs printed")
        start = t.other.get("start_ns")
        check(isinstance(start, int) and start > 0, tag + "otherData.start_ns %r" % start)
        rep = c.report_json(os.path.join(d, "libprof.prof"))
        eq(rep.get("start_ns"), start, tag + "report start_ns vs otherData.start_ns")

        def ns(us):
            return start + int(round(us * 1000))
        marks = sorted(t.select("i", "cm", pid=pid), key=lambda e: e["ts"])
        eq(len(marks), N, tag + "marks")
        err = 0
        lo_off, hi_off = [], []
        for i, (e, (before, after)) in enumerate(zip(marks, pairs)):
            at = ns(e["ts"])
            check(before - SLACK <= at <= after + SLACK,
                  tag + "mark %d at %d ns, outside [%d, %d] (before %+d ns, after %+d ns)"
                  % (i, at, before, after, at - before, at - after))
            err = max(err, before - at, at - after)
            lo_off.append(at - before)
            hi_off.append(after - at)
        c.note("%s max error outside the window %d ns, mark - before %d..%d ns, after - mark "
               "%d..%d ns" % (tag.rstrip(": "), max(err, 0), min(lo_off), max(lo_off),
                              min(hi_off), max(hi_off)))
        worst.append(err)
        # every event lies within the program's lifetime as the runner saw it
        n = 0
        for e in t.events:
            if e.get("ph") not in ("X", "i", "C"):
                continue
            b = ns(e["ts"])
            f = b + int(round(e.get("dur", 0) * 1000))
            if not (lo - SLACK <= b and f <= hi + SLACK):
                raise Fail(tag + "event outside the program's lifetime [%d, %d]: "
                           "[%d, %d] %r" % (lo, hi, b, f, e))
            n += 1
        check(n > N, tag + "only %d events" % n)


@case(serial=True)
def continuous_dump(c):
    # phase 1 (>= 0.75 s of ranges "phase1" around 57001-byte pairs, until libprof.txt
    # exists), then the program waits for "go" while the runner reads the dumps; phase 2
    # (0.75 s, "phase2", 57002) after it. A moderate event rate (a 1 ms sleep every 10
    # ranges): the collector does not drain while it writes a dump.
    argv = [c.prog("cdump"), "750", "750", "10", "1000"]
    env = {"PROFILER_CONTINUOUS_DUMP": "1", "PROFILER_DUMP_PERIOD": "0.2"}
    p, out, err, t0 = c.start(argv, env=env)
    r = None
    try:
        deadline = time.monotonic() + 60
        m = None
        while not m:
            m = re.search(r"phase1=(\d+) txt_seen=(\d)", read_text(out.name) or "")
            check(p.poll() is None or m, "the program ended before phase 1 was over")
            check(time.monotonic() < deadline, "phase 1 not over after 60 s")
            time.sleep(0.01)
        k1, seen = int(m.group(1)), m.group(2)
        eq(seen, "1", "libprof.txt written by a dump while the program worked (waited up "
           "to 20 s)")
        # within a generous wait a dump has every event of phase 1
        deadline = time.monotonic() + 10
        torn = reads = 0
        while True:
            text = read_text(c.path("libprof.txt")) or ""
            rows = text_rows(text)
            try:
                reads += 1
                mid = Trace(load_json(c.path("libprof.json")))
            except (OSError, ValueError, Fail):
                torn += 1
                mid = None
            if (rows.get(("user", "phase1")) == k1 and mid is not None
                    and len(mid.select("X", "phase1", "user")) == k1):
                break
            check(time.monotonic() < deadline,
                  "10 s after phase 1: libprof.txt user/phase1 %r, libprof.json phase1 %s, "
                  "want %d" % (rows.get(("user", "phase1")),
                               len(mid.select("X", "phase1", "user")) if mid else "unreadable",
                               k1))
            time.sleep(0.05)
        c.note("phase 1: %d ranges; %d of %d reads of libprof.json while dumps ran were not "
               "a whole trace" % (k1, torn, reads))
        mid.wellformed()
        eq(mid.count("malloc", 57001), k1, "mid-run trace: phase 1 mallocs")
        eq(len(mid.select("X", "phase2", "user")), 0, "mid-run trace: phase 2 ranges")
        check(("memory", "malloc") in rows, "mid-run libprof.txt has no memory/malloc row")
        check(("user", "phase2") not in rows, "mid-run libprof.txt has phase 2 rows")
        shutil.copy(c.path("libprof.prof"), c.path("mid.prof"))
        rep = c.report_json(c.path("mid.prof"))
        eq(report_row(rep, "user", "phase1")["count"], k1, "mid-run capture: phase1 row")
        check(report_row(rep, "user", "phase2") is None, "mid-run capture has phase 2 rows")
    finally:
        open(c.path("go"), "w").close()
        r = c.finish(argv, p, out, err, t0, 120)
    eq(r.rc, 0, "exit status: %r" % r)
    eq(r.kv("waited_go"), ["1"], "the program saw go")
    k2 = int(r.kv("phase2")[0])
    t, _ = c.outputs()
    t.wellformed()
    s = parse_summary(r.err)
    check(s, "no summary line: %r" % r.err)
    eq((s[0], s[1]), (t.other.get("events"), t.other.get("lost_events")),
       "summary (events, lost) vs otherData")
    eq(t.other.get("lost_events"), 0, "lost events")
    eq(warnings(r.err), [], "stderr besides the summary")
    for name, size, k in (("phase1", 57001, k1), ("phase2", 57002, k2)):
        eq(len(t.select("X", name, "user")), k, "final trace: %s ranges" % name)
        eq(t.count("malloc", size), k, "final trace: %d-byte mallocs" % size)
    tr = text_rows(c.text())
    eq((tr.get(("user", "phase1")), tr.get(("user", "phase2"))), (k1, k2),
       "final libprof.txt user rows")
    rep = c.report_json(c.path("libprof.prof"))
    eq(rep.get("session_end"), "present", "final capture session end")
    eq(report_row(rep, "user", "phase2")["count"], k2, "final capture: phase2 row")


LIVE_DUMP = "dump made from the live outputs' state"


def dump_lines(err):
    """How the collector made each dump (PROFILER_DEBUG=drain): from the live outputs'
    state, or declined by them and made from the capture."""
    return (len(re.findall(LIVE_DUMP, err)),
            len(re.findall(r"dump declined by the live outputs", err)))


@case
def dumps_from_live_state(c):
    # Dumps are written by a fork of the live outputs' child from what it has read (no
    # read of the whole capture): prof_dump() and prof_dumps() answered with the events
    # up to the call, continuous dumps every 0.2 s, each from the live state.
    r = c.run([c.prog("start_state"), 5, 20], autostart=False, env={"PROFILER_DEBUG": "drain"})
    eq(r.rc, 0, "exit status: %r" % r)
    eq((r.kv("dump"), r.kv("outputs_after_dump"), r.kv("dumps_null")), (["0"], ["1"], ["0"]),
       "prof_dump(), its outputs, prof_dumps()")
    eq(dump_lines(r.err), (2, 0), "dumps made from the live state (prof_dump, prof_dumps): "
       "%r" % r.err)
    text = r.out.split("----dumps----", 1)[1].split("----end----", 1)[0]
    eq(text_rows(text).get(("user", "started work")), 1, "prof_dumps() row of the range")
    dumped = Trace(load_json(c.path("dumped.json")))
    dumped.wellformed()
    eq(dumped.count("malloc", 81002), 20, "trace written by prof_dump(): the 20 mallocs "
       "before the call (otherData %r)" % dumped.other)
    eq(dumped.count("malloc", 81003), 0, "trace written by prof_dump(): none after it")
    for ext in (".json", ".txt", ".prof"):
        os.unlink(c.path("libprof" + ext))
    env = {"PROFILER_DEBUG": "drain", "PROFILER_CONTINUOUS_DUMP": "1",
           "PROFILER_DUMP_PERIOD": "0.2"}
    r = c.run([c.prog("ticks"), 100, 20], env=env)
    eq(r.rc, 0, "exit status: %r" % r)
    live, declined = dump_lines(r.err)
    check(live >= 5 and declined == 0, "continuous dumps over 2 s every 0.2 s: %d from the "
          "live state, %d declined: %r" % (live, declined, r.err))
    t, _ = c.outputs()
    t.wellformed()
    eq(len(t.select("X", "tick", "user")), 100, "the final trace's ticks")
    c.note("%d continuous dumps from the live state" % live)


@case
def dump_after_live_outputs_gave_up(c):
    # A launcher that runs longer than the live outputs wait (1 s) and then execs makes
    # them give up (its events were shown before its fold was known): prof_dump() is then
    # made from the capture, as before, and answered.
    script = 'sleep 1.5; exec "$0" 5 20'
    r = c.run(["sh", "-c", script, c.prog("start_state")], env={"PROFILER_DEBUG": "drain"})
    eq(r.rc, 0, "exit status: %r" % r)
    eq((r.kv("dump"), r.kv("outputs_after_dump"), r.kv("dumps_null")), (["0"], ["1"], ["0"]),
       "prof_dump(), its outputs, prof_dumps(): %r" % r.err)
    eq(dump_lines(r.err)[0], 0, "dumps from the live state after it gave up: %r" % r.err)
    dumped = Trace(load_json(c.path("dumped.json")))
    eq(dumped.count("malloc", 81002), 20, "trace written by prof_dump()")


@case
def python_subprocess_and_multiprocessing(c):
    N, K, TASKS = 12, 40, 8
    script = os.path.join(PROGS, "py_procs.py")
    # the outputs must be complete when the script returns (profile() does not wait)
    r, t = profile(c, [sys.executable, script, c.prog("basic"), N, K, TASKS],
                   env={"PYTHONPATH": SCRIPTS})
    t.wellformed()
    info = json.loads(r.out.strip().splitlines()[-1])
    c.note("subprocess _USE_VFORK=%s _USE_POSIX_SPAWN=%s"
           % (info["use_vfork"], info["use_posix_spawn"]))
    me, vc, sc = info["pid"], info["vfork_child"], info["spawn_child"]
    workers = info["workers"]
    tasks = info["tasks"]
    eq(len(tasks), TASKS, "tasks done")
    eq(len(set(workers)), 2, "pool workers")
    check(set(tasks) <= set(workers), "tasks ran outside the pool: %r vs %r" % (tasks, workers))
    eq(len({me, vc, sc} | set(workers)), 5, "distinct pids")
    eq(t.other.get("lost_events"), 0, "lost events")
    names = t.process_names()
    rep = c.report_json(c.path("libprof.prof"))
    for pid, what in [(vc, "subprocess child (vfork path)"), (sc, "subprocess child "
                      "(posix_spawn path)")] + [(w, "pool worker") for w in workers]:
        check(pid in names, "no process_name for %s %d" % (what, pid))
        check(t.select("X", pid=pid), "no events of %s %d" % (what, pid))
        eq(report_process(rep, pid)[0].get("ppid"), me, "%s %d's ppid" % (what, pid))
    check("basic" in str(names[vc]) and "basic" in str(names[sc]),
          "process names of the subprocess children: %r" % names)
    eq(t.count("malloc", 60001, vc), N, "vfork-path child's marked mallocs")
    eq(t.count("malloc", 60002, sc), N, "posix_spawn-path child's marked mallocs")
    for size in (60001, 60002, 60003):
        eq(t.count("malloc", size, me), 0, "%d-byte mallocs under the script's pid" % size)
    for w in workers:
        want = K * tasks.count(w)
        eq(t.count("malloc", 60003, w), want, "worker %d's marked mallocs (%d tasks)"
           % (w, tasks.count(w)))
        eq(matched_frees(t, w, {"malloc": 60003}), want, "worker %d's marked frees" % w)
    eq(t.count("malloc", 60003), K * TASKS, "marked mallocs of the pool in all")
    eq(t.count("malloc", 60001) + t.count("malloc", 60002), 2 * N, "children's mallocs in all")
    eq(t.other.get("processes"), 5, "processes in the session")


@case
def vfork_and_posix_spawn(c):
    N = 20
    for i in range(3):
        d = c.path("round%d" % i)
        os.makedirs(d)
        tag = "round %d: " % i
        r = c.run([c.prog("spawn_vfork"), N], cwd=d)
        eq(r.rc, 0, tag + "exit status: %r" % r)
        # complete when the parent returns
        t = Trace(load_json(os.path.join(d, "libprof.json")))
        t.wellformed()
        parent = pid_of(r, "parent")
        v, s = int(r.kv("vforked")[0]), int(r.kv("spawned")[0])
        kids = dict((int(p), (int(sz), pre)) for p, sz, pre in
                    re.findall(r"child=(\d+) size=(\d+) preload=(\w+)", r.out))
        eq(kids, {v: (58001, "yes"), s: (58002, "yes")}, tag + "children (LD_PRELOAD put back)")
        eq(t.other.get("lost_events"), 0, tag + "lost events")
        names = t.process_names()
        rep = c.report_json(os.path.join(d, "libprof.prof"))
        for pid, size, what in ((v, 58001, "vfork+execve child"), (s, 58002, "posix_spawn child")):
            eq(t.count("malloc", size, pid), N, tag + "%s's marked mallocs" % what)
            eq(matched_frees(t, pid, {"malloc": size}), N, tag + "%s's marked frees" % what)
            eq(t.count("malloc", size), N, tag + "%d-byte mallocs in all" % size)
            check(pid in names, tag + "no process_name for the %s" % what)
            eq(report_process(rep, pid)[0].get("ppid"), parent, tag + "%s's ppid" % what)
        eq(t.count("malloc", 58003, parent), N, tag + "parent's marked mallocs")
        eq(t.count("malloc", 58003), N, tag + "58003-byte mallocs in all")
        eq(t.other.get("processes"), 3, tag + "processes")
        s_ = parse_summary(r.err)
        check(s_ and s_[2] == 3, tag + "summary %r" % r.err)


@case
def filename_key_and_set_config(c):
    N = 15
    r = c.run([c.prog("set_config"), N], autostart=False)
    eq(r.rc, 0, "exit status: %r" % r)
    for k, v in (("filename", "0"), ("memory_off", "0"), ("nonsense", "-1"), ("run", "0"),
                 ("memory_on", "0")):
        eq(r.kv(k), [v], "return of the %s call" % k)
    w = warnings(r.err)
    eq(len(w), 1, "one line on stderr besides the summary: %r" % r.err)
    check(w[0].startswith("libprof: ") and "nonsense" in w[0],
          "the line does not name the key: %r" % w[0])
    s = parse_summary(r.err)
    check(s and "my_out.json" in r.err, "summary naming my_out.json: %r" % r.err)
    eq(sorted(os.listdir(c.dir)), ["my_out.json", "my_out.prof", "my_out.txt"], "outputs")
    t, _ = c.outputs("my_out")
    t.wellformed()
    pid = pid_of(r)
    eq(t.count("malloc", 59001), 0, "mallocs with profile_memory 0")
    eq(t.count("malloc", 59002, pid), N, "mallocs after profile_memory 1")
    eq(matched_frees(t, pid, {"malloc": 59002}), N, "frees after profile_memory 1")
    off, on = t.select("i", "memory off", "mark"), t.select("i", "memory on", "mark")
    eq((len(off), len(on)), (1, 1), "marks (recording ran while memory was off)")
    early = [e for e in t.select("X", cat="cpu_memory") if e["ts"] < off[0]["ts"]]
    eq(early, [], "memory events before the 'memory off' mark")
    rep = c.report_json(c.path("my_out.prof"))
    eq(report_row(rep, "memory", "malloc")["count"], len(t.select("X", "malloc", "cpu_memory")),
       "report malloc count vs trace")
    eq(text_rows(c.text("my_out")).get(("memory", "malloc")),
       len(t.select("X", "malloc", "cpu_memory")), "my_out.txt malloc count")
