# The Gluon CNN training iteration of MXNet's "Profiling MXNet Models" tutorial
# (shared/seeds/000), with MNIST-shaped random data instead of the MNIST download (no
# network here). MXNet's own profiler records the second iteration, as in the tutorial.
# argv "nowait": no waitall before set_state('run'), as the tutorial has it: the first
# iteration's operators still run after the profiler started; "hybridize": the network
# hybridized (a CachedOp, which MXNet runs in bulk segments while its profiler is off).
import os
import sys

import mxnet as mx
from mxnet import profiler

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mxnet_seed_cnn import mnist_batch, seed_cnn, train_step  # noqa: E402

net, trainer, loss_fn = seed_cnn("hybridize" in sys.argv[1:], mx.cpu())
profiler.set_config(profile_all=True, aggregate_stats=True, filename='gluon_profile.json')
train_step(net, trainer, loss_fn, *mnist_batch(64))
data, label = mnist_batch(64)
if "nowait" not in sys.argv[1:]:
    mx.nd.waitall()
profiler.set_state('run')
train_step(net, trainer, loss_fn, data, label)
mx.nd.waitall()
profiler.set_state('stop')
print(profiler.dumps())
