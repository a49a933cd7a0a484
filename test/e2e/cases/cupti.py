# cupti: CUPTI: GPU kernels, copies and sets on the timeline (a fake libcupti).
# Run by test/e2e/run.py in the harness's namespace (see README.md).


# ---------------------------------------------------------------------------------------
# CUPTI: GPU kernels, copies and sets on the timeline, from a fake libcupti.so.13 built
# against the real CUDA 13 headers (no GPU needed); the program plays the driver's cuInit
GPU_TID_BASE = 0x40000000
VECADD = "vecAdd(float*, float*, float*, int)"  # _Z6vecAddPfS_S_i, demangled
GEMM = "void gemm<128>(float const*, float const*, float*)"  # _Z4gemmILi128EEvPKfS1_Pf


def at_ns(us):
    """A trace time (us, 3 decimals) as integer ns."""
    return int(round(us * 1000))


def cupti_lines(err):
    """libprof's lines on stderr about CUDA or CUPTI (not the summary)."""
    return [l for l in err.splitlines() if ("CUPTI" in l or "CUDA" in l or "cuda" in l)
            and not SUMMARY_RE.match(l)]


def gpu_rows(t, pid):
    """{tid: name} of the GPU rows (thread_name metadata) of pid."""
    return {e["tid"]: e["args"]["name"] for e in t.select("M", "thread_name", pid=pid)
            if e["tid"] >= GPU_TID_BASE}


def check_gpu_timeline(c, r, t, kernels):
    """Kernels, copies and the set of gpu_app on their rows, inside the timeline, each after
    its launch on the launching thread, with a flow arrow from launch to work."""
    pid = pid_of(r)
    tid_main, tid_second = pid_of(r, "tid_main"), pid_of(r, "tid_second")
    t.wellformed()
    rows = gpu_rows(t, pid)
    eq(sorted(rows.values()), ["GPU 0, stream 13", "GPU 0, stream 7"], "GPU rows")
    row = {name: tid for tid, name in rows.items()}
    s7, s13 = row["GPU 0, stream 7"], row["GPU 0, stream 13"]
    gpu = [e for e in t.select("X", pid=pid) if e["cat"] in ("cuda_kernel", "cuda_memcpy",
                                                           "cuda_memset")]
    eq(len([e for e in gpu if e["name"] == VECADD and e["tid"] == s7]), kernels,
       "vecAdd kernels on the stream-7 row")
    eq(len([e for e in gpu if e["name"] == GEMM and e["tid"] == s13]), kernels,
       "gemm<128> kernels on the stream-13 row")
    copies = sorted((e["name"], e["args"]["bytes"], e["tid"]) for e in gpu
                    if e["cat"] != "cuda_kernel")
    eq(copies, sorted([("Memcpy HtoD", 1 << 20, s7)] * 3 + [("Memcpy DtoH", 4096, s7)] * 2 +
                      [("Memset", 65536, s13)]), "copies and sets (name, bytes, row)")
    for e in gpu:
        a = e["args"]
        eq((a["device"], a["context"], a["stream"]), (0, 1, 7 if e["tid"] == s7 else 13),
           "device, context, stream of %r" % e)
    for e in [e for e in gpu if e["cat"] == "cuda_kernel"]:
        eq((e["args"]["grid"], e["args"]["block"]), (8, 128), "grid and block of %r" % e)
    # the launches: CUPTI's API records, on the threads that made them
    api = {e["args"]["correlation"]: e for e in t.select("X", cat="cuda_api", pid=pid)}
    rep = c.report_json(c.path("libprof.prof"))
    end_us = rep["duration_ns"] / 1000.0
    for e in gpu:
        corr = e["args"]["correlation"]
        launch = api.get(corr)
        check(launch, "no API record with correlation %d for %r" % (corr, e))
        want_tid = tid_second if e["tid"] == s13 else tid_main
        eq(launch["tid"], want_tid, "thread of the launch of %r" % e)
        check(at_ns(launch["ts"]) + at_ns(launch["dur"]) <= at_ns(e["ts"]),
              "GPU work starts before its launch ended: %r, launch %r" % (e, launch))
        check(0 <= e["ts"] and e["ts"] + e["dur"] <= end_us,
              "GPU work outside the timeline [0, %.3f] us: %r" % (end_us, e))
    names = {(e["name"], e["tid"]) for e in api.values()}
    for want in (("cudaLaunchKernel", tid_main), ("cudaLaunchKernel", tid_second),
                 ("cudaMemcpyAsync", tid_main), ("cuMemsetD8Async", tid_second),
                 ("cudaDeviceSynchronize", tid_main)):
        check(want in names, "no API event %s on thread %d: %r" % (want + (sorted(names),)))
    # flows: "s" on the launch, "f" bound to the GPU work, same id
    starts = {e["id"]: e for e in t.select("s", pid=pid)}
    ends = {e["id"]: e for e in t.select("f", pid=pid)}
    eq(len(ends), len(gpu), "flow ends (one per GPU event)")
    eq(sorted(starts), sorted(ends), "flow ids: starts vs ends")
    by_place = {(e["tid"], at_ns(e["ts"])): e for e in gpu}
    for fid, f in ends.items():
        work = by_place.get((f["tid"], at_ns(f["ts"])))
        check(work and f.get("bp") == "e", "flow end %r is not on a GPU event" % f)
        launch = api[work["args"]["correlation"]]
        s = starts[fid]
        eq((s["tid"], at_ns(s["ts"])), (launch["tid"], at_ns(launch["ts"])),
           "flow start of %r (its launch %r)" % (work, launch))
    eq(t.other.get("json_flows"), 2 * len(gpu), "otherData.json_flows")
    return rep


@case
def cupti_gpu_timeline(c):
    out, bins = build_cupti_programs()
    kernels = 40
    r, t = profile(c, [bins["gpu_app"], "plain", kernels])
    eq(r.kv("initialize_injection"), ["1"], "InitializeInjection")
    eq(cupti_lines(r.err), [], "CUDA/CUPTI lines on stderr")
    rep = check_gpu_timeline(c, r, t, kernels)
    counts = {(x["category"], x["name"]): x["count"] for x in rep["rows"]}
    for key, n in ((("cuda_kernel", VECADD), kernels), (("cuda_kernel", GEMM), kernels),
                   (("cuda_memcpy", "Memcpy HtoD"), 3), (("cuda_memcpy", "Memcpy DtoH"), 2),
                   (("cuda_memset", "Memset"), 1), (("cuda_api", "cudaLaunchKernel"), 2 * kernels)):
        eq(counts.get(key), n, "report row %s/%s" % key)
    copies = {x["kind"]: x for x in rep["copies"]}
    eq(sorted(copies), ["Memcpy DtoH", "Memcpy HtoD", "Memset"], "copies table kinds")
    h = copies["Memcpy HtoD"]
    eq((h["count"], h["bytes"], h["total_ns"]), (3, 3 << 20, 300000), "HtoD copies row")
    check(abs(h["bandwidth_gbps"] - (3 << 20) / 300000.0) < 0.01, "HtoD bandwidth %r" % h)
    eq(copies["Memset"]["category"], "cuda_memset", "memset row category")
    text = c.text()
    check("GPU copies and sets" in text, "libprof.txt has no copies table")
    rows = text_rows(text)
    eq(rows.get(("cuda_memcpy", "Memcpy HtoD")), 3, "text row cuda_memcpy/Memcpy HtoD")
    # libprof found CUPTI itself (search path), with the program not linking it
    r2, t2 = run_out(c, [bins["gpu_app_dl"], "plain", 5], "dl", {"LD_LIBRARY_PATH": out})
    eq(r2.kv("cupti_loaded"), ["1"], "gpu_app_dl: libcupti loaded by libprof")
    eq(trace_counts(t2, "cuda_kernel").get(VECADD), 5, "gpu_app_dl: vecAdd kernels")


@case
def cupti_device_memory(c):
    # allocations only CUPTI sees (MEMORY2 records: device memory, and pinned host memory
    # as cpu_pinned/0) make the tables, counters and JSON, marked as CUPTI's; when the
    # wrapped CUDA calls saw
    # allocations in the process, theirs are used and CUPTI's left out (never both)
    out, bins = build_cupti_programs()
    mib = 1 << 20
    r, t = profile(c, [bins["gpu_app"], "memory", 3])
    eq(cupti_lines(r.err), [], "CUDA/CUPTI lines on stderr")
    proc = c.report_json(c.path("libprof.prof"))["processes"][0]
    eq([(g["device"], g["allocations"], g["frees"], g["bytes_allocated"],
         g["peak_live_bytes"], g["live_bytes_at_end"], g["source"])
        for g in proc["gpu_memory"]],
       [(0, 2, 1, 3 * mib, 3 * mib, 2 * mib, "cupti"),
        (1, 1, 0, mib // 2, mib // 2, mib // 2, "cupti"),
        (None, 1, 0, 64 << 10, 64 << 10, 64 << 10, "cupti")], "gpu memory from CUPTI")
    text = c.text()
    check("Memory: gpu/0, per process" in text and "Memory: gpu/1, per process" in text,
          "no gpu/0 and gpu/1 tables")
    check("from CUPTI's memory records" in text, "the tables do not say the source")
    pid = pid_of_trace(t)
    got = [e["args"]["bytes"] for e in sorted(t.select("C", "GPU 0 live bytes", pid=pid),
                                              key=lambda e: e["ts"])]
    eq(got, [mib, 3 * mib, 2 * mib], "GPU 0 live bytes counter")
    # each allocation lies inside the cudaMalloc / cudaMallocHost API record that made it
    api = sorted((e["ts"], e["ts"] + e["dur"]) for e in t.select("X", pid=pid)
                 if e["name"] in ("cudaMalloc", "cudaMallocHost"))
    allocs = sorted(e["ts"] for e in t.select("X", "GPU allocation", pid=pid))
    eq(len(allocs), 4, "GPU allocation events (device and pinned memory)")
    check(all(any(a <= x <= b for a, b in api) for x in allocs),
          "allocations outside their cudaMalloc: %r vs %r" % (allocs, api))
    # the wrappers saw one allocation and CUPTI four they did not (on a real GPU: cuBLAS's
    # own cuMemAlloc_v2 through a driver table libprof did not wrap): CUPTI's count, and
    # the outputs say why; partial figures would be a wrong peak
    p = build_cuda_programs()
    r, t = run_out(c, [bins["gpu_app"], "memory_both", 3], "both",
                   {"LD_LIBRARY_PATH": p["lib"]})
    eq((r.kv("wrapped_malloc"), r.kv("wrapped_free")), (["0"], ["0"]), "wrapped calls")
    proc = c.report_json(c.path("both.prof"))["processes"][0]
    eq([(g["device"], g["peak_live_bytes"], g["source"], g.get("wrapped_calls"))
        for g in proc["gpu_memory"]],
       [(0, 3 * mib, "cupti", 2), (1, mib // 2, "cupti", 2), (None, 64 << 10, "cupti", 2)],
       "gpu memory when CUPTI saw more than the wrappers")
    check("from CUPTI's memory records, which saw more than the wrapped CUDA calls: 5 "
          "allocations and releases against 2" in c.text("both"),
          "both: source note: %r" % c.text("both")[-600:])
    # the wrappers saw more (two pairs against CUPTI's one allocation): theirs, never both
    r, t = run_out(c, [bins["gpu_app"], "memory_wrapped_more", 3], "wrapped",
                   {"LD_LIBRARY_PATH": p["lib"]})
    eq(r.kv("wrapped_malloc"), ["0", "0"], "wrapped calls")
    proc = c.report_json(c.path("wrapped.prof"))["processes"][0]
    eq([(g["device"], g["allocations"], g["frees"], g["peak_live_bytes"], g["source"])
        for g in proc["gpu_memory"]], [(0, 2, 2, 4096, "cuda_api")],
       "gpu memory when the wrappers saw more")
    check("from CUPTI's memory records" not in c.text("wrapped"), "wrapped: source note")
    # PROFILER_PROFILE_MEMORY=0: no memory records asked of CUPTI
    r, t = run_out(c, [bins["gpu_app"], "memory", 3], "nomem", {"PROFILER_PROFILE_MEMORY": "0"})
    proc = c.report_json(c.path("nomem.prof"))["processes"][0]
    eq(proc["gpu_memory"], [], "gpu memory with PROFILER_PROFILE_MEMORY=0")


@case
def cupti_follows_pause(c):
    # CUPTI's records arrive late; what happened while recording was paused is left out
    # as the program's own events are: API calls by their start, GPU work by the launch
    # that queued it (a kernel launched before the pause and run after it is kept)
    out, bins = build_cupti_programs()
    kernels = 3
    r, t = profile(c, [bins["gpu_app"], "pause", kernels])
    eq(r.kv("libprof_api"), ["1"], "libprof's pause/resume found")
    got = trace_counts(t, "cuda_kernel")
    eq({k: got.get(k, 0) for k in ("lng()", "edge()", "hidden()", "visible()", VECADD)},
       {"lng()": 1, "edge()": 1, "hidden()": 0, "visible()": 2, VECADD: kernels},
       "kernels recorded around the pause")
    api = trace_counts(t, "cuda_api")
    # 2 x kernels launches before, lng, edge, visible x 2; synchronizes: before, after
    eq((api.get("cudaLaunchKernel"), api.get("cudaDeviceSynchronize")),
       (2 * kernels + 4, 2), "API records around the pause")


@case
def cupti_conflicts(c):
    out, bins = build_cupti_programs()
    # another tool holds CUPTI from the start (Nsight Systems): one line, no GPU timeline
    r, t = profile(c, [bins["gpu_app"], "plain", 5], env={"FAKE_CUPTI_HELD": "Nsight Systems"})
    lines = cupti_lines(r.err)
    eq(len(lines), 1, "lines about CUPTI when it is held: %r" % lines)
    check("CUPTI is held by another tool (Nsight Systems)" in lines[0], "the line: %r" % lines)
    eq(t.select("X", cat="cuda_kernel"), [], "kernels recorded while another tool holds CUPTI")
    # a tool that claims CUPTI later (torch.profiler's Kineto) is refused, in one line, and
    # libprof keeps its timeline
    r, t = run_out(c, [bins["gpu_app"], "late", 5], "late", {})
    for k, v in (("late_subscribe", "39"), ("late_callbacks", "39"), ("late_enable", "39"),
                 ("late_disable", "0"), ("late_finalize", "0")):
        eq(r.kv(k), [v], k)
    lines = cupti_lines(r.err)
    eq(len(lines), 1, "lines about the late claim: %r" % lines)
    check("cuptiSubscribe" in lines[0] and "PROFILER_CUPTI=0" in lines[0], "the line: %r" % lines)
    eq(r.kv("kineto_got_a_buffer"), [], "the refused tool got records")
    counts = trace_counts(t, "cuda_kernel")
    eq((counts.get(VECADD), counts.get("after()")), (5, 2), "kernels before and after the claim")
    # PROFILER_CUPTI=0: libprof leaves CUPTI alone, the other tool gets it
    r, t = run_out(c, [bins["gpu_app"], "late", 5], "off", {"PROFILER_CUPTI": "0"})
    eq((r.kv("injection"), r.kv("calls_after_init")), (["none"], ["0"]),
       "PROFILER_CUPTI=0: injection path and CUPTI calls before the program's own")
    eq([r.kv(k) for k in ("late_subscribe", "late_callbacks", "late_enable")],
       [["0"]] * 3, "PROFILER_CUPTI=0: the other tool's claim")
    eq(cupti_lines(r.err), [], "PROFILER_CUPTI=0: lines about CUPTI")
    eq([e for e in t.events if str(e.get("cat", "")).startswith("cuda")], [],
       "PROFILER_CUPTI=0: CUDA events")
    r, t = run_out(c, [bins["gpu_app_dl"], "plain", 5], "off_dl",
                   {"PROFILER_CUPTI": "0", "LD_LIBRARY_PATH": out})
    eq((r.kv("cupti_loaded"), r.kv("cupti_mapped")), (["0"], ["0"]),
       "PROFILER_CUPTI=0: libcupti loaded (%r)" % r)


@case
def cupti_dropped_and_flush(c):
    out, bins = build_cupti_programs()
    # CUPTI's dropped records are lost events; a context going flushes what is pending
    r, t = profile(c, [bins["gpu_app"], "destroy", 10], env={"FAKE_CUPTI_DROPPED": "7"})
    eq(r.kv("undelivered_after_destroy"), ["0"], "records left in CUPTI when the context went")
    eq(t.other.get("lost_events"), 7, "lost events (CUPTI's dropped records)")
    eq(sum(t.lost_by_thread().values()), 7, "'lost' instants")
    check(re.search(r"^WARNING: 7 events lost", c.text(), re.M), "no loss warning in libprof.txt")
    counts = trace_counts(t, "cuda_kernel")
    eq((counts.get(VECADD), counts.get(GEMM)), (10, 10), "kernels")
    # the exit flush alone: records still in CUPTI's buffers when main returns
    r, t = run_out(c, [bins["gpu_app"], "plain", 3], "exit", {})
    eq(trace_counts(t, "cuda_kernel"), {VECADD: 3, GEMM: 3}, "kernels flushed at exit")


@case
def gpu_check_without_a_gpu(c):
    # scripts/gpu_check.py (the real-GPU checks of docs/GPU.md) says in one line that it
    # checked nothing, exit 2, where there is no CUDA device; and its analysis of a trace
    # holds on the fake CUPTI's timeline
    script = os.path.join(ROOT, "scripts", "gpu_check.py")
    r = subprocess.run([sys.executable, script, "--build", BUILD], capture_output=True,
                       text=True)
    eq(r.returncode, 2, "exit status without a GPU: %r" % r)
    check(re.match(r"gpu_check: no CUDA device for .*: nothing checked", r.stdout),
          "the line: %r" % r.stdout)
    out, bins = build_cupti_programs()
    r, t = profile(c, [bins["gpu_app"], "plain", 3])
    probe = ("import json, sys; sys.path.insert(0, %r); import gpu_check as g\n"
             "ev = json.load(open(%r))['traceEvents']\n"
             "g.check_timeline(ev); g.check_api(ev, '')\n"
             "t, aside = g.torch_gpu_work({'Memset (Device)': 3, 'Memcpy HtoD (Pinned -> "
             "Device)': 2, 'Optimizer.step#SGD.step': 1, 'k': 4}, "
             "[{'cat': 'user', 'name': 'Optimizer.step#SGD.step'}])\n"
             "assert (t, aside) == ({'Memset': 3, 'Memcpy HtoD': 2, 'k': 4}, "
             "['Optimizer.step#SGD.step']), (t, aside)\n"
             "sys.exit(0 if all(ok for _, ok, _ in g.results) else 1)"
             % (os.path.join(ROOT, "scripts"), c.path("libprof.json")))
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    eq(p.returncode, 0, "gpu_check's timeline and API checks on the fake GPU: %r" % p)
    check("6 kernels" in p.stdout, "kernels counted: %r" % p.stdout)


@case
def cupti_no_cuda(c):
    out, bins = build_cupti_programs()
    # a program without CUDA, the fake CUPTI findable: nothing of CUDA loaded or said
    r, t = profile(c, [bins["no_cuda"]], env={"LD_LIBRARY_PATH": out})
    eq((r.kv("cupti_mapped"), r.kv("cuda_mapped")), (["0"], ["0"]), "CUDA libraries mapped")
    eq(cupti_lines(r.err), [], "lines about CUDA")
    cats = {e.get("cat") for e in t.events if e.get("ph") == "X"}
    eq(sorted(x for x in cats if "cuda" in x), [], "CUDA categories in the trace")
    check("GPU" not in c.text(), "libprof.txt mentions a GPU")
    eq(gpu_rows(t, pid_of_trace(t)), {}, "GPU rows")


@case
def cupti_real_library_no_driver(c):
    out, bins = build_cupti_programs()
    # the real libcupti.so.13 on a machine without a driver: loaded, refuses, and libprof
    # says nothing (the program plays cuInit; the fake's controls are missing)
    inc = cupti_include()
    dirs = [os.path.join(os.path.dirname(inc), d) for d in ("lib64", "lib", "extras/CUPTI/lib64")]
    lib = next((d for d in dirs if os.path.exists(os.path.join(d, "libcupti.so.13"))), None)
    check(lib, "no libcupti.so.13 in %s" % dirs)
    r, t = profile(c, [bins["gpu_app_dl"], "plain", 3], env={"LD_LIBRARY_PATH": lib})
    eq([r.kv(k) for k in ("initialize_injection", "cupti_loaded", "cupti_mapped")],
       [["1"], ["0"], ["1"]], "injection, fake controls, libcupti mapped")
    eq(cupti_lines(r.err), [], "lines about CUPTI")
    eq([e for e in t.events if str(e.get("cat", "")).startswith("cuda")], [], "CUDA events")
