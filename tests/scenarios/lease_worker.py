"""A scenario process that leases its worker ID from a real registry and issues IDs.

  lease_worker.py --registry URL --out FILE --summary FILE [--count N] [--worker-bits B]
                  [--lease-ttl-ms MS] [--preferred-worker-id N] [--max-peer-skew-ms MS]
                  [--batch K] [--pause-ms MS] [--owner LABEL]

Writes one decimal ID per line to --out (flushed every 1000 IDs and every 50 ms), counts
typed errors by class and keeps going, closes the generator (releasing the worker ID) on
SIGTERM/SIGINT or after --count IDs, and writes a JSON summary. A start-up error is
printed with its class name and exits with status 3.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from typing import Any, Dict, List

import segflake
from segflake.registries import from_url


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--registry", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--count", type=int, default=0)
    ap.add_argument("--worker-bits", type=int, default=3)
    ap.add_argument("--lease-ttl-ms", type=int, default=3000)
    ap.add_argument("--preferred-worker-id", type=int, default=None)
    ap.add_argument("--max-peer-skew-ms", type=int, default=0)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--pause-ms", type=float, default=1)
    ap.add_argument("--owner", default=None, help="the owner label (default: the host name)")
    a = ap.parse_args()

    stop = False

    def on_signal(signum: int, frame: Any) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    options: Dict[str, Any] = {
        "layout": {"preset": "twitter", "worker_bits": a.worker_bits},
        "lease_ttl_ms": a.lease_ttl_ms,
        "max_peer_skew_ms": a.max_peer_skew_ms,
    }
    if a.preferred_worker_id is not None:
        options["preferred_worker_id"] = a.preferred_worker_id
    if a.owner is not None:
        options["owner"] = a.owner
    out = open(a.out, "a")
    try:
        gen = segflake.Snowflake.from_registry(from_url(a.registry), **options)
    except segflake.SegflakeError as e:
        print(f"start-up failed: {type(e).__name__} ({e.code}): {e}", file=sys.stderr)
        # The harness stops every worker with SIGTERM, maybe while this one exits: the
        # interpreter's shutdown puts SIGTERM back to its default action (death, status
        # 143) unless it is ignored, and the exit status must stay 3.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        return 3
    issued, pending, last_flush = 0, 0, time.monotonic()
    errors: Dict[str, int] = {}
    workers: List[int] = []
    while not stop and (a.count == 0 or issued < a.count):
        n = a.batch if a.count == 0 else min(a.batch, a.count - issued)
        try:
            ids = gen.next_ids(n)
        except segflake.SegflakeError as e:
            kind = type(e).__name__.removesuffix("Error")
            errors[kind] = errors.get(kind, 0) + 1
            # The IDs already issued are on disk before the refusals go on.
            out.flush()
            time.sleep(0.05)
            continue
        # The worker IDs the IDs were composed with (gen.worker_id may have moved on since).
        for w in {gen.decode(ids[0]).worker_id, gen.decode(ids[-1]).worker_id}:
            if w not in workers:
                workers.append(w)
        out.write("".join(f"{i}\n" for i in ids))
        issued += len(ids)
        pending += len(ids)
        if pending >= 1000 or time.monotonic() - last_flush >= 0.05:
            out.flush()
            pending, last_flush = 0, time.monotonic()
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
        "stats": stats.to_dict() if stats is not None else None,
    }
    with open(a.summary, "w") as f:
        json.dump(summary, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
