# record_function ranges that do not nest: ended out of order on one thread (as a
# ProfilerStep begun inside a label and ended after it), and begun on one thread but
# ended on another (as torch's async work is); then ordinary labels, which must still be
# recorded, with their counts, on both threads.
import threading

import torch
from torch.autograd.profiler import record_function

N = 100
for _ in range(N):
    a = record_function("crossed_a")
    a.__enter__()
    b = record_function("crossed_b")
    b.__enter__()
    a.__exit__(None, None, None)  # a ends while b is still open
    b.__exit__(None, None, None)

handed = []
for _ in range(N):
    r = record_function("handed_over")
    r.__enter__()
    handed.append(r)


def finish():
    for r in handed:
        r.__exit__(None, None, None)  # ended on another thread than began it
    with record_function("worker_label"):
        torch.ones(2) + 1


t = threading.Thread(target=finish)
t.start()
t.join()
for _ in range(3):
    with record_function("after"):
        with record_function("inner"):
            torch.ones(2) * 2
print("done=1")
