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
    eq(t.select("X", cat="cpu_memory"), [], "memory events with PROFILER_PROFILE_MEMORY=0")
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


# Settings have one source (preload/common/settings.c, issue 13): every setting is a
# prof_set_config key too (trace included), prof record's options are the table's, and
# PROFILER_DEBUG is a setting. README.md's settings table is made from the table
# (test/unit/test_settings.c holds it to that), so it stands for the table here.
# Run by run.py in its namespace; names here start with set70_.


def set70_readme_rows():
    """README's settings table as {variable: [cells]}, between its marker lines."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"<!-- settings table:[^\n]*-->\n(.*?)\n<!-- end of settings table -->",
                  text, re.S)
    check(m, "README.md has no settings table between its marker lines")
    lines = m.group(1).splitlines()
    head = [h.strip() for h in lines[0].strip("|").split("|")]
    check("`prof record`" in head, "README's settings table has no `prof record` column: %r"
          % head)
    rows = {}
    for l in lines[2:]:
        cells = [x.strip() for x in l.strip().strip("|").split("|")]
        rows[cells[0].strip("`")] = dict(zip(head, cells))
    return rows


def set70_flags(text):
    """The options named in text: -o, --output ..."""
    return re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", text)


@case
def settings_record_flags_match_table(c):
    # every setting with a prof record option in the table is an option of prof record,
    # and every option of prof record (but --help) sets a setting of the table
    rows = set70_readme_rows()
    by_flag = {}
    for var, row in rows.items():
        for flag in set70_flags(row["`prof record`"].replace("`", " ")):
            by_flag[flag] = var
    check(by_flag, "no setting of the table has a prof record option")
    r = c.prof("record", "--help")
    eq(r.rc, 0, "prof record --help: %r" % r)
    offered = set()
    for l in r.out.splitlines():
        if l.lstrip().startswith("-"):
            offered.update(set70_flags(re.split(r"\s{2,}", l.strip())[0]))
    missing = sorted(f for f in by_flag if f not in offered)
    eq(missing, [], "options of the table's settings that prof record --help lacks (%s)"
       % ", ".join("%s: %s" % (f, by_flag[f]) for f in missing))
    # --stats is what prof record does at the end (prints the tables), not a setting
    unknown = sorted(f for f in offered if f not in by_flag and f not in ("-h", "--help",
                                                                          "--stats"))
    eq(unknown, [], "prof record options that set no setting of the table")
    # and they work: each switch is the setting's value (--no-memory: profile_memory 0)
    r = c.prof("record", "-q", "--no-memory", "-o", "nm", c.prog("basic"), 3, 52701, "exit:0")
    eq((r.rc, r.err), (0, ""), "prof record -q --no-memory: %r" % r)
    eq(c.outputs("nm")[0].select("X", cat="cpu_memory"), [], "memory events with --no-memory")


@case
def settings_trace_by_set_config(c):
    # prof_set_config("trace", "usleep") before prof_set_state(PROF_RUN) traces usleep
    # as PROFILER_TRACE=usleep does; the key set again after start is accepted and says
    # in one line that it is fixed by then
    N = 7
    r = c.run([c.prog("set_config_trace"), N], autostart=False)
    eq(r.rc, 0, "exit status: %r" % r)
    for k in ("trace", "output", "run", "late"):
        eq(r.kv(k), ["0"], "return of prof_set_config/prof_set_state (%s)" % k)
    w = warnings(r.err)
    eq(len(w), 1, "one line on stderr besides the summary: %r" % r.err)
    check(w[0].startswith("libprof: ") and "trace" in w[0] and "fixed" in w[0]
          and "PROFILER_TRACE" in w[0], "the line on trace set after start: %r" % w[0])
    t, _ = c.outputs("st")
    t.wellformed()
    pid = pid_of(r)
    eq(len(t.select("X", "usleep", "trace", pid=pid)), N, "traced usleep calls")
    eq(t.select("X", "nanosleep", "trace"), [], "nanosleep, set after start, traced")
    # the same through the environment gives the same calls
    r2 = c.run([c.prog("set_config_trace"), N], autostart=False,
               env={"PROFILER_TRACE": "usleep", "PROFILER_OUTPUT": "env"})
    eq(r2.rc, 0, "exit status with PROFILER_TRACE: %r" % r2)
    t2, _ = c.outputs("st-2")
    eq(len(t2.select("X", "usleep", "trace", pid=pid_of(r2))), N,
       "traced usleep calls with PROFILER_TRACE as well")


@case
def settings_trace_setenv_before_start(c):
    # PROFILER_TRACE set by the program itself (setenv, os.environ) after load and before
    # prof_set_state(PROF_RUN) is what the session traces: it is read when the session
    # starts, as before the settings table
    N = 5
    r = c.run([c.prog("set_config_trace"), N, "setenv"], autostart=False)
    eq(r.rc, 0, "exit status: %r" % r)
    t, _ = c.outputs("st")
    eq(len(t.select("X", "usleep", "trace", pid=pid_of(r))), N, "traced usleep calls")


@case
def settings_debug_domains(c):
    # PROFILER_DEBUG is a setting: known domains pass silently, an unknown one is one
    # line naming the known ones; the program is profiled either way
    for value, complaint in (("got,trace,drain,cupti,shm,alloc", False), ("got,nope", True)):
        d = c.path(value.replace(",", "_"))
        os.makedirs(d)
        r = c.run([c.prog("basic"), 4, 52702, "exit:0"], env={"PROFILER_DEBUG": value}, cwd=d)
        eq(r.rc, 0, "PROFILER_DEBUG=%s: exit status: %r" % (value, r))
        w = [l for l in warnings(r.err) if "PROFILER_DEBUG" in l or "unknown" in l]
        if complaint:
            eq(len(w), 1, "PROFILER_DEBUG=%s: one line: %r" % (value, r.err))
            check("PROFILER_DEBUG=%s" % value in w[0] and "got, trace, drain" in w[0],
                  "PROFILER_DEBUG=%s: the line names the known domains: %r" % (value, w[0]))
        else:
            eq(w, [], "PROFILER_DEBUG=%s: complaints" % value)
        t = Trace(load_json(os.path.join(d, "libprof.json")))
        eq(t.count("malloc", 52702), 4, "PROFILER_DEBUG=%s: marked mallocs" % value)
