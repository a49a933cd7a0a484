# ranks: the processes of a distributed job as ranks: the launcher's variables recorded
# per process and shown; torch.distributed's collectives in the collective category;
# the tables across ranks (waiting, the slowest rank per step).
# Run by test/e2e/run.py in the harness's namespace (see README.md).

import statistics  # noqa: E402 (this file's only import)

# The suite may itself run under a launcher (a CI job in Slurm): none of its variables
# reach these cases' processes.
NO_LAUNCHER = {v: None for v in (
    "TORCHELASTIC_RUN_ID", "RANK", "LOCAL_RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_MCA_ess_base_jobid",
    "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "PMIX_RANK", "PMIX_NAMESPACE",
    "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_JOB_ID")}

# A launcher of two programs with a launcher's variables set by hand, as srun or mpirun
# would set them: sh starts both with their own variables.
RANKS_BY_HAND = ('SLURM_JOB_ID=77 SLURM_NTASKS=2 SLURM_PROCID=0 SLURM_LOCALID=0 "$0" 10 64 & '
                 'SLURM_JOB_ID=77 SLURM_NTASKS=2 SLURM_PROCID=1 SLURM_LOCALID=1 "$0" 10 64 & '
                 'OMPI_COMM_WORLD_RANK=5 OMPI_COMM_WORLD_SIZE=8 OMPI_COMM_WORLD_LOCAL_RANK=1 '
                 '"$0" 10 64 & wait')


@case
def ranks_named_by_hand(c):
    r = c.run(["sh", "-c", RANKS_BY_HAND, c.prog("basic")],
              env=dict(NO_LAUNCHER, PROFILER_OUTPUT="run-%r"))
    eq(r.rc, 0, "the launcher (%r)" % r)
    # %r of the process that made the session (sh: no rank) is 0; every rank is in it
    check(os.path.exists(c.path("run-0.prof")), "no run-0.prof: %r" % os.listdir(c.path()))
    rep = c.report_json(c.path("run-0.prof"))
    host = socket.gethostname()
    got = sorted((p["rank"], p["local_rank"], p["world_size"], p["launcher"], p["job"],
                  p["label"]) for p in rep["processes"] if p["rank"] is not None)
    eq(got, [(0, 0, 2, "Slurm", "77", "rank 0 (%s) basic 10 64" % host),
             (1, 1, 2, "Slurm", "77", "rank 1 (%s) basic 10 64" % host),
             (5, 1, 8, "Open MPI", None, "rank 5 (%s) basic 10 64" % host)],
       "the ranks' facts")
    eq({p["host"] for p in rep["processes"] if p["rank"] is not None}, {host}, "the ranks' host")
    # the clock anchor: the session's monotonic and realtime clocks at one instant
    a = rep["clock_anchor"]
    check(a and abs(a["realtime_ns"] - time.time_ns()) < 120e9 and
          abs(a["monotonic_ns"] - time.monotonic_ns()) < 120e9, "clock_anchor: %r" % a)
    shell = [p for p in rep["processes"] if p["rank"] is None]
    check(shell and all(p["launcher"] is None for p in shell), "the shell: %r" % shell)
    t = Trace(load_json(c.path("run-0.json")))
    names = sorted(n for n in t.process_names().values() if n.startswith("rank "))
    eq(names, ["rank 0 (%s) basic 10 64" % host, "rank 1 (%s) basic 10 64" % host,
               "rank 5 (%s) basic 10 64" % host], "process names in the trace")
    with open(c.path("run-0.txt")) as f:
        text = f.read()
    check(re.search(r"^\d+ +rank 1 \(%s\) basic 10 64 " % re.escape(host), text, re.M),
          "the text tables' process rows: %r" % text[-1500:])
    # no collectives: no Ranks table; each name's time over the three ranks still
    eq(rep["ranks"], None, "ranks without collectives")
    across = {(x["category"], x["name"]): x for x in rep["across_ranks"]}
    m = across.get(("memory", "malloc"))
    check(m and m["ranks"] == 3 and m["min_ns"] <= m["median_ns"] <= m["max_ns"] and
          m["slowest_rank"] in (0, 1, 5), "malloc across ranks: %r" % m)
    check(re.search(r"^Across ranks \(each name's total time on each of the 3 ranks", text,
                    re.M), "no Across ranks section: %r" % text[-1500:])


# DDP on CPU (gloo), rank 1 sleeping in every step: a planted straggler.
RANKS_DDP = """
import os, time, torch, torch.distributed as dist
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(64, 64))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(6):
    if rank == 1:
        time.sleep(%(sleep)s)
    loss = model(torch.randn(32, 64)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
dist.destroy_process_group()
"""
RANKS_SLEEP = 0.1


@case(serial=True)
def ranks_torchrun_straggler(c):
    # the bare headline command around torchrun: one capture, each rank labelled, gloo's
    # collectives in their category, rank 1 the slowest in every step and rank 0 waiting
    # about the planted sleep in each
    py, version = torch2_python()
    torchrun = os.path.join(os.path.dirname(py), "torchrun")
    script = c.path("ddp.py")
    with open(script, "w") as f:
        f.write(RANKS_DDP % {"sleep": RANKS_SLEEP})
    r = c.run([torchrun, "--standalone", "--nproc_per_node=2", script],
              env=dict(NO_LAUNCHER, OMP_NUM_THREADS="1"), timeout=300)
    eq(r.rc, 0, "torchrun (%r)" % r)
    rep = c.report_json(c.path("libprof.prof"))
    host = socket.gethostname()
    ranks = sorted((p["rank"], p["world_size"], p["launcher"], p["label"].split(" ", 3)[:3])
                   for p in rep["processes"] if p["rank"] is not None)
    eq(ranks, [(0, 2, "torchrun", ["rank", "0", "(%s)" % host]),
               (1, 2, "torchrun", ["rank", "1", "(%s)" % host])], "the ranks")
    rows = {(x["category"], x["name"]): x for x in rep["rows"]}
    ar = rows.get(("collective", "gloo:all_reduce"))
    check(ar and ar["count"] >= 2 * 6, "gloo:all_reduce rows: %r"
          % [k for k in rows if "gloo" in k[1]])
    k = rep["ranks"]
    check(k, "no table across ranks")
    eq((k["count"], k["slowest_rank"], k["steps_from"], k["unmatched"]),
       (2, 1, "Optimizer.step", 0), "ranks, slowest, steps, unmatched")
    check(len(k["steps"]) >= 4, "steps compared: %r" % k["steps"])
    waits = []
    for s in k["steps"]:
        eq((s["slowest_rank"], s["most_waiting_rank"]), (1, 0), "step %d" % s["step"])
        waits.append(s["most_wait_ns"] / 1e9)
    # the median step: one step's wait moves with the scheduler on a loaded machine
    check(abs(statistics.median(waits) - RANKS_SLEEP) <= 0.1 * RANKS_SLEEP,
          "rank 0's waits per step %r, planted %.3f s" % (waits, RANKS_SLEEP))
    with open(c.path("libprof.txt")) as f:
        text = f.read()
    check(re.search(r"^Slowest: rank 1 ", text, re.M), "text: %r" % text[-2000:])
    live = text.split("\n", 3)[3]
    again = c.prof("report", c.path("libprof.prof"))
    eq(again.rc, 0, "prof report")
    check(again.out.split("\n", 3)[3] == live, "the run's tables differ from prof report's")
    c.note("torch %s: rank 0 waited %s s per step for the planted %.1f s"
           % (version, ", ".join("%.3f" % w for w in waits), RANKS_SLEEP))


@case(serial=True)
def ranks_mpirun_straggler(c):
    # the bare command around Open MPI's mpirun and a C program: MPI calls recorded with
    # no setting (the mpi preset), with bytes, datatype, communicator size and peer; the
    # last rank computes 100 ms longer each step and the others wait for it
    prog, mpirun = build_mpi_program()
    steps, n, slow_ms = 5, 1000, 100
    argv = [mpirun, "--oversubscribe", "-np", "2"]
    if os.getuid() == 0:
        argv.append("--allow-run-as-root")
    r = c.run(argv + [prog, steps, n, slow_ms], env=dict(NO_LAUNCHER, PROFILER_OUTPUT="mpi-%r"),
              timeout=180)
    eq(r.rc, 0, "mpirun (%r)" % r)
    check(sorted(r.kv("rank")) == ["0", "1"], "the ranks' output: %r" % r.out)
    rep = c.report_json(c.path("mpi-0.prof"))
    host = socket.gethostname()
    eq(sorted((p["rank"], p["world_size"], p["launcher"], p["label"])
              for p in rep["processes"] if p["rank"] is not None),
       [(i, 2, "Open MPI", "rank %d (%s) mpi_steps %d %d %d" % (i, host, steps, n, slow_ms))
        for i in (0, 1)], "the ranks")
    rows = {(x["category"], x["name"]): x["count"] for x in rep["rows"]}
    for want in (("collective", "MPI_Allreduce", 2 * steps), ("collective", "MPI_Bcast", 2),
                 ("collective", "MPI_Barrier", 2), ("MPI", "MPI_Sendrecv", 2 * steps),
                 ("MPI", "MPI_Init", 2), ("MPI", "MPI_Finalize", 2)):
        eq(rows.get(want[:2]), want[2], "%s/%s calls" % want[:2])
    msgs = {m["name"]: (m["count"], m["bytes"]) for m in rep["messages"]}
    # in place and off the root, the arguments MPI ignores are not asked about (asking
    # MPI_DATATYPE_NULL's size ended the program): each rank's one int
    eq(msgs, {"MPI_Allreduce": (2 * steps, 2 * steps * n * 8), "MPI_Bcast": (2, 8),
              "MPI_Barrier": (2, 0), "MPI_Sendrecv": (2 * steps, 2 * steps * n * 4),
              "MPI_Allgather": (2, 8), "MPI_Scatter": (2, 8), "MPI_Gather": (2, 8)},
       "bytes per call")
    t = Trace(load_json(c.path("mpi-0.json")))
    pids = {p["rank"]: p["pid"] for p in rep["processes"] if p["rank"] is not None}
    args = lambda name, pid: [e.get("args") for e in t.select("X", name, pid=pid)]
    eq(args("MPI_Allreduce", pids[0])[0],
       {"bytes": 8 * n, "datatype": "MPI_DOUBLE", "comm_size": 2}, "MPI_Allreduce's args")
    eq(args("MPI_Bcast", pids[1]),
       [{"bytes": 4, "datatype": "MPI_INT", "comm_size": 2, "peer": 0}], "MPI_Bcast's args")
    eq({a["peer"] for a in args("MPI_Sendrecv", pids[1])}, {0}, "rank 1 sends to rank 0")
    k = rep["ranks"]
    check(k, "no table across ranks")
    eq((k["count"], k["slowest_rank"], k["steps_from"], k["unmatched"], len(k["steps"])),
       (2, 1, "steps", 0, steps), "ranks, slowest, steps, unmatched, steps compared")
    waits = [s["most_wait_ns"] / 1e6 for s in k["steps"]]
    for s in k["steps"]:
        eq((s["slowest_rank"], s["most_waiting_rank"]), (1, 0), "step %d" % s["step"])
    check(abs(statistics.median(waits) - slow_ms) <= 0.1 * slow_ms,
          "rank 0's waits per step %r ms, planted %d ms" % (waits, slow_ms))
    c.note("rank 0 waited %s ms per step for the planted %d ms"
           % (", ".join("%.1f" % w for w in waits), slow_ms))
