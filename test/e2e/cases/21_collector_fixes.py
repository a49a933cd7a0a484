# Collector fixes from the review of issue 12 ("do no harm"): a truncated session segment,
# the capture used through its descriptor, liveness beyond the pid, errno on the allocator
# path, reclaim across pid namespaces, exec of a FIFO. Run by run.py in its namespace
# after the other case files (20_shm.py's helpers are in scope).


import errno


@case
def collfix_session_segment_truncated(c):
    # The session segment (/dev/shm/libprof-UID-SID) cut to nothing while the program
    # runs: the collector used to die of SIGBUS at its next read, losing every output. It
    # must write the outputs with what was drained and say why in one line.
    run, pid, child, d = start_victim(c, "run")
    try:
        _, sid = shm_segment_of(pid)
        os.truncate("/dev/shm/libprof-%d-%s" % (os.getuid(), sid), 0)
        t, _ = c.outputs(os.path.join("run", "profile"), wait=30)
    finally:
        go(d)
    r = c.finish(*run, timeout=120)
    eq(t.count("malloc", SHM_SIZE, pid), SHM_N, "the parent's mallocs before the cut")
    eq(t.count("malloc", SHM_SIZE + 1, child), SHM_N, "the child's mallocs before the cut")
    lines = [x for x in r.err.splitlines() if "was truncated" in x]
    eq(len(lines), 1, "one line naming the truncated session segment: %r" % r)
    check(sid in lines[0], "the line names the segment: %r" % lines[0])
    c.note("program exit status after the cut: %s" % r.rc)


@case
def collfix_exec_fifo(c):
    # execve of a FIFO (or of a script whose #! names one) fails at once with EACCES;
    # libprof's exec check opened it first and hung the program forever.
    r = c.run([c.prog("exec_fifo"), c.path("fifo")], timeout=30)
    eq(r.rc, 0, "exit status: %r" % r)
    eq(r.kv("errno"), [str(errno.EACCES)] * 2, "errno of both execve calls: %r" % r)


@case
def collfix_errno_kept_collector_dead(c):
    # malloc, realloc and free under PROFILER_BLOCK=1 with the collector SIGKILLed: the
    # blocked writer's look at /proc (open fails, kill() says ESRCH) used to leave errno
    # changed after a successful call.
    # This process is made the subreaper of the collector (double-forked by the program)
    # so that it can reap it: a dead collector then has no /proc entry, as under an init
    # that reaps (a zombie's /proc/PID/stat still reads, and errno stayed unchanged).
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_CHILD_SUBREAPER = 36
    check(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0, "cannot become a subreaper")
    env = {"PROFILER_RING_SIZE": "4K", "PROFILER_BLOCK": "1"}
    sid = None
    try:
        p, out, err, t0, sid, coll = x10_start(c, [c.prog("errno_keep"), 20000], env)
        os.kill(coll, signal.SIGKILL)  # the collector this case started
        try:
            os.waitpid(coll, 0)  # ours to reap (subreaper): its /proc entry goes
        except ChildProcessError:
            pass
        with open(c.path("go"), "w"):
            pass
        r = c.finish([c.prog("errno_keep")], p, out, err, t0, timeout=120)
    finally:
        libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
        x10_remove_session(sid)
    eq(r.rc, 0, "exit status: %r" % r)
    eq(r.kv("calls"), ["120000"], "calls made: %r" % r)
    eq(r.kv("changed"), ["0"], "calls that changed errno (first: errno=%s): %r"
       % (r.kv("errno"), r))
