# Issue 12, item 7: nothing wrong or missing silently in the allocator data.
# Programs that need other flags than run.py's (a C++ program, shared libraries) are
# built here from test/e2e/cases/alloc_data/ into $BUILD/e2e/data/.

DATA_SRC = os.path.join(HERE, "cases", "alloc_data")
DATA_BIN = os.path.join(BIN, "data")


@one_at_a_time
def data_build(name, cmd_tail, src, after=(), deps=()):
    """Builds DATA_SRC/src into DATA_BIN/name with cmd_tail (a list: compiler and flags)
    and after (flags after the source: libraries) when missing or older than its source
    or deps (paths it links). Returns the path."""
    os.makedirs(DATA_BIN, exist_ok=True)
    return build_if_stale(os.path.join(DATA_BIN, name), os.path.join(DATA_SRC, src), cmd_tail,
                          after, deps)


def unmatched_frees(trace, pid):
    """Releases (free, realloc's old block) of blocks whose allocation is not in the
    trace, over all threads of pid; and the blocks live at the end. As libprof's memory
    analysis does, a release is placed at its call's start and an allocation at its
    end (a block another thread released can only be handed out after that began), each
    thread's in its own order (the trace's: one clock read can tie a malloc's end with
    the next free's start), the threads merged by time, releases first at one instant."""
    import heapq
    per_thread = {}
    for e in trace.select("X", cat="cpu_memory", pid=pid):
        a = e.get("args") or {}
        ops = per_thread.setdefault(e["tid"], [])
        released = a.get("ptr") if e["name"] == "free" else a.get("old_ptr")
        if released is not None and ptr(released):
            ops.append((e["ts"], 0, ptr(released), e))
        if e["name"] != "free" and a.get("ptr") is not None and ptr(a["ptr"]):
            ops.append((e["ts"] + e["dur"], 1, ptr(a["ptr"]), e))
    heads = [(ops[0][0], ops[0][1], tid, 0) for tid, ops in per_thread.items() if ops]
    heapq.heapify(heads)
    live, unmatched = set(), []
    while heads:
        _, _, tid, i = heapq.heappop(heads)
        ops = per_thread[tid]
        _, alloc, p, e = ops[i]
        if i + 1 < len(ops):
            heapq.heappush(heads, (ops[i + 1][0], ops[i + 1][1], tid, i + 1))
        if alloc:
            live.add(p)
        elif p in live:
            live.discard(p)
        else:
            unmatched.append(e)
    return unmatched, live


@case
def data_cxx_peak_from_first_alloc(c):
    # A C++ program's libstdc++ allocates its emergency exception pool (72,704 bytes)
    # in its constructor, before libprof's: the peak libprof reports must still be the
    # true one, counted by an allocator of the test's own (count_alloc.so, linked first
    # into the program: libprof's RTLD_NEXT finds it, so every block libprof passes on
    # reaches it, from the first). Under `prof record` with the CUDA/NVTX injection
    # variables already set, libprof adds nothing of its own to the environment, so the
    # program's heap is the whole heap. With stacks (libprof then loads libunwind: its
    # own heap) the peak is the same, and the early blocks have their caller as stack.
    lib = data_build("libcount_alloc.so", ["cc", "-O1", "-g", "-shared", "-fPIC"],
                     "count_alloc.c")
    prog = data_build("cxx_peak", ["c++", "-O1", "-g"], "cxx_peak.cc",
                      after=["-L" + DATA_BIN, "-Wl,--no-as-needed", "-lcount_alloc",
                             "-Wl,--as-needed", "-Wl,-rpath," + DATA_BIN],
                      deps=[lib])
    mark = 1000003
    for stacks in ("off", "alloc"):
        r = c.prof("record", "-o", "cxx_" + stacks, "--", prog, mark,
                   env={"CUDA_INJECTION64_PATH": "/nonexistent",
                        "NVTX_INJECTION64_PATH": "/nonexistent", "PROFILER_STACK": stacks},
                   timeout=180)
        eq(r.rc, 0, "exit status: %r" % r)
        pid = pid_of(r)
        counts = dict(zip(r.kv("count_pid"), r.kv("true_peak")))
        check(str(pid) in counts, "count_alloc printed nothing for pid %d: %r" % (pid, r))
        true_peak = int(counts[str(pid)])
        check(true_peak >= mark + 72704, "the counting allocator's peak %d is below the "
              "marked block and libstdc++'s pool: %r" % (true_peak, r))
        t, _ = c.outputs("cxx_" + stacks)
        t.wellformed()
        rep = c.report_json(c.path("cxx_%s.prof" % stacks))
        proc = report_process(rep, pid)[0]
        if stacks == "off":
            eq(proc["peak_live_bytes"], true_peak,
               "libprof's peak_live_bytes vs the counting allocator's true peak")
            peak_off = true_peak
        else:
            # loading libunwind is libprof's own heap (the counting allocator sees it)
            eq(proc["peak_live_bytes"], peak_off, "with stacks: peak_live_bytes vs without")
            c.note("libprof's own heap with stacks: %d bytes" % (true_peak - peak_off))
        eq(proc.get("frees_unmatched"), 0, "stacks %s: report frees_unmatched" % stacks)
        eq(t.count("malloc", 72704, pid), 1, "libstdc++'s pool (72,704 bytes) in the trace")
        unmatched, _ = unmatched_frees(t, pid)
        eq(unmatched, [], "stacks %s: releases of blocks never seen allocated" % stacks)
        if stacks == "alloc":
            sites = proc.get("allocation_sites") or []
            no_stack = sum(s["allocations"] for s in sites if s["site"] == "(no stack)")
            eq(no_stack, 0, "allocations without a stack")


@case
def data_stacks_many_threads_balance(c):
    # 800 threads with PROFILER_STACK=alloc: libunwind's per-thread block (allocated
    # inside libprof's unwinding, freed by glibc from a later pthread_create) and
    # glibc's key data for libprof's exit hook are libprof's: no release of a block
    # never seen allocated, and the process's frees are its allocations less the
    # blocks still live at the end.
    total, wave, per, size = 800, 100, 3, 4321
    r, t = profile(c, [c.prog("threads_stacks"), total, wave, per, size],
                   env={"PROFILER_STACK": "alloc"}, timeout=300)
    pid = pid_of(r)
    eq(t.other.get("lost_events"), 0, "lost events")
    eq(t.count("malloc", size, pid), total * per, "marked mallocs")
    eq(matched_frees(t, pid, {"malloc": size}), total * per, "marked frees")
    unmatched, live = unmatched_frees(t, pid)
    check(not unmatched, "%d releases of blocks never seen allocated (libprof's own?), "
          "e.g. %r" % (len(unmatched), unmatched[:3]))
    proc = report_process(c.report_json(c.path(DEFAULT_PREFIX + ".prof")), pid)[0]
    eq(proc["frees"], proc["allocations"] - len(live),
       "report frees vs allocations less the blocks live at the end")
    eq(proc.get("frees_unmatched"), 0, "report frees_unmatched")


@case
def data_threads_beyond_rings_named(c):
    # 2000 threads alive at once, 256 rings: every thread that got none is in the trace
    # by its tid and name with its own losses, and for every worker the events kept and
    # lost add up to what it made (the workers make nothing else: they never exit).
    total, per, size = 2000, 100, 5311
    r, t = profile(c, [c.prog("threads_beyond"), total, per, size],
                   env={"PROFILER_RING_SIZE": "256K"}, timeout=300)
    pid = pid_of(r)
    made = int(r.kv("made")[0])
    eq(made, total * per * 2, "events the program says it made")
    workers = {}
    for v in r.kv("worker"):
        i, tid = v.split(":")
        workers[int(tid)] = "b" + i
    eq(len(workers), total, "distinct worker tids printed")
    kept = {}
    for e in t.select("X", cat="cpu_memory", pid=pid):
        kept[e["tid"]] = kept.get(e["tid"], 0) + 1
    lost = {tid: n for (p, tid), n in t.lost_by_thread().items() if p == pid}
    names = {e["tid"]: (e.get("args") or {}).get("name")
             for e in t.select("M", "thread_name", pid=pid)}
    ringless = [tid for tid in workers if tid in lost and not kept.get(tid)]
    check(len(ringless) >= total - 256, "only %d workers lost everything by tid (want at "
          "least %d): losses by thread %r" % (len(ringless), total - 256,
                                              sorted(lost.items())[:5]))
    wrong = {tid: (kept.get(tid, 0), lost.get(tid, 0)) for tid in workers
             if kept.get(tid, 0) + lost.get(tid, 0) != 2 * per}
    check(not wrong, "%d workers whose kept + lost != %d, e.g. %r"
          % (len(wrong), 2 * per, sorted(wrong.items())[:5]))
    eq(sum(kept.get(tid, 0) for tid in workers) + sum(lost.get(tid, 0) for tid in workers),
       made, "the workers' events kept + lost vs made")
    misnamed = {tid: names.get(tid) for tid in ringless if names.get(tid) != workers[tid]}
    check(not misnamed, "threads without a ring not named as the program named them: %r"
          % sorted(misnamed.items())[:5])
    eq(sum(lost.values()), t.other.get("lost_events"), "per-thread losses vs lost_events")
    check("no ring for a new thread" in r.err, "no warning about threads without a ring: %r"
          % r)


@case
def data_deepbind_plugin_allocations(c):
    # A plugin loaded with RTLD_DEEPBIND calls libc's allocator directly (its own scope
    # first): its blocks must still be recorded, and the copy libc's strdup made for it
    # (seen: strdup allocates through the global scope) and the plugin freed must not be
    # reported live at the end. Lazily bound and bound at load.
    lib = data_build("deep_lib.so", ["cc", "-O1", "-g", "-shared", "-fPIC"], "deep_lib.c")
    k, size, dup = 10, 7777, 555
    for mode in ("lazy", "now"):
        r = c.run([c.prog("deepbind"), lib, mode, k, size, dup],
                  env={"PROFILER_OUTPUT": c.path(mode)})
        eq(r.rc, 0, "%s: exit status: %r" % (mode, r))
        pid = pid_of(r)
        t, _ = c.outputs(mode)
        t.wellformed()
        eq(t.count("malloc", size, pid), k, "%s: the plugin's marked mallocs" % mode)
        eq(matched_frees(t, pid, {"malloc": size}), k, "%s: the plugin's marked frees" % mode)
        unmatched, live = unmatched_frees(t, pid)
        eq(unmatched, [], "%s: releases of blocks never seen allocated" % mode)
        dup_blocks = [e for e in t.select("X", cat="cpu_memory", pid=pid)
                      if (e.get("args") or {}).get("bytes") in (dup + 1,)
                      and ptr(e["args"]["ptr"]) in live]
        eq(dup_blocks, [], "%s: the plugin's freed strings still live at the end" % mode)
        eq(t.count("malloc", dup + 1, pid), 2, "%s: the string and its strdup copy" % mode)


@case
def data_unseen_frees_said_apart(c):
    # Blocks allocated while paused and freed while recording: their releases are not
    # matched frees. The report's frees are the matched ones (the K recorded pairs and
    # whatever libc matched), the others are counted apart and said under the table.
    k, size = 20, 3217
    r, t = profile(c, [c.prog("free_unseen"), k, size])
    pid = pid_of(r)
    eq(t.count("malloc", size, pid), k, "marked mallocs recorded (the paused ones are not)")
    unmatched, live = unmatched_frees(t, pid)
    check(len(unmatched) >= k, "the trace has %d unmatched releases, want >= %d"
          % (len(unmatched), k))
    rep = c.report_json(c.path(DEFAULT_PREFIX + ".prof"))
    proc = report_process(rep, pid)[0]
    eq(proc.get("frees_unmatched"), len(unmatched), "report frees_unmatched vs the trace")
    eq(proc["frees"] + len(live), proc["allocations"],
       "report frees (matched) + blocks live at the end vs allocations")
    check(re.search(r"\(%d more releases of blocks never seen allocated" % len(unmatched),
                    c.text()), DEFAULT_PREFIX + ".txt does not say the unmatched releases:\n%s"
          % c.text()[-3000:])
