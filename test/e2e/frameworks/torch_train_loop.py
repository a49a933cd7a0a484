# A small training loop with no profiler of its own (what a user's script is): argv[1]
# steps of a two-layer MLP with SGD. Prints steps=N when done.
import sys

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)
steps = int(sys.argv[1])
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(16, 32), torch.randint(0, 10, (16,))
for _ in range(steps):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
print("steps=%d loss=%.4f" % (steps, loss.item()))
