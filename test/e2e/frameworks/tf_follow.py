# TensorFlow's own profiler around part of the work, the script otherwise unmodified:
# BEFORE matmuls, then tf.profiler.experimental.start, INSIDE matmuls, stop, AFTER more.
# With PROFILER_FOLLOW=1 libprof records only what TensorFlow's profiler saw.
# usage: tf_follow.py LOGDIR BEFORE INSIDE AFTER [nosave]   (nosave: stop(save=False))
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

logdir, before, inside, after = sys.argv[1], *(int(a) for a in sys.argv[2:5])
save = sys.argv[5:6] != ["nosave"]
x = tf.random.normal([8, 8])
for _ in range(before):
    x = tf.matmul(x, x) * 0.1
tf.profiler.experimental.start(logdir)
for _ in range(inside):
    x = tf.matmul(x, x) * 0.1
tf.profiler.experimental.stop(save=save)
for _ in range(after):
    x = tf.matmul(x, x) * 0.1
print("sum=%.3f" % float(tf.reduce_sum(x)))
