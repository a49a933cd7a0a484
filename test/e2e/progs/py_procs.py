"""Child processes of a Python program: subprocess.run of a C program (the `basic` e2e
program) on both of the paths CPython takes on Linux -- vfork+exec (the default,
close_fds=True) and posix_spawn (close_fds=False) -- then a multiprocessing Pool of 2
workers with the 'fork' start method, mapping a function that does K malloc/free pairs
of 60003 bytes through ctypes (straight into libc: the size is exact) and returns its pid.
Prints one JSON line with what it saw.

usage: py_procs.py BASIC N K TASKS
Marks: vfork child 60001 x N (kept live), posix_spawn child 60002 x N, workers 60003."""
import ctypes
import json
import multiprocessing
import os
import re
import subprocess
import sys

BASIC, N, K, TASKS = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.restype = None
libc.free.argtypes = [ctypes.c_void_p]


def work(i):
    for _ in range(K):
        p = libc.malloc(60003)
        assert p
        libc.free(p)
    return os.getpid()


def child(size, close_fds):
    r = subprocess.run([BASIC, str(N), str(size), "exit:0"], capture_output=True, text=True,
                       close_fds=close_fds)
    assert r.returncode == 0, r
    return int(re.search(r"pid=(\d+)", r.stdout).group(1))


def main():
    out = {"pid": os.getpid(),
           "use_vfork": bool(getattr(subprocess, "_USE_VFORK", False)),
           "use_posix_spawn": bool(getattr(subprocess, "_USE_POSIX_SPAWN", False))}
    out["vfork_child"] = child(60001, True)
    out["spawn_child"] = child(60002, False)
    ctx = multiprocessing.get_context("fork")
    pool = ctx.Pool(2)
    out["workers"] = [w.pid for w in pool._pool]  # no public way to name them
    try:
        out["tasks"] = pool.map(work, range(TASKS), chunksize=1)
    finally:
        pool.close()
        pool.join()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
