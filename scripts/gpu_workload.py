"""The PyTorch programs scripts/gpu_check.py runs, with and without libprof. Unmodified
as far as libprof goes: it marks its measured iterations with an NVTX range, as users
do, and (GPU_CHECK_TORCHPROF=path) may run them inside torch.profiler to write that
profiler's CUDA kernel counts to path.

  gpu_workload.py train N     a small CNN, batch 32, N measured training steps
  gpu_workload.py matmul N    N measured 1024x1024 matrix products
  gpu_workload.py copies      64 MiB pinned host->device, 16 MiB device->host
  gpu_workload.py emit_nvtx   3 steps under torch.autograd.profiler.emit_nvtx()

Prints key=value lines: step_us (median measured step), max_reserved, max_allocated."""
import json
import os
import statistics
import sys
import time

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.backends.cudnn.benchmark = False  # the same kernels in every run
dev = torch.device("cuda")


def cnn():
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(32 * 8 * 8, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 3, 32, 32, device=dev)
    y = torch.randint(0, 10, (32,), device=dev)

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return step


def matmul():
    a = torch.randn(1024, 1024, device=dev)
    b = torch.randn(1024, 1024, device=dev)

    def step():
        torch.mm(a, b)
    return step


def measured(step, n):
    """n steps between two synchronizations, inside an NVTX range named "measured" (and
    torch.profiler when asked); each step timed."""
    torch.cuda.synchronize()
    times = []
    prof_path = os.environ.get("GPU_CHECK_TORCHPROF")
    ctx = None
    if prof_path:
        from torch.profiler import ProfilerActivity, profile
        ctx = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        ctx.__enter__()
    torch.cuda.nvtx.range_push("measured")
    for _ in range(n):
        t0 = time.perf_counter_ns()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter_ns() - t0)
    torch.cuda.nvtx.range_pop()
    if ctx:
        ctx.__exit__(None, None, None)
        kernels = {}
        for e in ctx.key_averages():
            if e.device_type == torch.autograd.DeviceType.CUDA:
                kernels[e.key] = kernels.get(e.key, 0) + e.count
        with open(prof_path, "w") as f:
            json.dump(kernels, f)
    print("step_us=%.1f" % (statistics.median(times) / 1000))


def main():
    mode = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    if mode in ("train", "matmul"):
        step = cnn() if mode == "train" else matmul()
        for _ in range(3):  # warm-up: lazy initialisation, allocator growth
            step()
        measured(step, n)
    elif mode == "copies":
        h = torch.empty(64 << 20, dtype=torch.uint8).pin_memory()
        torch.cuda.synchronize()
        d = h.to(dev, non_blocking=False)
        back = d[: 16 << 20].to("cpu")
        torch.cuda.synchronize()
        print("htod_bytes=%d dtoh_bytes=%d" % (h.numel(), back.numel()))
    elif mode == "emit_nvtx":
        step = cnn()
        step()
        with torch.autograd.profiler.emit_nvtx():
            for _ in range(3):
                step()
        torch.cuda.synchronize()
    else:
        sys.exit("gpu_workload: unknown mode %r" % mode)
    print("max_reserved=%d max_allocated=%d" % (torch.cuda.max_memory_reserved(),
                                                torch.cuda.max_memory_allocated()))


if __name__ == "__main__":
    main()
