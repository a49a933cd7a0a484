# Allocations made inside torch's operators and its backward pass, where torch's bindings
# have given the GIL up (libprof then keeps the thread's last Python walk: gil.h), each
# with its own Python frames: one function's tensor under two callers (one frame, one
# line: only the release between them tells them apart), and a tensor made in a Python
# hook the backward pass calls back into (the engine takes the GIL back for it).
import torch

torch.manual_seed(0)
torch.set_num_threads(1)
STEPS = 6
SITE_BYTES = 2 * 1000 * 1000 + 11
HOOK_BYTES = 2 * 1000 * 1000 + 13


def site():
    return torch.empty(SITE_BYTES, dtype=torch.uint8)


def from_a():
    return site()


def from_b():
    return site()


def made_in_hook():
    return torch.empty(HOOK_BYTES, dtype=torch.uint8)


def hook(grad):
    made_in_hook()
    return grad


w = torch.randn(64, 64, requires_grad=True)
w.register_hook(hook)
for _ in range(STEPS):
    y = (torch.randn(8, 64) @ w).relu().sum()
    from_a()
    from_b()
    y.backward()
print("steps=%d" % STEPS)
