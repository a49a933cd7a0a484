# ranks: the processes of a distributed job as ranks: the launcher's variables recorded
# per process and shown; torch.distributed's collectives in the collective category;
# the tables across ranks (waiting, the slowest rank per step).
# Run by test/e2e/run.py in the harness's namespace (see README.md).

# A launcher of two programs with a launcher's variables set by hand, as srun or mpirun
# would set them: sh starts both with their own variables.
RANKS_BY_HAND = ('SLURM_JOB_ID=77 SLURM_NTASKS=2 SLURM_PROCID=0 SLURM_LOCALID=0 "$0" 10 64 & '
                 'SLURM_JOB_ID=77 SLURM_NTASKS=2 SLURM_PROCID=1 SLURM_LOCALID=1 "$0" 10 64 & '
                 'OMPI_COMM_WORLD_RANK=5 OMPI_COMM_WORLD_SIZE=8 OMPI_COMM_WORLD_LOCAL_RANK=1 '
                 '"$0" 10 64 & wait')


@case
def ranks_named_by_hand(c):
    r = c.run(["sh", "-c", RANKS_BY_HAND, c.prog("basic")],
              env={"PROFILER_OUTPUT": "run-%r"})
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
    # no collectives: no table across ranks
    eq(rep["ranks"], None, "ranks without collectives")


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
              env={"OMP_NUM_THREADS": "1"}, timeout=300)
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
    check(all(abs(w - RANKS_SLEEP) <= 0.1 * RANKS_SLEEP for w in waits),
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
