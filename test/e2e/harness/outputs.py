"""Reading the outputs: check/eq/Fail, the Chrome trace (Trace), the summary line, the
text tables, the raw capture, and small readers shared by several areas."""
import json
import re
import struct

from .paths import SUMMARY_RE


class Fail(AssertionError):
    pass


class Skip(Exception):
    """A case that cannot run here (a tool the suite installs could not be installed):
    said on a SKIP line, neither passed nor failed."""


def skip(msg):
    raise Skip(msg)


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def eq(got, want, what):
    if got != want:
        raise Fail("%s: got %r, want %r" % (what, got, want))


def ptr(v):
    if isinstance(v, str):
        return int(v, 0)
    return int(v)


class Trace:
    def __init__(self, doc, path=""):
        check(isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list),
              "%s: no traceEvents list" % path)
        self.doc = doc
        self.path = path
        self.events = doc["traceEvents"]
        self.other = doc.get("otherData") or {}

    def select(self, ph=None, name=None, cat=None, pid=None, tid=None):
        out = []
        for e in self.events:
            if ph is not None and e.get("ph") != ph:
                continue
            if name is not None and e.get("name") != name:
                continue
            if cat is not None and e.get("cat") != cat:
                continue
            if pid is not None and e.get("pid") != pid:
                continue
            if tid is not None and e.get("tid") != tid:
                continue
            out.append(e)
        return out

    def allocs(self, fn, size, pid=None):
        """X events of allocator function fn that asked for size bytes."""
        return [e for e in self.select("X", fn, "cpu_memory", pid)
                if (e.get("args") or {}).get("bytes") == size]

    def count(self, fn, size, pid=None):
        return len(self.allocs(fn, size, pid))

    def pids(self):
        return {e["pid"] for e in self.events if e.get("ph") in ("X", "i", "C") and "pid" in e}

    def process_names(self):
        return {e["pid"]: (e.get("args") or {}).get("name")
                for e in self.select("M", "process_name")}

    def lost_by_thread(self):
        """{(pid, tid): events lost}, from the 'lost' instants."""
        out = {}
        for e in self.select(cat="lost"):
            k = (e.get("pid"), e.get("tid"))
            out[k] = out.get(k, 0) + int((e.get("args") or {}).get("count", 0))
        return out

    def gaps_by_thread(self):
        out = {}
        for g in self.other.get("lost_gaps") or []:
            k = (g.get("pid"), g.get("tid"))
            out[k] = out.get(k, 0) + int(g.get("count", 0))
        return out

    def wellformed(self):
        """Shape checks that hold for every trace (messages are only made on failure:
        traces here have up to ~10^6 events)."""
        named_pids = set(self.process_names())
        named_threads = {(e.get("pid"), e.get("tid")) for e in self.select("M", "thread_name")}
        phs = ("X", "i", "I", "C", "M", "B", "E", "s", "f", "t")
        for e in self.events:
            ph = e.get("ph")
            if ph not in phs:
                raise Fail("event with odd ph: %r" % e)
            if ph == "X":
                for k in ("name", "cat", "ts", "dur", "pid", "tid"):
                    if k not in e:
                        raise Fail("X event without %s: %r" % (k, e))
                if e["dur"] < 0:
                    raise Fail("negative duration: %r" % e)
                if (e["pid"], e["tid"]) not in named_threads:
                    raise Fail("no thread_name metadata for pid %s tid %s"
                               % (e["pid"], e["tid"]))
                if e["cat"] == "cpu_memory" and e["name"] != "free":
                    # free(NULL) has no args; an allocation has both
                    a = e.get("args") or {}
                    if not isinstance(a.get("bytes"), int) or "ptr" not in a:
                        raise Fail("allocation without args.bytes and args.ptr: %r" % e)
            if ph in ("X", "i", "C"):
                if not isinstance(e.get("ts"), (int, float)):
                    raise Fail("event without ts: %r" % e)
                if e.get("pid") not in named_pids:
                    raise Fail("no process_name metadata for pid %r" % e.get("pid"))
        for k in ("events", "lost_events", "command", "clock"):
            check(k in self.other, "otherData has no %s" % k)


def load_json(path):
    with open(path, "rb") as f:
        return json.load(f)


def parse_summary(stderr):
    """(events, lost, processes) from the one-line summary, or None."""
    found = [SUMMARY_RE.match(line) for line in stderr.splitlines()]
    found = [m for m in found if m]
    if len(found) > 1:
        raise Fail("more than one summary line on stderr:\n" + stderr)
    if not found:
        return None
    return tuple(int(x) for x in found[0].groups()[:3])


def summary_frameworks(stderr):
    """The frameworks the summary line names ("from 1 process (torch) -> "), a list (empty
    when it names none), or None without a summary line."""
    found = [m for m in (SUMMARY_RE.match(line) for line in stderr.splitlines()) if m]
    if not found:
        return None
    return found[-1].group(4).split(", ") if found[-1].group(4) else []


def text_rows(text):
    """{(category, name): count} from the text tables: a category title line, a header
    line starting with 'Name', then rows 'name<2+ spaces>count ...' up to a blank line."""
    rows = {}
    lines = text.splitlines()
    cat = None
    in_table = False
    for i, line in enumerate(lines):
        if re.match(r"^Name\s+Count\b", line):
            j = i - 1
            while j >= 0 and not lines[j].strip():
                j -= 1
            cat = lines[j].strip().split()[0] if j >= 0 else None
            in_table = True
            continue
        if not line.strip():
            in_table = False
            continue
        if in_table:
            m = re.match(r"^(.*?\S)\s{2,}([\d,]+)\s", line)
            if m:
                rows[(cat, m.group(1))] = int(m.group(2).replace(",", ""))
    return rows


def warnings(stderr):
    return [l for l in stderr.splitlines() if not SUMMARY_RE.match(l)]


def read_text(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def trace_counts(t, cat):
    counts = {}
    for e in t.select("X", cat=cat):
        counts[e["name"]] = counts.get(e["name"], 0) + 1
    return counts


def unpack_events(b, count):
    """Packed events (formats/capture/event_pack.c, docs/FORMATS.md "Packed events"),
    written here independently of the C reader: (t0, t1, a, b, c, name, cat, type, flags,
    depth) tuples."""
    m64 = (1 << 64) - 1
    lens = struct.unpack_from("<6I", b, 0)
    cols = 24
    at = [cols + 4 * count]  # where each of the six streams goes on
    for n in lens[:-1]:
        at.append(at[-1] + n)
    ends = [a + n for a, n in zip(at, lens)]
    check(ends[-1] == len(b), "packed events: %d bytes, streams end at %d" % (len(b), ends[-1]))

    def varint(j):
        v = shift = 0
        while True:
            check(at[j] < ends[j], "packed events: stream %d ends inside a value" % j)
            x = b[at[j]]
            at[j] += 1
            v |= (x & 0x7f) << shift
            shift += 7
            if not x & 0x80:
                return v

    def signed(j):
        v = varint(j)
        return (v >> 1) ^ -(v & 1)

    t0, ptr, name, out = 0, 0, 0, []
    for i in range(count):
        shape, cat = b[cols + i], b[cols + count + i]
        flags, depth = b[cols + 2 * count + i], b[cols + 3 * count + i]
        typ = shape & 7
        if shape & 0x80:
            name = varint(0)
        t0 = (t0 + signed(1)) & m64
        t1 = (t0 + signed(2)) & m64 if shape & 0x08 else t0
        ptrs = cat == 0 and typ == 1  # an allocator call: pointers against the last one
        a = ((ptr + signed(3)) & m64 if ptrs else varint(3)) if shape & 0x10 else 0
        bb = varint(4) if shape & 0x20 else 0
        c = ((ptr + signed(5)) & m64 if ptrs else varint(5)) if shape & 0x40 else 0
        if ptrs and (a or c):
            ptr = a or c
        out.append((t0, t1, a, bb, c, name, cat, typ, flags, depth))
    check(at == ends, "packed events: streams not read to their ends")
    return out


def read_capture(path):
    """The events of a raw capture (docs/FORMATS.md), with every field: a list of dicts
    (pid, tid, t0, t1, a, b, c, depth, type, flags, name, cat), names resolved. The zstd
    frames are decompressed with libzstd (what prof links) through ctypes."""
    import ctypes
    import ctypes.util
    z = ctypes.CDLL(ctypes.util.find_library("zstd") or "libzstd.so.1")
    z.ZSTD_decompress.restype = ctypes.c_size_t
    z.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p,
                                  ctypes.c_size_t]
    z.ZSTD_isError.argtypes = [ctypes.c_size_t]
    with open(path, "rb") as f:
        data = f.read()
    check(data[:8] == b"LIBPROF\0", "%s: not a capture" % path)
    strings, cats, raw_events = {}, {}, []
    off = 16
    while off + 16 <= len(data):
        magic, clen, rlen, _ = struct.unpack_from("<IIII", data, off)
        check(magic == 0x3146504c, "%s: bad frame magic at %d" % (path, off))
        buf = ctypes.create_string_buffer(max(rlen, 1))
        n = z.ZSTD_decompress(buf, rlen, data[off + 16:off + 16 + clen], clen)
        check(not z.ZSTD_isError(n) and n == rlen, "%s: frame at %d does not decompress"
              % (path, off))
        off += 16 + clen
        raw, p = buf.raw[:rlen], 0
        while p + 8 <= len(raw):
            typ, ln = struct.unpack_from("<II", raw, p)
            pay = raw[p + 8:p + 8 + ln]
            p += 8 + ((ln + 7) & ~7)
            if typ in (5, 6):  # CAP_STRING, CAP_CATEGORY
                pid, i = struct.unpack_from("<II", pay)
                (strings if typ == 5 else cats)[(pid, i)] = pay[8:].decode(errors="replace")
            elif typ == 7:  # CAP_EVENTS
                pid, tid, count, _ = struct.unpack_from("<IIII", pay)
                for k in range(count):
                    v = struct.unpack_from("<QQQQQIBBBB", pay, 16 + 48 * k)
                    raw_events.append((pid, tid, v))
            elif typ == 15:  # CAP_EVENTS_PACKED
                pid, tid, count, _ = struct.unpack_from("<IIII", pay)
                raw_events += [(pid, tid, v) for v in unpack_events(pay[16:], count)]
    fixed = ("memory", "user", "mark", "step", "counter", "lost")  # preload/common/event.h
    out = []
    for pid, tid, (t0, t1, a, b, c, name, cat, typ, flags, depth) in raw_events:
        out.append({"pid": pid, "tid": tid, "t0": t0, "t1": t1, "a": a, "b": b, "c": c,
                    "depth": depth, "type": typ, "flags": flags,
                    "name": strings.get((pid, name)),
                    "cat": fixed[cat] if cat < len(fixed) else cats.get((pid, cat))})
    return out


def pid_of_trace(t):
    pids = sorted(t.pids())
    check(len(pids) == 1, "one process expected: %r" % pids)
    return pids[0]


def fn(frame):
    """The function of a frame named 'function (file:line)'."""
    return frame.split(" (")[0]


def ns(us):
    return int(round(us * 1000))


def inside(outer, e):
    """e lies within outer on the same thread (ns exact: the trace keeps 3 decimals)."""
    return (e["tid"] == outer["tid"] and ns(outer["ts"]) <= ns(e["ts"]) and
            ns(e["ts"]) + ns(e["dur"]) <= ns(outer["ts"]) + ns(outer["dur"]))
