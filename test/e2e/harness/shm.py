"""The shared-memory segments of the suite's own sessions, found and removed by session id.

A session is this case's when its session segment (/dev/shm/libprof-UID-SID) says its
outputs go into the case's temporary directory: output_prefix is absolute (%-expanded,
made from the working directory when relative), and every run of a case has its working
directory and its PROFILER_OUTPUT inside that directory, which nobody else writes to
(mkdtemp). Everything named libprof-UID-SID[-...] is then removed, unless a process still
maps one of them (the session's root, its collector, or the pid a process segment names).
A segment whose session segment cannot be read (cut by a case, another layout version)
belongs to nobody here: it is left alone. So another program's session, running beside
the suite, is never touched, whatever the suite's cases do or when they end."""
import os
import re
import struct
import subprocess
import threading

from .paths import BIN, ROOT

_LAYOUT_C = r"""
#include <stddef.h>
#include <stdio.h>
#include "preload/common/shm_layout.h"
int main(void)
{
	printf("%llu %u %zu %zu %zu %zu %zu %d\n", (unsigned long long)PROF_SHM_MAGIC,
	       (unsigned)PROF_SHM_VERSION, offsetof(struct prof_session_shm, version),
	       offsetof(struct prof_session_shm, root_pid),
	       offsetof(struct prof_session_shm, collector_pid),
	       offsetof(struct prof_session_shm, output_prefix), sizeof(struct prof_session_shm),
	       PROF_PATH_MAX);
	return 0;
}
"""
_layout = None
_layout_lock = threading.Lock()


def session_layout():
    """The session segment's fields the harness reads, from preload/common/shm_layout.h
    itself (compiled once into $BUILD/e2e): a dict, or None when it cannot be built."""
    global _layout
    with _layout_lock:
        if _layout is None:
            exe = os.path.join(BIN, "shm_layout_offsets")
            hdr = os.path.join(ROOT, "preload", "common", "shm_layout.h")
            try:
                if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(hdr):
                    r = subprocess.run([os.environ.get("CC", "cc"), "-I", ROOT, "-I",
                                        os.path.join(ROOT, "include"), "-x", "c", "-", "-o",
                                        exe], input=_LAYOUT_C, capture_output=True, text=True)
                    if r.returncode:
                        raise OSError(r.stderr)
                v = subprocess.run([exe], capture_output=True, text=True).stdout.split()
                keys = ("magic", "version", "version_off", "root_pid_off", "collector_pid_off",
                        "prefix_off", "size", "path_max")
                _layout = dict(zip(keys, (int(x) for x in v)))
            except (OSError, ValueError):
                _layout = {}
        return _layout or None


def session_prefix(name):
    """(output prefix, root pid, collector pid) of a session segment, or None."""
    lay = session_layout()
    if not lay:
        return None
    try:
        with open("/dev/shm/" + name, "rb") as f:
            head = f.read(lay["prefix_off"] + lay["path_max"])
    except OSError:
        return None
    if len(head) < lay["prefix_off"] + lay["path_max"]:
        return None
    magic = struct.unpack_from("<Q", head, 0)[0]
    version = struct.unpack_from("<I", head, lay["version_off"])[0]
    if magic != lay["magic"] or version != lay["version"]:
        return None
    prefix = head[lay["prefix_off"]:lay["prefix_off"] + lay["path_max"]].split(b"\0")[0]
    return (os.fsdecode(prefix), struct.unpack_from("<I", head, lay["root_pid_off"])[0],
            struct.unpack_from("<I", head, lay["collector_pid_off"])[0])


def maps_segment(pid, name):
    """Whether pid maps /dev/shm/name (the whole name, not a longer one)."""
    want = "/dev/shm/" + name
    try:
        with open("/proc/%d/maps" % pid) as f:
            return any(line.rstrip("\n").endswith(" " + want) or line.rstrip("\n") == want
                       for line in f)
    except (OSError, ValueError):
        return False


def uid_segments(uid=None):
    """The names of this user's libprof segments in /dev/shm."""
    try:
        names = os.listdir("/dev/shm")
    except OSError:
        return []
    return sorted(n for n in names if n.startswith("libprof-%d-" % (os.getuid() if uid is None
                                                                     else uid)))


def sessions_of(root):
    """The session ids whose outputs go under the directory root."""
    real = os.path.realpath(root) + os.sep
    pat = re.compile(r"^libprof-%d-([0-9a-f]{16})$" % os.getuid())
    out = []
    for n in uid_segments():
        m = pat.match(n)
        if not m:
            continue
        got = session_prefix(n)
        if got and (got[0].startswith(real) or got[0].startswith(root + os.sep)):
            out.append((m.group(1), got[1], got[2]))
    return out


def remove_sessions(root):
    """Removes the segments left by the sessions of the directory root (a case's): returns
    [(sid, names removed)], and [(sid, why kept)] for sessions something still maps."""
    removed, kept = [], []
    for sid, root_pid, collector_pid in sessions_of(root):
        prefix = "libprof-%d-%s" % (os.getuid(), sid)
        names = [n for n in uid_segments() if n == prefix or n.startswith(prefix + "-")]
        users = [(p, n) for n in names for p in {root_pid, collector_pid} if p]
        users += [(int(n.split("-")[3]), n) for n in names
                  if n != prefix and n.split("-")[3].isdigit()]
        live = [p for p, n in users if maps_segment(p, n)]
        if live:
            kept.append((sid, "still mapped by pid %s" % ", ".join(map(str, sorted(set(live))))))
            continue
        gone = []
        for n in names:
            try:
                os.unlink("/dev/shm/" + n)
                gone.append(n)
            except OSError:
                pass
        removed.append((sid, gone))
    return removed, kept
