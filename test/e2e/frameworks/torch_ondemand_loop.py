"""A training-like loop that knows nothing of profilers, for the e2e case
torch2_follows_kineto_on_demand: small matrix products until Kineto's on-demand trace
(started by the dynolog stand-in) has been written (a file matching PREFIX*.json in DIR),
then as many again for half a second, or SECONDS at most. Prints iters=N and whether
the trace came (traced=0|1)."""
import glob
import os
import sys
import time

import torch

folder, prefix, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
x = torch.randn(32, 32)
start = time.monotonic()
done_at = None
iters = 0
while time.monotonic() - start < seconds:
    torch.mm(x, x).relu()
    iters += 1
    time.sleep(0.0005)
    if done_at is None and iters % 100 == 0 and glob.glob(os.path.join(folder, prefix + "*.json")):
        done_at = time.monotonic()
    if done_at is not None and time.monotonic() - done_at > 0.5:
        break
print("pid=%d" % os.getpid())
print("iters=%d" % iters)
print("traced=%d" % (done_at is not None))
