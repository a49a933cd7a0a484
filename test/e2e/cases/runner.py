# runner: the e2e runner itself (run.py and the harness): what it cleans and what it spares.
# Run by test/e2e/run.py in the harness's namespace (see README.md).

# quick cases of today's and of the old runner, whose sessions end, are killed whole, and
# reclaimed by the next collector (a reclaim that must spare a live session)
RUNNER_NESTED_CASES = ["record_exit_status", "sigterm_to_everyone", "shm_reclaim_next_collector"]


def runner_foreign_segments(sid):
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
        now = runner_foreign_segments(sid)
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
                "PROFILER_OUTPUT": os.path.join(d, "foreign"), "LC_ALL": "C"})
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
        check(r.rc == 0 and re.search(r"^%d passed, 0 failed$" % len(RUNNER_NESTED_CASES),
                                      r.out, re.M), "the nested run: %r" % r)
        after = runner_foreign_segments(sid)
        c.note("foreign session %s: %d segments before, %d after the nested run"
               % (sid, len(before), len(after)))
        for n, ino in before.items():
            check(n in after, "%s, there before the nested run, is gone" % n)
        eq(after, during, "the foreign session's segments (name: inode) after the nested run")
        check(len(during) > len(before), "the foreign child made no segment: %r" % during)
        check(sid not in r.out + r.err, "the nested run names the foreign session: %r" % r)
        # the foreign program is whole: its child, stopped, is in its outputs
        child = int(re.search(r"^child=(\d+)$", read_text(fout.name), re.M).group(1))
        os.kill(child, signal.SIGUSR1)
        rc = foreign.wait(timeout=60)
        eq((rc, re.findall(r"^done=(\d+)$", read_text(fout.name), re.M)), (0, ["0"]),
           "the foreign program's exit (stderr: %s)" % read_text(ferr.name))
        # (sh's exit does not wait for the outputs: it ends with _exit)
        t = runner_wait("the foreign program's trace",
                        lambda: runner_trace(os.path.join(d, "foreign.json")))
        eq(t.count("malloc", 47011, child), 40, "the foreign child's mallocs in its trace")
        runner_wait("the foreign session's segments removed at its end",
                    lambda: not runner_foreign_segments(sid))
    finally:
        if nested:
            nested[0].kill()
            nested[0].wait()
        if foreign.poll() is None:
            os.killpg(foreign.pid, signal.SIGKILL)  # the process group this case started
            foreign.wait()
        fout.close()
        ferr.close()
