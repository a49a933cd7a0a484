# A torch.compile'd MLP training loop (inductor, CPU): OUTSIDE steps without torch's
# profiler (the first compiles), then argv[1] steps inside it, whose table it prints as
# "TORCHPROF name count" lines, then OUTSIDE more without. compiled_mlp_step() is also
# bench/torch_compile_step.py's step.
import sys

import torch
import torch.nn as nn

OUTSIDE = 2


def compiled_mlp_step():
    """One training step of a compiled two-layer MLP, batch 32, one thread."""
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    compiled = torch.compile(model)
    x = torch.randn(32, 64)
    y = torch.randint(0, 10, (32,))

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(compiled(x), y).backward()
        opt.step()
    return step


if __name__ == "__main__":
    step = compiled_mlp_step()
    for _ in range(OUTSIDE):
        step()
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(int(sys.argv[1])):
            step()
    for _ in range(OUTSIDE):
        step()
    for e in prof.key_averages():
        print("TORCHPROF %s %d" % (e.key, e.count))
    print("outside=%d" % (2 * OUTSIDE))
