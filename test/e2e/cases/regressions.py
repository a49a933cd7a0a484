# regressions: regressions from review, each failed before its fix.
# Run by test/e2e/run.py in the harness's namespace (see README.md).


# ---------------------------------------------------------------------------------------
# 16. regressions: cases from review, each failed before its fix


@case
def main_thread_pthread_exit(c):
    # the main thread calls pthread_exit: it is a zombie while the worker runs, and the
    # process is not gone. The worker waits for "go", which the runner makes after a
    # generous look at the outputs: none may exist yet (the session is not over).
    N, SIZE = 20000, 333
    go = c.path("go")
    argv = [c.prog("main_exit"), str(N), str(SIZE), go]
    p, out, err, t0 = c.start(argv, env={"PROFILER_BLOCK": "1"})
    early = None
    try:
        deadline = time.monotonic() + 30
        m = None
        while not m:
            m = re.search(r"^pid=(\d+)$", read_out_file(out), re.M)
            check(p.poll() is None or m, "the program ended before printing its pid")
            check(time.monotonic() < deadline, "no pid= after 30 s")
            time.sleep(0.01)
        pid = int(m.group(1))
        while task_state(pid, pid) not in ("Z", "X", None):
            check(time.monotonic() < deadline, "the main thread has not exited after 30 s "
                  "(state %r)" % task_state(pid, pid))
            time.sleep(0.01)
        # the collector looks at liveness every few ms: long enough for it to have
        # ended the session if it took the process for gone
        time.sleep(1.5)
        check(p.poll() is None, "the process ended while its worker waited for go")
        # (the raw capture, libprof.prof, is written from the start)
        early = sorted(f for f in os.listdir(c.dir) if f in ("libprof.json", "libprof.txt"))
    finally:
        open(go, "w").close()
        r = c.finish(argv, p, out, err, t0, 120)
    eq(early, [], "outputs written while the worker still ran (the main thread had "
       "called pthread_exit)")
    eq(r.rc, 0, "exit status: %r" % r)
    eq((r.kv("worker_go"), r.kv("worker_done")), (["1"], [str(N)]), "the worker's words")
    try:
        t, _ = c.outputs()
    except Fail as e:
        c.defer("outputs not complete when the process ended: %s" % e)
        t, waited = c.outputs(wait=10)
        c.note("outputs %.2fs after the end" % waited)
    t.wellformed()
    eq(t.other.get("lost_events"), 0, "lost events")
    eq(t.count("malloc", SIZE, pid), N, "the worker's marked mallocs under pid %d" % pid)
    eq(t.count("malloc", SIZE), N, "marked mallocs in all")
    eq(matched_frees(t, pid, {"malloc": SIZE}), N, "the worker's marked frees")
    eq(t.count("malloc", SIZE + 1, pid), 1, "the main thread's marked malloc")
    s = parse_summary(r.err)
    check(s and s[2] == 1, "summary: %r" % r.err)


@case
def frees_in_thread_key_destructors(c):
    # A pthread_key destructor that runs after libprof's own thread-exit hook allocates
    # into a second ring of its thread (an orphan), the first one retired and empty. The
    # orphan must be drained when the process ends even when the collector had no pass
    # between the thread's end and the process's: the collector is stopped, lets go on a
    # backlog of a later ring, stopped again in the middle of it; the threads end and
    # the process exits; then the collector goes on.
    T, SIZE, FLOOD, GAP = 16, 777, 30000, 0.002
    env = {"PROFILER_BLOCK": "1", "PROFILER_RING_SIZE": "16M"}
    for i in range(5):
        d = c.path("round%d" % i)
        os.makedirs(d)
        tag = "round %d: " % i
        go1, go2 = os.path.join(d, "go1"), os.path.join(d, "go2")
        argv = [c.prog("key_dtor"), str(T), str(SIZE), str(FLOOD), go1, go2]
        p, out, err, t0 = c.start(argv, env=env, cwd=d)
        col = None
        try:
            pid = int(wait_line(p, out, "pid"))
            wait_line(p, out, "ready")
            col = collector_of(c, pid)
            stop_process(col)
            open(go1, "w").close()
            wait_line(p, out, "flooded")
            os.kill(col, signal.SIGCONT)
            time.sleep(GAP)
            stop_process(col)
            open(go2, "w").close()
            wait_line(p, out, "joined")
            time.sleep(0.3)  # the process has exited (it waits for the outputs)
        finally:
            if col:
                os.kill(col, signal.SIGCONT)
            open(go1, "w").close()
            open(go2, "w").close()
            r = c.finish(argv, p, out, err, t0, 120)
        eq(r.rc, 0, tag + "exit status: %r" % r)
        eq((r.kv("go1"), r.kv("flooded"), r.kv("joined")), (["1"], [str(FLOOD)], [str(T)]),
           tag + "the program's words")
        t = Trace(load_json(os.path.join(d, "libprof.json")))
        eq(t.other.get("lost_events"), 0, tag + "lost events")
        eq(t.other.get("json_dropped", 0), 0, tag + "events left out of the trace")
        evs = t.allocs("malloc", SIZE, pid)
        eq(len(evs), T, tag + "mallocs of the key destructors")
        eq(len({e["tid"] for e in evs}), T, tag + "threads of the key destructors")
        if i == 0:
            eq(matched_frees(t, pid, {"malloc": SIZE}), T, tag + "frees of the key destructors")
            eq(t.count("malloc", 64, pid) >= T + FLOOD, True, tag + "64-byte mallocs")
            t.wellformed()


@case
def dump_lock_holder_killed(c):
    # a forked child dies (SIGKILL) inside prof_dump(), holding the session's request
    # lock; the root's prof_dump() afterwards must not wait for it forever
    # the child is killed 10 ms after it said it calls prof_dump(); a dump of 300,000
    # pairs takes longer than that (100,000 once did, before captures were packed)
    N, SIZE = 300000, 62001
    r = c.run([c.prog("dump_killed"), N, SIZE, 10], env={"PROFILER_BLOCK": "1"}, timeout=30)
    eq(r.rc, 0, "exit status: %r" % r)
    eq((r.kv("killed"), r.kv("inside_dump")), (["1"], ["1"]),
       "the child was killed inside prof_dump(): %r" % r.out)
    eq(r.kv("root_dump"), ["0"], "the root's prof_dump() after the holder died")
    ms = float(r.kv("dump_ms")[0])
    c.note("root's prof_dump() took %.0f ms" % ms)
    check(ms < 20000, "the root's prof_dump() took %.0f ms" % ms)
    t, _ = c.outputs()
    pid = pid_of(r)
    child = int(r.kv("child")[0])
    rep = c.report_json(c.path("libprof.prof"))
    report_process(rep, pid)
    report_process(rep, child)
    check(report_row(rep, "memory", "malloc")["count"] >= N, "report malloc count below %d"
          % N)
    if not t.other.get("json_dropped"):
        eq(t.count("malloc", SIZE, pid), N, "marked mallocs")


SIGCHLD_IGNORED = ("import os, signal, sys\n"
                   "signal.signal(signal.SIGCHLD, signal.SIG_IGN)\n"
                   "if sys.argv[1] != '-':\n"
                   "    os.environ['LD_PRELOAD'] = sys.argv[1]\n"
                   "    os.environ['PROFILER_AUTOSTART'] = '1'\n"
                   "os.execv(sys.argv[2], sys.argv[2:])\n")


def sigign_has_sigchld(status_text):
    m = re.search(r"^SigIgn:\s*([0-9a-f]+)", status_text, re.M)
    return bool(m and int(m.group(1), 16) & (1 << (signal.SIGCHLD - 1)))


@case
def sigchld_ignored(c):
    # SIG_IGN for SIGCHLD survives execve: prof record, and libprof's constructor
    # starting the collector, inherit it from a parent that set it
    wrapper = c.path("ignore_sigchld.py")
    with open(wrapper, "w") as f:
        f.write(SIGCHLD_IGNORED)
    # what the wrapper execs starts with SIGCHLD ignored
    r = c.run([sys.executable, wrapper, "-", "/bin/cat", "/proc/self/status"], preload=False,
              autostart=False)
    check(r.rc == 0 and sigign_has_sigchld(r.out), "SIGCHLD not ignored after the "
          "wrapper's exec: %r" % r)
    try:
        sigchld_ignored_record(c, wrapper)
    except Fail as e:
        c.defer("prof record: %s" % e)  # (b) is checked all the same
    sigchld_ignored_bare(c, wrapper)


def sigchld_ignored_record(c, wrapper):
    # (a) prof record, exec'd with SIGCHLD ignored: waits, propagates the status
    r = c.run([sys.executable, wrapper, "-", Setup.prof, "record", "-o", "rec", "--",
               c.prog("basic"), 7, 64001, "exit:3"], env=Setup.prof_env(), preload=False,
              autostart=False, timeout=30)
    eq(r.rc, 3, "prof record's exit status (the command's 3): %r" % r)
    t, _ = c.outputs("rec")
    t.wellformed()
    pid = pid_of(r)
    eq(t.count("malloc", 64001, pid), 7, "prof record: marked mallocs")
    check(parse_summary(r.err), "prof record: no summary line: %r" % r)
    eq(warnings(r.err), [], "prof record: stderr besides the summary")
    rep = c.report_json(c.path("rec.prof"))
    eq(rep.get("session_end"), "present", "prof record: capture's session end")
    report_process(rep, pid)


def sigchld_ignored_bare(c, wrapper):
    # (b) the preloaded program itself, with SIGCHLD ignored from the start
    for i in range(3):
        d = c.path("bare%d" % i)
        os.makedirs(d)
        tag = "bare LD_PRELOAD, round %d: " % i
        r = c.run([sys.executable, wrapper, Setup.preload_value(), c.prog("basic"), 9, 64002,
                   "exit:0"], preload=False, autostart=False, cwd=d, timeout=60)
        eq(r.rc, 0, tag + "exit status: %r" % r)
        check("cannot start the collector" not in r.err, tag + "stderr: %r" % r.err)
        eq(warnings(r.err), [], tag + "stderr besides the summary")
        check(parse_summary(r.err), tag + "no summary line: %r" % r)
        t = Trace(load_json(os.path.join(d, "libprof.json")))
        pid = pid_of(r)
        eq(t.count("malloc", 64002, pid), 9, tag + "marked mallocs")
        eq(sorted(f for f in os.listdir(d) if f.startswith("libprof")),
           ["libprof.json", "libprof.prof", "libprof.txt"], tag + "outputs")
        eq(t.other.get("processes"), 1, tag + "processes")


@case
def stderr_pipe_not_held(c):
    # the program exits at once and leaves a background child (standard descriptors on
    # /dev/null) that lives SECS seconds: whoever reads the program's output through
    # pipes gets EOF when the program ends, not when the child does
    SECS, N = 3, 10
    e = dict(c.env)
    e.update(Setup.program_env())
    e["LD_PRELOAD"] = Setup.preload_value()
    e["PROFILER_AUTOSTART"] = "1"
    argv = [c.prog("bg_child"), str(SECS), str(N)]
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, cwd=c.dir, env=e, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        raise Fail("the pipes were held for 60 s")
    took = time.monotonic() - t0
    with open(os.path.join(c.io, "bg_child.err"), "w") as f:
        f.write(p.stderr)  # looked at for sanitizer reports
    c.note("pipes at EOF %.2fs after the start (background child lives %d s)" % (took, SECS))
    eq(p.returncode, 0, "exit status: %r" % p.stderr)
    m = re.search(r"pid=(\d+) child=(\d+)", p.stdout)
    check(m, "no pid= child=: %r" % p.stdout)
    pid, child = int(m.group(1)), int(m.group(2))
    check(took < 2.0, "the pipes were held %.2fs, till the background child ended "
          "(%d s)" % (took, SECS))
    t, waited = c.outputs(wait=SECS + 15)
    t.wellformed()
    eq(t.count("malloc", 63001, pid), N, "the program's marked mallocs")
    eq(t.count("malloc", 63002, child), N, "the background child's marked mallocs")
    eq(t.other.get("processes"), 2, "processes")
    eq(t.other.get("lost_events"), 0, "lost events")


def shmem_kb():
    with open("/proc/meminfo") as f:
        m = re.search(r"^Shmem:\s+(\d+) kB", f.read(), re.M)
    return int(m.group(1)) if m else 0


@case(serial=True)
def many_processes_shm_released(c):
    # a session of many short processes: the segments of finished ones are released at
    # once, not kept to the session's end
    import threading
    N, K, SIZE, LIMIT_MB = 100, 3, 64003, 100
    samples = []
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            samples.append(shmem_kb())
            stop.wait(0.005)
    before = shmem_kb()
    th = threading.Thread(target=sample)
    th.start()
    try:
        r = c.prof("record", "-q", "--", "sh", "-c",
                   'i=0; while [ $i -lt %d ]; do "$0" %d %d exit:0 || exit 1; i=$((i+1)); done'
                   % (N, K, SIZE), c.prog("basic"), timeout=300)
    finally:
        stop.set()
        th.join()
    eq(r.rc, 0, "exit status: %r" % r)
    grew = (max(samples + [before]) - before) / 1024.0
    c.note("Shmem grew by at most %.1f MB over %d samples" % (grew, len(samples)))
    check(grew <= LIMIT_MB, "Shmem grew by %.1f MB during a session of %d processes "
          "(limit %d MB)" % (grew, N, LIMIT_MB))
    pids = [int(x) for x in r.kv("pid")]
    eq(len(set(pids)), N, "distinct programs run")
    t, _ = c.outputs()
    eq(t.other.get("lost_events"), 0, "lost events")
    rep = c.report_json(c.path("libprof.prof"))
    for pid in pids:
        report_process(rep, pid)
        eq(t.count("malloc", SIZE, pid), K, "marked mallocs of pid %d" % pid)
    eq(t.count("malloc", SIZE), N * K, "marked mallocs in all")
    eq(t.other.get("processes"), N + 1, "processes (the shell and its programs)")
