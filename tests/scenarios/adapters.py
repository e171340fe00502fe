"""The Python store adapters on real servers: what users rely on beyond allocate.

For each of PostgreSQL, MariaDB and Redis: ensure_tag creates a row once and then leaves it
alone; a fresh tag's first segment is Leaf's 1..=step; a tag without a row fails with
TagNotFoundError naming ensure_tag (never a counter silently started at 0); bad arguments
are refused with InvalidArgumentError; a SegmentGenerator over the store works end to end;
a row moved back (a restored backup) is refused by the generator, not issued again.
"""

from __future__ import annotations

import os
import sys
import uuid
from typing import Any, List

import segflake
from segflake.stores import MySQLStore, PostgresStore, RedisStore, TagNotFoundError


def stores() -> List[Any]:
    e = os.environ
    return [
        PostgresStore(e["SEGFLAKE_PG_DSN"]),
        MySQLStore(host=e["SEGFLAKE_MYSQL_HOST"], port=int(e["SEGFLAKE_MYSQL_PORT"]), user=e["SEGFLAKE_MYSQL_USER"],
                   password=e["SEGFLAKE_MYSQL_PASSWORD"], database=e["SEGFLAKE_MYSQL_DB"]),
        RedisStore(e["SEGFLAKE_REDIS_URL"]),
    ]


def check(store: Any) -> str:
    name = type(store).__name__
    tag = "adapters_" + uuid.uuid4().hex[:12]
    try:
        store.allocate(tag, 100)
        raise AssertionError(f"{name}: allocate on a tag without a row succeeded")
    except TagNotFoundError as exc:
        assert "ensure_tag" in str(exc), f"{name}: {exc}"
        assert isinstance(exc, segflake.StoreError)
    assert store.ensure_tag(tag) is True, f"{name}: ensure_tag did not create the row"
    assert store.allocate(tag, 100) == (101, 100), f"{name}: a fresh row's first segment is not 1..=100"
    assert store.ensure_tag(tag, max_id=5) is False, f"{name}: ensure_tag on an existing row"
    assert store.allocate(tag, 7) == (108, 7), f"{name}: ensure_tag changed an existing row"
    for bad in (0, -1, 1 << 31, True):
        try:
            store.allocate(tag, bad)
            raise AssertionError(f"{name}: step {bad!r} accepted")
        except segflake.InvalidArgumentError:
            pass
    for bad_tag in ("", "x" * 129):
        try:
            store.allocate(bad_tag, 1)
            raise AssertionError(f"{name}: tag {bad_tag!r} accepted")
        except segflake.InvalidArgumentError:
            pass
    with segflake.SegmentGenerator(store, step=50) as gen:
        got = gen.next_ids(tag, 120)
    assert got == list(range(108, 228)), f"{name}: generator issued {got[:3]}..{got[-3:]}"
    # A second generator (another process, say) continues above the first one's segments.
    with segflake.SegmentGenerator(store, step=50) as gen:
        nxt = gen.next_id(tag)
    assert nxt >= 258, f"{name}: second generator issued {nxt}"
    # The row moved back (say, a restored backup): the next range precedes IDs already
    # issued, and the generator refuses it instead of issuing them again.
    with segflake.SegmentGenerator(store, step=50, retry_backoff_ms=10, wait_timeout_ms=300) as gen:
        first = gen.next_id(tag)
        move_back(store, tag)
        got_ids = [first]
        try:
            for _ in range(200):
                got_ids.append(gen.next_id(tag))
            raise AssertionError(f"{name}: IDs kept coming from a row that moved back")
        except segflake.SegmentsExhaustedError as exc:
            assert "store contract violation" in str(exc) and "precedes" in str(exc), f"{name}: {exc}"
        assert len(set(got_ids)) == len(got_ids) and min(got_ids) >= first, f"{name}: {got_ids}"
        assert len(got_ids) <= 100, f"{name}: issued {len(got_ids)} IDs, more than the two buffered segments"
    store.close()
    return name


def move_back(store: Any, tag: str) -> None:
    if isinstance(store, RedisStore):
        store.client.set(store.key(tag), 1)
    elif isinstance(store, PostgresStore):
        store._conns.run(lambda c: c.execute("UPDATE leaf_alloc SET max_id = 1 WHERE biz_tag = %s", (tag,)))
    else:
        def op(c: Any) -> None:
            with c.cursor() as cur:
                cur.execute("UPDATE leaf_alloc SET max_id = 1 WHERE biz_tag = %s", (tag,))
        store._conns.run(op)


def main() -> int:
    done = [check(s) for s in stores()]
    print(f"python adapters behave: {', '.join(done)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
