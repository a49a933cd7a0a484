# TensorFlow's profiler server (tf.profiler.experimental.server.start) and a capture
# asked by a client (as TensorBoard's "Capture profile" button does): MatMul runs while
# the capture is taken, Mul before it, Sub after it.
import socket, sys, threading, time
import tensorflow as tf

logdir = sys.argv[1]
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
tf.profiler.experimental.server.start(port)
a = tf.random.normal((32, 32))
for _ in range(7):
    a = a * 1.0
done = threading.Event()
def capture():
    tf.profiler.experimental.client.trace("grpc://localhost:%d" % port, logdir, 1500)
    done.set()
t = threading.Thread(target=capture)
t.start()
n = 0
while not done.is_set():
    a = tf.matmul(a, a) / 32.0
    n += 1
    time.sleep(0.001)
t.join()
for _ in range(13):
    a = a - 1.0
print("matmuls=%d" % n)
print("sum=%s" % float(tf.reduce_sum(a)))
