"""Which asyncio PostgreSQL driver a segment store should use: one allocation (Leaf's
``UPDATE leaf_alloc … RETURNING``, autocommit) per call, from one event loop, through
segflake's ``AsyncPostgresStore`` (psycopg 3's AsyncConnection), through asyncpg running
the same statement, and through the synchronous ``PostgresStore`` on a worker thread (what
``AsyncSegmentGenerator`` does with a plain store). Sequential calls give the latency;
``--concurrency`` tasks on distinct tags give the throughput of one connection each.

  python pg_async.py POSTGRES_URL [--calls 2000] [--concurrency 8]

Prints a Markdown table. Needs psycopg[binary], asyncpg and segflake installed.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Awaitable, Callable, List

import asyncpg  # type: ignore[import-untyped]

from segflake import stores

SQL_ASYNCPG = (
    "UPDATE leaf_alloc SET max_id = max_id + $1, update_time = now() WHERE biz_tag = $2 "
    "RETURNING max_id, step"
)


async def timed(call: Callable[[], Awaitable[object]], n: int) -> List[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        await call()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def row(name: str, lat: List[float], rate: float) -> str:
    lat.sort()
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
    return f"| {name} | {statistics.median(lat):.3f} ms | {p99:.3f} ms | {rate:,.0f}/s |"


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=8)
    a = ap.parse_args()
    tags = [f"bench_async_{i}" for i in range(a.concurrency)]
    setup = await asyncpg.connect(a.url)
    await setup.execute("DELETE FROM leaf_alloc WHERE biz_tag LIKE 'bench_async_%'")
    for t in tags:
        await setup.execute(
            "INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES ($1, 1, 1000, 'bench')", t
        )
    await setup.close()

    async def run(name: str, make: Callable[[], Awaitable[Callable[[str], Awaitable[object]]]]) -> str:
        one = await make()
        await one(tags[0])  # connect and warm up
        lat = await timed(lambda: one(tags[0]), a.calls)
        calls = [await make() for _ in tags]
        for c, t in zip(calls, tags):
            await c(t)
        per = max(1, a.calls // len(tags))
        t0 = time.perf_counter()

        async def loop(c: Callable[[str], Awaitable[object]], t: str) -> None:
            for _ in range(per):
                await c(t)

        await asyncio.gather(*(loop(c, t) for c, t in zip(calls, tags)))
        return row(name, lat, per * len(tags) / (time.perf_counter() - t0))

    async def psycopg_store() -> Callable[[str], Awaitable[object]]:
        s = stores.AsyncPostgresStore(a.url, use_row_step=False)
        return lambda t: s.allocate(t, 1000)

    async def asyncpg_conn() -> Callable[[str], Awaitable[object]]:
        c = await asyncpg.connect(a.url)
        stmt = await c.prepare(SQL_ASYNCPG)
        return lambda t: stmt.fetchrow(1000, t)

    async def sync_on_thread() -> Callable[[str], Awaitable[object]]:
        s = stores.PostgresStore(a.url, use_row_step=False)
        loop = asyncio.get_running_loop()
        return lambda t: loop.run_in_executor(None, s.allocate, t, 1000)

    print(f"| driver | p50 (sequential) | p99 (sequential) | {a.concurrency} tags at once |")
    print("|---|---:|---:|---:|")
    for name, make in [
        ("segflake `AsyncPostgresStore` (psycopg 3 AsyncConnection)", psycopg_store),
        ("asyncpg, the same statement (prepared)", asyncpg_conn),
        ("segflake `PostgresStore` on a worker thread", sync_on_thread),
    ]:
        print(await run(name, make), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
