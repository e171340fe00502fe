"""asyncio worker for tests/scenarios/aio.sh: segment IDs from the async stores, snowflake IDs
leased through the async registries, serials from the async Redis counter, all on one
event loop whose lag a 10 ms ticker measures. IDs go to --out (one decimal per line), a
JSON summary to --summary.

  aio_worker.py segments --db pg|mysql|redis --url URL --tag TAG --seconds S [--sync] [--step N]
  aio_worker.py lease --db pg|mysql|redis --url URL --seconds S
  aio_worker.py serial --url URL --prefix P --seconds S
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from typing import Any, Dict, List

import segflake
from segflake import aio_registries, stores
from segflake.counters import AsyncRedisSerialCounter


class Ticker:
    def __init__(self) -> None:
        self.lags: List[float] = []

    async def run(self) -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            self.lags.append(max(0.0, now - last - 0.01))
            last = now

    def figures(self) -> Dict[str, float]:
        lags = sorted(self.lags) or [0.0]
        return {
            "lag_max_ms": round(lags[-1] * 1000, 1),
            "lag_p99_ms": round(lags[int(len(lags) * 0.99) - 1 if len(lags) > 1 else 0] * 1000, 1),
            "ticks": len(self.lags),
        }


def make_store(db: str, url: str, sync: bool, timeout: float) -> Any:
    if db == "pg":
        return stores.PostgresStore(url, timeout=timeout) if sync else stores.AsyncPostgresStore(url, timeout=timeout)
    if db == "mysql":
        if sync:
            return stores.MySQLStore(url)
        return stores.AsyncMySQLStore(url, timeout=timeout)
    if db == "redis":
        return stores.RedisStore(url, socket_timeout=timeout) if sync else stores.AsyncRedisStore(url, socket_timeout=timeout)
    raise SystemExit(f"unknown db {db}")


async def segments(args: argparse.Namespace, ids: List[int], summary: Dict[str, Any]) -> None:
    store = make_store(args.db, args.url, args.sync, args.timeout)
    exhausted = 0
    first_error = None
    gen = segflake.AsyncSegmentGenerator(
        store,
        step=args.step,
        dynamic_step=False,
        wait_timeout_ms=int(args.timeout * 1000) + 500,
        store_timeout_ms=int(args.timeout * 1000) + 200,
        retry_backoff_ms=100,
    )
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        try:
            ids.extend(await gen.next_ids(args.tag, 20))
            if args.ready and len(ids) >= 20 and not os.path.exists(args.ready):
                open(args.ready, "w").close()
        except segflake.SegmentsExhaustedError as e:
            exhausted += 1
            first_error = first_error or str(e)[:300]
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.001)
    await gen.aclose()
    closer = getattr(store, "aclose", None)
    if closer is not None:
        await closer()
    else:
        store.close()
    summary.update(exhausted=exhausted, first_error=first_error, sync=args.sync)


def make_registry(db: str, url: str) -> Any:
    if db == "pg":
        return aio_registries.AsyncPostgresRegistry(url)
    if db == "mysql":
        return aio_registries.AsyncMySQLRegistry(url)
    if db == "redis":
        return aio_registries.AsyncRedisRegistry(url)
    raise SystemExit(f"unknown db {db}")


async def lease(args: argparse.Namespace, ids: List[int], summary: Dict[str, Any]) -> None:
    registry = make_registry(args.db, args.url)
    gen = await segflake.from_registry_async(registry, lease_ttl_ms=3000, claim_wait_ms=5000)
    summary["worker_id"] = gen.worker_id
    deadline = time.monotonic() + args.seconds
    while time.monotonic() < deadline:
        ids.extend(gen.next_ids(50))
        await asyncio.sleep(0.002)
    await segflake.close_async(gen)
    await registry.aclose()


async def serial(args: argparse.Namespace, ids: List[int], summary: Dict[str, Any]) -> None:
    async with AsyncRedisSerialCounter(args.url, prefix=args.prefix) as counter:
        gen = segflake.AsyncSerialGenerator(counter, worker_digits=0, sequence_digits=6)
        deadline = time.monotonic() + args.seconds
        while time.monotonic() < deadline:
            ids.append(await gen.next())
            await asyncio.sleep(0.001)


async def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["segments", "lease", "serial"])
    ap.add_argument("--db", default="pg")
    ap.add_argument("--url", required=True)
    ap.add_argument("--tag", default="aio")
    ap.add_argument("--prefix", default="aio")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--step", type=int, default=200)
    ap.add_argument("--timeout", type=float, default=1.0)
    ap.add_argument("--sync", action="store_true")
    ap.add_argument("--ready", default=None, help="a file created once IDs flow")
    ap.add_argument("--out", required=True)
    ap.add_argument("--summary", required=True)
    args = ap.parse_args()
    ticker = Ticker()
    tick = asyncio.get_running_loop().create_task(ticker.run())
    ids: List[int] = []
    summary: Dict[str, Any] = {"mode": args.mode, "db": args.db}
    started = time.monotonic()
    await {"segments": segments, "lease": lease, "serial": serial}[args.mode](args, ids, summary)
    tick.cancel()
    summary.update(ticker.figures(), ids=len(ids), elapsed_s=round(time.monotonic() - started, 2))
    with open(args.out, "w") as f:
        f.write("".join(f"{i}\n" for i in ids))
    with open(args.summary, "w") as f:
        json.dump(summary, f)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
