# parts: captures in parts (issue 15): rotation (PROFILER_ROTATE, prof record --rotate) and
# the flight recorder (PROFILER_FLIGHT, --flight), each part readable alone, the parts of
# a run read as one capture, and a flight recorder that keeps only the last span.


def rows_by_key(rep):
    return {(w["category"], w["name"]): w["count"] for w in rep["rows"]}


def heap_of(rep):
    return sorted((p["command"].split()[0].rsplit("/", 1)[-1], p["allocations"], p["frees"],
                   p["bytes_allocated"]) for p in rep["processes"])


def parts_of(c, prefix):
    d = c.path(prefix + ".prof")
    check(os.path.isdir(d), "%s.prof is not a directory of parts" % prefix)
    names = sorted(os.listdir(d))
    check(names and all(re.fullmatch(r"part-\d{6}\.prof", n) for n in names),
          "parts: %r" % names)
    return [os.path.join(d, n) for n in names]


@case
def rotate_parts_equal_one_capture(c):
    # A forked child and two threads (one started a second late) over ~2.5 s, rotated
    # every second: several parts, each a capture alone; read together, the tables equal
    # those of the same program captured whole.
    argv = [c.prog("parts_mix"), 400, 5]
    r = c.prof("record", "--rotate", "1s", "-o", "rot", "--", *argv)
    eq(r.rc, 0, "prof record --rotate (%r)" % r)
    whole = c.prof("record", "-o", "whole", "--", *argv)
    eq(whole.rc, 0, "prof record (%r)" % whole)
    parts = parts_of(c, "rot")
    check(len(parts) >= 3, "%d parts of a 2.5 s run rotated every second" % len(parts))
    rep, ref = c.report_json(c.path("rot.prof")), c.report_json(c.path("whole.prof"))
    eq(rows_by_key(rep), rows_by_key(ref), "rows (category, name) -> count")
    eq(heap_of(rep), heap_of(ref), "each process's allocations, frees and bytes")
    # each free follows its malloc on its thread: none unmatched (a thread's malloc and
    # its next free once came out of order on ties of the clock's re-anchoring)
    eq([p["frees_unmatched"] for r in (rep, ref) for p in r["processes"]], [0] * 4,
       "frees unmatched")
    eq(len(rep["processes"]), 2, "processes (no image repeated by a part)")
    check(rep["parts"]["parts"] == len(parts) and rep["parts"]["first"] == 1 and
          rep["parts"]["last"] == len(parts) and rep["parts"]["rotate_ns"] == 10**9,
          "report's parts: %r" % rep["parts"])
    eq(rep["lost_events"], 0, "lost")
    # each part alone: a capture with its own processes, threads and names
    total = 0
    for i, p in enumerate(parts):
        alone = c.report_json(p)
        total += alone["events"]
        eq((alone["parts"]["first"], alone["parts"]["last"]), (i + 1, i + 1), "part number")
        names = [w["name"] for w in alone["rows"] if w["category"] == "user"]
        check(all(not n.startswith("<unknown") for n in names), "unnamed rows in %s: %r"
              % (p, names))
        if 0 < i < len(parts) - 1:
            check(names, "part %d has no ranges" % (i + 1))
    eq(total, rep["events"], "the parts' events add up to the whole")
    text = c.text("rot")
    check(re.search(r"^Parts: parts 1-%d \(%d read\) of a capture rotated every 1\.00s"
                    % (len(parts), len(parts)), text, re.M), "tables header: %r" % text[:500])
    # a list of parts is one capture too (prof report P1 P2 ...)
    r = c.prof("report", *parts, "--format", "json")
    eq(r.rc, 0, "prof report of the parts listed (%r)" % r)
    listed = json.loads(r.out)
    eq((rows_by_key(listed), heap_of(listed)), (rows_by_key(rep), heap_of(rep)),
       "the parts listed vs their directory")
    c.note("%d parts, %d events; rows and heaps equal to the whole capture's"
           % (len(parts), rep["events"]))


@case
def rotate_by_size(c):
    # --rotate 1M on 6 M allocator events: parts of about 1 MiB of capture each, all
    # readable, the live-heap analysis matching releases across parts.
    r = c.prof("record", "--rotate", "1M", "--block", "-o", "big", "--",
               c.prog("alloc_storm"), 1500000, 1)
    eq(r.rc, 0, "prof record (%r)" % r)
    parts = parts_of(c, "big")
    sizes = [os.path.getsize(p) for p in parts]
    check(len(parts) >= 4, "part sizes %r" % sizes)
    for s in sizes[:-1]:
        # closed when its estimated size (frames still compressing counted at the ratio
        # so far) reaches 1 MiB: a little under, or up to a drain pass over
        check((1 << 20) * 3 // 4 <= s <= 2 << 20, "a part of %d bytes (rotate 1M): %r"
              % (s, sizes))
    rep = c.report_json(c.path("big.prof"))
    malloc = report_row(rep, "memory", "malloc")
    check(malloc and malloc["count"] >= 1500000, "malloc row %r" % malloc)
    proc = max(rep["processes"], key=lambda p: p["allocations"])
    eq(proc["frees_unmatched"], 0, "releases matched across parts")
    c.note("part sizes (KiB): %s" % [s >> 10 for s in sizes])


def ticks_of(t):
    return sorted(e["ts"] for e in t.select("X", "tick", "user"))


@case
def flight_recorder_killed(c):
    # PROFILER_FLIGHT=3s on a program ticking every 40 ms for ~10 s, dumped on request at
    # 6 s, then killed with SIGKILL: the outputs hold the last 3 s before the end and
    # nothing older; the parts on disk hold no more than the span and one part.
    p, out, err, t0 = c.start([c.prog("ticks"), "1000", "40"], env={"PROFILER_FLIGHT": "3s"})
    # at 6 s, `prof dump SESSION`: the outputs of the last 3 s now, the run going on
    collector = collector_of(c, p.pid)
    with open("/proc/%d/cmdline" % collector, "rb") as f:
        args = f.read().split(b"\0")
    sid = args[args.index(b"--session") + 1].decode()
    time.sleep(max(0, 6 - (time.monotonic() - t0)))
    d = c.prof("dump", sid)
    eq(d.rc, 0, "prof dump (%r)" % d)
    check(re.search(r"^session %s \(.*ticks 1000 40\): its collector \(pid %d\) writes "
                    r".*libprof\.json" % (sid, collector), d.out, re.M), "prof dump: %r" % d.out)
    dumped, _ = c.outputs(wait=10)
    # no tick after the dump's outputs were there (a busy machine's dump comes later than
    # 6 s: 7.9 s once), none more than 3 s before the newest
    ready = time.monotonic() - t0
    early = ticks_of(dumped)
    check(early and 2.5e6 <= early[0] and early[-1] <= ready * 1e6 and
          early[-1] - early[0] <= 3.05e6, "the dump's ticks from %.3f to %.3f s (outputs "
          "there at %.3f s)" % (early[0] / 1e6, early[-1] / 1e6, ready))
    check(p.poll() is None, "the program ended with the dump")
    time.sleep(max(0, 10 - (time.monotonic() - t0)))
    # on a loaded machine the dump's outputs may come after 10 s: the run then ends later
    killed_at = time.monotonic() - t0
    p.kill()
    r = c.finish(["ticks"], p, out, err, t0, 30)
    deadline = time.monotonic() + 30
    while os.path.exists("/proc/%d" % collector) and time.monotonic() < deadline:
        time.sleep(0.02)
    t, _ = c.outputs(wait=20)
    ticks = ticks_of(t)
    parts = t.other["parts"]
    check(parts and parts["flight_ns"] == 3 * 10**9, "otherData.parts: %r" % parts)
    end_us = max(e["ts"] + e.get("dur", 0) for e in t.events if e.get("ph") == "X")
    kept_from_us = (parts["kept_from_ns"] - t.other["start_ns"]) / 1e3
    check(ticks and ticks[0] >= kept_from_us, "a tick before the span: %r < %r"
          % (ticks[:1], kept_from_us))
    # the session starts after t0, and ticks come every 40 ms: the last one just before the kill
    check(killed_at - 1.0 <= end_us / 1e6 <= killed_at,
          "the last event at %.3f s of a run killed at %.3f s" % (end_us / 1e6, killed_at))
    check(abs((end_us - kept_from_us) - 3e6) < 0.2e6, "kept from %.3f s to %.3f s"
          % (kept_from_us / 1e6, end_us / 1e6))
    for e in t.events:
        if e.get("ph") == "X":
            check(e["ts"] >= kept_from_us, "an event older than the span: %r" % e)
    check(70 <= len(ticks) <= 76, "%d ticks in the last 3 s of 40 ms ticks" % len(ticks))
    check(parts["left_out"] > 0, "older events in the oldest part left out: %r" % parts)
    # on disk: parts of 0.75 s, none wholly older than the span
    on_disk = parts_of(c, "libprof")
    check(len(on_disk) <= 6, "%d parts kept on disk for a 3 s span" % len(on_disk))
    check(re.search(r"^Flight recorder: the last 3\.00s kept \(PROFILER_FLIGHT\), from \+[\d.]+s; "
                    r"[\d,]+ older events left out", c.text(), re.M), "tables: %r" % c.text()[:500])
    c.note("%d ticks kept of ~250, %d parts on disk, the span %.2f s" %
           (len(ticks), len(on_disk), (end_us - kept_from_us) / 1e6))


@case
def flight_dump_on_signal(c):
    # prof record --flight 2s; SIGUSR2 to prof (the collector) writes the outputs of the
    # last 2 s at once, the run goes on; the end writes them again.
    p, out, err, t0 = c.start([Setup.prof, "record", "--flight", "2s", "-o", "fl", "--",
                               c.prog("ticks"), "150", "40"], env=Setup.prof_env(),
                              preload=False, autostart=False)
    time.sleep(3.5)
    signalled = time.monotonic() - t0
    p.send_signal(signal.SIGUSR2)
    t, waited = c.outputs("fl", wait=10)
    seen = time.monotonic() - t0
    # the dump holds the last 2 s before it was made: after the signal, and before its
    # outputs were seen (a loaded machine makes it later: its window moves with it; the
    # ticks count from the program's start, a little after t0)
    first = ticks_of(t)
    check(first and signalled - 0.5 <= first[-1] / 1e6 <= seen and
          first[0] >= first[-1] - 2.1e6,
          "the dump's ticks from %.3f to %.3f s (signal at %.3f s, outputs seen at %.3f s)"
          % (first[0] / 1e6, first[-1] / 1e6, signalled, seen))
    r = c.finish(["prof", "record"], p, out, err, t0, 60)
    eq(r.rc, 0, "prof record (%r)" % r)
    check(re.search(r"^libprof: \d+ events .*-> .*fl\.json, fl\.txt, fl\.prof$", r.err, re.M),
          "the dump's summary line: %r" % r.err)
    t2, _ = c.outputs("fl")
    last = ticks_of(t2)
    check(last[-1] > 5.5e6 and last[0] >= last[-1] - 2.1e6, "the end's ticks from %.3f to %.3f s"
          % (last[0] / 1e6, last[-1] / 1e6))
    check(not [n for n in os.listdir(c.dir) if ".dump-" in n], "snapshots left: %r"
          % os.listdir(c.dir))


@case
def parts_settings_rejected(c):
    for var, value in (("PROFILER_ROTATE", "60"), ("PROFILER_FLIGHT", "0.5s"),
                       ("PROFILER_ROTATE", "10K")):
        r = c.run([c.prog("basic"), 10, 52101, "exit:0"], env={var: value})
        eq(r.rc, 0, "the program runs")
        check(re.search(r"^libprof: %s=%s: use a time .*, ignored$" % (var, re.escape(value)),
                        r.err, re.M), "%s: %r" % (var, r.err))
    r = c.run([c.prog("basic"), 10, 52101, "exit:0"],
              env={"PROFILER_ROTATE": "1s", "PROFILER_FLIGHT": "2s"})
    eq(r.rc, 0, "the program runs")
    check(re.search(r"PROFILER_ROTATE and PROFILER_FLIGHT both set", r.err), "both: %r" % r.err)


@case
def rotate_parts_repeat_stacks(c):
    # PROFILER_STACK=alloc, rotated every second: a middle part read alone names its
    # allocations' stacks (the stacks and code mappings written before it are repeated
    # at its start), as the whole capture does.
    r = c.prof("record", "-q", "--rotate", "1s", "-o", "st", "--", c.prog("parts_mix"), 400, 5,
               env={"PROFILER_STACK": "alloc"})
    eq(r.rc, 0, "prof record (%r)" % r)
    parts = parts_of(c, "st")
    check(len(parts) >= 3, "%d parts" % len(parts))
    out = c.path("middle.folded")
    e = c.prof("export", parts[1], "--format", "folded", "-o", out)
    eq(e.rc, 0, "prof export --format folded of part 2 alone (%r)" % e)
    with open(out) as f:
        lines = f.read().splitlines()
    check(any("work (parts_mix.c:" in l and l.rsplit(";", 1)[-1].startswith("malloc ")
              for l in lines), "part 2's stacks: %r" % lines[:5])


@case
def rotate_repeated_records_bounded(c):
    # Every range a name of its own (3 threads and a child; the 2 MiB string area fills):
    # what each part repeats grows past 1 MiB, and a part's size counts only what came
    # after, so parts stay few (they were made on every pass, hundreds of them), a line
    # says why they are larger, and every event is kept.
    n = 100000
    r = c.prof("record", "--rotate", "1M", "--block", "-o", "nm", "--", c.prog("parts_mix"),
               n, 0, "names")
    eq(r.rc, 0, "prof record (%r)" % r)
    parts = parts_of(c, "nm")
    sizes = [os.path.getsize(p) >> 10 for p in parts]
    check(3 <= len(parts) <= 20, "%d parts (KiB): %r" % (len(parts), sizes))
    check(re.search(r"^libprof: the names and stacks each part repeats take [\d.]+ MiB, more "
                    r"than a part's size \(1\.0 MiB\)", r.err, re.M), "stderr: %r" % r.err)
    rep = c.report_json(c.path("nm.prof"))
    ranges = sum(w["count"] for w in rep["rows"] if w["category"] == "user")
    eq(ranges, 3 * n + n // 2, "ranges kept")
    sizes = [os.path.getsize(p) >> 10 for p in parts]
    c.note("%d parts, %s" % (len(parts), [os.path.getsize(p) >> 10 for p in parts]))


@case
def flight_by_size(c):
    # --flight 2M on 8 M allocator events: parts of 512 KiB; on disk at the end about the
    # span (the parts after the oldest hold 2 MiB, or the oldest is dropped), and the
    # outputs hold the newest events only.
    r = c.prof("record", "--flight", "2M", "--block", "-o", "fs", "--", c.prog("alloc_storm"),
               2000000, 1)
    eq(r.rc, 0, "prof record (%r)" % r)
    parts = parts_of(c, "fs")
    sizes = [os.path.getsize(p) for p in parts]
    check(len(parts) >= 4, "parts kept: %r" % sizes)
    check(sum(sizes[1:]) <= (2 << 20) + (1 << 20) and sum(sizes) >= (3 << 20) // 2,
          "the kept parts' sizes %r for a 2 MiB span" % sizes)
    rep = c.report_json(c.path("fs.prof"))
    check(0 < rep["events"] < 2000000, "events kept: %d of 8 M" % rep["events"])
    p = rep["parts"]
    check(p["flight_bytes"] == 2 << 20 and p["first"] > 1 and p["last"] == int(
        os.path.basename(parts[-1])[5:-5]), "parts: %r" % p)
    check(re.search(r"^Flight recorder: the last 2\.00 MiB of capture kept", c.text("fs"), re.M),
          "tables: %r" % c.text("fs")[:400])
    c.note("parts kept (KiB): %s, %d events" % ([s >> 10 for s in sizes], rep["events"]))


@case
def dump_signal_at_start(c):
    # SIGUSR2 (prof dump) sent to prof record from the moment its command starts: never
    # the signal's default action (termination), the command's own status, outputs
    # written.
    for i in range(5):
        p, out, err, t0 = c.start([Setup.prof, "record", "-q", "-o", "s%d" % i, "--",
                                   c.prog("ticks"), "5", "10"],
                                  env=Setup.prof_env(), preload=False, autostart=False)
        # from the moment the command is started (the session is published by then;
        # the collector's loop, which handled the signal before, starts after)
        deadline = time.monotonic() + 10
        while not children_of(p.pid) and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.0002)
        while p.poll() is None:
            try:
                p.send_signal(signal.SIGUSR2)
            except ProcessLookupError:
                break
            time.sleep(0.0005)
        r = c.finish(["prof", "record"], p, out, err, t0, 30)
        eq(r.rc, 0, "prof record under SIGUSR2s (%r)" % r)
        c.outputs("s%d" % i)


@case
def flight_captures_read_together(c):
    # two flight-recorder runs read as one (prof report a.prof b.prof, each a directory of
    # parts): each keeps what its own parts hold; the window of the last run (1 s before
    # its end) must not cut the first run's events, 1.5 s older
    for name in ("a", "b"):
        r = c.prof("record", "--flight", "1s", "-o", name, "--", c.prog("ticks"), "10", "20",
                   timeout=60)
        eq(r.rc, 0, "prof record --flight (%r)" % r)
        time.sleep(1.5)
    alone = [c.report_json(c.path(n + ".prof"))["events"] for n in ("a", "b")]
    both = c.report_json(c.path("a.prof"), c.path("b.prof"))
    eq(both["events"], sum(alone), "events of both runs (alone: %r)" % alone)
    eq(len(both["captures"]), 2, "two captures")


@case
def captures_fold_their_launchers(c):
    # two runs through an exec'ing shell read as one: each capture's launcher folded into
    # the program it became (from each capture's own fold record), both programs shown
    for name in ("a", "b"):
        r = c.run(["sh", "-c", 'exec "$0" 3 100', c.prog("basic")],
                  env={"PROFILER_OUTPUT": name})
        eq(r.rc, 0, "basic through sh (%r)" % r)
    rep = c.report_json(c.path("a.prof"), c.path("b.prof"))
    eq(rep["folded"]["images"], 2, "launchers folded")
    eq(sorted((p["capture"], p["label"]) for p in rep["processes"]),
       [(0, "basic 3 100"), (1, "basic 3 100")], "the programs shown")
