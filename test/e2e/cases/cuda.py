# cuda: CUDA runtime and driver API calls (fake libraries, no GPU).
# Run by test/e2e/run.py in the harness's namespace (see README.md).


# ---------------------------------------------------------------------------------------
# CUDA runtime and driver API calls (category cuda_api; preload/gpu/cuda_api.c,
# cuda_getproc.c), with no GPU: a fake libcuda.so.1 and libcudart.so.13 built here from
# test/e2e/cuda with the toolkit's headers, and the real libcudart.so.13 with no driver


def cuda_calls(c, capture="libprof.prof"):
    """The interposed calls of a capture (cuda_api complete events without flags; CUPTI's
    API records have theirs), in start order per thread."""
    evs = [e for e in read_capture(c.path(capture))
           if e["cat"] == "cuda_api" and e["type"] == 1 and not e["flags"]]
    return sorted(evs, key=lambda e: (e["pid"], e["tid"], e["t0"], -e["t1"]))


def cuda_fake_counts(r):
    """{name: calls} the fake libraries counted themselves (counts_rt / counts_drv lines)."""
    counts = {}
    for line in r.out.splitlines():
        if line.startswith("counts_"):
            for tok in line.split()[1:]:
                k, v = tok.split("=")
                counts[k] = int(v)
    check(counts, "the program printed no counts: %r" % r)
    return counts


def cuda_exports():
    """The CUDA names libprof.so exports (its wrappers)."""
    out = subprocess.run(["nm", "-D", "--defined-only", Setup.lib], capture_output=True,
                         text=True).stdout
    names = {l.split()[-1] for l in out.splitlines() if l.strip()}
    return {n for n in names if re.match(r"^(cuda|__cuda|cu[A-Z])", n)}


def cuda_check_counts(c, r, how, wrapped):
    """The cuda_api rows of the report are exactly the calls the fakes counted, for the
    functions libprof wraps; the others (cuDriverGetVersion, cuDeviceGet, the 32-bit
    cuMemAlloc) have no row. The program saw every result it expected."""
    eq(r.kv("bad"), ["0"], "%s: calls that returned something unexpected" % how)
    rep = c.report_json(c.path("libprof.prof"), "--category", "cuda_api")
    got = {x["name"]: x["count"] for x in rep["rows"] if x.get("category") == "cuda_api"}
    counts = cuda_fake_counts(r)
    want = {k: v for k, v in counts.items() if v and k in wrapped}
    eq(got, want, "%s: cuda_api rows vs the calls the fake libraries counted" % how)
    return counts


def cuda_parent(calls, e):
    """The innermost call e lies in (same thread, one level up), or None."""
    best = None
    for o in calls:
        if (o is not e and o["pid"] == e["pid"] and o["tid"] == e["tid"] and
                o["t0"] <= e["t0"] and e["t1"] <= o["t1"] and o["depth"] < e["depth"] and
                (best is None or o["depth"] > best["depth"])):
            best = o
    return best


@case
def cuda_runtime_over_fake_driver(c):
    # the fake runtime reaches the fake driver the real one's way (dlopen, dlsym of
    # cuGetProcAddress_v2, the self-query, lookups by version): every runtime call and
    # every driver call it makes is one event, the driver's nested in the runtime's
    p = build_cuda_programs()
    wrapped = cuda_exports()
    rounds = 4
    parents = {"cuMemAlloc_v2": {"cudaMalloc"}, "cuMemFree_v2": {"cudaFree"},
               "cuMemcpyHtoD_v2": {"cudaMemcpy"}, "cuMemcpyDtoH_v2": {"cudaMemcpy"},
               "cuLaunchKernel": {"cudaLaunchKernel", "__cudaLaunchKernel"},
               "cuLaunchKernel_ptsz": {"cudaLaunchKernel_ptsz"},
               "cuCtxSynchronize_v2": {"cudaDeviceSynchronize"},
               # the runtime starts the driver inside its first call
               "cuInit": {"cudaMalloc"}, "cuGetProcAddress_v2": {"cudaMalloc"}}
    for lib in ("lib", "lib_symbolic"):
        how = "cuda_rt over %s" % os.path.basename(p[lib])
        r, t = profile(c, [p["rt"], "basic", rounds],
                       env={"LD_LIBRARY_PATH": p[lib], "PROFILER_OVERWRITE": "1"})
        t.wellformed()
        counts = cuda_check_counts(c, r, how, wrapped)
        eq(counts["cudaLaunchKernel"], rounds, "%s: launches made" % how)
        calls = cuda_calls(c)
        eq(len(t.select("X", cat="cuda_api")), len(calls), "%s: trace vs capture events" % how)
        for e in calls:
            parent = cuda_parent(calls, e)
            if e["name"] in parents:
                check(parent and parent["name"] in parents[e["name"]] and
                      e["depth"] == parent["depth"] + 1,
                      "%s: %s not directly inside %s: %r in %r"
                      % (how, e["name"], "/".join(sorted(parents[e["name"]])), e, parent))
            else:
                check(parent is None, "%s: %s nested in %r" % (how, e["name"], parent))
        # results: only cudaFree(0) failed, and the driver call under it
        failed = sorted((e["name"], e["b"]) for e in calls if e["b"])
        eq(failed, [("cuMemFree_v2", 1), ("cudaFree", 1)], "%s: calls with a nonzero result"
           % how)
        ids = [e["a"] for e in calls]
        check(all(ids) and len(set(ids)) == len(ids), "%s: correlation ids not distinct: %r"
              % (how, ids))
        eq(ids, sorted(ids), "%s: correlation ids in call order" % how)
        # device memory: each cudaMalloc once (not again for the cuMemAlloc_v2 inside it)
        proc = c.report_json(c.path("libprof.prof"))["processes"][0]
        eq([(g["device"], g["allocations"], g["frees"], g["bytes_allocated"],
             g["peak_live_bytes"], g["live_bytes_at_end"]) for g in proc["gpu_memory"]],
           [(0, rounds, rounds, rounds * 4096, 4096, 0)], "%s: gpu/0 memory" % how)
        check("Memory: gpu/0, per process" in c.text(), "%s: no gpu/0 memory table" % how)


@case
def cuda_device_memory(c):
    # every way libprof counts device memory (cuda_rt.c "memory"): pitched and 3D
    # allocations sized from what the call returned (the 3D extent is a stack argument),
    # async ones, the driver's VMM calls through entry points on the device their
    # properties name, host-located VMM memory left out, nested driver calls not counted
    # twice; per device in the tables and JSON, and as a counter track in the trace
    p = build_cuda_programs()
    wrapped = cuda_exports()
    r, t = profile(c, [p["rt"], "memory"], env={"LD_LIBRARY_PATH": p["lib"]})
    t.wellformed()
    counts = cuda_check_counts(c, r, "cuda_rt memory", wrapped)
    eq({k: counts.get(k) for k in ("cuMemCreate", "cuMemRelease", "cuMemAllocPitch_v2")},
       {"cuMemCreate": 3, "cuMemRelease": 2, "cuMemAllocPitch_v2": 3}, "driver calls made")
    dev0 = 1024 * 10 + 1024 * 10 * 3 + 4096 + 1024 * 5
    mib = 1 << 20
    proc = c.report_json(c.path("libprof.prof"))["processes"][0]
    eq([(g["device"], g["allocations"], g["frees"], g["bytes_allocated"],
         g["peak_live_bytes"], g["live_bytes_at_end"]) for g in proc["gpu_memory"]],
       [(0, 4, 4, dev0, dev0, 0), (1, 2, 1, 8 * mib, 8 * mib, 6 * mib),
        (None, 2, 1, mib + mib // 4, mib + mib // 4, mib // 4)], "gpu memory")
    eq([g["memory"] for g in proc["gpu_memory"]], ["gpu/0", "gpu/1", "cpu_pinned/0"],
       "memory domains")
    text = c.text()
    check("Memory: gpu/0, per process" in text and "Memory: gpu/1, per process" in text and
          "Memory: cpu_pinned/0, per process" in text, "no gpu/0, gpu/1 and pinned tables")
    pid = pid_of_trace(t)
    sizes0 = [10240, 30720, 4096, 5120]  # made in this order, freed in this order
    curve0 = [sum(sizes0[:i + 1]) for i in range(4)] + [sum(sizes0[i + 1:]) for i in range(4)]
    for dev, want in ((0, curve0),
                      (1, [2 * mib, 8 * mib, 6 * mib]),
                      ("pinned host", [mib, mib + mib // 4, mib // 4])):
        name = ("GPU %d live bytes" if dev in (0, 1) else "%s live bytes") % dev
        got = [e["args"]["bytes"] for e in sorted(t.select("C", name, pid=pid),
                                                  key=lambda e: e["ts"])]
        eq(got, want, "%s counter" % name)
        marks = t.select("i", ("peak GPU %d memory" if dev in (0, 1) else "peak %s memory")
                         % dev, pid=pid)
        eq([m["args"]["bytes"] for m in marks], [max(want)], "peak %s marker" % dev)
    eq(t.select("C", "GPU 2 live bytes"), [], "a counter for a device never used")
    # the host heap's counter is still its own track
    check(t.select("C", "live heap bytes", pid=pid), "no live heap bytes counter")
    # prof summary: a gpu/N row per device (and no timeless gpu_memory call rows), so
    # prof diff judges device memory: a peak twice as high is a regression on that row
    base = c.path("base.json")
    eq(c.prof("summary", c.path("libprof.prof"), "-o", base).rc, 0, "prof summary")
    doc = load_json(base)
    rows = {(r["category"], r["name"]): r for r in doc["runs"][0]["rows"]}
    eq([(k[1], r["kind"], r["allocs"], r["bytes"], r["peak_bytes"])
        for k, r in sorted(rows.items()) if k[0] == "gpu_memory"],
       [("cpu_pinned/0", "process", 2, mib + mib // 4, mib + mib // 4),
        ("gpu/0", "process", 4, dev0, dev0), ("gpu/1", "process", 2, 8 * mib, 8 * mib)],
       "gpu rows of the summary")
    for r in doc["runs"][0]["rows"]:
        if r["category"] == "gpu_memory" and r["name"] == "gpu/1":
            r["peak_bytes"] *= 2
    cur = c.path("cur.json")
    with open(cur, "w") as f:
        json.dump(doc, f)
    rc, d = perf_diff(c, base, cur, "--threshold", "peak=10%")
    eq((rc, perf_flagged(d)), (1, [("gpu_memory/gpu/1", "peak")]), "GPU peak regression")
    cell = perf_name(d, "gpu_memory", "gpu/1")["metrics"]["peak"]
    eq((cell["base"], cell["current"]), (8 * mib, 16 * mib), "gpu/1 peak in the diff")
    # with PROFILER_STACK=alloc, device memory has allocation sites like the heap's: in
    # the program (not in libprof or the runtime), their sums the device's figures
    r, t = run_out(c, [p["rt"], "memory"], "stacks",
                   {"LD_LIBRARY_PATH": p["lib"], "PROFILER_STACK": "alloc"})
    proc = c.report_json(c.path("stacks.prof"))["processes"][0]
    eq(len(proc["gpu_memory"]), 3, "memory domains with stacks")
    for g, (allocs, peak, leaked) in zip(proc["gpu_memory"], ((4, dev0, 0),
                                                             (2, 8 * mib, 6 * mib),
                                                             (2, mib + mib // 4, mib // 4))):
        sites = g.get("allocation_sites", [])
        check(sites and all("cuda_rt.c:" in x["site"] for x in sites),
              "%s sites: %r" % (g["memory"], sites))
        eq((sum(x["allocations"] for x in sites), sum(x["bytes_at_peak"] for x in sites),
            sum(x["live_bytes_at_end"] for x in sites)), (allocs, peak, leaked),
           "%s sites: allocations, bytes at the peak, leaked" % g["memory"])
    text = c.text("stacks")
    check("Allocation sites, gpu/1, pid" in text and "Live at exit (leaks), gpu/1, pid" in text,
          "no GPU sites in the text tables")


@case
def cuda_driver_entry_points(c):
    # pointers from cudaGetDriverEntryPoint[ByVersion] are wrapped and named after the
    # driver function they are (cuMemAlloc_v2 for ("cuMemAlloc", 3020), cuLaunchKernel_ptsz
    # when per-thread is asked for); the getter handed out keeps wrapping; the 32-bit
    # cuMemAlloc (version 2000) and unlisted functions are handed back as they are
    p = build_cuda_programs()
    wrapped = cuda_exports()
    for lib in ("lib", "lib_symbolic"):
        how = "cuda_rt entry over %s" % os.path.basename(p[lib])
        r, t = profile(c, [p["rt"], "entry"],
                       env={"LD_LIBRARY_PATH": p[lib], "PROFILER_OVERWRITE": "1"})
        counts = cuda_check_counts(c, r, how, wrapped)
        eq((counts["cuMemAlloc"], counts["cuDeviceGet"]), (1, 1),
           "%s: calls of unwrapped pointers (made, not recorded)" % how)
        names = {e["name"] for e in cuda_calls(c)}
        check({"cuMemAlloc_v2", "cuLaunchKernel_ptsz", "cuCtxSynchronize_v2"} <= names,
              "%s: driver calls through the pointers: %r" % (how, sorted(names)))


@case
def cuda_driver_linked_and_dlopened(c):
    # -lcuda: calls through the PLT, and cuGetProcAddress through it. Triton's way:
    # dlsym(dlopen("libcuda.so.1"), "cuLaunchKernelEx"); TensorFlow's: dlsym from a
    # libcudart handle. dlsym(RTLD_DEFAULT) still finds nothing where nothing global
    # defines the name (libprof's own definitions do not count).
    p = build_cuda_programs()
    wrapped = cuda_exports()
    for lib in ("lib", "lib_symbolic"):
        env = {"LD_LIBRARY_PATH": p[lib], "PROFILER_OVERWRITE": "1"}
        how = "cuda_drv (linked) over %s" % os.path.basename(p[lib])
        r, t = profile(c, [p["drv"]], env=env)
        cuda_check_counts(c, r, how, wrapped)
        frees = sorted(e["b"] for e in cuda_calls(c) if e["name"] == "cuMemFree_v2")
        eq(frees, [0, 1], "%s: cuMemFree_v2 results" % how)
        how = "cuda_drv_dl over %s" % os.path.basename(p[lib])
        r, t = profile(c, [p["drv_dl"]], env=env)
        eq(r.kv("default_cudaMalloc") + r.kv("default_cuLaunchKernel"), ["0", "0"],
           "%s: dlsym(RTLD_DEFAULT) of names only libprof defines" % how)
        counts = cuda_check_counts(c, r, how, wrapped)
        eq(counts["cuLaunchKernelEx"], 3, "%s: launches made" % how)
        calls = cuda_calls(c)
        alloc = [e for e in calls if e["name"] == "cuMemAlloc_v2"]
        check(len(alloc) == 1 and (cuda_parent(calls, alloc[0]) or {}).get("name") == "cudaMalloc",
              "%s: cuMemAlloc_v2 not inside the cudaMalloc from a handle: %r" % (how, alloc))


@case
def cuda_real_runtime(c):
    # the real libcudart.so.13, with no driver (or whichever this machine has): each
    # wrapper fires once and carries the code the runtime returned, which the program
    # sees unchanged. Then over the fake driver: the driver functions the real runtime
    # fetches (its dlsym of cuGetProcAddress_v2 from libcuda's handle, the self-query,
    # lookups by version) are recorded inside its calls, as many as the fake counted.
    p = build_cuda_programs()
    wrapped = cuda_exports()
    for lib in (None, p["lib"]):
        # a real driver would start CUPTI, whose API records then stand for these calls
        env = {"LD_LIBRARY_PATH": lib, "PROFILER_CUPTI": "0", "PROFILER_OVERWRITE": "1"}
        how = "real libcudart over %s" % (lib and "the fake driver" or "this machine's driver")
        bare = c.run([p["real"]], env=env, preload=False, autostart=False)
        r, t = profile(c, [p["real"]], env=env)
        eq(r.out, bare.out, "%s: the program's output with libprof vs without" % how)
        codes = {k[3:]: int(v) for k, v in re.findall(r"^(rc_\w+)=(-?\d+)$", r.out, re.M)}
        check(len(codes) == 6, "%s: result lines: %r" % (how, r))
        calls = cuda_calls(c)
        runtime = [e for e in calls if e["name"] in codes]
        eq({e["name"]: e["b"] for e in runtime}, codes, "%s: results recorded vs printed" % how)
        eq(len(runtime), len(codes), "%s: runtime calls recorded" % how)
        driver = [e for e in calls if e["name"] not in codes]
        for e in driver:
            parent = cuda_parent(calls, e)
            check(parent and parent["name"] in codes, "%s: driver call %s outside the "
                  "runtime's calls (in %r)" % (how, e["name"], parent))
        if lib is None:
            if r.kv("devices") == ["-1"]:
                c.note("no driver: cudaGetDeviceCount returned %d" % codes["cudaGetDeviceCount"])
            continue
        counts = cuda_fake_counts(r)
        got = {}
        for e in driver:
            got[e["name"]] = got.get(e["name"], 0) + 1
        eq(got, {k: v for k, v in counts.items() if v and k in wrapped},
           "%s: driver calls recorded vs counted by the fake" % how)
        check(got.get("cuGetProcAddress_v2"), "%s: the runtime's lookups were not seen" % how)
    # every CUDA name libprof exports is a real export of the runtime or the driver
    names = set()
    for lib in (os.path.join(p["home"], "lib64", "libcudart.so.13"),
                os.path.join(p["home"], "lib64", "stubs", "libcuda.so")):
        out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True,
                             text=True).stdout
        names |= {l.split()[-1].split("@")[0] for l in out.splitlines() if l.strip()}
    odd = sorted(n for n in wrapped if n not in names)
    eq(odd, [], "libprof's CUDA exports that neither libcudart.so.13 nor libcuda exports")


@case
def cuda_static_runtime(c):
    # a runtime linked statically exports nothing to interpose, but reaches the driver
    # through dlsym(libcuda handle, "cuGetProcAddress_v2"): libprof's hook hands it the
    # wrapped getter, so every lookup (and every driver function it returns) is libprof's.
    # The real runtime stops short of a working device over the fake driver (its private
    # export tables): its result is the same as without libprof.
    p = build_cuda_programs()
    env = {"LD_LIBRARY_PATH": p["lib"]}
    r, t = profile(c, [p["static"]], env=env)
    t.wellformed()
    plain = subprocess.run([p["static"]], capture_output=True, text=True,
                           env=dict(os.environ, **env))
    eq(r.kv("rc_cudaGetDeviceCount"),
       re.findall(r"rc_cudaGetDeviceCount=(\S+)", plain.stdout), "result without libprof")
    # (the runtime unloads the driver it gave up on; with libprof a reference to it stays)
    eq(r.kv("driver_loaded"), ["1"], "the static runtime loaded the (fake) driver")
    fake = int(r.kv("fake_cuGetProcAddress_v2")[0])
    check(fake >= 100, "the static runtime made only %d lookups" % fake)
    rep = c.report_json(c.path("libprof.prof"), "--category", "cuda_api")
    got = {x["name"]: x["count"] for x in rep["rows"] if x.get("category") == "cuda_api"}
    eq((got.get("cuInit"), got.get("cuGetProcAddress_v2")),
       (int(r.kv("fake_cuInit")[0]), fake), "driver calls recorded vs made")


@case
def cuda_off_and_programs_without_cuda(c):
    # PROFILER_CUDA=0: calls pass through unrecorded. A program with no CUDA: nothing
    # about CUDA anywhere (no category, no name, no message)
    p = build_cuda_programs()
    r, t = profile(c, [p["rt"], "basic", 2], env={"LD_LIBRARY_PATH": p["lib"],
                                                  "PROFILER_CUDA": "0"})
    eq(r.kv("bad"), ["0"], "PROFILER_CUDA=0: unexpected results")
    eq(cuda_fake_counts(r)["cudaMalloc"], 2, "PROFILER_CUDA=0: cudaMalloc calls made")
    eq(t.select(cat="cuda_api"), [], "PROFILER_CUDA=0: cuda_api events")
    # nor device memory from them: with the driver getters unwrapped they would see only
    # some allocations (a wrong peak); CUPTI's records stand in where CUPTI runs
    eq(t.select(cat="gpu_memory"), [], "PROFILER_CUDA=0: gpu_memory events")
    eq(c.report_json(c.path("libprof.prof"))["processes"][0]["gpu_memory"], [],
       "PROFILER_CUDA=0: device memory tables")
    r = c.run([c.prog("basic"), "3", "1000", "exit:0"], env={"PROFILER_OUTPUT": "plain"})
    check(r.rc == 0, "basic: %r" % r)
    c.outputs("plain")
    texts = {"stderr": r.err, "stdout": r.out}
    for ext in (".json", ".txt"):
        texts["plain" + ext] = read_text(c.path("plain" + ext))
    texts["capture names"] = " ".join(str(e["name"]) + " " + str(e["cat"])
                                      for e in read_capture(c.path("plain.prof")))
    for what, text in texts.items():
        text = text.replace(c.root, "").replace(BIN, "")
        check("cuda" not in text.lower(), "%s mentions CUDA: %s" % (
            what, text[max(0, text.lower().find("cuda") - 200):][:400]))
