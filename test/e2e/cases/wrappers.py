# wrappers: a program started through launchers (pyenv-like shims, env, sh -c 'exec ...')
# reads as the program: the images that exec'd and the helpers they waited for are folded
# away in the tables and the trace (formats/model/fold.c), kept in the capture, and shown
# again by --all-processes; a child of the program itself is never folded.

# A shim like pyenv's: helpers in command substitutions (a subshell that execs dirname,
# basename, readlink), then exec through env into bash, which execs the program.
WRAPPER_SHIM = r'''#!/bin/sh
here=$(dirname "$0")
name=$(basename "$1")
exec env SHIM_NAME="$name" bash -c 'real=$(readlink -f "$0"); exec "$real" "$@"' "$@"
'''


def wrapper_shim(c):
    path = c.path("shim.sh")
    with open(path, "w") as f:
        f.write(WRAPPER_SHIM)
    os.chmod(path, 0o755)
    return path


def per_process_rows(text):
    """The rows of the text tables' "Memory: cpu/0, per process" section: (pid, command)."""
    rows, on = [], False
    for line in text.splitlines():
        if line.startswith("Memory: cpu/0, per process"):
            on = True
            continue
        if on and line.startswith("PID"):
            continue
        if on and (not line.strip() or line.startswith("(")):
            break
        if on:
            m = re.match(r"^(\d+)\s+(\S.*?)\s{2,}", line)
            check(m, "a per-process row that does not parse: %r" % line)
            rows.append((int(m.group(1)), m.group(2)))
    return rows


def thread_tracks(t):
    return {(e["pid"], e.get("tid")) for e in t.select("M", "thread_name")}


@case
def wrappers_shim_chain_folded(c):
    N, SIZE = 7, 71001
    shim = wrapper_shim(c)
    r = c.run(["sh", "-c", 'exec env FOO=1 sh -c \'exec "$0" "$@"\' "$@"', "sh", shim,
               c.prog("basic"), N, SIZE, "exit:0"])
    eq(r.rc, 0, "exit status: %r" % r)
    pid = pid_of(r)
    t, _ = c.outputs(wait=10)
    t.wellformed()
    # the capture has every process: the launchers' and their helpers'
    raw = read_capture(c.path("libprof.prof"))
    raw_pids = {e["pid"] for e in raw}
    check(len(raw_pids) >= 4, "the capture's processes: %r (the shim's helpers missing)"
          % sorted(raw_pids))
    launcher_events = sum(1 for e in raw if e["pid"] != pid)
    # the summary line: the one program, the launchers' processes counted apart
    m = re.search(r"from (\d+) process(?:es)?, (\d+) launcher process(?:es)? folded -> ", r.err)
    check(m and (int(m.group(1)), int(m.group(2))) == (1, len(raw_pids) - 1),
          "summary line: %r (want 1 process, %d folded)" % (r.err, len(raw_pids) - 1))
    # the trace: one process track, the program's, with its own marked mallocs only
    eq(sorted(t.process_names()), [pid], "process tracks")
    eq({p for p, _ in thread_tracks(t)}, {pid}, "thread tracks' pids")
    eq(t.count("malloc", SIZE, pid), N, "the program's marked mallocs")
    eq(t.pids(), {pid}, "pids with events in the trace")
    eq(t.other.get("processes"), len(raw_pids), "otherData processes (the capture's)")
    eq(t.other.get("processes_shown"), 1, "otherData processes_shown")
    check(t.other.get("folded_images", 0) >= 4,
          "folded exec'd images (sh, env, sh, shim sh, env, bash): %r" % t.other)
    check(t.other.get("folded_helper_processes", 0) >= 3,
          "folded helpers (dirname, basename, readlink): %r" % t.other)
    # the tables: the header counts one process and says what was folded; one memory row
    text = c.text()
    check(re.search(r"\(.*, 1 process, duration", text.splitlines()[0]),
          "header: %r" % text.splitlines()[0])
    # ... and names the program, not the shim that started it
    check("basic %d %d" % (N, SIZE) in text.splitlines()[0] and
          "shim" not in text.splitlines()[0], "header: %r" % text.splitlines()[0])
    m = re.search(r"^Folded: (\d+) exec'd images? and (\d+) helper process(?:es)? of the "
                  r"launch, into the image they became \(([\d,]+) events not shown\); "
                  r"--all-processes shows them$", text, re.M)
    check(m, "no Folded line in the tables:\n%s" % text[:600])
    eq((int(m.group(1)), int(m.group(2))),
       (t.other["folded_images"], t.other["folded_helper_processes"]), "Folded line's counts")
    rows = per_process_rows(text)
    eq([p for p, _ in rows], [pid], "per-process memory rows")
    check(rows[0][1].startswith("basic %d %d" % (N, SIZE)), "the row's command: %r" % rows)
    rep = c.report_json(c.path("libprof.prof"))
    eq([p["pid"] for p in rep["processes"]], [pid], "report JSON processes")
    eq(rep["folded"]["events"], int(m.group(3).replace(",", "")), "folded events")
    # --all-processes: every process and image as before, in the tables and the trace
    r2 = c.prof("report", c.path("libprof.prof"), "--all-processes")
    eq(r2.rc, 0, "prof report --all-processes: %r" % r2)
    check("Folded:" not in r2.out, "a Folded line with --all-processes")
    all_rows = per_process_rows(r2.out)
    eq({p for p, _ in all_rows}, raw_pids, "per-process rows' pids with --all-processes")
    cmds = " | ".join(cmd for _, cmd in all_rows)
    for word in ("sh -c", "env FOO=1", "bash -c", "readlink", "dirname", "basename"):
        check(word in cmds, "no %r row with --all-processes: %s" % (word, cmds))
    mallocs = lambda out: text_rows(out).get(("memory", "malloc"), 0)
    check(mallocs(r2.out) > mallocs(text), "malloc count with the launchers (%d) not above "
          "without (%d)" % (mallocs(r2.out), mallocs(text)))
    rep_all = c.report_json(c.path("libprof.prof"), "--all-processes")
    eq(rep_all["folded"], {"images": 0, "helper_processes": 0, "events": 0}, "folded, all")
    r3 = c.prof("export", c.path("libprof.prof"), "-o", c.path("all.json"), "--all-processes")
    eq(r3.rc, 0, "prof export --all-processes: %r" % r3)
    ta = Trace(load_json(c.path("all.json")))
    eq(set(ta.process_names()), raw_pids, "process tracks with --all-processes")
    eq(ta.other.get("folded_events"), 0, "folded events with --all-processes")
    # prof export without it folds as the collector did
    r4 = c.prof("export", c.path("libprof.prof"), "-o", c.path("again.json"))
    eq(r4.rc, 0, "prof export: %r" % r4)
    tb = Trace(load_json(c.path("again.json")))
    eq(sorted(tb.process_names()), [pid], "process tracks from prof export")
    eq(tb.other.get("folded_events"), t.other.get("folded_events"), "folded events, again")
    check(t.other["folded_events"] > launcher_events, "folded events %d: not above the "
          "helpers' %d (the launchers' images of the program's pid)"
          % (t.other["folded_events"], launcher_events))


@case
def wrappers_program_children_not_folded(c):
    # a DataLoader-like program behind the launchers: its forked workers did work and are
    # the program's (forked by the image the launchers became): never folded
    W, N, PRE, TH, POST = 3, 50, 7, 200, 9
    shim = wrapper_shim(c)
    r = c.run(["sh", "-c", 'exec env sh -c \'exec "$0" "$@"\' "$@"', "sh", shim,
               c.prog("fork_workers"), W, N, PRE, TH, POST])
    eq(r.rc, 0, "exit status: %r" % r)
    t, _ = c.outputs(wait=10)
    t.wellformed()
    parent = pid_of(r, "parent")
    workers = [int(x) for x in r.kv("worker")]
    eq(len(workers), W, "workers printed")
    eq(sorted(t.process_names()), sorted(workers + [parent]), "process tracks")
    for w in workers:
        eq(t.count("malloc", 31003, w), N, "worker %d's mallocs" % w)
    eq(t.count("malloc", 31004, parent), POST, "parent's mallocs after the workers")
    rows = per_process_rows(c.text())
    eq(sorted(p for p, _ in rows), sorted(workers + [parent]), "per-process memory rows")
    eq(t.other.get("processes_shown"), W + 1, "processes shown")


@case
def wrappers_background_child_kept(c):
    # a launch script that starts a background job and execs the program: the job outlives
    # the exec (its work comes after), so it is no helper the launcher waited for
    shim = wrapper_shim(c)
    r = c.run(["sh", "-c", '(sleep 1; exec "$0" 5 72001 exit:0) & exec "$1" "$0" 6 72002 '
               'exit:0', c.prog("basic"), shim])
    eq(r.rc, 0, "exit status: %r" % r)
    t, _ = c.outputs(wait=20)
    t.wellformed()
    bg = {e["pid"] for e in t.allocs("malloc", 72001)}
    fg = {e["pid"] for e in t.allocs("malloc", 72002)}
    eq(len(bg), 1, "the background job's pid in the trace (its marked mallocs): %r" % bg)
    eq(len(fg), 1, "the program's pid in the trace: %r" % fg)
    eq(t.count("malloc", 72001), 5, "the background job's marked mallocs")
    eq(t.count("malloc", 72002), 6, "the program's marked mallocs")
    eq(set(t.process_names()), bg | fg, "process tracks: the program and the job")


@case
def wrappers_work_before_exec_shown(c):
    # a program that works (4 threads, a forked child) and then execs itself: every
    # allocation is in the default tables and trace (the fold once showed only the
    # exec'd image's 777: 1% of the run); through env and sh -c 'exec ...' it is the
    # same, and those launchers still fold
    for how, pre in (("direct", []), ("env", ["env", "FOO=1"]),
                     ("sh exec", ["sh", "-c", 'exec "$0" "$@"'])):
        r = c.run(pre + [c.prog("work_then_exec")])
        eq(r.rc, 0, "%s: exit status: %r" % (how, r))
        t, _ = c.outputs(wait=10)
        eq((t.count("malloc", 61001), t.count("malloc", 61002), t.count("malloc", 61003)),
           (80000, 10000, 777), "%s: marked mallocs in the trace (threads, child, exec'd)"
           % how)
        text = c.text()
        m = re.search(r"^Folded: (\d+) exec'd images?", text, re.M)
        folded = int(m.group(1)) if m else 0
        eq(folded, 0 if how == "direct" else 1, "%s: exec'd images folded (the "
           "launcher's only): %s" % (how, m.group(0) if m else "no Folded line"))
        rep = c.report_json(c.path("libprof.prof"))
        eq(report_row(rep, "memory", "malloc")["count"] >= 90777, True,
           "%s: mallocs in the report: %r" % (how, report_row(rep, "memory", "malloc")))
        for name in ("libprof.json", "libprof.txt", "libprof.prof"):
            os.unlink(c.path(name))


@case
def wrappers_framework_setting_one_session(c):
    # a setting libprof applies for a framework (PROFILER_MXNET_BULK=0 sets MXNet's
    # variables at load) through a shim that execs bash: bash's own setenv and getenv
    # once hid PROFILER_SESSION from libprof in the exec'd bash, which started sessions
    # of its own (pyenv: 12-17 summary lines, up to 51 files). One run, one session.
    shim = wrapper_shim(c)
    for how, argv in (("C program", [c.prog("basic"), 5, 71101, "exit:0"]),
                      ("python", ["/usr/bin/python3", "-c", "import sys; print('pid=%d' % __import__('os').getpid())"])):
        for name in os.listdir(c.path()):
            if name.startswith("libprof"):
                os.unlink(c.path(name))
        r = c.run(["sh", shim] + argv, env={"PROFILER_MXNET_BULK": "0"})
        eq(r.rc, 0, "%s: exit status: %r" % (how, r))
        lines = [l for l in r.err.splitlines() if SUMMARY_RE.match(l)]
        eq(len(lines), 1, "%s: summary lines: %r" % (how, r.err))
        eq(sorted(n for n in os.listdir(c.path()) if n.startswith("libprof")),
           ["libprof.json", "libprof.prof", "libprof.txt"], "%s: output files" % how)
        t, _ = c.outputs(wait=10)
        eq(t.pids(), {pid_of(r)}, "%s: the program's pid in the trace" % how)
