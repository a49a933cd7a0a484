# Issue 12: the capture readers (formats/) never crash on a damaged capture. Captures
# damaged in representative ways are written with the real writer by a helper built
# here (test/e2e/cases/capture/damaged_capture.c, linked with libprofcore.a) and given
# to prof report and prof export: exit 0 or 1 with at most a one-line warning, or 2 with
# one line, never a signal, and the sound part (pid 100: three "good_range" ranges and a
# malloc) still reported. test/fuzz/fuzz_capture.c drives the same readers with
# libFuzzer.

CAP_SRC = os.path.join(HERE, "cases", "capture", "damaged_capture.c")
CAP_KINDS = ["undefined_ids", "unknown_pid", "end_before_start", "huge_values",
             "dangling_stacks"]


@one_at_a_time
def core_tool(src):
    """Builds a helper program linked with libprofcore.a (the real capture writer) into
    $BUILD/e2e/NAME when missing or older than its source or libprofcore.a. Returns its
    path."""
    core = os.path.join(BUILD, "libprofcore.a")
    out = os.path.join(BIN, os.path.basename(src)[:-2])
    check(os.path.exists(core), "%s is missing (make all builds it)" % core)
    newest = max(os.path.getmtime(src), os.path.getmtime(core))
    if not os.path.exists(out) or os.path.getmtime(out) < newest:
        san = ["-fsanitize=address,undefined"] if sanitizers(PROF) else []
        cmd = ([os.environ.get("CC", "cc"), "-O1", "-g", "-std=gnu11", "-pthread",
                "-I", os.path.join(ROOT, "include"), "-I", ROOT]
               + san + ["-o", out + ".tmp", src, core, "-lzstd", "-lm", "-lpthread",
                        "-lstdc++"])
        r = subprocess.run(cmd, capture_output=True, text=True)
        check(r.returncode == 0, "cannot build %s: %s" % (out, r.stderr[-2000:]))
        os.replace(out + ".tmp", out)
    return out


def damaged_capture_tool():
    return core_tool(CAP_SRC)


def damaged(c, kind):
    path = c.path(kind + ".prof")
    r = c.run([damaged_capture_tool(), path, kind], preload=False, autostart=False)
    check(r.rc == 0, "damaged_capture %s failed: %r" % (kind, r))
    return path


def reader_ok(r, what):
    """No signal; 0 or 1 with at most one line on stderr, or 2 with exactly one."""
    check(r.rc >= 0, "%s was killed by signal %d: %r" % (what, -r.rc, r))
    check(r.rc in (0, 1, 2), "%s exit status %d: %r" % (what, r.rc, r))
    lines = [l for l in r.err.splitlines() if l.strip()]
    if r.rc == 2:
        check(len(lines) == 1, "%s exit 2 without exactly one line: %r" % (what, r))
    else:
        check(len(lines) <= 1, "%s says more than one line: %r" % (what, r))


def strict_json(path):
    def refuse(name):
        raise Fail("%s holds %s, which is not JSON" % (path, name))
    with open(path) as f:
        return json.load(f, parse_constant=refuse)


@case
def capture_damaged_values_readers(c):
    # Dangling name, category and stack ids, a thread and events of an unknown pid, a
    # process ended before it started, an event ending before it began, counts, sizes
    # and times at UINT64_MAX, a NaN counter: every reader keeps going and the sound
    # part is reported as it was.
    for kind in CAP_KINDS + ["none"]:
        cap = damaged(c, kind)
        r = c.prof("report", cap)
        reader_ok(r, "prof report (%s)" % kind)
        check(r.rc != 2, "prof report (%s) refused the capture: %r" % (kind, r))
        rows = [l.split() for l in r.out.splitlines()]
        good = [row for row in rows if row and row[0] == "good_range"]
        check(good and int(good[0][1].replace(",", "")) >= 3,
              "prof report (%s) lost the sound ranges: %r" % (kind, r))
        check(any(row and row[0] == "malloc" for row in rows),
              "prof report (%s) lost the sound malloc: %r" % (kind, r))
        for fmt in ("json", "csv"):
            out = c.path("%s.%s" % (kind, fmt))
            r = c.prof("report", cap, "--format", fmt, "-o", out)
            reader_ok(r, "prof report --format %s (%s)" % (fmt, kind))
            if fmt == "json" and r.rc != 2:
                strict_json(out)
        if kind == "huge_values":
            # an allocation of 2^64 - 1 bytes must not wrap the process's sum below the
            # sound malloc's 64 bytes
            rep = c.report_json(cap)
            procs = [p for p in rep["processes"] if p["pid"] == 100]
            check(procs and procs[0]["bytes_allocated"] >= 64,
                  "bytes allocated wrapped: %r" % procs)
        r = c.prof("report", cap, "--group-by", "stack")
        reader_ok(r, "prof report --group-by stack (%s)" % kind)
        out = c.path(kind + ".trace.json")
        r = c.prof("export", cap, "-o", out)
        reader_ok(r, "prof export (%s)" % kind)
        check(r.rc != 2, "prof export (%s) refused the capture: %r" % (kind, r))
        trace = Trace(strict_json(out), out)
        got = [e for e in trace.select("X", name="good_range", pid=100)]
        check(len(got) >= 3, "prof export (%s) lost the sound ranges: %d" % (kind, len(got)))
        r = c.prof("summary", cap, "-o", c.path(kind + ".summary.json"))
        reader_ok(r, "prof summary (%s)" % kind)


@case
def capture_truncated_readers(c):
    # The same sound capture cut inside its frame and followed by garbage: exit 1 with
    # the damage line, or 2 when nothing complete is left; never a signal.
    cap = damaged(c, "dangling_stacks")
    with open(cap, "rb") as f:
        data = f.read()
    for i, cut in enumerate((len(data) - 5, 20, len(data) // 2)):
        bad = c.path("cut%d.prof" % i)
        with open(bad, "wb") as f:
            f.write(data[:cut] + b"\xff" * 7)
        for args in (["report", bad], ["export", bad, "-o", c.path("cut%d.json" % i)]):
            r = c.prof(*args)
            reader_ok(r, "prof %s (cut at %d)" % (args[0], cut))
            check(r.rc in (1, 2), "prof %s of a cut capture exit %d: %r" % (args[0], r.rc, r))


@case(serial=True)
def capture_many_images_memory(c):
    # 40,000 CAP_PROCESS records (32 bytes each, 50 KB compressed) and nothing else; and
    # 100,000 events naming as many threads (400 KB): the readers' memory must stay
    # proportional to what the processes and threads hold, not 20 KiB of device memory
    # tables a process and 6 KiB of depth arrays a thread (prof export took 1.8 GB and
    # 1.2 GB before).
    runs = []
    for kind in ("many_images", "many_tids"):
        cap = damaged(c, kind)
        runs += [["report", cap], ["export", cap, "-o", c.path(kind + ".json")]]
    for args in runs:
        argv = [Setup.prof] + args
        e = dict(c.env)
        e.update(Setup.prof_env())
        # A process's ru_maxrss keeps what it had before exec: a child of this (large)
        # test runner would start from the runner's size. A small fresh interpreter forks
        # prof and reports prof's own peak.
        helper = ("import os, sys\n"
                  "pid = os.fork()\n"
                  "if pid == 0:\n"
                  "    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)\n"
                  "    os.execv(sys.argv[1], sys.argv[1:])\n"
                  "_, st, ru = os.wait4(pid, 0)\n"
                  "sys.stdout.write('%d' % ru.ru_maxrss)\n"
                  "sys.exit(os.waitstatus_to_exitcode(st))\n")
        with open(c.path("many.err"), "w+") as err:
            p = subprocess.run([sys.executable, "-c", helper] + argv, cwd=c.dir, env=e,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                               text=True, timeout=300)
            err.seek(0)
            text = err.read()
        check(p.returncode == 0, "prof %s: exit %d: %s" % (args[0], p.returncode, text))
        peak_mb = int(p.stdout) / 1024
        # ASan's shadow and quarantine roughly double a sanitized prof's footprint
        limit = 600 if sanitizers(Setup.prof) else 300
        what = "prof %s %s" % (args[0], os.path.basename(args[1]))
        check(peak_mb < limit, "%s peaked at %.0f MB (limit %d)" % (what, peak_mb, limit))
        c.note("%s: peak RSS %.0f MB" % (what, peak_mb))


@case(serial=True)
def capture_many_modules_and_names_time(c):
    # 120,000 modules and a stack of 120,000 frames outside them, 20,000 processes and
    # 300,000 names of frames of an image never seen (660 KB): every reader looked at
    # every module per frame and at every image per name (over 60 s each before; under
    # a second now).
    cap = damaged(c, "many_modules")
    for args in (["report", cap], ["report", cap, "--group-by", "stack"],
                 ["export", cap, "--format", "folded", "-o", c.path("mm.folded")],
                 ["export", cap, "-o", c.path("mm.json")]):
        r = c.prof(*args, timeout=60)
        reader_ok(r, "prof " + " ".join(args[:1] + args[2:3]))
        check(r.rc == 0, "prof %s: %r" % (args[0], r))
        check(r.elapsed < 20, "prof %s took %.1fs" % (" ".join(args), r.elapsed))
        c.note("prof %s %.2fs" % (" ".join([args[0]] + args[2:3]), r.elapsed))
