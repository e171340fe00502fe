"""The Python store adapters on real servers: what users rely on beyond allocate.

For each of PostgreSQL, MariaDB and Redis: a tag without a row is answered None, which a
generator raises as UnknownTagError naming the tag (never a counter silently started at 0),
or is created on first use with create_missing_tags; ensure_tag creates a row once and then
leaves it alone; Leaf's per-tag step: the SQL stores' first allocation of a tag uses its
row's step and every answer reports it, so a generator starts from it and never goes below
it (use_row_step=False: the generator's step); bad arguments are refused with
InvalidArgumentError; a SegmentGenerator over the store works end to end; a row moved back
(a restored backup) is refused by the generator, not issued again. The SQL stores' give
back (sync and asyncio) lowers max_id once, and run again with its token (a statement
resent after a lost reply) after another process allocated exactly the range given back
changes nothing; a PostgreSQL user without CREATE gives back through a marker table made
beforehand, and fails naming it otherwise.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
import uuid
from typing import Any, Callable, List

import segflake
from segflake.stores import AsyncMySQLStore, AsyncPostgresStore, MySQLStore, PostgresStore, RedisStore
from segflake.stores._common import segment_statement


def kinds() -> List[Callable[..., Any]]:
    e = os.environ
    return [
        lambda **kw: PostgresStore(e["SEGFLAKE_PG_DSN"], **kw),
        lambda **kw: MySQLStore(host=e["SEGFLAKE_MYSQL_HOST"], port=int(e["SEGFLAKE_MYSQL_PORT"]),
                                user=e["SEGFLAKE_MYSQL_USER"], password=e["SEGFLAKE_MYSQL_PASSWORD"],
                                database=e["SEGFLAKE_MYSQL_DB"], **kw),
        lambda **kw: RedisStore(e["SEGFLAKE_REDIS_URL"], **kw),
    ]


def check(make: Callable[..., Any]) -> str:
    store = make()
    name = type(store).__name__
    sql = not isinstance(store, RedisStore)
    tag = "adapters_" + uuid.uuid4().hex[:12]
    assert store.allocate(tag, 100) is None, f"{name}: allocate on a tag without a row"
    with segflake.SegmentGenerator(store, wait_timeout_ms=300) as gen:
        try:
            gen.next_id(tag)
            raise AssertionError(f"{name}: an ID from a tag without a row")
        except segflake.UnknownTagError as exc:
            assert tag in str(exc), f"{name}: {exc}"
    assert store.ensure_tag(tag) is True, f"{name}: ensure_tag did not create the row"
    # Leaf: a tag's first allocation uses its row's step (ensure_tag's 1000), reported as
    # the tag's; later ones the step asked for. Redis keeps no step per tag.
    first = store.allocate(tag, 100)
    assert first == ((1001, 1000, 1000) if sql else (101, 100)), f"{name}: first allocation {first}"
    top = first[0]
    assert store.ensure_tag(tag, max_id=5) is False, f"{name}: ensure_tag on an existing row"
    again = store.allocate(tag, 7)
    assert again == ((top + 7, 7, 1000) if sql else (top + 7, 7)), f"{name}: ensure_tag changed the row: {again}"
    top += 7
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
        step = gen.stats(tag).step
    assert got == list(range(top, top + 120)), f"{name}: generator issued {got[:3]}..{got[-3:]}"
    # The row's step is the floor of the dynamic step, in place of the generator's 50 (Redis
    # keeps no step per tag: its segments start at 50 and double, as Leaf's do).
    assert (step == 1000) if sql else (50 <= step < 1000), f"{name}: the generator's step is {step}"
    # A second generator (another process, say) continues above the first one's segments.
    with segflake.SegmentGenerator(make(), step=50) as gen:
        nxt = gen.next_id(tag)
    assert nxt >= top + 120, f"{name}: second generator issued {nxt}"
    if sql:
        # use_row_step=False: the generator's step from the first allocation on.
        plain = make(use_row_step=False)
        assert plain.allocate(tag, 10)[1:] == (10,), f"{name}: use_row_step=False"
        plain.close()
    # create_missing_tags: a tag without a row is created on first use (max_id 1).
    created = "adapters_new_" + uuid.uuid4().hex[:8]
    maker = make(create_missing_tags=500 if sql else True)
    with segflake.SegmentGenerator(maker, step=20) as gen:
        assert gen.next_ids(created, 3) == [1, 2, 3], f"{name}: a created tag starts at 1"
        assert gen.stats(created).current_end == (501 if sql else 21), f"{name}: created with its step"
    maker.close()
    # The row moved back (say, a restored backup): the next range precedes IDs already
    # issued, and the generator refuses it instead of issuing them again.
    with segflake.SegmentGenerator(store, step=50, retry_backoff_ms=10, wait_timeout_ms=300,
                                   dynamic_step=False) as gen:
        first_id = gen.next_id(tag)
        move_back(store, tag)
        got_ids = [first_id]
        try:
            for _ in range(3000):
                got_ids.append(gen.next_id(tag))
            raise AssertionError(f"{name}: IDs kept coming from a row that moved back")
        except segflake.SegmentsExhaustedError as exc:
            assert "store contract violation" in str(exc) and "precedes" in str(exc), f"{name}: {exc}"
        assert len(set(got_ids)) == len(got_ids) and min(got_ids) >= first_id, f"{name}: {got_ids}"
        assert len(got_ids) <= 2000, f"{name}: issued {len(got_ids)} IDs, more than the two buffered segments"
    if sql:
        give_back_once(store, make, name)
    store.close()
    return name


def sql_value(store: Any, sql: str, params: Any) -> Any:
    """The first column of the first row of ``sql`` on the store's connection."""
    if isinstance(store, PostgresStore):
        row = store._conns.run(lambda c: c.execute(sql, params).fetchone())
    else:
        def op(c: Any) -> Any:
            with c.cursor() as cur:
                cur.execute(sql, params)
                return cur.fetchone()
        row = store._conns.run(op)
    return None if row is None else row[0]


def row_max_id(store: Any, tag: str) -> int:
    return int(sql_value(store, "SELECT max_id FROM leaf_alloc WHERE biz_tag = %s", (tag,)))


def give_back_once(store: Any, make: Callable[..., Any], name: str) -> None:
    """A give back lowers max_id once; its statements run again with its token after
    another process allocated exactly the range given back change nothing."""
    tag = "adapters_gb_" + uuid.uuid4().hex[:12]
    assert store.ensure_tag(tag) is True
    other = make(use_row_step=False)
    top = other.allocate(tag, 1000)[0]
    # The generator's path: a fresh token, max_id lowered once.
    assert store.give_back(tag, top, top - 960) is True, f"{name}: give back"
    assert row_max_id(store, tag) == top - 960, f"{name}: not lowered"
    assert store.give_back(tag, top, top - 960) is False, f"{name}: lowered a row that moved"
    # The same give back twice (one token), another process's allocation in between.
    token = secrets.token_hex(16)
    assert other.allocate(tag, 960)[0] == top
    assert store._give_back(tag, top, top - 500, token) is True, f"{name}: give back by token"
    assert row_max_id(store, tag) == top - 500
    assert other.allocate(tag, 500)[0] == top, "another process allocates exactly the range given back"
    assert store._give_back(tag, top, top - 500, token) is False, f"{name}: a resend lowered max_id again"
    assert row_max_id(store, tag) == top, f"{name}: a resend lowered max_id again: IDs handed out twice"
    applied = sql_value(store, "SELECT applied FROM leaf_alloc_give_back WHERE token = %s", (token,))
    assert int(applied) == 1, f"{name}: the record of the give back: {applied!r}"
    assert other.allocate(tag, 10)[0] == top + 10
    other.close()


async def async_give_back_once(store: Any, sync: Any, name: str) -> str:
    """:func:`give_back_once` through an asyncio store (``sync`` allocates and reads)."""
    tag = "adapters_agb_" + uuid.uuid4().hex[:12]
    assert await store.ensure_tag(tag) is True
    top = sync.allocate(tag, 1000)[0]
    assert await store.give_back(tag, top, top - 960) is True, f"{name}: give back"
    assert row_max_id(sync, tag) == top - 960, f"{name}: not lowered"
    token = secrets.token_hex(16)
    assert sync.allocate(tag, 960)[0] == top
    assert await store._give_back(tag, top, top - 500, token) is True, f"{name}: give back by token"
    assert sync.allocate(tag, 500)[0] == top
    assert await store._give_back(tag, top, top - 500, token) is False, f"{name}: a resend lowered max_id again"
    assert row_max_id(sync, tag) == top, f"{name}: a resend lowered max_id again: IDs handed out twice"
    await store.aclose()
    sync.close()
    return name


def async_stores() -> List[str]:
    e = os.environ
    mysql_url = (
        f"mysql://{e['SEGFLAKE_MYSQL_USER']}:{e['SEGFLAKE_MYSQL_PASSWORD']}@{e['SEGFLAKE_MYSQL_HOST']}:"
        f"{e['SEGFLAKE_MYSQL_PORT']}/{e['SEGFLAKE_MYSQL_DB']}"
    )

    async def main() -> List[str]:
        return [
            await async_give_back_once(
                AsyncPostgresStore(e["SEGFLAKE_PG_DSN"]),
                kinds()[0](use_row_step=False),
                "AsyncPostgresStore",
            ),
            await async_give_back_once(
                AsyncMySQLStore(mysql_url),
                kinds()[1](use_row_step=False),
                "AsyncMySQLStore",
            ),
        ]

    done: List[str] = asyncio.run(main())
    return done


def pg_user_without_create() -> str:
    """A PostgreSQL user that may update leaf_alloc but not create tables: its give back
    fails naming the marker table and the privileges (nothing lowered); once the table
    (made by another user) is granted to it, it gives back."""
    dsn = os.environ["SEGFLAKE_PG_DSN"]
    admin = PostgresStore(dsn, use_row_step=False)
    role = "gb_" + uuid.uuid4().hex[:8]
    tag = "adapters_gbu_" + uuid.uuid4().hex[:12]

    def sql(text: str) -> None:
        admin._conns.run(lambda c: c.execute(text))

    # The marker table, made by a user who may (as an operator would beforehand).
    sql(segment_statement("postgres", "give_back_table", "leaf_alloc"))
    sql("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
    sql(f"CREATE ROLE {role} LOGIN")
    sql(f"GRANT SELECT, UPDATE ON leaf_alloc TO {role}")
    assert admin.ensure_tag(tag) is True
    top = admin.allocate(tag, 1000)[0]
    limited = PostgresStore(dsn.replace("://postgres@", f"://{role}@", 1), use_row_step=False)
    try:
        limited.give_back(tag, top, top - 960)
        raise AssertionError("a give back without the marker table's privileges succeeded")
    except segflake.StoreError as exc:
        for part in ("leaf_alloc_give_back", "CREATE privilege", "SELECT, INSERT, UPDATE"):
            assert part in str(exc), str(exc)
    assert row_max_id(admin, tag) == top, "lowered without a record"
    sql(f"GRANT SELECT, INSERT, UPDATE ON leaf_alloc_give_back TO {role}")
    assert limited.give_back(tag, top, top - 960) is True
    assert row_max_id(admin, tag) == top - 960
    limited.close()
    admin.close()
    return "PostgresStore without CREATE"


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
    done = [check(make) for make in kinds()]
    done += async_stores()
    done.append(pg_user_without_create())
    print(f"python adapters behave: {', '.join(done)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
