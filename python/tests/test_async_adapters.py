"""asyncio without blocking the loop: synchronous stores, counters and registries on worker
threads, and the packaged async adapters (stores, registries, serial counter) with fake
async clients (no server, no client library needed beyond what the package imports)."""

import asyncio
import http.server
import importlib.util
import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

import segflake
from segflake import aio_registries, registries
from segflake.counters import AsyncRedisSerialCounter
from segflake.stores import AsyncHttpStore, AsyncMySQLStore, AsyncPostgresStore, AsyncRedisStore, PostgresStore


def run(coro: Any) -> Any:
    return asyncio.run(coro)


class Ticker:
    """A 10 ms ticker on the loop: the largest gap between ticks beyond 10 ms is the lag."""

    def __init__(self) -> None:
        self.max_lag = 0.0
        self.ticks = 0
        self._task: Optional["asyncio.Task[None]"] = None

    async def _run(self) -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            self.max_lag = max(self.max_lag, now - last - 0.01)
            self.ticks += 1
            last = now

    def __enter__(self) -> "Ticker":
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()


class SlowSyncLeaf:
    """A synchronous Leaf row whose allocations sleep (a stalled database), thread-safe."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.max_id = 1
        self.lock = threading.Lock()
        self.threads: List[str] = []

    def allocate(self, tag: str, step: int) -> Tuple[int, int]:
        self.threads.append(threading.current_thread().name)
        time.sleep(self.delay)
        with self.lock:
            self.max_id += step
            return self.max_id, step


# -- nothing blocks the loop ------------------------------------------------------------


def test_a_stalled_sync_store_never_blocks_the_loop() -> None:
    async def main() -> Tuple[List[int], float, int]:
        store = SlowSyncLeaf(3.0)
        async with segflake.AsyncSegmentGenerator(
            store, step=10, dynamic_step=False, wait_timeout_ms=10_000, store_timeout_ms=10_000
        ) as gen:
            with Ticker() as ticker:
                ids = [await gen.next_id("t") for _ in range(5)]
            assert all(name.startswith("segflake-store") for name in store.threads), store.threads
            return ids, ticker.max_lag, ticker.ticks

    ids, lag, ticks = run(main())
    print(f"loop max lag during a 3 s synchronous allocation: {lag * 1000:.1f} ms ({ticks} ticks)")
    assert ids == [1, 2, 3, 4, 5]  # the same IDs a store called on the loop gave
    assert lag < 0.5, lag
    assert ticks > 100, ticks


def test_a_sync_store_past_its_timeout_fails_the_fetch_and_its_late_answer_is_discarded() -> None:
    async def main() -> None:
        store = SlowSyncLeaf(0.6)
        async with segflake.AsyncSegmentGenerator(
            store, step=10, dynamic_step=False, wait_timeout_ms=2000, store_timeout_ms=200, retry_backoff_ms=10
        ) as gen:
            with Ticker() as ticker:
                with pytest.raises(segflake.SegmentsExhaustedError, match="within 200 ms"):
                    await gen.next_id("t")
                store.delay = 0.0
                await asyncio.sleep(0.7)  # the late answer arrives meanwhile: discarded
                ids = [await gen.next_id("t") for _ in range(12)]
            # The retry got [1, 11); the late answer's range [11, 21) is never issued.
            assert ids == list(range(1, 11)) + [21, 22], ids
            assert store.max_id == 31
            assert ticker.max_lag < 0.5

    run(main())


def test_a_sync_counter_runs_on_a_thread() -> None:
    async def main() -> None:
        def counter(second: int) -> int:
            time.sleep(0.5)
            return 1

        gen = segflake.AsyncSerialGenerator(counter, worker_digits=0, sequence_digits=4)
        with Ticker() as ticker:
            serial = await gen.next()
        gen.close()
        assert serial % 10_000 == 1
        assert ticker.max_lag < 0.3, ticker.max_lag
        assert ticker.ticks > 20

        slow = segflake.AsyncSerialGenerator(lambda s: time.sleep(2) or 1, counter_timeout_ms=200)
        started = time.monotonic()
        with pytest.raises(segflake.StoreError, match="did not answer within 200 ms"):
            await slow.next()
        assert time.monotonic() - started < 1.0
        slow.close()

    run(main())


def test_a_plain_function_returning_an_awaitable_is_awaited_on_the_loop() -> None:
    async def main() -> None:
        async def incr(second: int) -> int:
            await asyncio.sleep(0)
            return 7

        gen = segflake.AsyncSerialGenerator(lambda second: incr(second), worker_digits=0, sequence_digits=4)
        assert (await gen.next()) % 10_000 == 7
        gen.close()

    run(main())


def test_from_registry_async_is_bounded_by_start_timeout_ms() -> None:
    class SlowRegistry:
        def __init__(self) -> None:
            self.released = threading.Event()

        def claim(self, worker_id: int, owner: str, ttl_ms: int) -> Any:
            time.sleep(1.0)
            return 0

        def renew(self, worker_id: int, owner: str, ttl_ms: int, mark_ms: int, reported_ms: int) -> Any:
            return mark_ms

        def release(self, worker_id: int, owner: str, mark_ms: int) -> bool:
            self.released.set()
            return True

        def peers(self) -> List[Any]:
            return []

    registry = SlowRegistry()

    async def main() -> None:
        with Ticker() as ticker:
            started = time.monotonic()
            with pytest.raises(segflake.RegistryError, match="start_timeout_ms = 300 ms"):
                await segflake.from_registry_async(registry, start_timeout_ms=300, layout="sonyflake")
            assert time.monotonic() - started < 0.9
        assert ticker.max_lag < 0.3

    run(main())
    # The claim finished later: its generator is closed and the worker ID released.
    assert registry.released.wait(10)


# -- async stores with fake clients -------------------------------------------------------


class FakeCursor:
    def __init__(self, conn: "FakePgConn", row: Any, rowcount: int = 1) -> None:
        self.row = row
        self.rowcount = rowcount
        self.description = None if row is None else [("c",)]

    async def fetchone(self) -> Any:
        return self.row

    async def fetchall(self) -> List[Any]:
        return [] if self.row is None else [self.row]

    async def close(self) -> None:
        pass


class FakePgConn:
    """psycopg's AsyncConnection, enough for the store: one Leaf row per tag."""

    def __init__(self, rows: Dict[str, List[int]], hang: bool = False) -> None:
        self.rows = rows
        self.statements: List[str] = []
        self.autocommit = False
        self.closed = False
        self.hang = hang

    async def set_autocommit(self, value: bool) -> None:
        self.autocommit = value

    async def execute(self, sql: str, params: Any = None) -> FakeCursor:
        self.statements.append(sql)
        if self.hang:
            await asyncio.sleep(3600)
        if "information_schema" in sql:
            return FakeCursor(self, (0,))
        if sql.startswith("UPDATE"):
            given, tag, again = params
            assert again == given, params
            row = self.rows.get(tag)
            if row is None:
                return FakeCursor(self, None, 0)
            step = given if given is not None else row[1]
            row[0] += step
            return FakeCursor(self, (row[0], step, row[1]))
        if sql.startswith("INSERT"):
            tag, max_id, step, _ = params
            if tag in self.rows:
                return FakeCursor(self, None, 0)
            self.rows[tag] = [max_id, step]
            return FakeCursor(self, None, 1)
        return FakeCursor(self, None, 0)

    async def close(self) -> None:
        self.closed = True


def test_async_postgres_store_runs_the_sync_stores_statements() -> None:
    pytest.importorskip("psycopg")

    async def main() -> None:
        rows = {"order": [1, 100]}
        conns: List[FakePgConn] = []

        async def connect() -> FakePgConn:
            conns.append(FakePgConn(rows))
            return conns[-1]

        store = AsyncPostgresStore(connect=connect, create_missing_tags=50)
        assert await store.allocate("order", 1000) == (101, 100, 100)  # the row's step first
        assert await store.allocate("order", 1000) == (1101, 1000, 100)
        assert await store.allocate("new", 1000) == (51, 50, 50)  # created on first use
        sync = PostgresStore(connect=lambda: None)
        assert conns[0].autocommit
        assert sync._allocate_sql in conns[0].statements  # the very same statement
        assert len(conns) == 1
        async with segflake.AsyncSegmentGenerator(store, step=10) as gen:
            assert await gen.next_id("order") == 1101
        await store.aclose()
        assert conns[0].closed

    run(main())


def test_async_postgres_store_deadline_drops_the_connection() -> None:
    pytest.importorskip("psycopg")

    async def main() -> None:
        conns: List[FakePgConn] = []

        async def connect() -> FakePgConn:
            conns.append(FakePgConn({"t": [1, 10]}, hang=not conns))
            return conns[-1]

        store = AsyncPostgresStore(connect=connect, timeout=0.2)
        started = time.monotonic()
        with pytest.raises(TimeoutError, match="no answer within 0.2 s"):
            await store.allocate("t", 10)
        assert time.monotonic() - started < 1.0
        await asyncio.sleep(0.05)
        assert conns[0].closed  # dropped
        assert await store.allocate("t", 10) == (11, 10, 10)  # on a new connection
        assert len(conns) == 2

    run(main())


class FakeMyCursor:
    def __init__(self, conn: "FakeMyConn") -> None:
        self.conn = conn
        self.result: Any = None
        self.description: Any = None
        self.rowcount = 0

    async def __aenter__(self) -> "FakeMyCursor":
        return self

    async def __aexit__(self, *exc: object) -> None:
        pass

    async def execute(self, sql: str, params: Any = None) -> int:
        self.conn.statements.append(sql)
        row = self.conn.rows.get(params[-1]) if params else None
        if "information_schema" in sql:
            self.result = (0,)
            return 1
        if sql.startswith("SELECT step"):
            self.result = None if row is None else (row[1],)
            return 0 if row is None else 1
        if sql.startswith("UPDATE"):
            if row is None:
                return 0
            row[0] += params[0]
            self.conn.last = row[0]
            return 1
        if sql.startswith("SELECT CAST(LAST_INSERT_ID() AS CHAR)"):
            assert row is not None
            self.result = (str(self.conn.last), row[1])
            return 1
        return 0

    async def fetchone(self) -> Any:
        return self.result


class FakeMyConn:
    def __init__(self, rows: Dict[str, List[int]]) -> None:
        self.rows = rows
        self.statements: List[str] = []
        self.last = 0
        self.closed = False

    def cursor(self) -> FakeMyCursor:
        return FakeMyCursor(self)

    def close(self) -> None:
        self.closed = True


def test_async_mysql_store_runs_leafs_statements() -> None:
    pytest.importorskip("aiomysql")

    async def main() -> None:
        conn = FakeMyConn({"order": [1, 100]})

        async def connect() -> FakeMyConn:
            return conn

        store = AsyncMySQLStore(connect=connect)
        assert await store.allocate("order", 1000) == (101, 100, 100)
        assert await store.allocate("order", 1000) == (1101, 1000, 100)
        assert await store.allocate("missing", 1000) is None
        assert "UPDATE leaf_alloc SET max_id = LAST_INSERT_ID(max_id + %s) WHERE biz_tag = %s" in conn.statements
        await store.aclose()
        assert conn.closed

    run(main())


class ResponseError(Exception):
    """An error reply, as redis-py names it."""


class FakeScript:
    def __init__(self, client: "FakeAsyncRedis", text: str) -> None:
        self.client = client
        self.text = text

    async def __call__(self, keys: List[str], args: List[Any], client: Any = None) -> Any:
        self.client.calls.append((self.text, list(keys), list(args)))
        if self.client.hang:
            await asyncio.sleep(3600)
        return self.client.answer(self.text, keys, args)


class FakeAsyncRedis:
    def __init__(self) -> None:
        self.data: Dict[str, Any] = {}
        self.calls: List[Tuple[str, List[str], List[Any]]] = []
        self.hang = False
        self.closed = False

    def register_script(self, text: str) -> FakeScript:
        return FakeScript(self, text)

    def answer(self, text: str, keys: List[str], args: List[Any]) -> Any:
        if text == registries.statements("redis")["peers"]:
            return []
        if "INCRBY" in text:
            if keys[0] not in self.data:
                raise RuntimeError("NOTAG")
            self.data[keys[0]] += int(args[0])
            return self.data[keys[0]]
        return 0

    async def get(self, key: str) -> Any:
        return self.data.get(key)

    async def set(self, key: str, value: Any, nx: bool = False) -> bool:
        if nx and key in self.data:
            return False
        self.data[key] = int(value)
        return True

    async def execute_command(self, *args: Any) -> Any:
        # A primary without replicas that refuses CONFIG (as managed services do).
        if args == ("ROLE",):
            return [b"master", 0, []]
        assert args == ("CONFIG", "GET", "min-replicas-to-write"), args
        raise ResponseError("ERR unknown command 'CONFIG'")

    async def aclose(self) -> None:
        self.closed = True


def test_async_redis_store() -> None:
    async def main() -> None:
        client = FakeAsyncRedis()
        store = AsyncRedisStore(client=client, create_missing_tags=True)
        assert await store.allocate("t", 10) == (11, 10)  # created with max_id 1, then INCRBY
        assert await store.allocate("t", 10) == (21, 10)
        client.data["segflake:leaf_alloc_residue"] = b"2:1"
        store._residue_known = False
        assert await store.allocate("t", 10) == {"max_id": 31, "step": 10, "delta": 2, "remainder": 1}
        client.hang = True
        store.timeout = 0.1
        with pytest.raises(TimeoutError):
            await store.allocate("t", 10)
        await store.aclose()
        assert client.closed

    run(main())


class SyncScript:
    def __init__(self, client: "FakeSyncRedis", text: str) -> None:
        self.client = client
        self.text = text

    def __call__(self, keys: List[str], args: List[Any], client: Any = None) -> Any:
        self.client.calls.append((self.text, list(keys), list(args)))
        return [] if self.text == registries.statements("redis")["peers"] else 0


class FakeSyncRedis:
    def __init__(self) -> None:
        self.calls: List[Tuple[str, List[str], List[Any]]] = []

    def register_script(self, text: str) -> SyncScript:
        return SyncScript(self, text)

    def execute_command(self, *args: Any) -> Any:
        return [b"master", 0, []]

    def config_get(self, name: str) -> Dict[str, str]:
        return {}


def test_async_redis_registry_has_the_sync_registrys_conversation() -> None:
    sync_client = FakeSyncRedis()
    sync = registries.RedisRegistry(client=sync_client, check_durability=False)
    async_client = FakeAsyncRedis()
    aio = aio_registries.AsyncRedisRegistry(client=async_client)

    async def calls() -> List[Any]:
        return [
            await aio.claim(3, "a#1", 30000),
            await aio.renew(3, "a#1", 30000, 10, 5),
            await aio.release(3, "a#1", 10),
            await aio.peers(),
        ]

    got = run(calls())
    want = [sync.claim(3, "a#1", 30000), sync.renew(3, "a#1", 30000, 10, 5), sync.release(3, "a#1", 10), sync.peers()]
    assert got == want
    assert async_client.calls == sync_client.calls and sync_client.calls


class FakePgRegistryConn(FakePgConn):
    """Answers every statement with no rows: enough to compare the conversations."""

    async def execute(self, sql: str, params: Any = None) -> FakeCursor:
        self.statements.append(sql)
        return FakeCursor(self, None, 0)


def test_async_postgres_registry_has_the_sync_registrys_conversation() -> None:
    pytest.importorskip("psycopg")

    class SyncCursor:
        description = None
        rowcount = 0

        def fetchall(self) -> List[Any]:
            return []

        def close(self) -> None:
            pass

    class SyncConn:
        def __init__(self) -> None:
            self.statements: List[str] = []
            self.autocommit = False

        def execute(self, sql: str, params: Any = None) -> SyncCursor:
            self.statements.append(sql)
            return SyncCursor()

        def close(self) -> None:
            pass

        def fileno(self) -> int:
            return -1

    sync_conn = SyncConn()
    sync = registries.PostgresRegistry(connect=lambda: sync_conn)
    async_conn = FakePgRegistryConn({})

    async def connect() -> FakePgRegistryConn:
        return async_conn

    aio = aio_registries.AsyncPostgresRegistry(connect=connect)

    def outcome(fn: Any) -> Any:
        try:
            return ("answer", fn())
        except Exception as e:
            return ("error", type(e).__name__, str(e))

    async def aoutcome(coro: Any) -> Any:
        try:
            return ("answer", await coro)
        except Exception as e:
            return ("error", type(e).__name__, str(e))

    async def calls() -> List[Any]:
        return [await aoutcome(aio.claim(3, "a#1", 30000)), await aoutcome(aio.peers())]

    got = run(calls())
    want = [outcome(lambda: sync.claim(3, "a#1", 30000)), outcome(sync.peers)]
    assert got == want
    assert async_conn.statements == sync_conn.statements and sync_conn.statements
    assert async_conn.autocommit


def test_async_mysql_registry_has_the_sync_registrys_conversation() -> None:
    pytest.importorskip("pymysql")
    pytest.importorskip("aiomysql")

    class SyncCursor:
        def __init__(self, log: List[str]) -> None:
            self.log = log
            self.description = None
            self.rowcount = 0

        def execute(self, sql: str, params: Any = None) -> int:
            self.log.append(sql)
            return 0

        def fetchall(self) -> List[Any]:
            return []

        def close(self) -> None:
            pass

        def __enter__(self) -> "SyncCursor":
            return self

        def __exit__(self, *exc: object) -> None:
            pass

    class SyncConn:
        def __init__(self) -> None:
            self.statements: List[str] = []

        def cursor(self) -> SyncCursor:
            return SyncCursor(self.statements)

        def autocommit(self, on: bool) -> None:
            pass

        def close(self) -> None:
            pass

    class AsyncCursor(SyncCursor):
        async def execute(self, sql: str, params: Any = None) -> int:  # type: ignore[override]
            self.log.append(sql)
            return 0

        async def fetchall(self) -> List[Any]:  # type: ignore[override]
            return []

        async def __aenter__(self) -> "AsyncCursor":
            return self

        async def __aexit__(self, *exc: object) -> None:
            pass

    class AsyncConn(SyncConn):
        def cursor(self) -> AsyncCursor:
            return AsyncCursor(self.statements)

    sync_conn, async_conn = SyncConn(), AsyncConn()
    sync = registries.MySQLRegistry(connect=lambda: sync_conn)

    async def connect() -> AsyncConn:
        return async_conn

    aio = aio_registries.AsyncMySQLRegistry(connect=connect)

    def outcome(fn: Any) -> Any:
        try:
            return ("answer", fn())
        except Exception as e:
            return ("error", type(e).__name__, str(e))

    async def aoutcome(coro: Any) -> Any:
        try:
            return ("answer", await coro)
        except Exception as e:
            return ("error", type(e).__name__, str(e))

    async def calls() -> List[Any]:
        return [await aoutcome(aio.claim(3, "a#1", 30000)), await aoutcome(aio.peers())]

    got = run(calls())
    want = [outcome(lambda: sync.claim(3, "a#1", 30000)), outcome(sync.peers)]
    assert got == want
    assert async_conn.statements == sync_conn.statements and sync_conn.statements


def test_async_redis_serial_counter() -> None:
    async def main() -> None:
        client = FakeAsyncRedis()
        client.answer = lambda text, keys, args: [1, 1, int(args[0]) * 1000]  # type: ignore[method-assign]
        counter = AsyncRedisSerialCounter(client=client, prefix="p")
        gen = segflake.AsyncSerialGenerator(counter, worker_digits=0, sequence_digits=4)
        serial = await gen.next()
        assert serial > 0
        script, keys, _ = client.calls[0]
        assert script == segflake.counters.script() and keys[0].startswith("p:")
        async with counter:
            pass
        assert client.closed

    run(main())


def test_async_http_store() -> None:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.dumps({"maxId": "1001", "step": 1000}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    async def main() -> None:
        async with AsyncHttpStore(f"http://127.0.0.1:{server.server_address[1]}", timeout=2) as store:
            assert await store.allocate("t", 1000) == (1001, 1000)

    try:
        run(main())
    finally:
        server.shutdown()


def test_async_adapters_refuse_what_the_sync_ones_refuse() -> None:
    with pytest.raises(ValueError, match="use rediss"):
        AsyncRedisStore("redis://127.0.0.1:6379/0?ca=/nonexistent")
    with pytest.raises(ValueError, match="does not exist"):
        AsyncRedisSerialCounter("rediss://127.0.0.1:6379/0?ca=/nonexistent")
    with pytest.raises(TypeError):
        AsyncRedisStore()
    if importlib.util.find_spec("redis") is not None:
        assert isinstance(aio_registries.from_url("redis://127.0.0.1:6379/0"), aio_registries.AsyncRedisRegistry)
    if importlib.util.find_spec("psycopg") is not None:
        with pytest.raises(ValueError, match="prefer"):
            AsyncPostgresStore("postgresql://u@127.0.0.1/db?sslmode=prefer")
        with pytest.raises(ValueError, match="without sslmode"):
            aio_registries.AsyncPostgresRegistry("postgresql://u@127.0.0.1/db?sslrootcert=/x")
    if importlib.util.find_spec("aiomysql") is not None:
        with pytest.raises(ValueError, match="PREFERRED"):
            AsyncMySQLStore("mysql://u:p@127.0.0.1/db?ssl-mode=PREFERRED")
        with pytest.raises(ValueError, match="unsupported TLS parameter"):
            aio_registries.AsyncMySQLRegistry("mysql://u:p@127.0.0.1/db?sslca=/x")


TYPED = '''
import asyncio
from typing import List, Optional

import segflake
from segflake.aio_registries import AsyncRedisRegistry
from segflake.counters import AsyncRedisSerialCounter
from segflake.stores import AsyncHttpStore, AsyncMySQLStore, AsyncPostgresStore, AsyncRedisStore, HttpStore


async def main() -> None:
    pg = AsyncPostgresStore("postgresql://u@db/app?sslmode=verify-full&sslrootcert=/ca.pem", timeout=2.0)
    my = AsyncMySQLStore("mysql://u:p@db/app?ssl-mode=VERIFY_CA&ssl-ca=/ca.pem")
    rd = AsyncRedisStore("rediss://cache:6380/0?ca=/ca.pem")
    web = AsyncHttpStore("https://ids.internal", token="t")
    # Mutual TLS: the CA and the client's certificate and key (PEM files).
    mtls = HttpStore("https://ids.internal", ca_file="/ca.pem", cert_file="/order.pem", key_file="/order.key")
    mtls.close()
    async with segflake.AsyncSegmentGenerator(pg) as gen:
        ids: List[int] = await gen.next_ids("order", 3)
    answer = await rd.allocate("order", 10)
    created: bool = await my.ensure_tag("order")
    await web.aclose()
    registry = AsyncRedisRegistry("redis://cache:6379/0")
    mark: Optional[int] = await registry.claim(1, "me#1", 30000)
    async with await segflake.from_registry_async(registry, start_timeout_ms=20000) as snow:
        one: int = snow.next_id()
    serials = segflake.AsyncSerialGenerator(AsyncRedisSerialCounter("redis://cache:6379/0"))
    s: int = await serials.next()


asyncio.run(main())
'''


def test_async_adapters_type_check_under_mypy_strict(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    target = tmp_path / "typed_async.py"
    target.write_text(TYPED)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / ".mypy"),
         str(target)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
