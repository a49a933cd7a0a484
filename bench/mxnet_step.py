"""One process of the MXNet overhead benchmark: the seeds' Gluon CNN (shared/seeds/000,
test/e2e/frameworks/mxnet_seed_cnn.py), hybridized, a batch (argv[2], default 64) of
MNIST-shaped random data, argv[1] training steps timed after warm-up; prints the median
step in microseconds. Batch 1 is the dispatch-bound case, where running operators on
their own instead of in bulk costs most. Each step ends in waitall so its time is the
engine's work, not only its queueing."""
import os
import sys

import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "test", "e2e", "frameworks"))
from mxnet_seed_cnn import mnist_batch, seed_cnn, train_step  # noqa: E402
from step_timer import print_median_step_us  # noqa: E402

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
batch = mnist_batch(int(sys.argv[2]) if len(sys.argv) > 2 else 64)
net, trainer, loss_fn = seed_cnn(True, mx.cpu())


def step():
    train_step(net, trainer, loss_fn, *batch)
    mx.nd.waitall()


print_median_step_us(step, 5, steps)
