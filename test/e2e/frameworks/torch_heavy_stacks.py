# A heavy import, then a training loop with record_function labels (issue 29): on torch
# 2.x torch._dynamo and torch._inductor (and transformers where it is installed) are
# imported first, which once filled libprof's fixed tables of names and stacks so that
# the loop's labels became <unnamed> and its allocations had no stack.
# argv[1] == "follow": torch.profiler (profile_memory, with_stack) records every step
# and the script prints its key_averages() counts (TORCHPROF name count); "bare": none.
# Each step allocates MARK_BYTES once in marked_alloc(): the allocation to find by stack.
import sys

import torch

if int(torch.__version__.split(".")[0]) >= 2:
    import torch._dynamo  # noqa: F401  (thousands of functions and lines)
    import torch._inductor  # noqa: F401
    try:
        import transformers  # noqa: F401
    except ImportError:
        pass
import torch.autograd.profiler as profiler

torch.manual_seed(0)
torch.set_num_threads(1)
STEPS = 12
MARK_BYTES = 3 * 1000 * 1000 + 7


def marked_alloc():
    return torch.empty(MARK_BYTES, dtype=torch.uint8)


model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 128),
                            torch.nn.ReLU(), torch.nn.Linear(128, 10))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.rand(32, 64)
y = torch.randint(0, 10, (32,))


def train(step=None):
    for _ in range(STEPS):
        with profiler.record_function("train_step"):
            keep = marked_alloc()
            with profiler.record_function("fwd"):
                loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            with profiler.record_function("bwd"):
                loss.backward()
            opt.step()
            del keep
        if step:
            step()


if sys.argv[1] == "follow":
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True,
                 with_stack=True) as prof:
        train()
    for e in prof.key_averages():
        print("TORCHPROF %s %d" % (e.key, e.count))
else:
    train()
print("steps=%d" % STEPS)
