# settings: PROFILER_* settings: bad ones rejected, good ones honoured.
# Run by test/e2e/run.py in the harness's namespace (see README.md).


# ---------------------------------------------------------------------------------------
# 11. settings


@case
def bad_settings(c):
    for var, value, word, profiled in (("PROFILER_RING_SIZE", "abc", "PROFILER_RING_SIZE", True),
                                       ("PROFILER_RING_SIZE", "1K", "PROFILER_RING_SIZE", True),
                                       ("PROFILER_FOO", "1", "PROFILER_FOO", True),
                                       ("PROFILER_BLOCK", "maybe", "PROFILER_BLOCK", True),
                                       ("PROFILER_OUTPUT", "out_%z", "%z", False)):
        d = c.path(var + value.replace("%", "_"))
        os.makedirs(d)
        r = c.run([c.prog("basic"), 6, 52201, "exit:7"], env={var: value}, cwd=d)
        what = "%s=%s" % (var, value)
        eq(r.rc, 7, "%s: exit status: %r" % (what, r))
        w = warnings(r.err)
        eq(len(w), 1, "%s: one line on stderr: %r" % (what, r.err))
        check(w[0].startswith("libprof: ") and word in w[0],
              "%s: the line does not name %s: %r" % (what, word, w[0]))
        eq(r.kv("pid") != [], True, "%s: program output" % what)
        files = sorted(os.listdir(d))
        if profiled:
            eq(files, ["libprof.json", "libprof.prof", "libprof.txt"], "%s: outputs" % what)
            t = Trace(load_json(os.path.join(d, "libprof.json")))
            eq(t.count("malloc", 52201), 6, "%s: marked mallocs" % what)
        else:
            eq(files, [], "%s: files" % what)


@case
def good_settings(c):
    # PROFILER_OUTPUT with %p and %r, PROFILER_QUIET, PROFILER_PROFILE_MEMORY=0
    r = c.run([c.prog("ranges"), 1, 3, 0], env={"PROFILER_OUTPUT": "out_%p_r%r", "RANK": "5",
                                                "PROFILER_QUIET": "1",
                                                "PROFILER_PROFILE_MEMORY": "0"})
    eq(r.rc, 0, "exit status: %r" % r)
    eq(r.err, "", "stderr with PROFILER_QUIET=1")
    pid = pid_of(r)
    t, _ = c.outputs("out_%d_r5" % pid)
    eq(t.select("X", cat="memory"), [], "memory events with PROFILER_PROFILE_MEMORY=0")
    eq(len(t.select("X", "outer", "user")), 3, "ranges")
    # %h host, %t start time; MXNet's filename key names the trace: the prefix drops .json
    r = c.run([c.prog("basic"), 2, 52203, "exit:0"], env={"PROFILER_OUTPUT": "o_%h_%t",
                                                          "PROFILER_QUIET": "1"})
    eq((r.rc, r.err), (0, ""), "PROFILER_OUTPUT=o_%h_%t: exit status, stderr")
    host = socket.gethostname()
    made = [f for f in os.listdir(c.dir) if f.startswith("o_")]
    eq(len(made), 3, "outputs of o_%%h_%%t: %r" % made)
    for f in made:
        check(re.match(r"^o_%s_\d{8}-\d{6}\.(json|txt|prof)$" % re.escape(host), f),
              "output name %r for o_%%h_%%t (host %r)" % (f, host))
    r = c.run([c.prog("basic"), 2, 52204, "exit:0"], env={"PROFILER_FILENAME": "mx.json",
                                                          "PROFILER_QUIET": "1"})
    eq((r.rc, r.err), (0, ""), "PROFILER_FILENAME=mx.json: exit status, stderr")
    eq(c.outputs("mx")[0].count("malloc", 52204), 2, "marked mallocs in mx.json")
    sub = c.path("sub")
    os.makedirs(sub)
    r = c.run([c.prog("basic"), 2, 52202, "exit:0"], env={"PROFILER_OUTPUT": sub + "/x_%%"})
    eq(r.rc, 0, "exit status: %r" % r)
    s = parse_summary(r.err)
    check(s, "summary line: %r" % r.err)
    check((sub + "/x_%.json") in r.err, "summary names the trace: %r" % r.err)
    eq(sorted(os.listdir(sub)), ["x_%.json", "x_%.prof", "x_%.txt"], "outputs of x_%%")
