# The Gluon CNN of MXNet's "Profiling MXNet Models" tutorial (shared/seeds/000) and its
# training iteration, for the scripts that run it (mxnet_gluon_cnn.py, mxnet_gluon_loop.py,
# bench/mxnet_step.py).
import mxnet as mx
from mxnet import autograd, gluon


def seed_cnn(hybridize, ctx):
    """(net, trainer, loss): the tutorial's network, hybridized (a CachedOp, which MXNet
    runs in bulk segments while its profiler is off) or not, with its SGD trainer."""
    mx.random.seed(0)
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Conv2D(channels=20, kernel_size=5, activation='relu'))
        net.add(gluon.nn.MaxPool2D(pool_size=2, strides=2))
        net.add(gluon.nn.Conv2D(channels=50, kernel_size=5, activation='relu'))
        net.add(gluon.nn.MaxPool2D(pool_size=2, strides=2))
        net.add(gluon.nn.Flatten())
        net.add(gluon.nn.Dense(512, activation="relu"))
        net.add(gluon.nn.Dense(10))
    if hybridize:
        net.hybridize()
    net.collect_params().initialize(mx.init.Xavier(), ctx=ctx)
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1})
    return net, trainer, gluon.loss.SoftmaxCrossEntropyLoss()


def train_step(net, trainer, loss_fn, data, label):
    """One iteration as the tutorial writes it; returns the loss."""
    with autograd.record():
        loss = loss_fn(net(data), label)
    loss.backward()
    trainer.step(data.shape[0])
    return loss


def mnist_batch(n):
    """n MNIST-shaped random images and labels (no download here)."""
    return (mx.nd.random.uniform(shape=(n, 1, 28, 28)),
            mx.nd.random.randint(0, 10, shape=(n,)).astype('float32'))
