# A training loop (a small CNN, or with argv[1] == "resnet" a resnet-style network with
# batch norm and residual blocks); torch.profiler records 5 of its iterations, and under
# PROFILER_FOLLOW=1 libprof records exactly those. Prints torch.profiler's counts per op
# (and with argv[2] == "memory", profile_memory's CPU Mem and Self CPU Mem per op).
import sys

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + (self.down(x) if self.down is not None else x))


def resnet():
    return nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                         BasicBlock(8, 8, 1), BasicBlock(8, 16, 2), BasicBlock(16, 16, 1),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))


if len(sys.argv) > 1 and sys.argv[1] == "resnet":
    model, x = resnet(), torch.randn(2, 3, 32, 32)
else:
    model = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(8 * 13 * 13, 10))
    x = torch.randn(4, 1, 28, 28)
y = torch.randint(0, 10, (x.shape[0],))
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def step():
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()


for _ in range(3):
    step()
from torch.profiler import ProfilerActivity, profile  # noqa: E402

memory = len(sys.argv) > 2 and sys.argv[2] == "memory"
with profile(activities=[ProfilerActivity.CPU], profile_memory=memory) as prof:
    for _ in range(5):
        step()
for e in prof.key_averages():
    print("TORCHPROF %s %d" % (e.key, e.count))
    if memory:
        print("TORCHMEM %s %d %d" % (e.key, e.cpu_memory_usage, e.self_cpu_memory_usage))
