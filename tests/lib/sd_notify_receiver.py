#!/usr/bin/env python3
"""systemd's side of the notify protocol (sd_notify(3)), for the tests.

sd_notify_receiver.py ADDRESS OUT: binds a datagram socket at ADDRESS as NOTIFY_SOCKET names
it (a path, or @name in the abstract namespace) and appends each datagram received to OUT as
one JSON line: {"t": when the kernel queued it (SO_TIMESTAMPNS, wall-clock seconds: the
receiver's own delays do not show in the gaps between datagrams), "pid": the sender's pid
(SCM_CREDENTIALS, as systemd checks NotifyAccess=main), "fields": {"READY": "1", ...}}.
Writes "listening" to stdout once bound; runs until killed."""
import json
import os
import socket
import struct
import sys


SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux's; also the cmsg's type


def main():
    address, out = sys.argv[1], sys.argv[2]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    sock.bind("\0" + address[1:] if address.startswith("@") else address)
    print("listening", flush=True)
    creds = struct.calcsize("iII")
    stamp = struct.calcsize("qq")
    with open(out, "a", encoding="utf-8") as f:
        while True:
            data, anc, _, _ = sock.recvmsg(4096, socket.CMSG_SPACE(creds) + socket.CMSG_SPACE(stamp))
            pid = t = None
            for level, kind, value in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                    pid = struct.unpack("iII", value[:creds])[0]
                elif level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                    sec, nsec = struct.unpack("qq", value[:stamp])
                    t = sec + nsec / 1e9
            fields = {}
            for line in data.decode("utf-8", "replace").split("\n"):
                if "=" in line:
                    key, value = line.split("=", 1)
                    fields[key] = value
            f.write(json.dumps({"t": t, "pid": pid, "fields": fields}) + "\n")
            f.flush()


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        os._exit(0)
