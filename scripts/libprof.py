"""libprof control from Python: ranges, steps, pause/resume, dump/dumps.

A thin ctypes layer over the libprof.so already loaded in the process (LD_PRELOAD or
`prof record`). When libprof is not loaded every call is a silent no-op, so scripts can
keep their annotations in production.

    import libprof
    with libprof.range("LABEL1: linear pass"):
        model(x)
    libprof.step()
    print(libprof.dumps())
"""

import contextlib
import ctypes

__all__ = ["range", "push", "pop", "mark", "step", "counter", "set_config", "set_state",
           "pause", "resume", "dump", "dumps", "available", "record_function"]

RUN, STOP = 1, 0


def _load():
    try:
        lib = ctypes.CDLL(None)
        push = lib.prof_range_push
    except (OSError, AttributeError):
        return None
    push.argtypes = [ctypes.c_char_p]
    lib.prof_range_pop.argtypes = []
    lib.prof_mark.argtypes = [ctypes.c_char_p]
    lib.prof_step.restype = ctypes.c_long
    lib.prof_counter.argtypes = [ctypes.c_char_p, ctypes.c_double]
    lib.prof_set_config.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    lib.prof_set_state.argtypes = [ctypes.c_int]
    lib.prof_dump.restype = ctypes.c_int
    lib.prof_dumps.restype = ctypes.c_char_p
    return lib


_lib = _load()


def available():
    """True when libprof.so is loaded in this process."""
    return _lib is not None


def _b(s):
    return s if isinstance(s, bytes) else str(s).encode("utf-8", "replace")


def push(name):
    if _lib:
        _lib.prof_range_push(_b(name))


def pop():
    if _lib:
        _lib.prof_range_pop()


@contextlib.contextmanager
def range(name):
    """A labelled range on this thread's timeline, like torch's record_function."""
    push(name)
    try:
        yield
    finally:
        pop()


record_function = range


def mark(name):
    if _lib:
        _lib.prof_mark(_b(name))


def step():
    """Marks an iteration boundary; returns the step number (0 without libprof)."""
    return _lib.prof_step() if _lib else 0


def counter(name, value):
    if _lib:
        _lib.prof_counter(_b(name), float(value))


def set_config(**settings):
    """MXNet-style: set_config(profile_memory=True, filename='out.json', ...)."""
    ok = True
    for key, value in settings.items():
        if isinstance(value, bool):
            value = int(value)
        if _lib and _lib.prof_set_config(_b(key), _b(value)) != 0:
            ok = False
    return ok


def set_state(state="run"):
    """'run' or 'stop' (or RUN / STOP)."""
    if not _lib:
        return False
    code = RUN if state in ("run", RUN) else STOP
    return _lib.prof_set_state(code) == 0


def pause():
    if _lib:
        _lib.prof_pause()


def resume():
    if _lib:
        _lib.prof_resume()


def dump():
    """Writes the outputs now; True when they were written."""
    return bool(_lib) and _lib.prof_dump() == 0


def dumps():
    """The aggregated tables as text ('' without libprof)."""
    if not _lib:
        return ""
    text = _lib.prof_dumps()
    return text.decode("utf-8", "replace") if text else ""
