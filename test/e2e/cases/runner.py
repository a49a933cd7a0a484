# runner: the e2e runner itself (run.py and the harness): what it cleans and what it spares.
# Run by test/e2e/run.py in the harness's namespace (see README.md).

# quick cases of today's and of the old runner, whose sessions end, are killed whole, and
# reclaimed by the next collector (a reclaim that must spare a live session)
RUNNER_NESTED_CASES = ["record_exit_status", "sigterm_to_everyone", "shm_reclaim_next_collector",
                       "runner_session_left_behind"]


def runner_session_segments(sid):
    """{name: inode} of a session's segments."""
    prefix = "libprof-%d-%s" % (os.getuid(), sid)
    out = {}
    for n in uid_segments():
        if n == prefix or n.startswith(prefix + "-"):
            try:
                out[n] = os.stat("/dev/shm/" + n).st_ino
            except OSError:
                pass
    return out


def runner_wait(what, cond, timeout=30):
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        check(time.monotonic() < deadline, "%s: not after %d s" % (what, timeout))
        time.sleep(0.01)


def runner_trace(path):
    """The trace at path once it is whole, else None."""
    try:
        doc = load_json(path)
    except (OSError, ValueError):
        return None
    return Trace(doc, path) if isinstance(doc, dict) and "otherData" in doc else None


def runner_stable_segments(sid, quiet=0.5):
    """The session's segments once they stay the same for quiet seconds (an exec'd
    image's former segment goes when its collector has drained it)."""
    last, since = None, time.monotonic()
    while True:
        now = runner_session_segments(sid)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return now
        time.sleep(0.02)


@case(serial=True)
def runner_spares_foreign_sessions(c):
    # A profiled program of another session (its own process group, started outside the
    # suite's bookkeeping: no token) runs while a nested run of the runner goes on (its
    # cases, each case's end-of-case cleanup, its closing); the program forks and execs a
    # child during that run, as the victims did. Afterwards every segment of that
    # session is still there, the same file (inode), the nested run names none of them,
    # and the program, stopped, writes its outputs whole. E2E_NESTED_RUNNER=path/run.py
    # runs another runner in the nested run (an old one, to see this fail).
    runner = os.environ.get("E2E_NESTED_RUNNER") or os.path.join(HERE, "run.py")
    d = c.path("foreign")
    os.makedirs(d)
    os.mkfifo(os.path.join(d, "go"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILER_") and
           k not in ("LD_PRELOAD", "PYTHONPATH", "LIBPROF_E2E_TOKEN")}
    env.update(Setup.program_env())
    env.update({"LD_PRELOAD": Setup.preload_value(), "PROFILER_AUTOSTART": "1",
                "PROFILER_OUTPUT": os.path.join(d, "foreign"), "LC_ALL": "C",
                "PROFILER_TRACE_ALLOC": "all"})
    script = 'read x < go; "$0" 40 47011 later & echo child=$!; wait $!; echo done=$?'
    fout = open(os.path.join(d, "out"), "w+")
    ferr = open(os.path.join(d, "err"), "w+")
    foreign = subprocess.Popen(["sh", "-c", script, c.prog("basic")], cwd=d, env=env,
                               stdin=subprocess.DEVNULL, stdout=fout, stderr=ferr,
                               start_new_session=True)
    nested = None
    try:
        runner_wait("the foreign session's segment", lambda: sessions_of(d))
        sid = sessions_of(d)[0][0]
        before = runner_stable_segments(sid)
        argv = [sys.executable, "-u", runner] + RUNNER_NESTED_CASES
        nested = c.start(argv, env={"BUILD": BUILD}, preload=False, autostart=False)
        p, out, err, t0 = nested
        runner_wait("the nested run's first line", lambda: "libprof e2e:" in read_out_file(out))
        time.sleep(0.3)  # past the runner's start (where the old one listed /dev/shm)
        with open(os.path.join(d, "go"), "w") as f:
            f.write("go\n")
        runner_wait("the foreign child's ready line", lambda: "ready" in read_text(fout.name))
        during = runner_stable_segments(sid)
        check(p.poll() is None, "the nested run ended before the foreign child was made: "
              "its cases are too quick to show anything")
        r = c.finish(argv, p, out, err, t0, 300)
        nested = None
        after = runner_session_segments(sid)
        c.note("foreign session %s: %d segments before, %d after the nested run"
               % (sid, len(before), len(after)))
        for n, ino in before.items():
            check(n in after, "%s, there before the nested run, is gone" % n)
        eq(after, during, "the foreign session's segments (name: inode) after the nested run")
        check(len(during) > len(before), "the foreign child made no segment: %r" % during)
        check(sid not in r.out + r.err, "the nested run names the foreign session: %r" % r)
        check(r.rc == 0 and re.search(r"^%d passed, 0 failed$" % len(RUNNER_NESTED_CASES),
                                      r.out, re.M), "the nested run: %r" % r)
        # and the session its own case left behind is gone, named in its closing note
        m = re.search(r"left session ([0-9a-f]{16})", r.out)
        check(m, "runner_session_left_behind named no session: %r" % r)
        eq(runner_session_segments(m.group(1)), {}, "segments of the session the nested run's "
           "case left")
        check(re.search(r"^note: removed the /dev/shm segments .*%s \(runner_session_left_behind"
                        % m.group(1), r.out, re.M), "the nested run's closing note: %r" % r)
        # the foreign program is whole: its child, stopped, is in its outputs
        child = int(re.search(r"^child=(\d+)$", read_text(fout.name), re.M).group(1))
        os.kill(child, signal.SIGUSR1)
        rc = foreign.wait(timeout=60)
        eq((rc, re.findall(r"^done=(\d+)$", read_text(fout.name), re.M)), (0, ["0"]),
           "the foreign program's exit (stderr: %s)" % read_text(ferr.name))
        # (dash ends with _exit: its exit does not wait for the outputs)
        t = runner_wait("the foreign program's trace",
                        lambda: runner_trace(os.path.join(d, "foreign.json")))
        eq(t.count("malloc", 47011, child), 40, "the foreign child's mallocs in its trace")
        runner_wait("the foreign session's segments removed at its end",
                    lambda: not runner_session_segments(sid))
    finally:
        if nested:
            nested[0].kill()
            nested[0].wait()
        if foreign.poll() is None:
            os.killpg(foreign.pid, signal.SIGKILL)  # the process group this case started
            foreign.wait()
        fout.close()
        ferr.close()


@case
def runner_session_left_behind(c):
    # A session killed whole (its collector, then its program) leaves its segments in
    # /dev/shm; the runner removes them after this case, by session id (the session's
    # outputs go into this case's directory). runner_spares_foreign_sessions runs this in
    # a nested run and checks they went; here the segments are checked to be left.
    p, out, err, t0 = c.start([c.prog("basic"), "10", "47021", "wait"])
    try:
        runner_wait("the program's ready line", lambda: "ready" in read_out_file(out))
        sid, _, collector = runner_wait(
            "the session and its collector",
            lambda: [s for s in sessions_of(c.root) if s[2]] and
            [s for s in sessions_of(c.root) if s[2]][0])
        check(collector in c.leftover_processes(), "collector %d is not this case's" % collector)
        os.kill(collector, signal.SIGKILL)
        runner_wait("the collector's end", lambda: not os.path.exists("/proc/%d" % collector)
                    or task_state(collector, collector) == "Z")
    finally:
        p.kill()
    r = c.finish([c.prog("basic")], p, out, err, t0, 30)
    eq(r.rc, -signal.SIGKILL, "the program's exit status")
    left = runner_session_segments(sid)
    check(len(left) >= 2, "the killed session's segments (session, process): %s" % left)
    c.note("left session %s: %d segments" % (sid, len(left)))
