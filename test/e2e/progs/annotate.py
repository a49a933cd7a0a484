"""The libprof Python module end to end. Prints one JSON line with what it saw.

Marked sizes (ctypes calls straight into libc's malloc, so Python's own allocator does not
blur the counts): 51001 inside the range, 51002 while paused, 51003 after resume."""
import ctypes
import json
import sys

import libprof

N = int(sys.argv[1]) if len(sys.argv) > 1 else 10

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.restype = None
libc.free.argtypes = [ctypes.c_void_p]


def many(size, n):
    for _ in builtins_range(n):
        p = libc.malloc(size)
        assert p
        libc.free(p)


import builtins
builtins_range = builtins.range

out = {"available": libprof.available()}
with libprof.range("LABEL1: linear pass"):
    many(51001, N)
out["steps"] = [libprof.step() for _ in builtins_range(3)]
libprof.mark("checkpoint saved")
libprof.counter("loss", 0.5)
libprof.counter("loss", 0.25)
libprof.pause()
many(51002, N)
libprof.resume()
many(51003, N)
with libprof.record_function("LABEL2: outer"):
    with libprof.range("LABEL3: inner"):
        pass
text = libprof.dumps()
out["dumps_has_label"] = "LABEL1: linear pass" in text
out["dumps_len"] = len(text)
print(json.dumps(out))
