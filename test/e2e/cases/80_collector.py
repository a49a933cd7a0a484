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
