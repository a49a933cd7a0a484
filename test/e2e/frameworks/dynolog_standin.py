"""A stand-in for dynolog, the daemon that starts Kineto's on-demand traces (`dyno
gputrace`), for the e2e case torch2_follows_kineto_on_demand. It speaks what Kineto's
IpcFabricConfigClient speaks: datagrams on a Unix socket named "dynolog" (in
KINETO_IPC_SOCKET_DIR, so the case owns it), each a metadata header {size_t size; char
type[32]} and size bytes. A "ctxt" message registers a process and gets an int back; a
"req" message {int32 type; int32 n; int64 jobid; int32 pids[n]} asks for an on-demand
config (type bit 2: activities) and gets the config text, or nothing.

    dynolog_standin.py DIR TRACE_FILE DURATION_MS SECONDS

Answers the first activities request with a trace of DURATION_MS into TRACE_FILE
(Kineto adds the pid to its name), every other request with nothing; stops after
SECONDS. Prints what it got, a line each."""
import os
import socket
import struct
import sys
import time

HEADER = struct.Struct("<Q32s")
ACTIVITIES = 2


def main():
    folder, trace, duration_ms, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
        float(sys.argv[4])
    path = os.path.join(folder, "dynolog")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    print("listening=%s" % path, flush=True)
    served = False
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sock.settimeout(max(0.01, end - time.monotonic()))
        try:
            data, src = sock.recvfrom(1 << 16)
        except socket.timeout:
            break
        if len(data) < HEADER.size:
            print("short=%d" % len(data), flush=True)
            continue
        size, kind = HEADER.unpack_from(data)
        kind = kind.split(b"\0")[0].decode()
        body = data[HEADER.size:HEADER.size + size]

        def reply(payload):
            sock.sendto(HEADER.pack(len(payload), kind.encode()) + payload, src)

        if kind == "ctxt":
            print("registered=1", flush=True)
            reply(struct.pack("<i", 0))
        elif kind == "req":
            want, n, _ = struct.unpack_from("<iiq", body)
            pids = struct.unpack_from("<%di" % n, body, 16)
            if want & ACTIVITIES and not served:
                served = True
                print("served_pid=%d" % pids[0], flush=True)
                reply(("PROFILE_START_TIME=0\nACTIVITIES_WARMUP_PERIOD_SECS=0\n"
                       "ACTIVITIES_DURATION_MSECS=%d\nACTIVITIES_LOG_FILE=%s\n"
                       % (duration_ms, trace)).encode())
            else:
                reply(b"")
        else:
            print("unknown=%s" % kind, flush=True)
    print("served=%d" % served, flush=True)


if __name__ == "__main__":
    main()
