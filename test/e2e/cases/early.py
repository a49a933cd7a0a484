# early: allocations made before libprof's constructor ran (preload/wrap/early.c).
# Issue 29: a C program linked with libmxnet.so lost 64,337 start-up events on every run
# (the early buffer held 8,192). Programs here are built from test/e2e/cases/early/ into
# $BUILD/e2e/early/.

EARLY_SRC = os.path.join(HERE, "cases", "early")
EARLY_BIN = os.path.join(BIN, "early")


@one_at_a_time
def early_build(name, src, flags=(), after=(), deps=()):
    """EARLY_SRC/src built into EARLY_BIN/name (cc -O1 -g flags ... after) when missing,
    older than its source or deps, or built by another command. Returns the path."""
    os.makedirs(EARLY_BIN, exist_ok=True)
    return build_if_stale(os.path.join(EARLY_BIN, name), os.path.join(EARLY_SRC, src),
                          [os.environ.get("CC", "cc"), "-O1", "-g", "-Wall"] + list(flags),
                          after, deps)


def early_and_lost(capture, pid):
    """The allocator calls of pid's main thread that came through the early buffer (they
    alone carry their own CLOCK_MONOTONIC times, PROF_EVF_NS, in the memory category),
    and the capture's LOST records."""
    events = read_capture(capture)
    early = [e for e in events if e["pid"] == pid and e["tid"] == pid and
             e["cat"] == "memory" and e["type"] == 1 and e["flags"] & 0x08]
    return early, [e for e in events if e["type"] == 4]


@case
def early_library_constructor_allocations_all_kept(c):
    # A library the program links is initialized before libprof (preloaded: its
    # constructor runs after those of the program's libraries); its constructor makes
    # 200,000 allocations, 50,000 reallocations and 100,000 frees: 350,001 early events,
    # more than a 4 MiB ring holds (65,536), so the flush must wait for the collector. A
    # 64 KiB ring (1,024 events) under the bare command too.
    lib = early_build("libctor_lib.so", "ctor_lib.c", ["-shared", "-fPIC"])
    prog = early_build("ctor_main", "ctor_main.c",
                       after=["-L" + EARLY_BIN, "-lctor_lib", "-Wl,-rpath," + EARLY_BIN],
                       deps=[lib])
    for ring in ("4M", "64K"):
        prefix = "ring" + ring
        r = c.run([prog], env={"PROFILER_RING_SIZE": ring, "PROFILER_OUTPUT": prefix},
                  timeout=180)
        eq(r.rc, 0, "exit status: %r" % r)
        pid = pid_of(r)
        s = parse_summary(r.err)
        check(s, "no summary line: %r" % r)
        eq(s[1], 0, "ring %s: events lost (summary line)" % ring)
        eq(r.kv("ctor_allocs"), ["200001"], "the constructor's allocations")
        capture = c.path(prefix + ".prof")
        rep = c.report_json(capture)
        eq(rep["lost_events"], 0, "ring %s: lost_events in the report" % ring)
        # the constructor's calls plus main's (printf's buffer; a sanitizer runtime's
        # own under BUILD=build-asan)
        mallocs = report_row(rep, "memory", "malloc")["count"]
        check(200001 + 1 <= mallocs <= 200001 + 8, "ring %s: %d mallocs, want the "
              "constructor's 200,001 and main's" % (ring, mallocs))
        eq(report_row(rep, "memory", "realloc")["count"], 50000, "ring %s: reallocs" % ring)
        eq(report_row(rep, "memory", "free")["count"], 100000, "ring %s: frees" % ring)
        early, lost = early_and_lost(capture, pid)
        check(len(early) >= 350001, "ring %s: %d events came through the early buffer, "
              "want the constructor's 350,001" % (ring, len(early)))
        eq(lost, [], "ring %s: LOST records" % ring)
        proc = report_process(rep, pid)[0]
        eq(proc.get("frees_unmatched"), 0, "ring %s: frees of blocks never seen" % ring)


def mxnet_library():
    """libmxnet.so and its C headers, from the mxnet wheel (found without importing it:
    importing runs its static initializers, which is what is measured)."""
    need_module("mxnet", "pip install mxnet==1.9.1 numpy==1.23.5")
    import importlib.util
    where = list(importlib.util.find_spec("mxnet").submodule_search_locations)[0]
    lib, include = os.path.join(where, "libmxnet.so"), os.path.join(where, "include")
    check(os.path.exists(lib), "no libmxnet.so in %s" % where)
    check(os.path.exists(os.path.join(include, "mxnet", "c_api.h")),
          "no include/mxnet/c_api.h in %s" % where)
    return lib, include


@case
def early_mxnet_c_api_start_up_kept(c):
    # libmxnet.so's static initializers (operator registration) make ~46,700 mallocs
    # and ~72,500 allocator calls in all before libprof's constructor. Under the bare
    # command every one must be in the capture, with 0 lost (before issue 29: 8,348
    # captured, 64,337 lost, 6,086 mallocs in the memory table).
    lib, include = mxnet_library()
    prog = early_build("mxnet_c", "mxnet_c.c", ["-I" + include],
                       after=[lib, "-Wl,-rpath," + os.path.dirname(lib), "-ldl"], deps=[lib])
    counter = early_build("libcount_calls.so", "count_calls.c", ["-shared", "-fPIC"])
    # natively, under a counting preload: the calls made up to the end of main
    native = c.run([prog], env={"LD_PRELOAD": counter}, preload=False, autostart=False)
    eq(native.rc, 0, "native run: %r" % native)
    native_mallocs = int(native.kv("native_malloc")[0])
    check(native_mallocs > 4 * 8192, "the native run made only %d mallocs: %r"
          % (native_mallocs, native))
    r = c.run([prog], timeout=180)  # the bare command: LD_PRELOAD + PROFILER_AUTOSTART=1
    eq(r.rc, 0, "exit status: %r" % r)
    eq(r.kv("version"), ["10901"], "MXGetVersion")
    pid = pid_of(r)
    s = parse_summary(r.err)
    check(s, "no summary line: %r" % r)
    eq(s[1], 0, "events lost (summary line)")
    capture = c.path("libprof.prof")
    rep = c.report_json(capture)
    eq(rep["lost_events"], 0, "lost_events in the report")
    early, lost = early_and_lost(capture, pid)
    eq(lost, [], "LOST records")
    mallocs = report_row(rep, "memory", "malloc")["count"]
    # Not exactly the native count: libprof's own presence changes a few dozen of the
    # program's calls around its constructor (0.1 %: threads libprof's hooks see
    # created, a stdio buffer made busy); the early buffer's part is call for call.
    check(mallocs >= native_mallocs * 0.99,
          "the memory table has %d mallocs; the program made %d natively" % (mallocs,
                                                                             native_mallocs))
    check(len(early) > 4 * 8192, "only %d events came through the early buffer" % len(early))
    c.note("mxnet C program: %d mallocs natively, %d in the table, %d early events, "
           "0 lost" % (native_mallocs, mallocs, len(early)))
    check("events lost" not in c.text(), "libprof.txt warns of a loss:\n" + c.text()[:600])
