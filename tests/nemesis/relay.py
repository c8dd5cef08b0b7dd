#!/usr/bin/env python3
"""The nemesis' slow links: a TCP relay in front of every VM's coordinator port that holds
each chunk it carries for a set number of milliseconds, both ways.

tests/integration/coord/netns.sh (NS_RELAY=1) gives each VM j a second network namespace, its
front, on the VMs' network: the front owns the address of vm_j's endpoint in --members, so
every other VM that connects to vm_j's coordinator reaches the front. This relay listens there
(a socket made in the front's namespace) and carries each connection on to the coordinator by
a socket made in vm_j's own namespace, where that address is local (on lo): one process, one
thread, its sockets in the namespaces they were made in (setns around each socket()). The
front moves with its VM in a partition, so partitions cut exactly what they cut before.

The control file (--ctl) says what is slow, read again whenever it changes (polled every
50 ms): "MS I J ..." holds the chunks of every connection from vm_I to vm_J (both listed) for
MS ms each way; "0" or an empty file: no delay. A chunk read while the delay is on is written
MS ms later, in order (a later chunk never overtakes an earlier one, even once the delay is
off). Chunks of a connection between VMs not both listed pass at once. An agent's connection
to another VM's coordinator goes through the relay too (it cannot be told from a
coordinator's: both come from the VM's address); an agent's to its own VM's coordinator does
not (local).

Logs to --log: "ready" once every front listens, each change of the control file, and at each
change how many chunks the delay held since the last."""
import argparse
import asyncio
import ctypes
import os
import signal
import socket
import struct
import sys
import time

CLONE_NEWNET = 0x40000000
LIBC = ctypes.CDLL(None, use_errno=True)


class Relay:
    def __init__(self, args):
        self.a = args
        self.home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        self.ms, self.slow = 0, set()
        self.held = 0
        self.ctl_seen = None
        self.log = open(args.log, "a", buffering=1)
        self.conns = set()

    def say(self, what):
        self.log.write(f"{time.time():.3f} {what}\n")

    def socket_in(self, ns_fd):
        """A TCP socket of the namespace ns_fd (this thread goes there and back)."""
        if LIBC.setns(ns_fd, CLONE_NEWNET) != 0:
            e = ctypes.get_errno()
            raise OSError(e, f"setns: {os.strerror(e)}")
        try:
            return socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        finally:
            if LIBC.setns(self.home, CLONE_NEWNET) != 0:
                e = ctypes.get_errno()
                raise OSError(e, f"setns back: {os.strerror(e)}")

    def delay_s(self, src, dst):
        return self.ms / 1000.0 if src in self.slow and dst in self.slow else 0.0

    def src_vm(self, ip):
        """vm_I of a VM's address on the VMs' network (--src-prefix, then 10 + I), or None."""
        if not ip.startswith(self.a.src_prefix):
            return None
        n = int(ip[len(self.a.src_prefix):]) - self.a.src_offset
        return n if 0 <= n < 256 else None

    def read_ctl(self):
        try:
            st = os.stat(self.a.ctl)
            key = (st.st_mtime_ns, st.st_size, st.st_ino)
        except FileNotFoundError:
            key = None
        if key == self.ctl_seen:
            return
        self.ctl_seen = key
        words = []
        if key is not None:
            with open(self.a.ctl) as f:
                words = f.read().split()
        try:
            ms, slow = (int(words[0]), {int(w) for w in words[1:]}) if words else (0, set())
        except ValueError:
            self.say(f"control file not understood, ignored: {' '.join(words)!r}")
            return
        self.say(f"held {self.held} chunks at {self.ms} ms among {sorted(self.slow)}; "
                 f"now {ms} ms among {sorted(slow)}")
        self.ms, self.slow, self.held = ms, slow, 0

    async def watch_ctl(self):
        while True:
            self.read_ctl()
            await asyncio.sleep(0.05)

    async def pipe(self, reader, writer, src, dst):
        """Copies reader to writer, each chunk held delay_s(src, dst) when read."""
        loop = asyncio.get_running_loop()
        q = asyncio.Queue()

        async def pull():
            while True:
                data = await reader.read(65536)
                d = self.delay_s(src, dst)
                if d > 0 and data:
                    self.held += 1
                q.put_nowait((loop.time() + d, data))
                if not data:
                    return

        async def push():
            while True:
                due, data = await q.get()
                wait = due - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not data:
                    if writer.can_write_eof():
                        writer.write_eof()
                    return
                writer.write(data)
                await writer.drain()

        await asyncio.gather(pull(), push())

    async def serve(self, front, back_fd, addr, reader, writer):
        peer = writer.get_extra_info("peername")
        src = self.src_vm(peer[0]) if peer else None
        out = self.socket_in(back_fd)
        out.setblocking(False)
        try:
            await asyncio.wait_for(asyncio.get_running_loop().sock_connect(out, (addr, self.a.port)), 3)
        except (OSError, asyncio.TimeoutError):
            out.close()
            s = writer.get_extra_info("socket")
            if s is not None:  # a reset, as the coordinator's closed port would answer
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
            return
        r2, w2 = await asyncio.open_connection(sock=out)
        for w in (writer, w2):
            s = w.get_extra_info("socket")
            if s is not None:
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        tasks = [asyncio.ensure_future(self.pipe(reader, w2, src, front)),
                 asyncio.ensure_future(self.pipe(r2, writer, front, src))]
        self.conns.add((writer, w2))
        try:
            pending = tasks
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_EXCEPTION)
                if any(t.exception() for t in done if not t.cancelled()):
                    break
        except asyncio.CancelledError:
            pass
        finally:
            for t in tasks:
                t.cancel()
            for w in (writer, w2):
                w.transport.abort()
            self.conns.discard((writer, w2))

    async def main(self):
        servers = []
        for spec in self.a.front:
            front_ns, back_ns, addr, idx = spec.split(",")
            front_fd = os.open(f"/run/netns/{front_ns}", os.O_RDONLY)
            back_fd = os.open(f"/run/netns/{back_ns}", os.O_RDONLY)
            ls = self.socket_in(front_fd)
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            ls.bind((addr, self.a.port))
            ls.listen(256)
            ls.setblocking(False)

            def handler(r, w, i=int(idx), b=back_fd, a=addr):
                return self.serve(i, b, a, r, w)

            servers.append(await asyncio.start_server(handler, sock=ls))
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        loop.add_signal_handler(signal.SIGINT, stop.set)
        watcher = asyncio.ensure_future(self.watch_ctl())
        self.say(f"ready: {len(servers)} fronts on port {self.a.port}")
        await stop.wait()
        watcher.cancel()
        for s in servers:
            s.close()
        for pair in list(self.conns):
            for w in pair:
                w.transport.abort()
        self.say(f"stopped (held {self.held} chunks at {self.ms} ms since the last change)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctl", required=True, help="control file: 'MS I J ...' or '0'")
    ap.add_argument("--log", required=True)
    ap.add_argument("--port", type=int, default=7700)
    ap.add_argument("--src-prefix", required=True, help="e.g. 10.214.20. (vm_I is PREFIX(10+I))")
    ap.add_argument("--src-offset", type=int, default=10)
    ap.add_argument("--front", action="append", required=True,
                    help="FRONT_NETNS,VM_NETNS,ADDRESS,I: vm_I's front (repeated)")
    asyncio.run(Relay(ap.parse_args()).main())
    return 0


if __name__ == "__main__":
    sys.exit(main())
