# A Gluon training loop as users write it (the seeds' CNN, hybridized, argv[1] iterations
# of MNIST-shaped random data), with no step marked for any profiler: its steps are found
# from its own calls (loss.backward(), trainer.step()).
import os
import sys

import mxnet as mx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mxnet_seed_cnn import mnist_batch, seed_cnn, train_step  # noqa: E402

net, trainer, loss_fn = seed_cnn(True, mx.cpu())
for i in range(int(sys.argv[1])):
    loss = train_step(net, trainer, loss_fn, *mnist_batch(32))
    print("loss=%.4f" % loss.mean().asscalar())
