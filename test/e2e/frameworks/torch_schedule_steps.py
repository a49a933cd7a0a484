"""An unmodified training loop (no libprof call): six iterations, each a labelled
forward and backward, then optimizer.step(). Under PROFILER_SCHEDULE libprof counts a
step at the end of each optimizer.step()."""
import torch
from torch.autograd.profiler import record_function

torch.manual_seed(0)
model = torch.nn.Linear(16, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(8, 16)
for i in range(6):
    with record_function("iter%d" % i):
        model(x).sum().backward()
    opt.step()
    opt.zero_grad()
print("iterations=6")
