# The PyTorch profiler tutorial's MyModule (seed 003, example2/v1.py: record_function
# labels "LABEL1: linear pass" and "LABEL2: masking"), on CPU and smaller, trained for a
# few steps from a DataLoader with an optimizer: torch's own labels (the optimizer's, the
# DataLoader's, ProfilerStep#N) and the autograd nodes of the backward pass.
# argv[1] == "follow": torch.profiler records steps 2-3 with a schedule and the script
# prints its key_averages() counts (TORCHPROF name count); "bare": no torch.profiler.
import sys

import torch
import torch.autograd.profiler as profiler

torch.manual_seed(0)
torch.set_num_threads(1)


class MyModule(torch.nn.Module):
    def __init__(self, in_features: int, out_features: int, hidden_sizes: list,
                 bias: bool = True):
        super(MyModule, self).__init__()
        sizes = [in_features] + hidden_sizes + [out_features]
        layers = []
        for s in range(len(sizes) - 1):
            layers.append(torch.nn.Linear(sizes[s], sizes[s + 1], bias))
            layers.append(torch.nn.ReLU())
        self.linear = torch.nn.Sequential(*layers)

    def forward(self, input, mask):
        with profiler.record_function("LABEL1: linear pass"):
            out = self.linear(input)

        with profiler.record_function("LABEL2: masking"):
            threshold = out.sum(axis=1).mean()
            hi_idx = (mask > threshold).nonzero(as_tuple=True)
        return out, hi_idx


STEPS = 5
model = MyModule(512, 8, [32, 32, 32])
mask = torch.rand((200, 200, 200))
data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.rand(STEPS * 2048, 512)),
                                   batch_size=2048)
opt = torch.optim.SGD(model.parameters(), lr=0.01)


def train(step=None):
    for (input,) in data:
        out, idx = model(input, mask)
        loss = out.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step:
            step()


model(torch.rand(2048, 512), mask)  # warm-up, as the tutorial does
if sys.argv[1] == "follow":
    from torch.profiler import ProfilerActivity, profile, schedule
    with profile(activities=[ProfilerActivity.CPU],
                 schedule=schedule(wait=1, warmup=1, active=2, repeat=1)) as prof:
        train(prof.step)
    for e in prof.key_averages():
        print("TORCHPROF %s %d" % (e.key, e.count))
        print("TORCHTIME %s %d" % (e.key, e.cpu_time_total))
else:
    train()
print("steps=%d" % STEPS)
