"""Helpers shared by the cases of several areas: profile() and report lookups, finding
a case's collector, waiting for a program's lines."""
import json
import os
import re
import signal
import time

from .outputs import Fail, check, eq, parse_summary, ptr
from .paths import DEFAULT_PREFIX


def profile(c, argv, env=None, want_rc=0, **kw):
    """Runs argv with autostart and returns (result, trace)."""
    r = c.run(argv, env=env, **kw)
    check(r.rc == want_rc, "exit status %s, want %s: %r" % (r.rc, want_rc, r))
    # a taken name gets a new suffix: the trace read must be the one this run wrote
    named = re.findall(r"^libprof: .* -> (\S+?\.json)\b", r.err, re.M)
    if named and "PROFILER_OUTPUT" not in (env or {}):
        eq(named[0], c.path(DEFAULT_PREFIX + ".json"), "the trace the summary line names")
    trace, _ = c.outputs()
    s = parse_summary(r.err)
    if s and "PROFILER_QUIET" not in (env or {}):
        # the summary line, the trace's metadata and the raw capture tell the same story
        eq((s[0], s[1]), (trace.other.get("events"), trace.other.get("lost_events")),
           "summary (events, lost) vs otherData")
        eq(s[2], trace.other.get("processes_shown"), "summary processes vs otherData")
    return r, trace


def pid_of(r, key="pid"):
    v = r.kv(key)
    check(v, "the program did not print %s=: %r" % (key, r))
    return int(v[0])


def report_row(rep, category, name):
    rows = [x for x in rep["rows"] if x.get("category") == category and x.get("name") == name]
    check(len(rows) <= 1, "more than one %s/%s row" % (category, name))
    return rows[0] if rows else None


def report_process(rep, pid):
    ps = [p for p in rep.get("processes") or [] if p.get("pid") == pid]
    check(ps, "no process %d in the report's processes: %r" % (pid, rep.get("processes")))
    return ps


def matched_frees(trace, pid, marked):
    """Free events of blocks from marked allocations, matched per thread in time order
    (a block is counted from its allocation to its first free)."""
    by_tid = {}
    for e in trace.select("X", cat="cpu_memory", pid=pid):
        by_tid.setdefault(e["tid"], []).append(e)
    freed = 0
    for evs in by_tid.values():
        evs.sort(key=lambda e: (e["ts"], e["ts"] + e["dur"]))
        live = set()
        for e in evs:
            a = e.get("args") or {}
            if e["name"] == "free":
                p = ptr(a.get("ptr", 0))
                if p in live:
                    live.discard(p)
                    freed += 1
            else:
                if "old_ptr" in a:
                    live.discard(ptr(a["old_ptr"]))
                if e["name"] in marked and a.get("bytes") == marked[e["name"]]:
                    live.add(ptr(a["ptr"]))
    return freed


def collectors():
    """pids of running collectors (`prof collect --session ...`)."""
    out = []
    for d in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = f.read().split(b"\0")
        except (OSError, ValueError):
            continue
        if len(argv) > 2 and argv[1] == b"collect" and argv[2] == b"--session":
            out.append(int(d))
    return out


def descendants_of(pid):
    """pids below pid: its children, theirs, ..."""
    out, unseen = [], [pid]
    while unseen:
        kids = children_of(unseen.pop())
        out += kids
        unseen += kids
    return out


def children_of(pid):
    """pids whose parent is pid."""
    out = []
    for d in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % d) as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(d))
        except (OSError, ValueError, IndexError):
            continue
    return out


def start_ready(c, argv, env=None):
    """Starts argv (which prints "ready" once it has started), waits for that line and
    returns (popen, out, err, t0, the pid of the collector it started)."""
    before = set(collectors())
    p, out, err, t0 = c.start([str(x) for x in argv], env)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        out.seek(0)
        if "ready" in out.read():
            break
        time.sleep(0.02)
    # the case's own (its token in their environment): cases running beside it start
    # collectors too
    mine = set(c.leftover_processes())
    new = [x for x in collectors() if x not in before and x in mine]
    eq(len(new), 1, "one new collector")
    return p, out, err, t0, new[0]


def read_out_file(f):
    with open(f.name, errors="replace") as g:
        return g.read()


def task_state(pid, tid):
    """The state letter of /proc/pid/task/tid/stat, or None when it is gone."""
    try:
        with open("/proc/%d/task/%d/stat" % (pid, tid)) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def wait_line(p, out, key, timeout=60):
    """The value of the first 'key=value' line the program printed to out (its stdout
    file), waiting for it."""
    deadline = time.monotonic() + timeout
    while True:
        m = re.search(r"^%s=(\S+)$" % re.escape(key), read_out_file(out), re.M)
        if m:
            return m.group(1)
        check(p.poll() is None, "the program ended without printing %s=: %r"
              % (key, read_out_file(out)))
        check(time.monotonic() < deadline, "no %s= after %d s" % (key, timeout))
        time.sleep(0.002)


def collector_of(c, pid):
    """The pid of the collector a program of this case started (a process of the case
    running `prof collect`)."""
    deadline = time.monotonic() + 30
    while True:
        for q in c.leftover_processes():
            if q == pid:
                continue
            try:
                with open("/proc/%d/cmdline" % q, "rb") as f:
                    if b"collect" in f.read().split(b"\0"):
                        return q
            except OSError:
                pass
        check(time.monotonic() < deadline, "no collector found for pid %d" % pid)
        time.sleep(0.01)


def stop_process(pid):
    """SIGSTOP, and wait until it is stopped."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + 10
    while task_state(pid, pid) not in ("T", "t"):
        check(time.monotonic() < deadline, "process %d not stopped after 10 s" % pid)
        time.sleep(0.001)


def run_out(c, argv, prefix, env):
    """Runs argv with its outputs under prefix: (result, trace)."""
    e = dict(env)
    e["PROFILER_OUTPUT"] = prefix
    r = c.run(argv, env=e)
    check(r.rc == 0, "exit status %s: %r" % (r.rc, r))
    return r, c.outputs(prefix)[0]


def perf_diff(c, base, cur, *args):
    """prof diff --format json: (exit status, document)."""
    r = c.prof("diff", base, cur, "--format", "json", *args)
    check(r.rc in (0, 1), "prof diff failed: %r" % r)
    try:
        doc = json.loads(r.out)
    except ValueError as e:
        raise Fail("prof diff --format json: not JSON (%s): %r" % (e, r))
    eq(doc["regression"], r.rc == 1, "the verdict against the exit status")
    return r.rc, doc
