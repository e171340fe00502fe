"""A TCP proxy that can partition its clients from the server, for the session-expiry
scenario: `tcp_proxy.py LISTEN_PORT TARGET_HOST:TARGET_PORT [--delay-ms MS]` prints "ready"
once listening. With --delay-ms, what the server sends (and its close) reaches the client MS
milliseconds late, in order, as a slow or distant server would answer
(bench/segment/stores.sh). SIGUSR1 partitions (bytes in both directions are dropped and connections stay open, so
neither side sees a close); SIGUSR2 heals (connections made during the partition are then
forwarded normally; ones that carried dropped bytes are closed, as a real network's
broken streams would be)."""

from __future__ import annotations

import selectors
import signal
import socket
import sys
import time
from collections import deque
from typing import Deque, Dict, Set, Tuple

partitioned = False
broken: Set[socket.socket] = set()


def main() -> int:
    listen_port, target = int(sys.argv[1]), sys.argv[2]
    delay = float(sys.argv[4]) / 1000 if sys.argv[3:4] == ["--delay-ms"] else 0.0
    # Chunks waiting out the delay: (when to send, destination, bytes), in arrival order.
    late: Deque[Tuple[float, socket.socket, bytes]] = deque()
    host, _, port = target.rpartition(":")
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", listen_port))
    srv.listen(64)
    sel = selectors.DefaultSelector()
    sel.register(srv, selectors.EVENT_READ)
    peer: Dict[socket.socket, socket.socket] = {}
    upstream: Set[socket.socket] = set()

    def close(s: socket.socket) -> None:
        for x in (s, peer.get(s)):
            if x is not None and x in peer:
                if x.fileno() in sel.get_map():
                    sel.unregister(x)
                x.close()
                peer.pop(x, None)
                broken.discard(x)
                upstream.discard(x)

    def on_signal(signum: int, frame: object) -> None:
        global partitioned
        partitioned = signum == signal.SIGUSR1

    signal.signal(signal.SIGUSR1, on_signal)
    signal.signal(signal.SIGUSR2, on_signal)
    print("ready", flush=True)
    while True:
        if not partitioned:
            for s in list(broken):
                close(s)
        while late and late[0][0] <= time.monotonic():
            _, dest, chunk = late.popleft()
            if not chunk:  # the other side's close, passed on as late as its bytes
                close(dest)
            elif dest in peer:
                try:
                    dest.sendall(chunk)
                except OSError:
                    close(dest)
        wait = 0.1 if not late else min(0.1, max(0.0, late[0][0] - time.monotonic()))
        for key, _ in sel.select(timeout=wait):
            s = key.fileobj
            if s is srv:
                c, _ = srv.accept()
                try:
                    u = socket.create_connection((host, int(port)), timeout=2)
                except OSError:
                    c.close()
                    continue
                peer[c], peer[u] = u, c
                upstream.add(u)
                sel.register(c, selectors.EVENT_READ)
                sel.register(u, selectors.EVENT_READ)
                continue
            assert isinstance(s, socket.socket)
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            late_by = delay if s in upstream else 0.0
            if not data and late_by:
                sel.unregister(s)
                late.append((time.monotonic() + late_by, peer[s], b""))
            elif not data:
                close(s)
            elif partitioned:
                broken.update((s, peer[s]))
            elif late_by:
                late.append((time.monotonic() + late_by, peer[s], data))
            else:
                try:
                    peer[s].sendall(data)
                except OSError:
                    close(s)


if __name__ == "__main__":
    sys.exit(main())
