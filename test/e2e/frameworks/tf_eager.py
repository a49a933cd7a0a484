# TensorFlow eager ops, unmodified but for the libprof range around the measured loop:
# N steps of a small dense layer's forward and gradient step, run op by op.
# usage: tf_eager.py STEPS
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "scripts"))
import libprof  # noqa: E402
import tensorflow as tf  # noqa: E402

steps = int(sys.argv[1])
x = tf.random.normal([8, 16])
w = tf.Variable(tf.random.normal([16, 4]))
with libprof.range("loop"):
    for _ in range(steps):
        y = tf.matmul(x, w)           # MatMul
        z = tf.add(y, 1.0)            # AddV2
        w.assign_sub(tf.matmul(x, z, transpose_a=True) * 0.01)  # MatMul, Mul, AssignSubVariableOp
print("sum=%.3f" % float(tf.reduce_sum(w)))
