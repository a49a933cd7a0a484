# The Gluon CNN training iteration of MXNet's "Profiling MXNet Models" tutorial
# (shared/seeds/000), with MNIST-shaped random data instead of the MNIST download (no
# network here). MXNet's own profiler records the second iteration, as in the tutorial.
# argv "nowait": no waitall before set_state('run'), as the tutorial has it: the first
# iteration's operators still run after the profiler started; "hybridize": the network
# hybridized (a CachedOp, which MXNet runs in bulk segments while its profiler is off).
import sys

import mxnet as mx
from mxnet import autograd, gluon, profiler

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

if "hybridize" in sys.argv[1:]:
    net.hybridize()
ctx = mx.cpu()
net.collect_params().initialize(mx.init.Xavier(), ctx=ctx)
trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1})
softmax_cross_entropy = gluon.loss.SoftmaxCrossEntropyLoss()


def run_training_iteration(data, label):
    data = data.as_in_context(ctx)
    label = label.as_in_context(ctx)
    with autograd.record():
        output = net(data)
        loss = softmax_cross_entropy(output, label)
    loss.backward()
    trainer.step(data.shape[0])


def batch():
    return (mx.nd.random.uniform(shape=(64, 1, 28, 28)),
            mx.nd.random.randint(0, 10, shape=(64,)).astype('float32'))


profiler.set_config(profile_all=True, aggregate_stats=True, filename='gluon_profile.json')
run_training_iteration(*batch())
data, label = batch()
if "nowait" not in sys.argv[1:]:
    mx.nd.waitall()
profiler.set_state('run')
run_training_iteration(data, label)
mx.nd.waitall()
profiler.set_state('stop')
print(profiler.dumps())
