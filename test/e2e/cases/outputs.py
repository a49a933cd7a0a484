# Outputs created safely, never clashing, never silently wrong (issue 12, items 4, 5, 7c).
# Run by run.py in its namespace: its helpers (case, check, eq, Fail, profile, ...) are
# in scope; names here start with out30_ so they cannot shadow another file's.
import stat


def out30_summary_files(r):
    """The files the summary line names, as absolute paths (json, txt, prof)."""
    lines = [l for l in r.err.splitlines() if SUMMARY_RE.match(l)]
    check(len(lines) == 1, "one summary line: %r" % r.err)
    names = lines[0].split(" -> ", 1)[1].split(", ")
    first = names[0]
    d = os.path.dirname(first) if os.path.isabs(first) else ""
    return [n if os.path.isabs(n) else os.path.join(d, n) for n in names]


def out30_wait_ready(c, runs, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready = 0
        for p, out, err, t0 in runs:
            out.seek(0)
            ready += "ready" in out.read()
        if ready == len(runs):
            return
        time.sleep(0.02)
    raise Fail("the programs did not start within %ss" % timeout)


@case
def outputs_two_sessions_at_once(c):
    # two programs started together in one directory with the same prefix (the default;
    # then two ranks with the same SLURM_PROCID and PROFILER_OUTPUT=job-%r): each keeps a
    # complete capture and trace of its own, under names its summary line gives
    N = 3000
    for tag, env in (("default", {}),
                     ("rank", {"PROFILER_OUTPUT": "job-%r", "SLURM_PROCID": "0"})):
        sizes = (53001, 53002)
        runs = [c.start([c.prog("basic"), str(N), str(s), "later"], env=env) for s in sizes]
        out30_wait_ready(c, runs)
        for p, _, _, _ in runs:
            p.send_signal(signal.SIGUSR1)
        results = [c.finish([c.prog("basic")], *run, timeout=60) for run in runs]
        files = []
        for s, r in zip(sizes, results):
            eq(r.rc, 0, "%s: exit status: %r" % (tag, r))
            names = out30_summary_files(r)
            eq([os.path.splitext(n)[1] for n in names], [".json", ".txt", ".prof"],
               "%s: outputs named: %r" % (tag, names))
            files.append(names)
            pid = pid_of(r)
            t = Trace(load_json(names[0]), names[0])
            eq((t.count("malloc", s, pid), t.count("malloc", sizes[0] + sizes[1] - s)),
               (N, 0), "%s: marked mallocs in %s (its own, the other's)" % (tag, names[0]))
            rep = c.report_json(names[2])
            eq(report_row(rep, "memory", "malloc")["count"] >= N, True,
               "%s: mallocs in %s" % (tag, names[2]))
            eq(parse_summary(r.err)[0], t.other.get("events"),
               "%s: the summary line counts its own trace's events" % tag)
        check(not set(files[0]) & set(files[1]), "%s: both named the same files: %r"
              % (tag, files))


@case
def outputs_planted_links_and_fifos(c):
    # in a shared directory someone planted, at the output names and at the temporary
    # names outputs used to be written under: a FIFO (opening it for writing would block
    # forever), symbolic links to a file of ours (writing through them would overwrite
    # it) and a directory. None is opened or followed: each is named in one line, and
    # the outputs go to the first free name.
    victim = c.path("victim")
    with open(victim, "w") as f:
        f.write("precious\n")
    os.chmod(victim, 0o600)
    planted = {
        "out.prof": "fifo",          # the capture
        "out.json.tmp": "link",      # the trace's temporary name, guessable before
        "out.txt.tmp": "fifo",
        "out-2.json": "link",        # the trace
        "out-3.txt": "dir",          # the tables
        "out-4.prof.snapshot": "link",
        "out-4.prof": "link",
    }
    for name, kind in planted.items():
        p = c.path(name)
        if kind == "fifo":
            os.mkfifo(p)
        elif kind == "link":
            os.symlink(victim, p)
        else:
            os.makedirs(p)
    N = 200
    r = c.run([c.prog("basic"), N, 53101, "exit:0"], timeout=60,
              env={"PROFILER_OUTPUT": "out", "PROFILER_CONTINUOUS_DUMP": "1",
                   "PROFILER_DUMP_PERIOD": "0.01"})
    eq(r.rc, 0, "exit status: %r" % r)
    with open(victim) as f:
        eq(f.read(), "precious\n", "the file the links point to")
    eq(oct(os.stat(victim).st_mode & 0o777), oct(0o600), "its mode")
    for name, kind in planted.items():
        st = os.lstat(c.path(name))
        want = {"fifo": stat.S_ISFIFO, "link": stat.S_ISLNK, "dir": stat.S_ISDIR}[kind]
        check(want(st.st_mode), "%s is no longer a %s" % (name, kind))
    lines = [l for l in r.err.splitlines() if l.startswith("libprof:")]
    for name, kind in (("out.prof", "a FIFO"), ("out-2.json", "a symbolic link"),
                       ("out-3.txt", "a directory"), ("out-4.prof", "a symbolic link")):
        check(any(l.endswith("%s is %s; not writing there" % (name, kind)) for l in lines),
              "no line naming %s: %r" % (name, lines))
    names = out30_summary_files(r)
    eq([os.path.basename(n) for n in names], ["out-5.json", "out-5.txt", "out-5.prof"],
       "outputs: %r" % lines)
    t, _ = c.outputs("out-5")
    eq(t.count("malloc", 53101, pid_of(r)), N, "marked mallocs")
    left = [n for n in os.listdir(c.dir) if n.endswith(".tmp") and n not in planted]
    eq(left, [], "temporary files left behind")


@case
def outputs_mxnet_profile_json_untouched(c):
    # MXNet writes profile.json by default; libprof's default outputs are libprof.*, and
    # a libprof.* already there is not replaced either
    mx = '{"traceEvents": [], "mxnet": true}\n'
    with open(c.path("profile.json"), "w") as f:
        f.write(mx)
    with open(c.path("libprof.txt"), "w") as f:
        f.write("an earlier table\n")
    r = c.run([c.prog("basic"), 5, 53201, "exit:0"])
    eq(r.rc, 0, "exit status: %r" % r)
    with open(c.path("profile.json")) as f:
        eq(f.read(), mx, "MXNet's profile.json")
    with open(c.path("libprof.txt")) as f:
        eq(f.read(), "an earlier table\n", "the earlier libprof.txt")
    eq([os.path.basename(n) for n in out30_summary_files(r)],
       ["libprof-2.json", "libprof-2.txt", "libprof-2.prof"], "outputs named")
    t, _ = c.outputs("libprof-2")
    eq(t.count("malloc", 53201, pid_of(r)), 5, "marked mallocs")
    # PROFILER_OVERWRITE=1 replaces (regular files only)
    r = c.run([c.prog("basic"), 7, 53202, "exit:0"], env={"PROFILER_OVERWRITE": "1"})
    eq([os.path.basename(n) for n in out30_summary_files(r)],
       ["libprof.json", "libprof.txt", "libprof.prof"], "outputs named with overwrite")
    t, _ = c.outputs()
    eq(t.count("malloc", 53202, pid_of(r)), 7, "marked mallocs with overwrite")
    with open(c.path("profile.json")) as f:
        eq(f.read(), mx, "MXNet's profile.json after the second run")


@case
def outputs_prof_commands_do_not_replace(c):
    # prof export / report / summary -o and prof record -o: an existing file is not
    # replaced without --force-overwrite (one line, exit 2), a link or FIFO never is
    r = c.prof("record", "-o", "run", "--", c.prog("basic"), 5, 53301, "exit:0")
    eq(r.rc, 0, "prof record: %r" % r)
    cap = c.path("run.prof")
    r2 = c.prof("record", "-o", "run", "--", c.prog("basic"), 6, 53302, "exit:0")
    eq([os.path.basename(n) for n in out30_summary_files(r2)],
       ["run-2.json", "run-2.txt", "run-2.prof"], "prof record -o run, again")
    eq(report_row(c.report_json(cap), "memory", "malloc")["count"] >= 5, True,
       "the first capture kept")
    keep = c.path("keep.json")
    for cmd in (["export", cap, "-o", keep], ["export", cap],
                ["report", cap, "-o", keep], ["summary", cap, "-o", keep]):
        with open(keep, "w") as f:
            f.write("mine\n")
        x = c.prof(*cmd)
        eq(x.rc, 2, "prof %s: exit status: %r" % (" ".join(cmd[:1] + cmd[2:]), x))
        eq(len(x.err.splitlines()), 1, "prof %s: one line: %r" % (cmd[0], x.err))
        check("exists; not replacing it (use --force-overwrite)" in x.err,
              "prof %s: the line: %r" % (cmd[0], x.err))
        with open(keep) as f:
            eq(f.read(), "mine\n", "prof %s replaced keep.json" % cmd[0])
    with open(c.path("run.json")) as f:
        check(f.read().startswith("{"), "prof export without -o replaced run.json")
    x = c.prof("export", cap, "-o", keep, "--force-overwrite")
    eq(x.rc, 0, "prof export --force-overwrite: %r" % x)
    t = Trace(load_json(keep), keep)
    eq(t.count("malloc", 53301), 5, "the replaced keep.json is the trace")
    victim = c.path("victim")
    with open(victim, "w") as f:
        f.write("precious\n")
    os.symlink(victim, c.path("link.json"))
    os.mkfifo(c.path("fifo.txt"))
    for cmd, what in ((["export", cap, "-o", c.path("link.json")], "a symbolic link"),
                      (["report", cap, "-o", c.path("fifo.txt")], "a FIFO"),
                      (["summary", cap, "-o", c.path("link.json")], "a symbolic link")):
        x = c.prof(*(cmd + ["--force-overwrite"]), timeout=30)
        eq(x.rc, 2, "prof %s onto %s: %r" % (cmd[0], what, x))
        check(x.err.strip().endswith("is %s; not writing there" % what) and
              len(x.err.splitlines()) == 1, "prof %s: the line: %r" % (cmd[0], x.err))
    with open(victim) as f:
        eq(f.read(), "precious\n", "the file the link points to")


@case
def outputs_events_after_write_failure_counted(c):
    # the capture's file-size limit reached (a full disk alike) while the program makes
    # its mallocs: the collector keeps draining so the program goes on, and every event
    # drained after the failure is counted as lost and said so
    N, size, limit = 400000, 53401, 256 << 10
    p, out, err, t0, collector = start_ready(c, [c.prog("basic"), N, size, "later"],
                                             env={"PROFILER_BLOCK": "1"})
    import resource
    resource.prlimit(collector, resource.RLIMIT_FSIZE, (limit, limit))
    p.send_signal(signal.SIGUSR1)
    r = c.finish([c.prog("basic")], p, out, err, t0, 60)
    eq(r.rc, 0, "the program's exit status: %r" % r)
    m = re.search(r"^libprof: (\d+) events drained after writing libprof\.prof failed are "
                  r"not in it \(counted as lost\)$", r.err, re.M)
    check(m, "no line counting the events not written: %r" % r.err)
    gone = int(m.group(1))
    s = parse_summary(r.err)
    check(s, "no summary line: %r" % r.err)
    eq(s[1], gone, "the summary's lost events (no ring lost any: PROFILER_BLOCK=1)")
    rep = c.report_json(c.path("libprof.prof"))
    got = report_row(rep, "memory", "malloc")["count"]
    check(0 < got < N, "mallocs in the kept capture: %d" % got)
    check(gone >= N - got, "%d mallocs missing from the capture, %d events counted lost"
          % (N - got, gone))
    eq(s[0], rep["events"], "the summary's events are the capture's")
    c.note("%d of %d mallocs in the capture; %d events drained after the failure counted "
           "lost" % (got, N, gone))


@case
def outputs_file_made_meanwhile_kept(c):
    # a mine.json another program makes while the session runs (after the collector
    # claimed the prefix) is not replaced at the end: the trace takes the next name, and
    # the summary line names it
    p, out, err, t0, collector = start_ready(c, [c.prog("basic"), 10, 53501, "later"],
                                             env={"PROFILER_OUTPUT": "mine"})
    theirs = '{"someone": "else"}\n'
    with open(c.path("mine.json"), "w") as f:
        f.write(theirs)
    p.send_signal(signal.SIGUSR1)
    r = c.finish([c.prog("basic")], p, out, err, t0, 60)
    eq(r.rc, 0, "exit status: %r" % r)
    with open(c.path("mine.json")) as f:
        eq(f.read(), theirs, "the mine.json made meanwhile")
    eq([os.path.basename(n) for n in out30_summary_files(r)],
       ["mine-2.json", "mine.txt", "mine.prof"], "outputs named")
    t = Trace(load_json(c.path("mine-2.json")), c.path("mine-2.json"))
    eq(t.count("malloc", 53501, pid_of(r)), 10, "marked mallocs in mine-2.json")


@case
def outputs_missing_directory_created(c):
    # PROFILER_OUTPUT (relative, with %r) and prof record -o into directories that do not
    # exist yet: made, as nsys makes them; the job is profiled, not run bare
    r = c.run([c.prog("basic"), 10, 53601], env={"PROFILER_OUTPUT": "runs/new/job-%r"})
    eq(r.rc, 0, "exit status: %r" % r)
    check("not profiling" not in r.err, "stderr: %r" % r.err)
    eq(out30_summary_files(r), [c.path("runs/new/job-0" + e) for e in (".json", ".txt", ".prof")],
       "outputs named")
    t = Trace(load_json(c.path("runs/new/job-0.json")), "job-0.json")
    eq(t.count("malloc", 53601, pid_of(r)), 10, "marked mallocs")
    r = c.prof("record", "-o", "runs2/deeper/x", "--", c.prog("basic"), "10", "53602",
               cwd=c.path())
    eq(r.rc, 0, "prof record: %r" % r)
    t = Trace(load_json(c.path("runs2/deeper/x.json")), "x.json")
    eq(t.count("malloc", 53602), 10, "prof record: marked mallocs")
    # a file where a directory must go: said in one line, the program still runs
    with open(c.path("plain"), "w") as f:
        f.write("a file\n")
    r = c.run([c.prog("basic"), 10, 53603], env={"PROFILER_OUTPUT": "plain/sub/x"})
    eq(r.rc, 0, "exit status: %r" % r)
    check("cannot create the output directory" in r.err and "plain" in r.err,
          "stderr: %r" % r.err)
