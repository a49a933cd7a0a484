# harm: program shapes real code has, under which libprof must leave the program as it
# runs natively (issue 31): address-space limits, signal handlers making traced calls,
# dlsym of data symbols under tracing, small thread stacks, clearenv.
# Run by test/e2e/run.py in the harness's namespace (see README.md).

# a batch system's address-space limit (ulimit -v takes KiB): 1 GB
AS_LIMIT_KIB = 1000000


def under_limit(c, command, env):
    """Runs command under `sh -c` with the limit set first, as a batch system sets it:
    the profiled processes and the collector (started by the first) all inherit it."""
    e = dict(env, LIBPROF_INNER_PRELOAD=Setup.preload_value(), PROFILER_AUTOSTART="1")
    return c.run(["sh", "-c", "ulimit -v %d && LD_PRELOAD=$LIBPROF_INNER_PRELOAD exec %s"
                  % (AS_LIMIT_KIB, command)], env=e, preload=False, autostart=False,
                 timeout=60)


def sanitized_skip(c):
    """ASan reserves terabytes of shadow address space: no process of it (the program
    here, or prof's collector) runs under an address-space limit, with libprof or
    without."""
    if Setup.mode != "plain" or "ASan" in sanitizers(Setup.prof):
        c.note("skipped: an ASan-built process (mode %s) cannot run under ulimit -v"
               % Setup.mode)
        return True
    return False


@case
def address_space_limit_exec(c):
    # an exec under ulimit -v: the collector inherits the limit and could not map the new
    # image's segment beside its parent's (256 rings of 4 MiB: 1 GB each); it retried for
    # good and the program waited at its exit for good. Now the segments are sized to a
    # part of the limit and the old image is unmapped before the new one is mapped.
    if sanitized_skip(c):
        return
    r = under_limit(c, "env /bin/echo hi", {"PROFILER_OUTPUT": "exec"})
    eq((r.rc, r.out), (0, "hi\n"), "the program under ulimit -v (%r)" % r)
    check(r.elapsed < 20, "took %.1f s" % r.elapsed)
    check("not profiled" not in r.err and "not profiling" not in r.err,
          "a process was not profiled: %r" % r.err)
    rep = c.report_json(c.path("exec.prof"))
    cmds = [p["command"] for p in rep["processes"]]
    check(any(x.startswith("/bin/echo hi") for x in cmds), "no echo in %r" % cmds)


@case
def address_space_limit_refused_said(c):
    # four children beside their parent under ulimit -v, with 32 MiB rings: the collector
    # cannot map all their segments at once. Each image it cannot map is named, once, as
    # not profiled; the program is not held for it and runs as natively.
    if sanitized_skip(c):
        return
    r = under_limit(c, "sh -c '/bin/sleep 1.5 & /bin/sleep 1.5 & /bin/sleep 1.5 & "
                    "/bin/sleep 1.5; wait; echo done'",
                    {"PROFILER_OUTPUT": "refused", "PROFILER_RING_SIZE": "32M"})
    eq((r.rc, r.out), (0, "done\n"), "the program under ulimit -v (%r)" % r)
    check(r.elapsed < 12, "took %.1f s" % r.elapsed)
    said = re.findall(r"^libprof: process (\d+) \(([^)]*)\) is not profiled: the collector "
                      r"cannot map its \d+ MiB of shared memory \(Cannot allocate memory; "
                      r"the address-space limit \(ulimit -v\) is 976 MiB\)$", r.err, re.M)
    check(said and len(said) == len(set(said)), "no line naming an image not profiled (or "
          "one twice): %r" % r.err)
    check(parse_summary(r.err), "no summary: %r" % r.err)
    rep = c.report_json(c.path("refused.prof"))
    kept = {(str(p["pid"]), p["command"]) for p in rep["processes"]}
    check(not kept & set(said), "an image said not profiled is in the capture: %r"
          % (kept & set(said)))
    c.note("not profiled: %d images (of 9)" % len(said))


@case
def signal_handlers_traced_calls(c):
    # a signal handler making a traced call while the thread it interrupts makes traced
    # calls: on the thread's stack, on an alternate stack, nested in another handler,
    # and left by siglongjmp. A handler that landed while prof_trace_enter filled the
    # shadow stack's next entry took that entry, and the interrupted call's return then
    # aborted the program ("unknown to the shadow stack"). Same output and status as
    # natively; the main loop's calls recorded (a handler's call inside libprof's edit
    # of the shadow stack goes untraced: those alone may be missing).
    n = 100000
    for mode in ("plain", "altstack", "nested", "jump"):
        r, t = trace40_same_as_native(c, [c.prog("signal_traced"), n, mode], mode,
                                      pattern="getpid,getppid")
        eq(r.out, "calls=%d handled=1 jumps=1\n" % n, "%s: the program's output" % mode)
        got = trace40_count(t, "getpid")
        # a siglongjmp leaves the getpid it interrupted: that call is not completed
        check(n <= got <= n + 10000, "%s: %d getpid calls recorded of %d" % (mode, got, n))
        handlers = trace40_count(t, "getppid")
        check(handlers > 0, "%s: no getppid of the handlers recorded" % mode)
        c.note("%s: %d handler calls recorded" % (mode, handlers))


@case
def dlsym_data_symbols_traced_all(c):
    # under PROFILER_TRACE='*' dlsym handed back a code stub for data symbols too:
    # fprintf on dlsym("stdout") crashed, and ctypes' in_dll read the stub's bytes (a
    # Py_OptimizeFlag of 108378945). Data comes back as it is; functions are still traced.
    r, t = trace40_same_as_native(c, [c.prog("dlsym_data")], "c")
    eq(r.out, "stdout=1 stdin=1 errno=1\n", "what the program read")
    check(trace40_count(t, "__errno_location") >= 1,
          "__errno_location, looked up by dlsym, not traced")
    script = ("import ctypes\n"
              "print(ctypes.c_int.in_dll(ctypes.pythonapi, 'Py_OptimizeFlag').value)\n"
              "print(ctypes.pythonapi.Py_IsInitialized())\n")
    r, t = trace40_same_as_native(c, ["/usr/bin/python3", "-O", "-c", script], "py")
    eq(r.out, "1\n1\n", "Py_OptimizeFlag under python3 -O, and a call through ctypes")
    check(trace40_count(t, "Py_IsInitialized") >= 1, "Py_IsInitialized, called through "
          "ctypes, not traced")


@case
def other_users_files_kept(c):
    # names under this session's prefix in /dev/shm that another user made: the
    # collector (run by root) removed them all as its own at the end. Only files this
    # user owns (checked on the open file) are removed.
    if os.geteuid() != 0:
        c.note("skipped: making another user's file needs root")
        return
    p, out, err, t0, sid, coll = x10_start(c, [c.prog("block_writer"), "0.2"], {})
    uid = os.getuid()
    planted = ["/dev/shm/libprof-%d-%s-%d-%x" % (uid, sid, 4000000 + i, i) for i in range(20)]
    try:
        for path in planted:
            with open(path, "w") as f:
                f.write("not libprof's")
            os.chown(path, 65534, 65534)
        open(c.path("go"), "w").close()
        r = c.finish(["block_writer"], p, out, err, t0, 60)
        eq(r.rc, 0, "the program (%r)" % r)
        c.outputs(wait=10)
        kept = [x for x in planted if os.path.exists(x)]
        eq(len(kept), len(planted), "another user's files under the session's prefix kept")
        # prof clean of that session neither
        r = c.prof("clean", "--min-age", "0", sid)
        eq(r.rc, 0, "prof clean (%r)" % r)
        eq(sum(os.path.exists(x) for x in planted), len(planted), "kept by prof clean")
    finally:
        for path in planted:
            try:
                os.unlink(path)
            except OSError:
                pass


@case
def small_thread_stacks(c):
    # threads with 16 and 64 KiB stacks: glibc takes every module's static TLS from each
    # thread's stack, and libprof's (66 KiB, then 47) made pthread_create fail (EINVAL)
    # where it works natively. libprof's per-thread state is mapped as a thread needs it.
    if Setup.mode != "plain":
        c.note("skipped in mode %s: the sanitizers' runtimes have static TLS of their own"
               % Setup.mode)
        return
    r, t = trace40_same_as_native(c, [c.prog("small_stacks")], "small", pattern="getppid")
    eq(r.out, "stack=16384 create=ok work=1\nstack=65536 create=ok work=1\n",
       "both threads created and ran")
    eq(len(t.select("X", "small stack", "user")), 2, "the threads' ranges")
    eq(trace40_count(t, "getppid"), 200, "the threads' traced calls")
    size = static_tls_size(Setup.lib)
    check(size is not None and size <= 1024, "libprof.so's static TLS: %r bytes" % size)
    c.note("static TLS of libprof.so: %d bytes" % size)


def static_tls_size(lib):
    """The memory size of lib's PT_TLS segment (readelf), or None."""
    p = subprocess.run(["readelf", "-lW", lib], capture_output=True, text=True)
    for line in p.stdout.splitlines():
        f = line.split()
        if f and f[0] == "TLS":
            return int(f[5], 16)
    return None


@case
def clearenv_exec_followed(c):
    # clearenv(), then fork and execl/execlp/execle: glibc's execl family calls execve
    # inside libc, past libprof's execve, so the new image lost LD_PRELOAD and the
    # session and was not profiled, without a word; fexecve and execveat make the system
    # call themselves. All are followed now.
    for how in ("execl", "execlp", "execle", "fexecve", "execveat"):
        r = c.run([c.prog("clearenv_exec"), how], env={"PROFILER_OUTPUT": how})
        eq(r.rc, 0, "%s: the program (%r)" % (how, r))
        child = r.kv("pid")
        check(child and "status=0" in r.out, "%s: the child did not run: %r" % (how, r))
        t, _ = c.outputs(how, wait=10)
        eq(t.count("malloc", 61001, int(child[0])), 10, "%s: the exec'd child's allocations"
           % how)


@case(serial=True)
def cpython_tests_same_as_native(c):
    # CPython's own regression tests as an oracle (issue 31): a short set (signals,
    # threads, subprocesses, ctypes, os, mmap, faulthandler) natively, under the bare
    # command and under PROFILER_TRACE='*': every module's result the same.
    # scripts/peer-test runs it (make peer-test: the longer set, docs/RELIABILITY.md).
    if Setup.mode != "plain":
        c.note("skipped in mode %s: the sanitizers' runtimes change what CPython's tests "
               "see (memory limits, signal handlers)" % Setup.mode)
        return
    py = "/usr/bin/python3"
    p = subprocess.run([py, "-c", "import test.test_signal"], capture_output=True, text=True)
    check(p.returncode == 0, "CPython's test suite is not installed for %s (Debian's "
          "libpython3.11-testsuite; scripts/install-deps.sh installs it): %s"
          % (py, p.stderr.strip().splitlines()[-1:]))
    doc_path = c.path("peer.json")
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    r = subprocess.run([sys.executable, os.path.join(SCRIPTS, "peer-test"), "--lib",
                        Setup.lib, "--out", c.path("peer"), "--json", doc_path],
                       capture_output=True, text=True, timeout=1500, env=env)
    check(os.path.exists(doc_path), "peer-test gave nothing: %s %s" % (r.stdout, r.stderr))
    with open(doc_path) as f:
        doc = json.load(f)
    native = doc["runs"]["native"]["results"]
    eq(len(native), len(doc["modules"]), "modules with a native result (%r)" % native)
    eq(doc["differ"], [], "modules whose result under libprof differs from native:\n%s"
       % r.stdout)
    eq(r.returncode, 0, "peer-test's status (%s)" % r.stderr[-1500:])
    c.note("; ".join("%s %.0f s" % (n, doc["runs"][n]["seconds"])
                     for n in ("native", "bare", "traced")) +
           ": %d of %d modules pass natively, the same under libprof"
           % (sum(v == "passed" for v in native.values()), len(native)))


def proc_state_layout(c):
    """(offsetof(struct prof_proc_shm, state), PROC_EXITED) from shm_layout.h itself."""
    src = c.write("state_off.c", '#include <stddef.h>\n#include <stdio.h>\n'
                  '#include "preload/common/shm_layout.h"\n'
                  'int main(void) { printf("%zu %d\\n", offsetof(struct prof_proc_shm, state), '
                  '(int)PROC_EXITED); return 0; }\n')
    exe = c.cc("state_off", [src], ["-I", ROOT, "-I", os.path.join(ROOT, "include")])
    off, exited = subprocess.run([exe], capture_output=True, text=True).stdout.split()
    return int(off), int(exited)


@case
def exited_mark_overwritten_kept(c):
    # a child whose segment says EXITED while it goes on working (its state word
    # overwritten): the mark alone ended its draining and 69% of what followed was lost
    # without a word. A process other than the root is drained on until it is gone.
    off, exited = proc_state_layout(c)
    r = c.run([c.prog("exited_mark"), off, exited], env={"PROFILER_OUTPUT": "mark"})
    eq(r.rc, 0, "the program (%r)" % r)
    child = r.kv("pid")
    check(child and "status=0" in r.out, "the child did not work: %r" % r)
    t, _ = c.outputs("mark", wait=10)
    eq(t.count("malloc", 61002, int(child[0])), 5000, "the child's allocations after the mark")
    eq(parse_summary(r.err)[1], 0, "events lost")


@case
def exited_mark_overwritten_root_kept(c):
    # the session's root overwrites its own state word with EXITED and works on: the
    # root waits at its exit for the outputs, so the collector believed the mark at once
    # (the outputs were written while it ran) and what followed was lost unsaid. A root's
    # mark is believed once its end has written its CPU time; before that it is said and
    # the root drained on.
    off, exited = proc_state_layout(c)
    r = c.run([c.prog("exited_mark"), off, exited, "root"], env={"PROFILER_OUTPUT": "root"})
    eq(r.rc, 0, "the program (%r)" % r)
    pid = r.kv("pid")
    check(pid and "status=0" in r.out, "the program did not work: %r" % r)
    check("says it has ended while it runs on" in r.err, "not said: %r" % r.err)
    t, _ = c.outputs("root", wait=10)
    eq(t.count("malloc", 61002, int(pid[0])), 5000, "the root's allocations after the mark")
    eq(parse_summary(r.err)[1], 0, "events lost")


@case(serial=True)
def block_collector_killed_mid_run(c):
    # PROFILER_BLOCK=1 and the collector SIGKILLed a second into the writing: the events
    # it had drained went into a capture it never finished, and were counted nowhere
    # (4.5 M of 20 M). The program's line at exit now counts them too: dropped + never
    # drained + drained = what its rings took.
    secs = 2
    p, out, err, t0, sid, coll = x10_start(c, [c.prog("block_writer"), secs],
                                           {"PROFILER_BLOCK": "1"})
    try:
        with open(c.path("go"), "w"):
            pass
        time.sleep(1)
        os.kill(coll, signal.SIGKILL)  # the collector this case started
        r = c.finish([c.prog("block_writer")], p, out, err, t0, timeout=120)
    finally:
        x10_remove_session(sid)
    eq(r.rc, 0, "exit status: %r" % r)
    pairs = int(r.kv("pairs")[0])
    m = re.search(r"dropped (\d+) events and wrote (\d+) that were never drained; they are "
                  r"in no output\. It had drained (\d+) \(its threads' live rings\) into "
                  r"(\S+)\.prof, which it never finished", r.err)
    check(m, "no line counting what the collector drained: %r" % r.err)
    dropped, undrained, drained = (int(m.group(i)) for i in (1, 2, 3))
    total = dropped + undrained + drained
    # the writer's pairs, and the few events of its start (the ready line's write...)
    check(drained > 0 and 2 * pairs <= total <= 2 * pairs + 1000,
          "counted %d dropped + %d never drained + %d drained = %d; the program wrote %d "
          "events" % (dropped, undrained, drained, total, 2 * pairs))
    c.note("%d pairs: %d dropped, %d never drained, %d drained" % (pairs, dropped,
                                                                   undrained, drained))


@case
def glibc_tunables_only_libprofs(c):
    # libprof's own processes run glibc's malloc on huge pages (GLIBC_TUNABLES, issue 32:
    # the page faults of their growing tables); the profiled command's GLIBC_TUNABLES
    # stays what it was given, set or not, under prof record (which runs itself again with
    # the tunable) and under the bare command
    show = 'echo "[${GLIBC_TUNABLES-unset}] [${PROF_GLIBC_TUNABLES_WAS-unset}]"'
    for given, want in ((None, "[unset] [unset]\n"),
                        ("glibc.malloc.arena_max=2", "[glibc.malloc.arena_max=2] [unset]\n")):
        r = c.prof("record", "-q", "-o", "rec", "--", "sh", "-c", show,
                   env={"GLIBC_TUNABLES": given})
        eq((r.rc, r.out), (0, want), "prof record's command, GLIBC_TUNABLES %r" % given)
    argv = ["sh", "-c", show + "; sleep 1"]
    p, out, err, t0 = c.start(argv, env={"GLIBC_TUNABLES": None})
    seen, deadline = None, time.monotonic() + 10
    while seen is None and time.monotonic() < deadline:
        for pid in c.leftover_processes():
            try:
                with open("/proc/%d/comm" % pid) as f:
                    if f.read().strip() != "prof":
                        continue
                with open("/proc/%d/environ" % pid, "rb") as f:
                    env = f.read().split(b"\0")
            except OSError:
                continue
            seen = [v.decode() for v in env if v.startswith(b"GLIBC_TUNABLES=")]
        time.sleep(0.02)
    r = c.finish(argv, p, out, err, t0, 60)
    eq((r.rc, r.out), (0, "[unset] [unset]\n"), "the bare command's program")
    eq(seen, ["GLIBC_TUNABLES=glibc.malloc.hugetlb=1"], "the collector's GLIBC_TUNABLES")
