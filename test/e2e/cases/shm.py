# The collector treats shared memory as hostile; dead sessions leave nothing behind
# (issue 12, items 3 and 8). Run by run.py in its namespace (see cases/README.md).
#
# A running program's process segment is found by its pid in /dev/shm and a bad value
# written into it (header or slot); the collector must not crash, must name the problem
# in one line, finish that process and write the outputs with the other process's and the
# earlier events whole, and leave no segment of the session behind.

import mmap

SHM_N, SHM_SIZE = 200, 40001
# struct prof_proc_shm / prof_slot offsets (preload/common/shm_layout.h)
HDR = {"nslots": (20, 4), "ring_cap": (40, 8), "strings_off": (48, 8), "slots_off": (64, 8),
       "segment_size": (80, 8), "strings_used": (96, 8), "lost_no_slot": (104, 8),
       "stacks_off": (112, 8), "stacks_reserved": (128, 8), "strings_chunk_off": (136, 8),
       "stacks_chunk_off": (264, 8), "names_lost": (392, 8), "stacks_lost": (400, 8)}
SLOT_SIZE, SLOT_TID, SLOT_HEAD, SLOT_LOST_PENDING, SLOT_TAIL = 192, 4, 64, 72, 128



# the segments' layout version (preload/common/shm_layout.h), for segments planted by hand
with open(os.path.join(ROOT, "preload", "common", "shm_layout.h")) as _f:
    SHM_VERSION = int(re.search(r"#define PROF_SHM_VERSION (\d+)", _f.read()).group(1))

def shm_names(prefix):
    try:
        return sorted(n for n in os.listdir("/dev/shm") if n.startswith(prefix))
    except OSError:
        return []


def shm_segment_of(pid, timeout=10):
    """The /dev/shm name of pid's process segment: libprof-UID-SID-PID-NONCE."""
    pat = re.compile(r"^libprof-%d-([0-9a-f]{16})-%d-[0-9a-f]+$" % (os.getuid(), pid))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for n in shm_names("libprof-%d-" % os.getuid()):
            if pat.match(n):
                return n, pat.match(n).group(1)
        time.sleep(0.05)
    raise Fail("no segment of pid %d in /dev/shm" % pid)


class Segment:
    """A process segment mapped from /dev/shm, to read and write its words."""

    def __init__(self, name):
        fd = os.open("/dev/shm/" + name, os.O_RDWR)
        try:
            self.m = mmap.mmap(fd, 0)
        finally:
            os.close(fd)

    def get(self, off, size=8):
        return int.from_bytes(self.m[off:off + size], "little")

    def put(self, off, value, size=8):
        self.m[off:off + size] = (value % (1 << (8 * size))).to_bytes(size, "little")

    def slot_of(self, tid):
        base, n = self.get(64), self.get(20, 4)
        for i in range(n):
            if self.get(base + i * SLOT_SIZE + SLOT_TID, 4) == tid:
                return base + i * SLOT_SIZE
        raise Fail("no slot of thread %d" % tid)

    def close(self):
        self.m.close()


def start_victim(c, sub):
    """shm_victim in its own directory (its own output prefix), once it is ready: returns
    (popen bits, pid, child pid, directory)."""
    d = c.path(sub)
    os.makedirs(d, exist_ok=True)
    argv = [c.prog("shm_victim"), str(SHM_N), str(SHM_SIZE)]
    p, out, err, t0 = c.start(argv, {"PROFILER_OUTPUT": os.path.join(d, "profile")}, cwd=d)
    deadline = time.monotonic() + 30
    text = ""
    while time.monotonic() < deadline and "ready" not in text:
        out.seek(0)
        text = out.read()
        if p.poll() is not None:
            break
        time.sleep(0.02)
    m = re.search(r"pid=(\d+) child=(\d+) ready", text)
    if not m:
        p.kill()
        p.wait()
        raise Fail("shm_victim did not get ready: %r" % text)
    return (argv, p, out, err, t0), int(m.group(1)), int(m.group(2)), d


def go(d):
    with open(os.path.join(d, "go"), "w"):
        pass


def wait_gone(prefix, timeout=10):
    deadline = time.monotonic() + timeout
    while shm_names(prefix) and time.monotonic() < deadline:
        time.sleep(0.05)
    return shm_names(prefix)


# Damage to the very counters that would count what came after it: those events stay
# uncounted (the head moved over unwritten entries, a pending-loss count, a file cut).
UNCOUNTABLE = ("head_unwritten", "lost_pending", "file_cut")


def corrupt_case(c, how, want, at_once, counted=True):
    run, pid, child, d = start_victim(c, "run")
    try:
        corrupt_running(c, how, want, at_once, run, pid, child, d, counted)
    finally:
        go(d)  # the program ends whatever happened


def corrupt_running(c, how, want, at_once, run, pid, child, d, counted=True):
    name, sid = shm_segment_of(pid)
    seg = Segment(name)
    try:
        how(seg, seg.slot_of(pid))
    finally:
        seg.close()
    if how is cut_stack_area:
        # the program's file cut below what the collector mapped: its stack area, which
        # the collector is then told to read (the program itself does not touch it)
        os.truncate("/dev/shm/" + name, CUT_AT[0])
    if at_once:
        # seen by the collector's next pass, before the program writes again (its next
        # event would put back a head, for one)
        err = run[3]
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            err.seek(0)
            if "segment is corrupt" in err.read():
                break
            time.sleep(0.02)
    go(d)
    r = c.finish(*run, timeout=120)
    eq(r.rc, 0, "exit status")
    lines = [l for l in r.err.splitlines() if "segment is corrupt" in l]
    check(len(lines) == 1 and lines[0].startswith("libprof: process %d's segment is corrupt ("
                                                  % pid) and re.search(want, lines[0]) and
          lines[0].endswith("; its later events are left out"),
          "want one line naming process %d and '%s': %r" % (pid, want, r))
    s = parse_summary(r.err)
    check(s, "no summary line: the collector did not finish: %r" % r)
    t, _ = c.outputs(os.path.join("run", "profile"), wait=10)
    t.wellformed()
    # the other process whole, the corrupt one's events before the damage whole
    eq((t.count("malloc", SHM_SIZE + 1, child), t.count("malloc", SHM_SIZE + 3, child)),
       (SHM_N, SHM_N), "the child's mallocs")
    eq(t.count("malloc", SHM_SIZE, pid), SHM_N, "the program's mallocs before the damage")
    check(t.count("malloc", SHM_SIZE + 2, pid) <= SHM_N, "more mallocs than made")
    # no garbage became numbers
    check(s[0] < 20 * SHM_N and s[1] < 20 * SHM_N,
          "events %d, lost %d: not what the program made" % (s[0], s[1]))
    eq(s[2], 2, "processes")
    left = wait_gone("libprof-%d-%s" % (os.getuid(), sid))
    check(not left, "segments of the session left in /dev/shm: %s" % left)
    # what the program did after the damage (a malloc and a free each) is kept, or
    # counted as lost (was: left out without a number)
    after = t.count("malloc", SHM_SIZE + 2, pid)
    if counted:
        check(2 * after + s[1] >= 2 * SHM_N, "after the damage: %d mallocs kept and %d "
              "events lost of the %d the program made" % (after, s[1], 2 * SHM_N))
    # the reason in the JSON report and the tables
    corrupt_lost = c.report_json(c.path("run", "profile.prof"))["corrupt_lost_events"]
    if counted and after < SHM_N:
        check(corrupt_lost > 0, "corrupt_lost_events %d with %d mallocs kept after the "
              "damage" % (corrupt_lost, after))
    if corrupt_lost:
        text = c.text(os.path.join("run", "profile"))
        check(re.search(r"^WARNING: [\d,]+ of the lost events were written after a "
                        r"process's shared memory was found corrupt", text, re.M),
              "the tables do not say why events were lost: %r" % text[:1500])
    c.note(lines[0][len("libprof: "):] + "; after it: %d mallocs kept, %d events lost"
           % (after, s[1]))


def slot_word(off, value):
    return lambda seg, slot: seg.put(slot + off, value)


def hdr_word(field, value):
    off, size = HDR[field]
    return lambda seg, slot: seg.put(off, value, size)


def head_over_unwritten(seg, slot):
    # a head ahead of every event written: the ring's zeroed entries are no events
    seg.put(slot + SLOT_HEAD, seg.get(slot + SLOT_TAIL) + 100)


def bad_stack(seg, slot):
    # a stack entry claiming 100000 frames, published where the next one would be
    seg.put(seg.get(112) + 0, 100000, 4)
    seg.put(HDR["stacks_reserved"][0], 64)


def strings_chunk_inside(seg, slot):
    # the strings area's second chunk said to lie at 4096, over the segment's own header,
    # and the strings said to reach into it
    seg.put(HDR["strings_chunk_off"][0] + 8, 4096)
    seg.put(seg.get(48) + seg.get(HDR["strings_used"][0]), 0xFFFFFFFF, 4)  # a pad: skip on
    seg.put(HDR["strings_used"][0], (2 << 20) + 64)


def bad_stack_pad(seg, slot):
    # a pad entry (a reservation across a chunk's end) 12 bytes long: not a whole entry
    seg.put(seg.get(112) + 0, 0xFFFFFFFF, 4)
    seg.put(seg.get(112) + 4, 12, 4)
    seg.put(HDR["stacks_reserved"][0], 64)


CUT_AT = [0]


def cut_stack_area(seg, slot):
    CUT_AT[0] = seg.get(HDR["stacks_off"][0])
    seg.put(HDR["stacks_reserved"][0], 4096)


# (name, the damage, what the line must say (a regex), seen at once or at the end)
SHM_CORRUPTIONS = [
    ("head_far", slot_word(SLOT_HEAD, 1 << 62),
     r"\(slot \d+: head 4611686018427387904 beyond tail\+capacity\)", True),
    ("head_back", slot_word(SLOT_HEAD, 1), r"\(slot \d+: head 1 behind tail \d+\)", True),
    ("tail", slot_word(SLOT_TAIL, 1 << 62), r"tail moved from \d+ to 4611686018427387904", True),
    ("head_unwritten", head_over_unwritten, r"an event of type 0 ", True),
    # the writer reports a pending gap in its next LOST event, or the collector reads it
    ("lost_pending", slot_word(SLOT_LOST_PENDING, 11700000000000000000),
     r"lost_pending 11700000000000000000 is more than could be|"
     r"an event of type 4 \(a=11700000000000000000\)", False),
    ("nslots", hdr_word("nslots", 1000000), r"nslots changed from 256 to 1000000", True),
    ("ring_cap_zero", hdr_word("ring_cap", 0), r"ring_cap changed from \d+ to 0\)", True),
    ("strings_off", hdr_word("strings_off", 1 << 40), r"strings_off changed", True),
    ("slots_off", hdr_word("slots_off", 1 << 62), r"slots_off changed", True),
    ("segment_size", hdr_word("segment_size", 1 << 50), r"segment_size changed", True),
    ("strings_used", hdr_word("strings_used", 1 << 40),
     r"strings_used 1099511627776 beyond the ids' range", True),
    ("strings_chunk", strings_chunk_inside,
     r"chunk 1 of an area at 4096, inside the segment or misaligned", True),
    ("stack_pad", bad_stack_pad, r"a pad of 12 bytes at 0", True),
    ("names_lost", hdr_word("names_lost", 11700000000000000000),
     r"names_lost: 11700000000000000000 events lost is more than could be", False),
    ("lost_no_slot", hdr_word("lost_no_slot", 11700000000000000000),
     r"lost_no_slot: 11700000000000000000 events lost is more than could be", False),
    ("stack_frames", bad_stack, r"a stack of 100000 frames", True),
    ("file_cut", cut_stack_area, r"its file was cut below the size mapped", True),
]


def make_corrupt_case(label, how, want, at_once):
    def fn(c):
        corrupt_case(c, how, want, at_once, label not in UNCOUNTABLE)
    fn.__name__ = "shm_corrupt_" + label
    case(fn)


for _label, _how, _want, _at_once in SHM_CORRUPTIONS:
    make_corrupt_case(_label, _how, _want, _at_once)


# ---------------------------------------------------------------------------------------
# dead sessions: SIGKILL of everything leaves segments; prof clean and the next collector
# take them, never a live session's

def kill_whole_session(c, sub):
    """A session killed whole (collector first, then the program and its child): returns
    its sid, with its segments still in /dev/shm."""
    run, pid, child, d = start_victim(c, sub)
    _, sid = shm_segment_of(pid)
    sess = Segment("libprof-%d-%s" % (os.getuid(), sid))
    collector = sess.get(40, 4)
    sess.close()
    check(collector > 0, "no collector pid in the session segment")
    os.kill(collector, signal.SIGKILL)  # this case's: started by its program
    deadline = time.monotonic() + 10
    while os.path.exists("/proc/%d" % collector) and time.monotonic() < deadline:
        time.sleep(0.02)
    for x in (child, pid):
        try:
            os.kill(x, signal.SIGKILL)
        except OSError:
            pass
    r = c.finish(*run, timeout=60)
    eq(r.rc, -signal.SIGKILL, "the program's exit status")
    left = shm_names("libprof-%d-%s" % (os.getuid(), sid))
    check(len(left) >= 3, "a killed session's segments (session, 2 processes): %s" % left)
    return sid, left


def age(names, seconds):
    """Makes segments (this case's own) look made that long ago."""
    past = time.time() - seconds
    for n in names:
        os.utime("/dev/shm/" + n, (past, past))


def reclaim_case(c, by_clean):
    live_run, live_pid, live_child, live_dir = start_victim(c, "live")
    try:
        reclaim_beside(c, by_clean, live_run, live_pid, live_child, live_dir)
    finally:
        go(live_dir)  # the live program ends whatever happened


def reclaim_beside(c, by_clean, live_run, live_pid, live_child, live_dir):
    _, live_sid = shm_segment_of(live_pid)
    live_prefix = "libprof-%d-%s" % (os.getuid(), live_sid)
    live_before = shm_names(live_prefix)
    dead_sid, dead_left = kill_whole_session(c, "dead")
    dead_prefix = "libprof-%d-%s" % (os.getuid(), dead_sid)
    mine = (dead_sid, live_sid)  # prof clean is limited to this case's sessions
    if by_clean:
        # young: it may be a session being made, never taken for dead
        r = c.prof("clean", "--dry-run", *mine)
        eq((r.rc, r.out), (0, "no dead session\n"), "a young dead session: %r" % r)
    # both old: only being dead may make one go, the live one's age must not
    age(dead_left + live_before, 600)
    if by_clean:
        r = c.prof("clean", "--dry-run", *mine)
        eq(r.rc, 0, "prof clean --dry-run exit status: %r" % r)
        check(re.search(r"^would remove session %s: 3 segments, \d+ bytes "
                        r"\([\d.]+ MB in memory\)$" % dead_sid, r.out, re.M),
              "dry run names the dead session: %r" % r)
        check(live_sid not in r.out, "dry run names the live session: %r" % r)
        eq(shm_names(dead_prefix), dead_left, "segments after a dry run")
        r = c.prof("clean", *mine)
        eq(r.rc, 0, "prof clean exit status: %r" % r)
        m = re.search(r"^removed session %s: 3 segments, (\d+) bytes "
                      r"\(([\d.]+) MB in memory\)$" % dead_sid, r.out, re.M)
        check(m, "prof clean names the dead session: %r" % r)
        check(int(m.group(1)) > 1 << 20, "bytes removed: %s" % m.group(1))
        check(live_sid not in r.out, "prof clean names the live session: %r" % r)
        c.note(m.group(0))
    else:
        # the next collector this user starts reclaims it
        d = c.path("next")
        os.makedirs(d)
        go(d)
        r = c.run([c.prog("shm_victim"), 10, SHM_SIZE],
                  env={"PROFILER_OUTPUT": os.path.join(d, "profile")}, cwd=d)
        eq(r.rc, 0, "the next program's exit status: %r" % r)
    left = shm_names(dead_prefix)
    check(not left, "the dead session's segments are still there: %s" % left)
    eq(shm_names(live_prefix), live_before, "the live session's segments")
    go(live_dir)
    r = c.finish(*live_run, timeout=120)
    eq(r.rc, 0, "the live program's exit status: %r" % r)
    t, _ = c.outputs(os.path.join("live", "profile"), wait=10)
    eq(t.count("malloc", SHM_SIZE + 3, live_child), SHM_N, "the live session's child's mallocs")
    check(not wait_gone(live_prefix), "the live session's segments after its end")


# serial: any collector starting meanwhile (a case beside it) reclaims the dead session it
# aged before its prof clean --dry-run can name it
@case(serial=True)
def shm_reclaim_prof_clean(c):
    reclaim_case(c, True)


@case
def shm_reclaim_next_collector(c):
    reclaim_case(c, False)


@case
def shm_session_clock_from_the_future(c):
    # a session segment whose clock pair lies in the future (a hostile or broken creator):
    # the collector refuses it at once rather than sleep until then (up to 71 minutes)
    sid = uuid.uuid4().hex[:16]
    path = "/dev/shm/libprof-%d-%s" % (os.getuid(), sid)
    size = 12288
    buf = bytearray(size)
    struct.pack_into("<QIIII", buf, 0, 0x314d48534650524c, SHM_VERSION, 2, 0, 0)  # TSC
    struct.pack_into("<QQ", buf, 24, 1, 1 << 62)  # clock_tsc, clock_ns
    with open(path, "wb") as f:
        f.write(buf)
    try:
        r = c.prof("collect", "--session", sid, timeout=30)
        eq(r.rc, 2, "exit status: %r" % r)
        eq(r.err, "prof collect: no session '%s'\n" % sid, "stderr")
    finally:
        os.unlink(path)  # this case's own


@case
def shm_record_capture_fails_nothing_left(c):
    # prof record whose capture cannot be made: the command runs unprofiled, and the
    # segments it made in the meantime do not stay in /dev/shm
    with open(c.path("afile"), "w"):
        pass
    go(c.dir)
    r = c.prof("record", "-o", c.path("afile", "x"), "--", c.prog("shm_victim"), 10, SHM_SIZE)
    eq(r.rc, 0, "exit status: %r" % r)
    check("not profiling" in r.err, "the reason on stderr: %r" % r)
    pids = [int(x) for x in r.kv("pid") + r.kv("child")]
    eq(len(pids), 2, "pids printed: %r" % r)
    pat = re.compile(r"^libprof-%d-[0-9a-f]{16}-(%d|%d)-" % (os.getuid(), pids[0], pids[1]))
    left = [n for n in shm_names("libprof-%d-" % os.getuid()) if pat.match(n)]
    check(not left, "the command's segments left in /dev/shm: %s" % left)


@case
def shm_corrupt_when_found(c):
    # a process segment already bad when the collector first finds it (nslots 0, which
    # divided by zero before): refused in one line, removed, the session goes on
    run, pid, child, d = start_victim(c, "run")
    fake_pid = 99999999  # no such process: it is finished at the next liveness pass
    try:
        real, sid = shm_segment_of(pid)
        name = "libprof-%d-%s-%d-1" % (os.getuid(), sid, fake_pid)
        # past the header (its size: the real segment's strings_off, in whole pages), or
        # it reads as a segment still being made
        with open("/dev/shm/" + real, "rb") as f:
            header = struct.unpack_from("<Q", f.read(56), 48)[0]
        size = header + 16384
        buf = bytearray(size)
        # magic, version, pid, ppid, nslots 0; segment_size
        struct.pack_into("<QIIII", buf, 0, 0x314d48534650524c, SHM_VERSION, fake_pid, 1, 0)
        struct.pack_into("<Q", buf, 80, size)
        tmp = "/dev/shm/.e2e-%s" % c.token
        with open(tmp, "wb") as f:
            f.write(buf)
        os.rename(tmp, "/dev/shm/" + name)  # whole at once: never seen half written
        deadline = time.monotonic() + 20
        while os.path.exists("/dev/shm/" + name) and time.monotonic() < deadline:
            time.sleep(0.02)
        check(not os.path.exists("/dev/shm/" + name), "the bad segment was not removed")
    finally:
        go(d)
    r = c.finish(*run, timeout=120)
    eq(r.rc, 0, "exit status")
    lines = [l for l in r.err.splitlines() if "segment is corrupt" in l]
    eq(lines, ["libprof: process %d's segment is corrupt (nslots 0); its later events are "
               "left out" % fake_pid], "the line about it")
    s = parse_summary(r.err)
    check(s, "no summary line: the collector did not finish: %r" % r)
    t, _ = c.outputs(os.path.join("run", "profile"), wait=10)
    for size, who, what in ((SHM_SIZE, pid, "program's"), (SHM_SIZE + 2, pid, "program's later"),
                            (SHM_SIZE + 1, child, "child's"), (SHM_SIZE + 3, child, "child's later")):
        eq(t.count("malloc", size, who), SHM_N, "the %s mallocs" % what)
    check(not wait_gone("libprof-%d-%s" % (os.getuid(), sid)), "segments of the session left")


# Four threads of a Python program, each writing a few hundred events, then waiting for
# "go": their rings' memory is allocated as they write.
THREADS_WAITING = r"""
import os, threading, time
def work():
    for i in range(300):
        bytearray(1000 + i)
    while not os.path.exists("go"):
        time.sleep(0.01)
ts = [threading.Thread(target=work) for _ in range(3)]
for t in ts:
    t.start()
for i in range(300):
    bytearray(2000 + i)
print("pid=%d ready" % os.getpid(), flush=True)
for t in ts:
    t.join()
"""


@case
def rings_allocated_as_written(c):
    # a ring's memory is committed as its thread writes (a first 64 KiB, doubling): four
    # threads that wrote a few hundred events each hold ~2.5 MB of /dev/shm with the
    # segment's header and strings. Each claimed ring was committed whole before (3 MiB
    # at the old 4M default, 12 MiB at today's): 14 MB and more here.
    d = c.path("seg")
    os.makedirs(d, exist_ok=True)
    argv = ["/usr/bin/python3", "-c", THREADS_WAITING]
    p, out, err, t0 = c.start(argv, {"PROFILER_OUTPUT": os.path.join(d, "profile")}, cwd=d)
    try:
        deadline, text = time.monotonic() + 60, ""
        while time.monotonic() < deadline and "ready" not in text and p.poll() is None:
            out.seek(0)
            text = out.read()
            time.sleep(0.02)
        m = re.search(r"pid=(\d+) ready", text)
        check(m, "the program did not get ready: %r" % text)
        name, _ = shm_segment_of(int(m.group(1)))
        st = os.stat("/dev/shm/" + name)
        seg = Segment(name)
        try:
            rings_off = seg.get(HDR["slots_off"][0]) + seg.get(HDR["nslots"][0], 4) * SLOT_SIZE
            slots = seg.get(HDR["slots_off"][0])
            claimed = sum(1 for i in range(seg.get(HDR["nslots"][0], 4))
                          if seg.get(slots + i * SLOT_SIZE + SLOT_TID, 4))
        finally:
            seg.close()
    finally:
        go(d)
    r = c.finish(argv, p, out, err, t0, 60)
    eq(r.rc, 0, "the program (%r)" % r)
    allocated = st.st_blocks * 512
    # the header, strings and slots, and at most two first chunks a ring
    bound = rings_off + claimed * 2 * (64 << 10) + (1 << 20)
    c.note("%d rings claimed; %.2f MB of /dev/shm allocated (bound %.2f MB; the segment "
           "%.0f MB in all)" % (claimed, allocated / 1e6, bound / 1e6, st.st_size / 1e6))
    check(claimed >= 4, "%d rings claimed, want the four threads'" % claimed)
    check(allocated <= bound, "%.2f MB of /dev/shm allocated for %d rings that hold a few "
          "hundred events each (bound %.2f MB)" % (allocated / 1e6, claimed, bound / 1e6))
