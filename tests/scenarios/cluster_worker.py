"""A lease worker for the cluster and dead-connection scenarios (clusters.sh): the same
output as lease_worker.py (one decimal ID per line to --out, a JSON summary on a clean
exit, status 3 on a start-up error), plus the lease's timing options, with the registry's
transport deadline set to --registry-timeout-ms as a deployment would:

  cluster_worker.py --registry URL --out FILE --summary FILE [--worker-bits B]
                    [--lease-ttl-ms MS] [--mark-ahead-ms MS] [--clock-skew-allowance-ms MS]
                    [--registry-timeout-ms MS] [--batch K] [--pause-ms MS]

URLs: zk://HOSTS/ROOT?identity=IP:PORT&session_timeout_ms=N, etcd://HOST:PORT/PREFIX
(etcd3gw speaks to one endpoint) and postgres://... Stops on SIGTERM/SIGINT, closing the
generator (releasing the worker ID).
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
import time
from typing import Any, Dict, List
from urllib.parse import parse_qs, urlparse

import segflake
from segflake.registries import EtcdRegistry, PostgresRegistry, ZooKeeperRegistry


def registry(url: str, timeout_s: float) -> Any:
    u = urlparse(url)
    if u.scheme == "zk":
        q = {k: v[-1] for k, v in parse_qs(u.query).items()}
        return ZooKeeperRegistry(
            u.netloc,
            root=u.path,
            identity=q.get("identity"),
            session_timeout_ms=int(q.get("session_timeout_ms", 10_000)),
            request_timeout=timeout_s,
        )
    if u.scheme == "etcd":
        return EtcdRegistry(u.netloc, prefix=u.path or "/segflake", timeout=timeout_s)
    if u.scheme in ("postgres", "postgresql"):
        # libpq's connect_timeout is whole seconds, at least 2.
        return PostgresRegistry(url, timeout=timeout_s, connect_timeout=max(2, math.ceil(timeout_s)))
    raise ValueError(f"unsupported registry URL {url!r}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--registry", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--worker-bits", type=int, default=3)
    ap.add_argument("--lease-ttl-ms", type=int, default=3000)
    ap.add_argument("--mark-ahead-ms", type=int, default=3000)
    ap.add_argument("--clock-skew-allowance-ms", type=int, default=1000)
    ap.add_argument("--registry-timeout-ms", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--pause-ms", type=float, default=1)
    a = ap.parse_args()

    stop = False

    def on_signal(signum: int, frame: Any) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    out = open(a.out, "a")
    try:
        gen = segflake.Snowflake.from_registry(
            registry(a.registry, a.registry_timeout_ms / 1000),
            layout={"preset": "twitter", "worker_bits": a.worker_bits},
            lease_ttl_ms=a.lease_ttl_ms,
            mark_ahead_ms=a.mark_ahead_ms,
            clock_skew_allowance_ms=a.clock_skew_allowance_ms,
            registry_timeout_ms=a.registry_timeout_ms,
        )
    except segflake.SegflakeError as e:
        print(f"start-up failed: {type(e).__name__} ({e.code}): {e}", file=sys.stderr)
        return 3
    issued, last_flush = 0, time.monotonic()
    errors: Dict[str, int] = {}
    messages: Dict[str, str] = {}
    workers: List[int] = []
    while not stop:
        try:
            ids = gen.next_ids(a.batch)
        except segflake.SegflakeError as e:
            kind = type(e).__name__.removesuffix("Error")
            errors[kind] = errors.get(kind, 0) + 1
            messages.setdefault(kind, str(e)[:300])
            out.flush()
            time.sleep(0.05)
            continue
        w = gen.decode(ids[0]).worker_id
        if w not in workers:
            workers.append(w)
        out.write("".join(f"{i}\n" for i in ids))
        issued += len(ids)
        if time.monotonic() - last_flush >= 0.05:
            out.flush()
            last_flush = time.monotonic()
        if a.pause_ms > 0:
            time.sleep(a.pause_ms / 1000)
    out.flush()
    stats = gen.lease_stats()
    gen.close()
    out.close()
    summary = {
        "lang": "python",
        "ids": issued,
        "worker_ids": workers,
        "errors": errors,
        "messages": messages,
        "stats": stats.to_dict() if stats is not None else None,
    }
    with open(a.summary, "w") as f:
        json.dump(summary, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
