"""Leaf's snowflake mode, as its SnowflakeZookeeperHolder and SnowflakeIDGenImpl run it,
and small ZooKeeper tools for the scenarios (kazoo).

  leaf_snowflake.py node --zk HOSTS --root /snowflake/NAME --identity IP:PORT --out FILE
      A Leaf node: finds (or creates, persistent sequential) ROOT/forever/IP:PORT-SEQ,
      refuses to start when its clock is behind the node's timestamp, reports
      {"ip","port","timestamp"} every 3 s, and issues Leaf IDs (Twitter's epoch, 10 worker
      bits = SEQ, 12 sequence bits starting at a random 0-99 each millisecond) at up to
      ~20,000 IDs/s, appending them to FILE (flushed every 50 ms) until killed.
  leaf_snowflake.py fleet --zk HOSTS --root ROOT --identities IP:PORT,...
      Creates the forever nodes of a fleet in order (worker IDs 0, 1, ...).
  leaf_snowflake.py held --zk HOSTS --root ROOT --worker ID   (prints the holder's owner)
  leaf_snowflake.py reset --zk HOSTS --root ROOT              (deletes ROOT)
  leaf_snowflake.py check --zk HOSTS --root ROOT
      Reads every forever node as Leaf does (name IP:PORT-SEQ, data exactly Leaf's
      Endpoint JSON) and prints "SEQ IP:PORT TIMESTAMP" lines; exits 1 on anything else.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
from typing import Any

from kazoo.client import KazooClient

TWEPOCH = 1288834974657
REPORT_S = 3.0


def now_ms() -> int:
    return int(time.time() * 1000)


def endpoint(ip: str, port: str, ts: int) -> bytes:
    # Leaf's Endpoint(ip, port, timestamp) through Jackson: fields in declaration order.
    return json.dumps({"ip": ip, "port": port, "timestamp": ts}, separators=(",", ":")).encode()


def connect(hosts: str) -> KazooClient:
    zk = KazooClient(hosts=hosts, timeout=4.0)
    zk.start(timeout=10)
    return zk


def node(a: Any) -> int:
    zk = connect(a.zk)
    ip, _, port = a.identity.rpartition(":")
    forever = f"{a.root}/forever"
    zk.ensure_path(forever)
    mine = [c for c in zk.get_children(forever) if c.rpartition("-")[0] == a.identity]
    if mine:
        path = f"{forever}/{min(mine)}"
        worker = int(path.rpartition("-")[2])
        data, _ = zk.get(path)
        if json.loads(data)["timestamp"] > now_ms():
            print("init timestamp check error, forever node timestamp gt this node time", file=sys.stderr)
            return 2
    else:
        path = zk.create(f"{forever}/{a.identity}-", endpoint(ip, port, now_ms()), sequence=True)
        worker = int(path.rpartition("-")[2])
    assert 0 <= worker <= 1023
    last_update = [now_ms()]

    def report() -> None:
        while True:
            time.sleep(REPORT_S)
            t = now_ms()
            if t < last_update[0]:
                continue
            zk.set(path, endpoint(ip, port, t))
            last_update[0] = t

    threading.Thread(target=report, daemon=True).start()
    out = open(a.out, "a")
    last_ts, seq, buf, flushed = -1, 0, [], time.monotonic()
    while True:
        ts = now_ms()
        if ts < last_ts:
            continue  # Leaf waits out a small step back
        if ts == last_ts:
            seq = (seq + 1) & 4095
            if seq == 0:
                while ts <= last_ts:
                    ts = now_ms()
        else:
            seq = random.randint(0, 99)
        last_ts = ts
        buf.append(((ts - TWEPOCH) << 22) | (worker << 12) | seq)
        if len(buf) % 20 == 0:
            time.sleep(0.001)  # a service's pace (up to ~20,000 IDs/s), not a busy loop
        if time.monotonic() - flushed > 0.05:
            out.write("".join(f"{i}\n" for i in buf))
            out.flush()
            buf, flushed = [], time.monotonic()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("command", choices=["node", "fleet", "held", "reset", "check"])
    ap.add_argument("--zk", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--identity")
    ap.add_argument("--identities")
    ap.add_argument("--worker", type=int)
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.command == "node":
        return node(a)
    zk = connect(a.zk)
    try:
        if a.command == "fleet":
            zk.ensure_path(f"{a.root}/forever")
            for ident in a.identities.split(","):
                ip, _, port = ident.rpartition(":")
                zk.create(f"{a.root}/forever/{ident}-", endpoint(ip, port, now_ms()), sequence=True)
        elif a.command == "held":
            p = f"{a.root}/leaf_temporary/{a.worker}"
            if zk.exists(p):
                print(json.loads(zk.get(p)[0])["owner"])
        elif a.command == "reset":
            if zk.exists(a.root):
                zk.delete(a.root, recursive=True)
        elif a.command == "check":
            for name in sorted(zk.get_children(f"{a.root}/forever")):
                ident, _, seq = name.rpartition("-")
                data = zk.get(f"{a.root}/forever/{name}")[0]
                e = json.loads(data)
                ip, _, port = ident.rpartition(":")
                if list(e) != ["ip", "port", "timestamp"] or e["ip"] != ip or e["port"] != port \
                        or not isinstance(e["timestamp"], int) or len(seq) != 10:
                    print(f"{name}: {data!r} is not what Leaf reads", file=sys.stderr)
                    return 1
                print(int(seq), ident, e["timestamp"])
    finally:
        zk.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
