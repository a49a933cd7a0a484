# A small CNN training loop; torch.profiler records 5 of its iterations, and under
# PROFILER_FOLLOW=1 libprof records exactly those. Prints torch.profiler's counts per op.
import torch, torch.nn as nn, sys, collections
torch.manual_seed(0); torch.set_num_threads(1)
model = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8*13*13, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(4, 1, 28, 28); y = torch.randint(0, 10, (4,))
def step():
    opt.zero_grad(); loss = nn.functional.cross_entropy(model(x), y); loss.backward(); opt.step()
for _ in range(3): step()
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CPU]) as prof:
    for _ in range(5): step()
for e in prof.key_averages():
    print("TORCHPROF %s %d" % (e.key, e.count))
