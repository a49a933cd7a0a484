"""One process of the PyTorch overhead benchmark: a small CNN, batch 1, one thread (the
dispatch-bound case), 500 timed iterations after warm-up; prints the median iteration in
microseconds. argv[1] = 'torchprof' runs the timed iterations inside torch.profiler,
'torchprof_shapes' inside torch.profiler with record_shapes=True."""
import statistics
import sys
import time

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                      nn.Linear(8 * 13 * 13, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(1, 1, 28, 28)
y = torch.randint(0, 10, (1,))


def step():
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()


def timed(n):
    out = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        step()
        out.append(time.perf_counter_ns() - t0)
    return out


for _ in range(50):
    step()
if len(sys.argv) > 1 and sys.argv[1].startswith("torchprof"):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU],
                 record_shapes=sys.argv[1] == "torchprof_shapes"):
        times = timed(500)
else:
    times = timed(500)
print("%.1f" % (statistics.median(times) / 1000))
