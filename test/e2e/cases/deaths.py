# deaths: programs killed or crashing, a child outliving the program, SIGTERM to everyone, the file-size limit.
# Run by test/e2e/run.py in the harness's namespace (see README.md).


# ---------------------------------------------------------------------------------------
# 5. deaths


def death(c, mode, sig):
    N, TH, size = 100, 30, 52001
    r = c.run([c.prog("basic"), N, size, mode, TH])
    eq(r.rc, -sig, "exit status (killed by signal %d)" % sig)
    t, waited = c.outputs(wait=10)
    c.note("outputs %.2fs after the %s, program ran %.2fs" % (waited, mode, r.elapsed))
    check(waited <= 3.0, "outputs appeared %.2fs after the death (want ~2s)" % waited)
    pid = pid_of(r)
    eq(t.count("malloc", size, pid), N, "main thread's mallocs before the death")
    eq(t.count("malloc", size + 1, pid), TH, "live thread's mallocs before the death")
    t.wellformed()
    rep = c.report_json(c.path("libprof.prof"))
    eq(report_row(rep, "memory", "malloc")["count"], len(t.select("X", "malloc", "cpu_memory")),
       "report malloc count vs trace")


@case(serial=True)
def sigkill(c):
    death(c, "kill", signal.SIGKILL)


@case(serial=True)
def abort_(c):
    death(c, "abort", signal.SIGABRT)


@case(serial=True)
def sigsegv(c):
    death(c, "segv", signal.SIGSEGV)


@case(serial=True)
def child_outlives_program(c):
    # a child still running when the program exits: one line says the outputs follow,
    # the program's exit does not wait for the child, and the outputs have the child's
    # mallocs made after the parent ended
    N, ms = 20, 700
    r = c.run([c.prog("leave_child"), N, ms])
    eq(r.rc, 0, "exit status")
    check(r.elapsed < ms / 1000.0, "the program waited for its child: %.2fs" % r.elapsed)
    lines = [l for l in r.err.splitlines() if l.startswith("libprof:")]
    eq(lines, ["libprof: the program exited; 1 of its processes still run, the outputs "
               "follow when they end"], "stderr lines")
    t, waited = c.outputs(wait=10)
    child = int(r.kv("child")[0])
    eq((t.count("malloc", 33001), t.count("malloc", 33002, child),
        t.count("malloc", 33003, child)), (N, N, N), "mallocs of the parent and the child")


@case
def sigterm_to_everyone(c):
    # a batch system stopping a job (Slurm's scancel, a cgroup-wide stop) sends SIGTERM to
    # every process of it, the collector too: the collector stays until the program is
    # gone and writes the outputs with everything captured
    N, TH, size = 100, 30, 54001
    p, out, err, t0, collector = start_ready(c, [c.prog("basic"), N, size, "wait", TH])
    time.sleep(0.05)  # the events drained (the collector polls every millisecond)
    os.kill(collector, signal.SIGTERM)
    p.send_signal(signal.SIGTERM)
    r = c.finish([c.prog("basic")], p, out, err, t0, 30)
    eq(r.rc, -signal.SIGTERM, "the program's exit status")
    t, waited = c.outputs(wait=10)
    pid = pid_of(r)
    eq(t.count("malloc", size, pid), N, "main thread's mallocs before the stop")
    eq(t.count("malloc", size + 1, pid), TH, "the thread's mallocs before the stop")
    t.wellformed()


@case
def capture_file_too_large(c):
    # the collector's file-size limit reached (a full disk alike): one line says so, the
    # capture keeps every frame written before and stays readable, the trace cannot be
    # written and says so, and the tables are still made from what was captured. (The
    # limit is put on the running collector: on the program it would refuse the ring
    # segment, which is a file in /dev/shm, and say so.)
    N, size, limit = 2000000, 16, 256 << 10  # ~0.6 MB of capture (packed events)
    p, out, err, t0, collector = start_ready(c, [c.prog("basic"), N, size, "later"],
                                             env={"PROFILER_BLOCK": "1"})
    import resource
    # and on its live outputs child (`prof tables`), which writes the trace and tables:
    # a full disk is full for both
    for pid in [collector] + children_of(collector):
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (limit, limit))
    p.send_signal(signal.SIGUSR1)
    r = c.finish([c.prog("basic")], p, out, err, t0, 60)
    eq(r.rc, 0, "the program's exit status: %r" % r)
    lines = [l for l in r.err.splitlines() if l.startswith("libprof:")]
    check(any("libprof.prof: File too large; the capture keeps what was written before" in l
              for l in lines), "no line about the capture: %r" % lines)
    check(any("libprof.json: File too large" in l for l in lines),
          "no line about the trace: %r" % lines)
    check(lines and re.match(r"libprof: \d+ events \(\d+ lost\) from 1 process -> "
                             r".*libprof\.txt, libprof\.prof$", lines[-1]),
          "the summary line names the outputs made: %r" % lines)
    check(not os.path.exists(c.path("libprof.json")), "a trace was written")
    check(os.path.getsize(c.path("libprof.prof")) <= limit, "capture over the limit")
    rep = c.report_json(c.path("libprof.prof"))
    got = report_row(rep, "memory", "malloc")["count"]
    check(0 < got < N, "mallocs in the kept capture: %d" % got)
    check("Memory: cpu/0" in c.text(), "the tables were not made")
