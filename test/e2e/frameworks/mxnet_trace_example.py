# The 3x3 diag/sum "trace" example of MXNet's profiler guide (shared/seeds/001), unmodified
# but for this line.
import mxnet as mx
import numpy as np
from mxnet import profiler
profiler.set_config(profile_all=True, aggregate_stats=True, filename='trace_profile.json')
profiler.set_state('run')
data = np.linspace(1,9,9).reshape((3,3))
a = mx.nd.array(data)
b = mx.nd.diag(a)
c = mx.nd.sum(b,-1)
mx.nd.waitall()
profiler.set_state('stop')
print(profiler.dumps())
profiler.dump()
