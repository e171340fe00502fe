"""A TCP proxy that can partition its clients from the server, for the session-expiry
scenario: `tcp_proxy.py LISTEN_PORT TARGET_HOST:TARGET_PORT` prints "ready" once listening.
SIGUSR1 partitions (bytes in both directions are dropped and connections stay open, so
neither side sees a close); SIGUSR2 heals (connections made during the partition are then
forwarded normally; ones that carried dropped bytes are closed, as a real network's
broken streams would be)."""

from __future__ import annotations

import selectors
import signal
import socket
import sys
from typing import Dict, Set

partitioned = False
broken: Set[socket.socket] = set()


def main() -> int:
    listen_port, target = int(sys.argv[1]), sys.argv[2]
    host, _, port = target.rpartition(":")
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", listen_port))
    srv.listen(64)
    sel = selectors.DefaultSelector()
    sel.register(srv, selectors.EVENT_READ)
    peer: Dict[socket.socket, socket.socket] = {}

    def close(s: socket.socket) -> None:
        for x in (s, peer.get(s)):
            if x is not None and x in peer:
                sel.unregister(x)
                x.close()
                peer.pop(x, None)
                broken.discard(x)

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
        for key, _ in sel.select(timeout=0.1):
            s = key.fileobj
            if s is srv:
                c, _ = srv.accept()
                try:
                    u = socket.create_connection((host, int(port)), timeout=2)
                except OSError:
                    c.close()
                    continue
                peer[c], peer[u] = u, c
                sel.register(c, selectors.EVENT_READ)
                sel.register(u, selectors.EVENT_READ)
                continue
            assert isinstance(s, socket.socket)
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if not data:
                close(s)
            elif partitioned:
                broken.update((s, peer[s]))
            else:
                try:
                    peer[s].sendall(data)
                except OSError:
                    close(s)


if __name__ == "__main__":
    sys.exit(main())
