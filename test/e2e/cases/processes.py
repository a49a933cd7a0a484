# processes: threads, fork, exec, a program that closes every descriptor.
# Run by test/e2e/run.py in the harness's namespace (see README.md).


# ---------------------------------------------------------------------------------------
# 2. many short-lived threads


@case
def many_short_threads(c):
    total, wave, per, size = 300, 30, 10, 23457
    r, t = profile(c, [c.prog("threads_many"), total, wave, per, size])
    pid = pid_of(r)
    evs = t.allocs("malloc", size, pid)
    eq(t.other.get("lost_events"), 0, "lost events")
    eq(len(evs), total * per, "marked mallocs from %d threads" % total)
    tids = {}
    for e in evs:
        tids[e["tid"]] = tids.get(e["tid"], 0) + 1
    eq(len(tids), total, "threads with marked mallocs")
    check(all(n == per for n in tids.values()), "a thread without exactly %d: %r"
          % (per, sorted(set(tids.values()))))
    eq(matched_frees(t, pid, {"malloc": size}), total * per, "marked frees")
    t.wellformed()


@case
def fresh_names(c):
    # every event names a string interned just before it, on two threads at once: the
    # string must reach the capture before (or with) the first event that uses it
    # 48000 distinct names: well inside what a process may intern
    T, N = 2, 12000
    r, t = profile(c, [c.prog("names"), T, N])
    want_ranges = {"t%d-%d" % (i, n) for i in range(T) for n in range(N)}
    want_marks = {"m%d-%d" % (i, n) for i in range(T) for n in range(N)}
    got = [e["name"] for e in t.select("X", cat="user")]
    bad = sorted({x for x in got if x not in want_ranges})
    check(not bad, "%d range names in the trace are not the program's: %s"
          % (len(bad), bad[:5]))
    eq(len(got), T * N, "ranges in the trace")
    eq(set(got), want_ranges, "range names in the trace")
    marks = {e["name"] for e in t.select("i", cat="mark")}
    bad = sorted(marks - want_marks)
    check(not bad, "%d mark names are not the program's: %s" % (len(bad), bad[:5]))
    eq(marks, want_marks, "mark names in the trace")
    rep = c.report_json(c.path("libprof.prof"))
    rows = {x["name"]: x["count"] for x in rep["rows"] if x["category"] == "user"}
    bad = sorted(n for n in rows if n not in want_ranges)
    check(not bad, "%d user rows of the report are not the program's names: %s"
          % (len(bad), bad[:5]))
    eq(rows, {n: 1 for n in want_ranges}, "user rows of the report")


# ---------------------------------------------------------------------------------------
# 3. fork


@case
def fork_workers(c):
    W, N, PRE, TH, POST = 3, 50, 7, 200, 9
    r, t = profile(c, [c.prog("fork_workers"), W, N, PRE, TH, POST])
    t.wellformed()
    parent = pid_of(r, "parent")
    workers = [int(x) for x in r.kv("worker")]
    eq(len(workers), W, "workers printed")
    eq(t.other.get("lost_events"), 0, "lost events")
    eq(t.count("malloc", 31001, parent), PRE, "parent's mallocs before the fork")
    eq(t.count("malloc", 31002, parent), TH, "parent thread's mallocs")
    eq(t.count("malloc", 31004, parent), POST, "parent's mallocs after the workers")
    eq(t.count("malloc", 31003, parent), 0, "worker mallocs under the parent's pid")
    names = t.process_names()
    for w in workers:
        eq(t.count("malloc", 31003, w), N, "worker %d's mallocs" % w)
        for size in (31001, 31002, 31004):
            eq(t.count("malloc", size, w), 0, "parent's %d-byte mallocs in worker %d" % (size, w))
        check(w in names, "no process_name metadata for worker %d" % w)
        eq(matched_frees(t, w, {"malloc": 31003}), N, "worker %d's frees" % w)
    check(parent in names, "no process_name metadata for the parent")
    eq(t.count("malloc", 31003), W * N, "worker mallocs in all")
    rep = c.report_json(c.path("libprof.prof"))
    for w in workers:
        eq(report_process(rep, w)[0].get("ppid"), parent, "worker %d's ppid" % w)
    eq(len(set(workers) | {parent}), W + 1, "distinct pids")
    s = parse_summary(r.err)
    check(s and s[2] == W + 1, "summary processes %r, want %d" % (s, W + 1))


# ---------------------------------------------------------------------------------------
# 4. exec chain


@case
def exec_chain(c):
    r = c.run([c.prog("exec_chain")])
    eq(r.rc, 0, "exit status: %r" % r)
    try:
        t, _ = c.outputs()
    except Fail as e:
        c.defer("outputs not complete when the exec'd program's exit returned: %s\n%r"
                % (e, r))
        t, waited = c.outputs(wait=10)
        c.note("outputs %.2fs after the exit" % waited)
    stages = re.findall(r"stage=(\d) pid=(\d+) preload=(\w+)", r.out)
    eq([s[0] for s in stages], ["0", "1", "2"], "stages that ran")
    pids = {int(s[1]) for s in stages}
    eq(len(pids), 1, "one pid for the three images")
    pid = pids.pop()
    # images 0 and 1 exec'd: folded into image 2 in the outputs (cases/wrappers.py), kept
    # in the capture and shown by --all-processes
    for stage in range(3):
        eq(t.count("malloc", 41000 + stage, pid), 7 if stage == 2 else 0,
           "image %d's marked mallocs" % stage)
    eq(t.other.get("folded_images"), 2, "folded images")
    r2 = c.prof("export", c.path("libprof.prof"), "-o", c.path("all.json"), "--all-processes")
    eq(r2.rc, 0, "prof export --all-processes: %r" % r2)
    ta = Trace(load_json(c.path("all.json")))
    for stage in range(3):
        eq(ta.count("malloc", 41000 + stage, pid), 5 + stage, "image %d's marked mallocs, "
           "--all-processes" % stage)
    # every image is in the one output, and no second session was made
    eq(sorted(f for f in os.listdir(c.dir) if f.startswith("libprof")),
       ["libprof.json", "libprof.prof", "libprof.txt"], "outputs")
    check(pid in t.process_names(), "no process_name for pid %d" % pid)
    t.wellformed()
    eq(t.other.get("lost_events"), 0, "lost events")


# ---------------------------------------------------------------------------------------
# 6. a program that closes every descriptor


@case
def closes_all_fds(c):
    N = 200
    r = c.run([c.prog("close_fds"), N])
    eq(r.rc, 0, "exit status")
    t, _ = c.outputs(wait=10)
    eq(len(t.select("X", "malloc", "cpu_memory")) > 0, True, "malloc events")
    eq(t.count("malloc", 61001), N, "main thread's mallocs after closing every fd")
    eq(t.count("malloc", 61002), N, "new thread's mallocs after closing every fd")
    eq(len({e["pid"] for e in t.allocs("malloc", 61001)}), 1, "pids")
    t.wellformed()
