# cli: prof record: outputs, prefix, quiet, exit status, usage errors.
# Run by test/e2e/run.py in the harness's namespace (see README.md).


# ---------------------------------------------------------------------------------------
# 9. prof record


@case
def record_outputs(c):
    r = c.prof("record", "--", c.prog("basic"), 10, 52101, "exit:0")
    eq(r.rc, 0, "exit status: %r" % r)
    t, _ = c.outputs()
    eq(t.count("malloc", 52101, pid_of(r)), 10, "marked mallocs")
    check(parse_summary(r.err), "no summary line on stderr: %r" % r)
    check("basic" in str(t.other.get("command")), "otherData command %r" % t.other.get("command"))
    t.wellformed()
    # the python module path is set for the command
    r = c.prof("record", "-o", "py", "--", sys.executable, "-c",
               "import libprof; print('avail', libprof.available())")
    eq((r.rc, r.out.strip()), (0, "avail True"), "python under prof record: %r" % r)
    c.outputs("py")


@case
def record_prefix_and_quiet(c):
    r = c.prof("record", "-q", "-o", "run_%p", c.prog("basic"), 4, 52102, "exit:0")
    eq(r.rc, 0, "exit status: %r" % r)
    pid = pid_of(r)
    t, _ = c.outputs("run_%d" % pid)
    eq(t.count("malloc", 52102, pid), 4, "marked mallocs")
    eq(r.err, "", "stderr with -q")
    # the variable prof record documents for finding the library is no unknown setting
    r = c.prof("record", "-q", "-o", "lib", c.prog("basic"), 2, 52105, "exit:0",
               env={"PROFILER_LIBRARY": Setup.lib})
    eq(r.rc, 0, "prof record with PROFILER_LIBRARY: exit status")
    if r.err:
        c.defer("prof record -q with PROFILER_LIBRARY set: stderr %r, want nothing" % r.err)
    eq(c.outputs("lib")[0].count("malloc", 52105), 2, "marked mallocs with PROFILER_LIBRARY")
    r = c.prof("record", "--ring-size", "4K", "--block", "-o", "blk", "--",
               c.prog("overload"), 20000, 71002)
    eq(r.rc, 0, "exit status: %r" % r)
    t, _ = c.outputs("blk")
    s = parse_summary(r.err)
    check(s and s[1] == 0, "lost with --block: %r" % r.err)
    eq(t.count("malloc", 71002), 20000, "mallocs with --ring-size 4K --block")


@case
def record_exit_status(c):
    r = c.prof("record", "-q", "--", c.prog("basic"), 3, 52103, "exit:3")
    eq(r.rc, 3, "exit 3 propagated: %r" % r)
    t, _ = c.outputs()
    eq(t.count("malloc", 52103), 3, "marked mallocs")
    for mode, sig in (("kill", 9), ("abort", 6)):
        os.makedirs(c.path(mode))
        r = c.prof("record", "-q", "--", c.prog("basic"), 5, 52104, mode, cwd=c.path(mode))
        eq(r.rc, 128 + sig, "prof record status for a command killed by %d: %r" % (sig, r))
        t = Trace(load_json(c.path(mode, "libprof.json")))
        eq(t.count("malloc", 52104), 5, "marked mallocs before the %s" % mode)
    r = c.prof("record", "-q", "--", "/nonexistent/program")
    check(r.rc != 0, "running a missing program succeeded: %r" % r)


@case
def record_usage_errors(c):
    for args in (["record"], ["record", "-o", "x"], ["record", "--"],
                 ["record", "--bogus", "true"], ["record", "--ring-size", "abc", "true"]):
        r = c.prof(*args)
        eq(r.rc, 2, "prof %s exit status: %r" % (" ".join(args), r))
        eq(len(r.err.splitlines()), 1, "prof %s: stderr lines: %r" % (" ".join(args), r.err))
        eq(r.out, "", "prof %s stdout" % " ".join(args))
    eq(sorted(os.listdir(c.dir)), [], "files made by bad invocations")
