# Checks preload/stacks/pyframes.c from inside a CPython process: stub.so (pyframes.c plus stand-ins
# for the rest of libprof) is called through ctypes from Python code, and the frames it
# reads must be the ones sys._getframe() sees, innermost first: "qualname (file:line)".
# The innermost Python frame is the caller of the ctypes call.
#
#   driver.py STUB.so [--layout "minor=11 ts_cframe=56 ..."] [--unsupported] [--bench]
#
# --layout: layout_probe's output for this interpreter, compared with pyframes.c's table.
# --unsupported: this interpreter is one pyframes.c does not read: expect no frames.
# --bench: print ns per prof_py_stack call (warm cache) for a 10-frame stack.
# Run it with the stub preloaded (run.sh does): its cache is initial-exec TLS, as in libprof.
# Exits 0 when every check passes; the last check is that the process exits cleanly while
# daemon threads still walk their stacks.
import ctypes
import sys
import threading
import types

so = sys.argv[1]
args = sys.argv[2:]
lib = ctypes.CDLL(so)  # releases the GIL around each call
lib_gil = ctypes.PyDLL(so)  # keeps it
for l in (lib, lib_gil):
    l.probe.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    l.probe_around.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                               ctypes.c_void_p]
    l.probe_kept_walks.restype = ctypes.c_long
    l.bench.restype = ctypes.c_double
    l.bench.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                        ctypes.c_int]
    l.sigprof_stop.restype = ctypes.c_long
    l.sigprof_stop.argtypes = [ctypes.POINTER(ctypes.c_long)]
    l.intern_calls.restype = ctypes.c_long
    l.distinct_names.restype = ctypes.c_long
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def text(s):
    return s if s.isascii() else "<non-ascii>"


def expected(frame, limit=256):
    out = []
    while frame is not None and len(out) < limit:
        c = frame.f_code
        name = getattr(c, "co_qualname", c.co_name)
        out.append("%s (%s:%d)" % (text(name), text(c.co_filename), frame.f_lineno))
        frame = frame.f_back
    return out


def read(max_frames=256, l=lib, seen=None):
    buf = ctypes.create_string_buffer(1 << 16)
    seen = (1 if l is lib else 0) if seen is None else seen
    n = l.probe(buf, len(buf), max_frames, seen); want = expected(sys._getframe(), max_frames)
    got = buf.value.decode().splitlines()
    if n != len(got) or got[:1] != want[:1]:
        return -1, got, want  # read()'s own frame, at this line, comes first
    return n, got[1:], want[1:]


def same_stack(what, max_frames=256, l=lib, seen=None):
    n, got, want = read(max_frames, l, seen)
    check(n > 0 and got == want,
          "%s: got %d frames\n  %s\nwant\n  %s" % (what, n, "\n  ".join(got), "\n  ".join(want)))
    return got


if "--layout" in args:
    line = args[args.index("--layout") + 1]
    probe = dict(kv.split("=") for kv in line.split())
    buf = ctypes.create_string_buffer(4096)
    check(lib.layout_describe(int(probe["minor"]), buf, len(buf)) == 0,
          "no layout for 3.%s in pyframes.c" % probe["minor"])
    table = dict(kv.split("=") for kv in buf.value.decode().split())
    for k in sorted(set(probe) | set(table)):
        check(probe.get(k) == table.get(k),
              "layout 3.%s %s: headers say %s, pyframes.c has %s"
              % (probe["minor"], k, probe.get(k), table.get(k)))

if "--unsupported" in args:
    buf = ctypes.create_string_buffer(4096)
    check(lib.probe(buf, len(buf), 64, 1) == 0, "frames from an unsupported interpreter")
    print("pyframes: %s: unsupported, no frames: %s" % (sys.version.split()[0],
                                                       "ok" if not failures else "FAILED"))
    sys.exit(1 if failures else 0)


# --- plain calls, methods, closures, lambdas, generators, coroutines -------------------

def a():
    return b()


def b():
    return same_stack("nested functions")


class K:
    def method(self):
        return same_stack("method")

    @staticmethod
    def static():
        def inner():
            return same_stack("closure in a static method")
        return inner()


def gen():
    yield same_stack("generator")
    yield same_stack("generator, resumed")


def comprehension():
    return [same_stack("comprehension") for _ in range(1)]


async def coro():
    return same_stack("coroutine")


def run_coro():
    c = coro()
    try:
        c.send(None)
    except StopIteration as e:
        return e.value


def in_except():
    try:
        raise ValueError
    except ValueError:
        return same_stack("except block")


def fünf():
    return same_stack("non-ASCII name")


def recurse(k, fn):
    return fn() if k == 0 else recurse(k - 1, fn)


got = a()
check(len(got) > 3 and got[0].startswith("same_stack (") and got[1].startswith("b (")
      and got[2].startswith("a ("), "innermost frames same_stack, b, a")
K().method()
K.static()
list(gen())
comprehension()
run_coro()
in_except()
got = fünf()
check(len(got) > 1 and got[1].startswith("<non-ascii> ("), "non-ASCII name shown as <non-ascii>")
(lambda: same_stack("lambda"))()
same_stack("GIL held (PyDLL)", l=lib_gil)
recurse(100, lambda: same_stack("deep, whole stack"))
recurse(100, lambda: same_stack("deep, max 5", 5))
recurse(3, lambda: same_stack("max 1", 1))

# --- frames shared with the last walk (taken from it, not named again) -----------------
# g's frame lies at the same address, runs the same code at the same instruction, under
# two different callers: only its bottom frames are shared with the last walk's.

def g():
    return same_stack("shared bottom, another caller")


def caller_a():
    return g()


def caller_b():
    return g()


for _ in range(3):
    caller_a()
    caller_b()
for line_kind in range(4):  # one caller, a different line each call, then the same again
    if line_kind % 2:
        same_stack("same caller, line 1")
    else:
        same_stack("same caller, line 2")
recurse(3, lambda: same_stack("a short walk (max 2)", 2))
recurse(3, lambda: same_stack("then the whole stack where the short one stopped"))
recurse(3, lambda: same_stack("again the short one", 2))
recurse(400, lambda: same_stack("deeper than a walk keeps"))
recurse(400, lambda: same_stack("deeper than a walk keeps, again"))
recurse(2, lambda: same_stack("shallow after deep"))

# --- a walk kept for the GIL release it was made in (gil.h) ----------------------------
# Every CDLL probe above read its stack twice inside one release (as libprof sees a
# ctypes call), the second time from the kept walk: same frames (probe says -2 if not).
# g() under caller_a and under caller_b runs at the same frame address, code and
# instruction: only the release's generation tells the two apart.

kept_before = lib.probe_kept_walks()
for _ in range(3):
    caller_a()
    caller_b()
# (two a probe: the stack read again, and the kept walk's count and hash asked for)
check(lib.probe_kept_walks() - kept_before == 12,
      "walks kept inside their release: %d of 12" % (lib.probe_kept_walks() - kept_before))
lib.set_seen_whole(0)  # a GIL call's entry not redirected somewhere: nothing is kept
kept_before = lib.probe_kept_walks()
same_stack("an entry not redirected")
check(lib.probe_kept_walks() == kept_before, "a walk kept while not every entry is redirected")
lib.set_seen_whole(1)

# A callback from C inside the release takes the GIL back through a path not seen (the
# stub sees none): the kept walk is not the callback's, whose top frame differs; back
# from it, the stack is the one before it again.
CALLBACK = ctypes.CFUNCTYPE(None)
in_callback = []


def callback_body():
    in_callback.append(same_stack("a callback under a release its take was not seen in",
                                  l=lib_gil, seen=2))


def around(what):
    buf = ctypes.create_string_buffer(1 << 16)
    after = ctypes.create_string_buffer(1 << 16)
    cb = CALLBACK(callback_body)
    n = lib.probe_around(buf, after, len(buf), ctypes.cast(cb, ctypes.c_void_p))
    want = expected(sys._getframe())  # this frame at the line after the call
    got = buf.value.decode().splitlines()
    check(n > 0 and got[0].startswith("around (") and got[1:] == want[1:] and
          after.value == buf.value,
          "%s: before the callback %r, after %r, want %r"
          % (what, got[:3], after.value.decode().splitlines()[:3], want[:2]))


def around_a():
    around("around, caller a")


def around_b():
    around("around, caller b")


around_a()
around_b()
check(len(in_callback) == 2 and in_callback[0][1].startswith("callback_body ("),
      "the callbacks' stacks: %r" % in_callback)

# --- where the walk must give nothing -------------------------------------------------

check(lib.probe_foreign_thread() == 0, "a thread Python never saw has no frames")
lib.set_profiling(0)
buf = ctypes.create_string_buffer(4096)
check(lib.probe(buf, len(buf), 64, 1) == 0, "no frames while not profiling")
lib.set_profiling(1)

# --- the cache: warm hits intern nothing; a reused code address is not a stale hit -----

def site():
    return read()


for i in range(101):
    if i == 1:
        before = lib.intern_calls()  # the first round filled the cache
    site()
check(lib.intern_calls() == before, "warm cache: prof_intern called %d times"
      % (lib.intern_calls() - before))

# --- one name per code object, whatever the line (issue 29: importing a large package
# made hundreds of thousands of "function (file:line)" names) ---------------------------

def many_lines():
    got = []
    got.append(read()[1:])
    got.append(read()[1:])
    got.append(read()[1:])
    got.append(read()[1:])
    return got


names_before = lib.distinct_names()
runs = many_lines()
lines = set(g[0][0] for g in runs if g[0])
check(len(lines) == 4, "four lines of one function read as %s" % sorted(lines))
check(lib.distinct_names() - names_before <= 1,
      "one function read at four lines made %d names" % (lib.distinct_names() - names_before))

for k in range(300):
    # each f is a new code object (the last one freed): same file and name objects,
    # often the same address, another line each time
    ns = {"read": read}
    exec(compile("\n" * (k % 37) + "def f():\n    return read()\n", "<dyn>", "exec"), ns)
    n, got, want = ns["f"]()
    line = (k % 37) + 2
    if not (n > 0 and got == want and want[0] == "f (<dyn>:%d)" % line):
        check(False, "recompiled code object %d: got %s want %s" % (k, got[:1], want[:1]))
        break

# the same walk as the last one but for a code object freed and made anew at its address
# (code.replace gives the freed block back), another first line: its frame must not be
# taken from the last walk, which had the old code object at the same frame and
# instruction addresses
base = compile("def f():\n    return read()\n", "<dyn>", "exec").co_consts[0]
reused = 0
last_code = None
for k in range(100):
    code = base.replace(co_firstlineno=k + 1)
    reused += id(code) == last_code
    last_code = id(code)
    n, got, want = types.FunctionType(code, {"read": read})()
    del code
    if not (n > 0 and got == want and want[0] == "f (<dyn>:%d)" % (k + 2)):
        check(False, "code object %d made at a freed one's address: got %s want %s"
              % (k, got[:1], want[:1]))
        break
check(reused > 50, "code objects made at the freed one's address: %d of 99" % reused)

# --- threads: each reads its own stack, with the GIL released -------------------------

stop = threading.Event()
thread_ok = []


def worker_inner():
    for _ in range(2000):
        n, got, want = read()
        if got != want or not got or not got[0].startswith("worker_inner ("):
            thread_ok.append((got, want))
            return
    thread_ok.append(True)


def worker():
    worker_inner()


def busy_main():
    x = 0
    while not stop.is_set():
        x += sum(range(100))


threads = [threading.Thread(target=worker) for _ in range(4)]
for t in threads:
    t.start()
main_busy = threading.Thread(target=busy_main)
main_busy.start()
for t in threads:
    t.join()
stop.set()
main_busy.join()
check(thread_ok == [True] * 4, "threads read their own stacks: %s" % thread_ok[:1])

# --- signal handlers: SIGPROF walks the stack wherever the thread is ------------------

def churn(k):
    if k:
        return churn(k - 1)
    d = {}
    for i in range(20000):
        d[i] = [str(i)] * 3
        g = (j for j in range(3))
        sum(g)
    return len(d)


lib.sigprof_start(50)
for _ in range(20):
    churn(20)
frames = ctypes.c_long()
calls = lib.sigprof_stop(ctypes.byref(frames))
check(calls > 0 and frames.value > calls, "SIGPROF: %d handler calls, %d frames"
      % (calls, frames.value))

# --- cost -------------------------------------------------------------------------------

if "--bench" in args:
    def depth_chain(k):
        if k > 1:
            return depth_chain(k - 1)
        depth = ctypes.c_int()
        r = {}
        for m in (64, 1, "kept"):
            r[m] = 1e9
            for _ in range(3):  # the best of three
                r[m] = min(r[m], lib.bench(1000000, 64 if m == "kept" else m,
                                           ctypes.byref(depth), m == "kept"))
            r[m, "depth"] = depth.value
        return r

    # 10 Python frames: <module>, run_bench and 8 of depth_chain
    def run_bench():
        return depth_chain(8)

    r = run_bench()
    check(r[64, "depth"] == 10 and r[64] > 0, "bench saw %d frames" % r[64, "depth"])
    print("pyframes: %s: %.1f ns per prof_py_stack call, warm cache, %d frames"
          " (%.1f ns with max 1; %.1f ns given again inside a GIL release)"
          % (sys.version.split()[0], r[64], r[64, "depth"], r[1], r["kept"]))

# --- finalization: daemon threads go on walking their stacks (in C, without the GIL) while
# the interpreter frees thread states; the process must exit cleanly -------------------

lib.spin.restype = ctypes.c_long
lib.spin.argtypes = [ctypes.c_long]


def spinner():
    lib.spin(1 << 62)


for _ in range(2):
    threading.Thread(target=spinner, daemon=True).start()

print("pyframes: %s: %s" % (sys.version.split()[0], "FAILED" if failures else "ok"))
sys.exit(1 if failures else 0)
