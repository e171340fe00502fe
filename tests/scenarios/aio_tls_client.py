"""TLS cases for the asyncio adapters (tests/scenarios/aio.sh, aio_tls): reads a JSON list of
cases ``{"name", "kind": "store"|"registry"|"counter", "url", "expect"}`` (the format of
tls_client.py) and runs each on an event loop: a store (AsyncRedisStore,
AsyncPostgresStore, AsyncMySQLStore from the URL) allocates a segment of tag ``tls``, a
registry (``segflake.aio_registries.from_url``) claims worker ID 0 and releases it, a
counter (AsyncRedisSerialCounter) runs the serial script. ``expect`` is ``ok`` or a
regular expression the error's text (with its causes) must match (case-insensitive).
Prints one line per case and exits 1 if any case went otherwise.
"""

import asyncio
import json
import re
import sys
from typing import Any


async def store(url: str) -> str:
    from segflake.stores import AsyncMySQLStore, AsyncPostgresStore, AsyncRedisStore

    s: Any
    if url.startswith(("redis://", "rediss://")):
        s = AsyncRedisStore(url)
    elif url.startswith(("postgres://", "postgresql://")):
        s = AsyncPostgresStore(url)
        await s.create_table()
    else:
        s = AsyncMySQLStore(url)
        await s.create_table()
    try:
        await s.ensure_tag("tls")
        return f"allocated {await s.allocate('tls', 10)}"
    finally:
        await s.aclose()


async def registry(url: str) -> str:
    from segflake.aio_registries import from_url

    r = from_url(url)
    try:
        mark = await r.claim(0, "aiotls#0000000000000001", 5000)
        if mark is None:
            raise AssertionError("worker ID 0 is held by another owner")
        await r.release(0, "aiotls#0000000000000001", 0)
        return f"claimed worker 0 (mark {mark})"
    finally:
        await r.aclose()


async def counter(url: str) -> str:
    import segflake
    from segflake.counters import AsyncRedisSerialCounter

    async with AsyncRedisSerialCounter(url, prefix="aiotls") as c:
        return f"serial {await segflake.AsyncSerialGenerator(c).next()}"


def describe(e: BaseException) -> str:
    parts = []
    seen = set()
    cur: Any = e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        parts.append(f"{type(cur).__name__}: {cur}")
        cur = cur.__cause__ or cur.__context__
    return " <- ".join(parts)


async def main() -> int:
    cases = json.load(open(sys.argv[1]))
    bad = 0
    for case in cases:
        run = {"store": store, "registry": registry, "counter": counter}[case["kind"]]
        try:
            got, ok = await asyncio.wait_for(run(case["url"]), 20), True
        except Exception as e:
            got, ok = describe(e), False
        expect = case["expect"]
        good = ok if expect == "ok" else (not ok and re.search(expect, got, re.I) is not None)
        bad += not good
        print(f"{'ok' if good else 'FAIL'} {case['name']}: {got[:300]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
