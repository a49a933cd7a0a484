"""A training loop: six iterations, each a labelled forward and backward, then
optimizer.step(). Under PROFILER_SCHEDULE libprof counts a step at the end of each
optimizer.step() of the loop. Modes (argv[1]): "plain" (one optimizer, no libprof call),
"two" (two optimizers stepped each iteration, the first wrapped in a second optimizer's
step as ZeroRedundancyOptimizer does: still one step an iteration), "marked" (the
program calls libprof's prof_step() after optimizer.step(): its own steps only)."""
import ctypes
import sys

import torch
from torch.autograd.profiler import record_function

mode = sys.argv[1] if len(sys.argv) > 1 else "plain"
torch.manual_seed(0)
model, head = torch.nn.Linear(16, 4), torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
opt_head = torch.optim.Adam(head.parameters(), lr=0.1)


class Wrapping(torch.optim.SGD):
    """An optimizer whose step runs another's (its Optimizer.step# range inside)."""
    def step(self, closure=None):
        opt.step()
        return super().step(closure)


outer = Wrapping(head.parameters(), lr=0.1)
x = torch.randn(8, 16)
for i in range(6):
    with record_function("iter%d" % i):
        head(model(x)).sum().backward()
    if mode == "two":
        outer.step()
        opt_head.step()
    else:
        opt.step()
    if mode == "marked":
        ctypes.CDLL(None).prof_step()
    opt.zero_grad()
    opt_head.zero_grad()
print("iterations=6")
