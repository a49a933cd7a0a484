# Collector fixes from the review of issue 12 ("do no harm"): a truncated session segment,
# the capture used through its descriptor, liveness beyond the pid, errno on the allocator
# path, reclaim across pid namespaces, exec of a FIFO. Run by run.py in its namespace
# after the other case files (shm.py's helpers are in scope).


import errno


@case
def collfix_session_segment_truncated(c):
    # The session segment (/dev/shm/libprof-UID-SID) cut to nothing while the program
    # runs: the collector used to die of SIGBUS at its next read, losing every output. It
    # must write the outputs with what was drained and say why in one line.
    run, pid, child, d = start_victim(c, "run")
    try:
        _, sid = shm_segment_of(pid)
        os.truncate("/dev/shm/libprof-%d-%s" % (os.getuid(), sid), 0)
        t, _ = c.outputs(os.path.join("run", "profile"), wait=30)
    finally:
        go(d)
    r = c.finish(*run, timeout=120)
    eq(t.count("malloc", SHM_SIZE, pid), SHM_N, "the parent's mallocs before the cut")
    eq(t.count("malloc", SHM_SIZE + 1, child), SHM_N, "the child's mallocs before the cut")
    lines = [x for x in r.err.splitlines() if "was truncated" in x]
    eq(len(lines), 1, "one line naming the truncated session segment: %r" % r)
    check(sid in lines[0], "the line names the segment: %r" % lines[0])
    c.note("program exit status after the cut: %s" % r.rc)


@case
def collfix_exec_fifo(c):
    # execve of a FIFO (or of a script whose #! names one) fails at once with EACCES;
    # libprof's exec check opened it first and hung the program forever.
    r = c.run([c.prog("exec_fifo"), c.path("fifo")], timeout=30)
    eq(r.rc, 0, "exit status: %r" % r)
    eq(r.kv("errno"), [str(errno.EACCES)] * 2, "errno of both execve calls: %r" % r)


@case
def collfix_errno_kept_collector_dead(c):
    # malloc, realloc and free under PROFILER_BLOCK=1 with the collector SIGKILLed: the
    # blocked writer's look at /proc (open fails, kill() says ESRCH) used to leave errno
    # changed after a successful call.
    # This process is made the subreaper of the collector (double-forked by the program)
    # so that it can reap it: a dead collector then has no /proc entry, as under an init
    # that reaps (a zombie's /proc/PID/stat still reads, and errno stayed unchanged).
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_CHILD_SUBREAPER = 36
    check(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0, "cannot become a subreaper")
    env = {"PROFILER_RING_SIZE": "4K", "PROFILER_BLOCK": "1"}
    sid = None
    try:
        p, out, err, t0, sid, coll = x10_start(c, [c.prog("errno_keep"), 20000], env)
        os.kill(coll, signal.SIGKILL)  # the collector this case started
        try:
            os.waitpid(coll, 0)  # ours to reap (subreaper): its /proc entry goes
        except ChildProcessError:
            pass
        with open(c.path("go"), "w"):
            pass
        r = c.finish([c.prog("errno_keep")], p, out, err, t0, timeout=120)
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
        x10_remove_session(sid)
    eq(r.rc, 0, "exit status: %r" % r)
    eq(r.kv("start_errno"), ["0"], "errno at main's start (libprof's constructor ran): %r" % r)
    eq(r.kv("calls"), ["120000"], "calls made: %r" % r)
    eq(r.kv("changed"), ["0"], "calls that changed errno (first: errno=%s): %r"
       % (r.kv("errno"), r))


def collfix_start_victim(c, sub, size, env):
    """shm_victim in directory sub with env, once ready: (popen bits, pid, dir)."""
    d = c.path(sub)
    os.makedirs(d, exist_ok=True)
    argv = [c.prog("shm_victim"), str(SHM_N), str(size)]
    p, out, err, t0 = c.start(argv, env, cwd=d)
    deadline = time.monotonic() + 30
    text = ""
    while time.monotonic() < deadline and "ready" not in text:
        out.seek(0)
        text = out.read()
        if p.poll() is not None:
            break
        time.sleep(0.02)
    m = re.search(r"pid=(\d+) child=(\d+) ready", text)
    if not m:
        p.kill()
        p.wait()
        raise Fail("shm_victim did not get ready: %r" % text)
    return (argv, p, out, err, t0), int(m.group(1)), d


def collfix_named_outputs(r):
    """(json, prof) paths named by the summary line of r."""
    m = re.findall(r"^libprof: \d+ events .* -> (\S+\.json), \S+, (\S+\.prof)$", r.err, re.M)
    check(len(m) == 1, "one summary line naming the outputs: %r" % r)
    json_path, prof = m[0]
    return json_path, os.path.join(os.path.dirname(json_path), prof)


@case
def collfix_overwrite_sessions_keep_their_capture(c):
    # Two overlapping sessions, PROFILER_OVERWRITE=1, one prefix: the second one's
    # capture is renamed over the first's. The first used to make its outputs from the
    # second's capture (its own events lost without a word) by name; each session's
    # outputs must hold its own events only, and neither capture may go.
    prefix = c.path("P")
    env = {"PROFILER_OUTPUT": prefix, "PROFILER_OVERWRITE": "1"}
    a_size, b_size = SHM_SIZE, SHM_SIZE + 10000
    a_run, a_pid, a_dir = collfix_start_victim(c, "a", a_size, env)
    b_run = None
    try:
        b_run, b_pid, b_dir = collfix_start_victim(c, "b", b_size, env)
        go(a_dir)
        ra = c.finish(*a_run, timeout=120)
        a_run = None
        eq(ra.rc, 0, "the first program's exit status: %r" % ra)
        a_json, a_prof = collfix_named_outputs(ra)
        ta = Trace(load_json(a_json))
        eq(ta.count("malloc", a_size, a_pid), SHM_N, "the first session's own mallocs")
        eq(ta.count("malloc", b_size), 0, "the second session's mallocs in the first's trace")
        check(any("was replaced by another session's capture" in l
                  for l in ra.err.splitlines()), "no line saying so: %r" % ra)
        go(b_dir)
        rb = c.finish(*b_run, timeout=120)
        b_run = None
        eq(rb.rc, 0, "the second program's exit status: %r" % rb)
        b_json, b_prof = collfix_named_outputs(rb)
        tb = Trace(load_json(b_json))
        eq(tb.count("malloc", b_size, b_pid), SHM_N, "the second session's own mallocs")
        eq(tb.count("malloc", a_size), 0, "the first session's mallocs in the second's trace")
        check(a_prof != b_prof, "both summaries name one capture: %s" % a_prof)
        for name in (a_prof, b_prof):
            check(os.path.exists(name), "capture %s is gone: %s" % (name, os.listdir(c.dir)))
        rep = c.report_json(a_prof)
        check(report_process(rep, a_pid), "the first capture holds the first program")
    finally:
        for run in (a_run, b_run):
            if run:
                go(c.path("a"))
                go(c.path("b"))
                c.finish(*run, timeout=120)


@case
def collfix_collector_keeps_session_young(c):
    # Reclaim judges a session by its pids, which another pid namespace sharing /dev/shm
    # cannot see; a live session stays safe there only because its session segment is
    # young: the collector refreshes its mtime every few seconds.
    run, pid, child, d = start_victim(c, "run")
    try:
        _, sid = shm_segment_of(pid)
        path = "/dev/shm/libprof-%d-%s" % (os.getuid(), sid)
        old = time.time() - 600
        os.utime(path, (old, old))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and os.stat(path).st_mtime < old + 1:
            time.sleep(0.1)
        age = time.time() - os.stat(path).st_mtime
        check(age < 30, "the live session segment's mtime is %.0f s old" % age)
    finally:
        go(d)
    r = c.finish(*run, timeout=120)
    eq(r.rc, 0, "exit status: %r" % r)


def collfix_fake_session(mtime):
    """A session's segments whose pids live in no namespace we see (zeros: no collector,
    no process), with mtime; returns (sid, names)."""
    sid = uuid.uuid4().hex[:16]
    names = ["libprof-%d-%s" % (os.getuid(), sid),
             "libprof-%d-%s-%d-%s" % (os.getuid(), sid, 999999, "0" * 10)]
    for n in names:
        with open("/dev/shm/" + n, "wb") as f:
            f.write(bytes(1 << 20))
        if mtime is not None:
            os.utime("/dev/shm/" + n, (mtime, mtime))
    return sid, names


@case
def collfix_reclaim_needs_old_segments(c):
    # a session whose pids are invisible but whose segments are fresh (its collector,
    # elsewhere, keeps touching them) is not reclaimed; the same with old ones is
    young_sid, young = collfix_fake_session(None)
    old_sid, old = collfix_fake_session(time.time() - 600)
    try:
        r = c.prof("clean", young_sid, old_sid, timeout=60)
        eq(r.rc, 0, "prof clean: %r" % r)
        eq([n for n in young if os.path.exists("/dev/shm/" + n)], young,
           "the young session's segments")
        eq([n for n in old if os.path.exists("/dev/shm/" + n)], [],
           "the old session's segments")
    finally:
        for n in young + old:
            try:
                os.unlink("/dev/shm/" + n)
            except OSError:
                pass


# The collector's start (issue 13): what the program holds open must not reach it. Run by
# run.py in its namespace (the harness's helpers are in scope).


def c80_collector_of(c, sid, timeout=20):
    """The pid of this session's collector (`prof collect --session SID`): other suites
    may run collectors at the same time."""
    want = ["collect", "--session", sid]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for q in c.leftover_processes():
            try:
                with open("/proc/%d/cmdline" % q, "rb") as f:
                    args = f.read().decode(errors="replace").split("\0")
            except OSError:
                continue
            if args[1:4] == want:
                return q
        time.sleep(0.01)
    raise Fail("no collector for session %s" % sid)


@case
def collector_no_inherited_fd(c):
    # A program with descriptor 1500 (and one far higher) open, not close-on-exec, when
    # libprof starts the collector: the collector closed only 3..1023, so a pipe held
    # there kept whoever reads its other end waiting for the collector too.
    N = 25
    argv = [c.prog("inherit_fds"), str(N)]
    p, out, err, t0 = c.start(argv, autostart=False)
    try:
        deadline = time.monotonic() + 30
        line = None
        while time.monotonic() < deadline and p.poll() is None and not line:
            with open(out.name) as f:
                line = re.search(r"^sid=(\S+) high=(\d+)$", f.read(), re.M)
            time.sleep(0.02)
        check(line, "the program did not print sid=: %r" % (open(out.name).read(),))
        sid, high = line.group(1), int(line.group(2))
        check(sid != "none", "no session started")
        coll = c80_collector_of(c, sid)
        fds = sorted(int(x) for x in os.listdir("/proc/%d/fd" % coll))
        check(fds, "the collector's descriptors cannot be listed")
        held = [fd for fd in (1500, high) if fd and fd in fds]
        check(not held, "the collector %d holds the program's descriptors %s (its "
              "descriptors: %s)" % (coll, held, fds))
        c.note("collector %d: %d descriptors, none of 1500%s" % (
            coll, len(fds), " and %d" % high if high else ""))
    finally:
        open(c.path("go"), "w").close()
    r = c.finish(argv, p, out, err, t0, 60)
    eq(r.rc, 0, "exit status: %r" % r)
    t, _ = c.outputs()
    eq(t.count("malloc", 62001), N, "the marked mallocs")
