"""One process of bench/torch_stacks.py: a few PyTorch training steps, timed one by one.

    python torch_stacks_model.py MODEL MODE STEPS WARMUP THREADS

MODEL: 'cnn' (a dispatch-bound small CNN: three tiny Conv2d/BatchNorm2d/ReLU layers on
3x16x16 images, batch 8, SGD with momentum) or 'gpt2' (HuggingFace GPT2LMHeadModel built from a
small GPT2Config with random weights, no download; AdamW; a batch of random token ids).
MODE: 'plain' (the steps as they are: native, or whatever LD_PRELOAD brings) or
'torchprof' (every step, warm-up included, inside torch.profiler.profile(activities=[CPU],
profile_memory=True, with_stack=True), as a PyTorch user would ask for allocations with
their call stacks), or 'stacks_from_steps' (under libprof preloaded without PROFILER_STACK:
prof_set_config("stack", "alloc") just before the first step, so that the import's
allocations do not take the call-stack area: what the steps' stacks cost on their own).
Prints one JSON line: the step times in ms (warm-up steps dropped),
their median, and the time of the set-up and of leaving the profiler. Exit status 3:
the model cannot be built here (no transformers), with a line on stderr saying why."""
import json
import statistics
import sys
import time

T_START = time.perf_counter()
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

T_IMPORT = time.perf_counter() - T_START


def cnn():
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
        nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(8, 3, 16, 16)
    y = torch.randint(0, 10, (8,))

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return step


def gpt2():
    try:
        import transformers
    except ImportError as e:
        print(f"gpt2: transformers cannot be imported by {sys.executable} ({e})",
              file=sys.stderr)
        sys.exit(3)
    cfg = transformers.GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=2000,
                                  n_positions=128, bos_token_id=0, eos_token_id=0)
    model = transformers.GPT2LMHeadModel(cfg)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, cfg.vocab_size, (4, 64))

    def step():
        opt.zero_grad()
        out = model(input_ids=ids, labels=ids)
        out.loss.backward()
        opt.step()
    return step


def main():
    model, mode = sys.argv[1], sys.argv[2]
    steps, warmup, threads = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    torch.manual_seed(0)
    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    step = {"cnn": cnn, "gpt2": gpt2}[model]()
    setup = time.perf_counter() - t0
    times, cpu = [], []  # wall and this thread's CPU time a step (the CPU time does not
    # count what the VM's neighbours take)

    def run():
        for _ in range(steps):
            t, c = time.perf_counter_ns(), time.thread_time_ns()
            step()
            times.append((time.perf_counter_ns() - t) / 1e6)
            cpu.append((time.thread_time_ns() - c) / 1e6)

    # libprof's lines on stderr before this one came during the import and the set-up
    # (and the clock, CLOCK_MONOTONIC: `perf record -k mono` then `perf report --time`)
    print(f"torch_stacks_model: steps begin {time.monotonic():.6f}", file=sys.stderr,
          flush=True)
    exit_s = 0.0
    if mode == "stacks_from_steps":
        import ctypes
        setc = getattr(ctypes.CDLL(None), "prof_set_config", None)
        if setc is None or setc(b"stack", b"alloc") != 0:
            sys.exit("stacks_from_steps: libprof is not preloaded, or refused stack=alloc")
    if mode == "torchprof":
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True,
                       with_stack=True)
        prof.__enter__()
        run()
        t = time.perf_counter()
        prof.__exit__(None, None, None)  # torch stops and parses its events here
        exit_s = time.perf_counter() - t
    else:
        run()
    print(f"torch_stacks_model: steps end {time.monotonic():.6f}", file=sys.stderr, flush=True)
    kept = times[warmup:]
    print(json.dumps({"median_ms": statistics.median(kept), "steps_ms": kept,
                      "median_cpu_ms": statistics.median(cpu[warmup:]),
                      "import_s": T_IMPORT, "setup_s": setup, "profiler_exit_s": exit_s,
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
