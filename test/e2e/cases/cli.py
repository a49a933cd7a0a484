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


# The prof commands share one option parser (issue 13): `prof help CMD` is `prof CMD
# --help`, every option a help text shows is one the command accepts, and every command
# refuses an unknown option the same way. Run by run.py in its namespace: its helpers
# (case, check, eq, profile, ...) are in scope; names here start with cli75_.

CLI75_COMMANDS = ("record", "report", "export", "summary", "diff", "clean", "collect")

# an option line of a help text: "  -o, --output OUT   text", "  --block   text",
# "  --group-by stack[:N]" (its text on the next line)
CLI75_OPTION_RE = re.compile(
    r"^  (?:(-[A-Za-z0-9])(?:, |(?= |$)))?(--[a-z0-9][a-z0-9-]*)?(?: ([^ ]+))?(?:  |$)")

# a session id nobody has: prof clean limited to it touches no other session
CLI75_NO_SESSION = "0" * 16


def cli75_options(text):
    """The options a help text shows: (short, long, value name or None), -h/--help
    left out."""
    found = []
    for line in text.splitlines():
        m = CLI75_OPTION_RE.match(line)
        if m and (m.group(1) or m.group(2)) and m.group(2) != "--help":
            found.append(m.groups())
    return found


def cli75_spellings(short, long, value):
    """Every way of giving the option with value: --long VALUE, --long=VALUE, -s VALUE
    (flags: --long, -s)."""
    ways = []
    if long:
        ways += [[long]] if value is None else [[long, value], ["%s=%s" % (long, value)]]
    if short:
        ways += [[short]] if value is None else [[short, value]]
    return ways


@case
def cli_help_command_equals_command_help(c):
    # prof help CMD prints exactly what prof CMD --help prints, for every command
    for cmd in CLI75_COMMANDS:
        a, b = c.prof("help", cmd), c.prof(cmd, "--help")
        if (a.rc, b.rc, a.err, b.err) != (0, 0, "", ""):
            c.defer("prof help %s / prof %s --help: exit %s / %s, stderr %r / %r"
                    % (cmd, cmd, a.rc, b.rc, a.err, b.err))
        elif a.out != b.out:
            c.defer("prof help %s differs from prof %s --help:\n%s\n---\n%s"
                    % (cmd, cmd, a.out[:300], b.out[:300]))
        h = c.prof(cmd, "-h")
        check(h.rc == 0 and h.out == b.out, "prof %s -h differs from --help: %r" % (cmd, h))
        check(cli75_options(b.out), "prof %s --help shows no option: %r" % (cmd, b.out))
    a, b = c.prof("help"), c.prof("--help")
    eq((a.rc, b.rc), (0, 0), "prof help, prof --help: exit status")
    eq(a.out, b.out, "prof help vs prof --help")
    for cmd in CLI75_COMMANDS:
        check(re.search(r"^  %s\b" % cmd, b.out, re.M), "prof --help does not list %s" % cmd)
    r = c.prof("help", "no-such-command")
    check(r.rc == 2 and r.out == "" and
          r.err == "prof: unknown command 'no-such-command' (see prof --help)\n",
          "prof help no-such-command: %r" % r)


@case
def cli_every_option_in_help_is_accepted(c):
    # a small capture with call stacks (export --format folded needs them)
    # timed allocator calls: --weight time needs calls with stacks and durations
    profile(c, [c.prog("basic"), 5, 75001, "exit:0"],
            env={"PROFILER_STACK": "alloc", "PROFILER_ALLOC_TIMING": "1"})
    cap = c.path("libprof.prof")
    conf = c.path("empty.conf")
    with open(conf, "w") as f:
        f.write("# no thresholds of its own\n")
    n = [0]

    def out():
        n[0] += 1
        return c.path("out-%d" % n[0])

    # values that must be accepted, by (command, option); OUT/PREFIX values are new files
    samples = {
        ("report", "--sort"): ["total", "self", "count", "avg", "max", "cpu_mem",
                               "self_cpu_mem"],
        ("report", "--top"): ["2"],
        ("report", "--category"): ["memory"],
        ("report", "--format"): ["text", "csv", "json"],
        ("report", "--group-by"): ["stack", "stack:2", "shape"],
        ("export", "--format"): ["chrome", "folded"],
        ("export", "--max-events"): ["100"],
        ("export", "--weight"): ["time", "bytes", "count"],
        ("export", "--trace-alloc"): ["auto", "all"],
        ("diff", "--metric"): ["median", "all"],
        ("diff", "--threshold"): ["5", "median=10%"],
        ("diff", "--config"): [conf],
        ("diff", "--top"): ["2"],
        ("diff", "--format"): ["text", "markdown", "json", "junit"],
        ("diff", "--rank"): ["1"],
        ("diff", "--base-rank"): ["0"],
        ("clean", "--min-age"): ["60"],
        ("record", "--ring-size"): ["64K"],
        ("record", "--max-json-events"): ["1000"],
        ("record", "--delay"): ["0", "0.5"],
        ("record", "--duration"): ["0", "10"],
        ("record", "--schedule"): ["active=1", "wait=1,active=2,repeat=1"],
        ("record", "--rotate"): ["60s", "500M"],
        ("record", "--flight"): ["30s", "200M"],
    }

    def run(cmd, opt):
        """prof cmd with opt (a list) in a call that works: its exit status must say so."""
        if cmd == "report":
            return c.prof("report", cap, *opt), (0,)
        if cmd == "export":
            extra = ["--format", "folded"] if opt[0].startswith(("--weight", "--threads")) \
                else []
            if not opt[0].startswith(("-o", "--output")):
                extra += ["-o", out()]
            return c.prof("export", cap, *(extra + opt)), (0,)
        if cmd == "summary":
            return c.prof("summary", cap, *opt), (0,)
        if cmd == "diff" and opt[0].startswith(("--rank", "--base-rank")):
            # ranks of one job (test/e2e/cases/ranks.py's synthetic ones)
            if not os.path.isdir(c.path("job")):
                gen_ranks(c, "job", ranks=2, hosts=1, steps=4, filler=2, skew_us=0,
                          slow_rank=1, slow_us=100)
            more = ["--rank", "1"] if opt[0].startswith("--base-rank") else []
            return c.prof("diff", c.path("job"), *(opt + more)), (0, 1)
        if cmd == "diff":
            return c.prof("diff", cap, cap, *opt), (0, 1)
        if cmd == "clean":
            return c.prof("clean", "--dry-run", CLI75_NO_SESSION, *opt), (0,)
        if cmd == "record":
            target = [] if opt[0].startswith(("-o", "--output")) else ["-o", out()]
            return c.prof("record", *(target + opt + ["--", c.prog("basic"), 1, 75002,
                                                        "exit:0"])), (0,)
        raise Fail("no way to run prof %s" % cmd)

    tried = 0
    for cmd in ("report", "export", "summary", "diff", "clean", "record", "collect"):
        shown = cli75_options(c.prof(cmd, "--help").out)
        for short, long, value in shown:
            if cmd == "collect":
                # its one option names a live session: one that is not there is refused
                # as such, not as an option
                r = c.prof("collect", long, CLI75_NO_SESSION)
                check(r.rc == 2 and r.err == "prof collect: no session '%s'\n"
                      % CLI75_NO_SESSION, "prof collect %s: %r" % (long, r))
                continue
            if value is None:
                values = [None]
            elif value in ("OUT", "PREFIX", "OUT.json"):
                values = ["@out"]
            elif (cmd, long) in samples:
                values = samples[(cmd, long)]
            elif "|" in value and "=" not in value:
                values = value.split("|")  # the choices, shown as the value's name
            else:
                values = samples.get((cmd, long))
                check(values, "prof %s --help shows %s %s: the case knows no value for it"
                      % (cmd, long, value))
            for v in values:
                for opt in cli75_spellings(short, long, v):
                    opt = [x.replace("@out", out()) if "@out" in x else x for x in opt]
                    r, ok = run(cmd, opt)
                    tried += 1
                    if r.rc not in ok:
                        c.defer("prof %s %s: exit %s: %s" % (cmd, " ".join(opt), r.rc,
                                                            r.err.strip()[:300]))
    c.note("%d option spellings tried" % tried)


@case
def cli_unknown_option_one_line(c):
    # every command: an unknown option is one line naming it, exit status 2, nothing
    # on standard output and no file made
    for cmd in CLI75_COMMANDS:
        for bad in ("--no-such-option", "--no-such-option=1", "-Z"):
            r = c.prof(cmd, bad, "x")
            want = "prof %s: unknown option '%s' (see prof %s --help)\n" % (cmd, bad, cmd)
            check((r.rc, r.out, r.err) == (2, "", want), "prof %s %s x: %r" % (cmd, bad, r))
    eq(sorted(os.listdir(c.dir)), [], "files made by bad invocations")


@case
def cli_record_leaves_program_arguments(c):
    # prof record's options end at the program's name (or at "--"): what follows is the
    # program's, options of prof's own spelling included
    show = ["sh", "-c", 'for a in "$@"; do echo "arg=$a"; done', "sh"]
    theirs = ["--help", "-o", "x", "--quiet", "--", "-q", "--output=y"]
    for how in ([], ["--"]):
        r = c.prof("record", "-q", "-o", c.path("rec%d" % len(how)), *(how + show + theirs))
        eq(r.rc, 0, "prof record %s: %r" % (" ".join(how), r))
        eq(r.kv("arg"), theirs, "the program's arguments (prof record %s...)" % " ".join(how))
        eq(r.err, "", "prof record -q: standard error")
    eq(sorted(os.listdir(c.dir)), ["rec0.json", "rec0.prof", "rec0.txt", "rec1.json",
                                   "rec1.prof", "rec1.txt"], "outputs")


@case
def cli_newest_capture_here(c):
    # prof report and prof export without a capture read the newest one in the current
    # directory (as nsys and perf do), saying which; a file that merely ends in .prof is
    # not one.
    for name in ("old", "new"):
        r = c.run([c.prog("basic"), 10, 4321 if name == "old" else 4322, "exit:0"],
                  env={"PROFILER_OUTPUT": name})
        eq(r.rc, 0, "the program (%r)" % r)
        time.sleep(0.05)
    with open(c.path("junk.prof"), "w") as f:
        f.write("not a capture")
    r = c.prof("report", "--format", "json", cwd=c.path())
    eq(r.rc, 0, "prof report without a capture (%r)" % r)
    eq(r.err, "prof report: reading new.prof (the newest capture here)\n", "its line")
    rows = {w["name"]: w for w in json.loads(r.out)["rows"] if w["category"] == "memory"}
    check(rows.get("malloc", {}).get("count", 0) >= 10, "the newest capture's rows: %r" % rows)
    os.unlink(c.path("new.json"))
    x = c.prof("export", cwd=c.path())
    eq(x.rc, 0, "prof export without a capture (%r)" % x)
    check(os.path.exists(c.path("new.json")), "prof export wrote new.json")


@case
def cli_record_stats(c):
    # prof record --stats prints the tables it wrote on standard output after the
    # command's own output (nsys profile --stats=true), the same bytes as PREFIX.txt; a
    # name taken gets the suffixed file's tables
    for name in ("st", "st"):
        r = c.prof("record", "--stats", "-q", "-o", name, "--", c.prog("basic"), 5, 61001,
                   "exit:0")
        eq(r.rc, 0, "prof record --stats (%r)" % r)
    check(r.out.startswith("pid="), "the command's output first: %r" % r.out[:200])
    txt = read_text(c.path("st-2.txt"))
    check(txt and r.out.endswith("\n" + txt), "the tables of st-2.txt after it: %r" % r.out[-400:])
    check(("memory", "malloc") in text_rows(txt), "a malloc row")


@case
def cli_one_capture(c):
    # prof report and prof export read one capture, or several listed (the parts of one
    # in order, the captures of a job's ranks): none, a missing one or an empty directory
    # among them is one line naming the problem and exit status 2
    os.mkdir(c.path("d.prof"))
    for cmd in ("report", "export"):
        r = c.prof(cmd)
        eq(r.rc, 2, "prof %s without a capture: exit status (%r)" % (cmd, r))
        eq(r.err, "prof %s: no capture file given, and none here (NAME.prof; see prof %s "
           "--help)\n" % (cmd, cmd), "prof %s without a capture" % cmd)
        r = c.prof(cmd, "a.prof", "b.prof", "-o", c.path("out"))
        eq(r.rc, 2, "prof %s with two missing parts: exit status (%r)" % (cmd, r))
        eq(r.err, "prof %s: a.prof: No such file or directory\n" % cmd,
           "prof %s with two missing parts" % cmd)
        if cmd == "export":
            r = c.prof(cmd, "a.prof", "b.prof")
            eq(r.err, "prof export: several captures or parts: name the output with -o OUT\n",
               "prof export of a list, no -o")
        r = c.prof(cmd, "d.prof", "d.prof", "-o", c.path("out"))
        eq(r.rc, 2, "prof %s with directories listed: exit status (%r)" % (cmd, r))
        eq(r.err, "prof %s: d.prof: a directory with no capture in it (neither parts "
           "part-N.prof nor captures NAME.prof)\n" % cmd, "prof %s with directories listed" % cmd)


@case
def cli_install_uninstall(c):
    # make install into a prefix of the case's: the command, the library, the header, the
    # Python module where the chosen Python imports it (here with the PYTHONPATH install
    # names: the prefix is not the Python's), man pages made from the help texts, the
    # bash completion, a pkg-config file; make uninstall takes all of it away again
    prefix = c.path("p")
    mk = ["make", "-s", "-C", ROOT, "BUILD=" + BUILD, "PREFIX=" + prefix,
          "PYTHON=/usr/bin/python3"]
    r = subprocess.run(mk + ["install"], capture_output=True, text=True, timeout=300)
    eq(r.returncode, 0, "make install: %s" % r.stderr[-2000:])
    for f in ("bin/prof", "lib/libprof.so", "include/prof.h", "lib/pkgconfig/libprof.pc",
              "share/bash-completion/completions/prof", "share/man/man1/prof.1",
              "share/man/man1/prof-report.1", "share/man/man1/prof-tree.1"):
        check(os.path.exists(os.path.join(prefix, f)), "%s not installed" % f)
    m = re.search(r"^python module: (\S+)/libprof\.py \(/usr/bin/python3 imports it with "
                  r"PYTHONPATH=(\S+)\)$", r.stdout, re.M)
    check(m and m.group(1).startswith(prefix), "the module's line: %r" % r.stdout)
    p = subprocess.run(["/usr/bin/python3", "-c", "import libprof; print(libprof.__file__)"],
                       capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=m.group(2)))
    eq(p.stdout.strip(), os.path.join(m.group(1), "libprof.py"), "import libprof: %r" % p)
    if shutil.which("pkg-config"):
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(prefix, "lib", "pkgconfig"))
        got = [subprocess.run(["pkg-config", q, "libprof"], capture_output=True, text=True,
                              env=env).stdout.strip() for q in ("--cflags", "--variable=preload")]
        eq(got, ["-I" + os.path.join(prefix, "include"),
                 os.path.join(prefix, "lib", "libprof.so")], "pkg-config --cflags, preload")
    man = subprocess.run(["man", "-l", os.path.join(prefix, "share/man/man1/prof-tree.1")],
                         capture_output=True, text=True, env=dict(os.environ, MANWIDTH="80"))
    check("the call tree" in man.stdout and "--max-depth" in man.stdout.replace("\u2010", "-"),
          "man prof-tree: %r" % man.stdout[:500])
    comp = subprocess.run(["bash", "-c", 'PATH="%s/bin:$PATH"; source "%s"; COMP_WORDS=(prof '
                           're); COMP_CWORD=1; _prof; echo "${COMPREPLY[*]}"; COMP_WORDS=(prof '
                           'report --format ""); COMP_CWORD=3; _prof; echo "${COMPREPLY[*]}"'
                           % (prefix, os.path.join(prefix, "share/bash-completion/completions/"
                                                           "prof"))],
                          capture_output=True, text=True)
    eq(comp.stdout.splitlines(), ["record report", "text csv json"], "bash completion (%r)"
       % comp)
    r = subprocess.run(mk + ["uninstall"], capture_output=True, text=True, timeout=120)
    eq(r.returncode, 0, "make uninstall: %s" % r.stderr)
    left = [os.path.join(d, f) for d, _, fs in os.walk(prefix) for f in fs]
    eq(left, [], "files left after make uninstall")


@case(serial=True)
def cli_progress_on_terminals(c):
    # prof report / prof export over a capture that takes seconds show a progress line on
    # standard error when it is a terminal (as nsys shows its processing), and nothing
    # when it is not; prof export's two reads say "again" on the second
    r = c.prof("record", "--block", "-q", "-o", "big", "--", c.prog("pairs"), 25000000,
               timeout=600)
    eq(r.rc, 0, "prof record (%r)" % r)
    cmd = "%s report %s > /dev/null" % (Setup.prof, c.path("big.prof"))
    # bytes: text mode would read each \r as a line's end
    t = subprocess.run(["script", "-q", "-e", "-c", cmd, "/dev/null"], capture_output=True,
                       timeout=300, env=dict(os.environ, **Setup.prof_env()))
    out = t.stdout.decode(errors="replace")
    eq(t.returncode, 0, "prof report on a terminal: %r" % out[-500:])
    lines = re.findall(r"\rprof report: reading +(\d+)% \([\d.]+ of ([\d.]+) MB\)", out)
    check(lines, "no progress line on the terminal: %r" % out[-500:])
    check(out.rstrip("\r\n").endswith("\r\x1b[K"), "the line cleared at the end: %r"
          % out[-80:])
    plain = c.prof("report", c.path("big.prof"))
    check("reading" not in plain.err and "\r" not in plain.err, "progress without a "
          "terminal: %r" % plain.err[-300:])
    cmd = "%s export %s -o %s > /dev/null" % (Setup.prof, c.path("big.prof"), c.path("b.json"))
    t = subprocess.run(["script", "-q", "-e", "-c", cmd, "/dev/null"], capture_output=True,
                       timeout=300, env=dict(os.environ, **Setup.prof_env()))
    out = t.stdout.decode(errors="replace")
    eq(t.returncode, 0, "prof export on a terminal: %r" % out[-500:])
    check("prof export: reading again" in out, "the second read: %r" % out[-500:])
    c.note("%d progress lines from prof report" % len(lines))
