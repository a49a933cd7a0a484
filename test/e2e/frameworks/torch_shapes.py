# Input shapes: a small CNN's forward passes under torch.profiler with record_shapes=True
# (the PyTorch profiler tutorial's record_shapes example, without torchvision); prints
# key_averages(group_by_input_shape=True) as "TORCHSHAPE name|shapes|count".
import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile

torch.manual_seed(0)
torch.set_num_threads(1)
model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                      nn.Linear(8 * 15 * 15, 10))
for batch in (2, 2, 4):
    model(torch.randn(batch, 3, 32, 32))  # warm-up
with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    for batch in (2, 2, 4):
        model(torch.randn(batch, 3, 32, 32))
for e in prof.key_averages(group_by_input_shape=True):
    print("TORCHSHAPE %s|%s|%d" % (e.key, e.input_shapes, e.count))
