"""Give-back: a generator that closes hands the IDs it fetched and did not issue back to its
store (a compare-and-set of the tag's max_id), so the next generator continues where it
stopped; nothing is lowered once someone allocated after it, and ``give_back=False`` keeps
the gap. The SQL stores record each give back under a token of its own and apply it by
that token at most once, so running it again changes nothing."""

from __future__ import annotations

import asyncio
import http.server
import importlib
import json
import re
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple
from urllib.parse import parse_qs, urlsplit

import pytest

import segflake
from segflake.stores import (
    AsyncHttpStore,
    AsyncMySQLStore,
    AsyncPostgresStore,
    HttpStore,
    MySQLStore,
    PostgresStore,
)
from segflake.stores._common import row_statements

TAG = "order"


class Leaf:
    """Leaf's table as a Python store object, with ``give_back``: thread-safe, and it
    records every give-back it was asked for and its answer."""

    def __init__(self) -> None:
        self.rows: Dict[str, int] = {}
        self.lock = threading.Lock()
        self.given: List[Tuple[str, int, int, bool]] = []

    def allocate(self, tag: str, step: int) -> Tuple[int, int]:
        with self.lock:
            self.rows[tag] = self.rows.get(tag, 1) + step
            return self.rows[tag], step

    def give_back(self, tag: str, expected_max_id: int, max_id: int) -> bool:
        with self.lock:
            done = self.rows.get(tag) == expected_max_id and max_id < expected_max_id
            if done:
                self.rows[tag] = max_id
            self.given.append((tag, expected_max_id, max_id, done))
            return done

    def max_id(self, tag: str) -> Optional[int]:
        with self.lock:
            return self.rows.get(tag)


class AsyncLeaf(Leaf):
    """:class:`Leaf` with ``async def`` methods, as the packaged async stores have."""

    async def allocate(self, tag: str, step: int) -> Tuple[int, int]:  # type: ignore[override]
        await asyncio.sleep(0)
        return Leaf.allocate(self, tag, step)

    async def give_back(self, tag: str, expected_max_id: int, max_id: int) -> bool:  # type: ignore[override]
        await asyncio.sleep(0)
        return Leaf.give_back(self, tag, expected_max_id, max_id)


class Store:
    """One store under test: how to open it again (a FileStore is reopened from its file,
    as another process would) and read a tag's max_id."""

    def __init__(self, name: str, make: Callable[[], Any], max_id: Callable[[Any], Optional[int]]) -> None:
        self.name = name
        self._make = make
        self._max_id = max_id
        self.first = make()

    def again(self) -> Any:
        return self._make()

    def max_id(self) -> Optional[int]:
        return self._max_id(self.first)


def _file_max_id(store: Any) -> Optional[int]:
    # raise_max_id never lowers: with 0 it reads the row's max_id.
    return int(store.raise_max_id(TAG, 0))


@pytest.fixture(params=["memory", "file", "python"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "memory":
        memory = segflake.MemoryStore()
        return Store("memory", lambda: memory, lambda s: s.max_id(TAG))
    if request.param == "file":
        path = tmp_path / "segments.txt"
        return Store("file", lambda: segflake.FileStore(path), _file_max_id)
    leaf = Leaf()
    return Store("python", lambda: leaf, lambda s: s.max_id(TAG))


def wait_for(check: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def issue_250(store: Any, **options: Any) -> segflake.SegmentGenerator:
    """A generator on ``store`` (step 1000) that issued 250 IDs and holds its prefetched
    second range."""
    gen = segflake.SegmentGenerator(store, step=1000, dynamic_step=False, **options)
    assert gen.next_ids(TAG, 250) == list(range(1, 251))
    wait_for(lambda: gen.stats(TAG).next_ready)
    return gen


# --- the threaded generator ----------------------------------------------------------------


def test_a_closed_generator_gives_back_and_the_next_continues(store: Store) -> None:
    gen = issue_250(store.first)
    assert store.max_id() == 2001, "both ranges fetched"
    gen.close()
    assert store.max_id() == 251
    with segflake.SegmentGenerator(store.again(), step=1000, dynamic_step=False) as nxt:
        more = nxt.next_ids(TAG, 1000)
    assert more == list(range(251, 1251)), "no gap, no duplicate"
    if store.name == "python":
        assert store.first.given[0] == (TAG, 2001, 251, True)


def test_a_context_manager_gives_back_on_exit(store: Store) -> None:
    with segflake.SegmentGenerator(store.first, step=1000, dynamic_step=False, prefetch_percent=100) as gen:
        assert gen.next_ids(TAG, 5) == [1, 2, 3, 4, 5]
    assert store.max_id() == 6
    with segflake.SegmentGenerator(store.again(), step=10, dynamic_step=False) as nxt:
        assert nxt.next_id(TAG) == 6


def test_give_back_false_keeps_the_gap(store: Store) -> None:
    gen = issue_250(store.first, give_back=False)
    assert gen.options["give_back"] is False
    gen.close()
    assert store.max_id() == 2001
    if store.name == "python":
        assert store.first.given == []
    with segflake.SegmentGenerator(store.again(), step=1000, dynamic_step=False) as nxt:
        assert nxt.next_id(TAG) == 2001


def test_a_row_someone_allocated_after_is_not_lowered(store: Store) -> None:
    gen = issue_250(store.first)
    # Another client allocates after the generator's last range.
    other = store.again()
    assert tuple(other.allocate(TAG, 500))[:2] == (2501, 500)
    gen.close()
    assert store.max_id() == 2501
    if store.name == "python":
        assert store.first.given == [(TAG, 2001, 251, False)]
    with segflake.SegmentGenerator(store.again(), step=1000, dynamic_step=False) as nxt:
        assert nxt.next_id(TAG) == 2501


def test_each_tag_gives_back_its_own_rest() -> None:
    memory = segflake.MemoryStore()
    with segflake.SegmentGenerator(memory, step=100, dynamic_step=False) as gen:
        gen.next_ids("a", 10)
        gen.next_ids("b", 99)
        gen.next_ids("c", 100)  # used up, whether its next range came or not
    assert (memory.max_id("a"), memory.max_id("b"), memory.max_id("c")) == (11, 100, 101)


def test_a_store_without_give_back_or_whose_give_back_fails_leaves_a_gap() -> None:
    class Plain:
        def __init__(self) -> None:
            self.leaf = Leaf()

        def allocate(self, tag: str, step: int) -> Tuple[int, int]:
            return self.leaf.allocate(tag, step)

    class Failing(Leaf):
        def give_back(self, tag: str, expected_max_id: int, max_id: int) -> bool:
            raise ConnectionError("the database went away")

    class Async(Leaf):
        async def give_back(self, tag: str, expected_max_id: int, max_id: int) -> bool:  # type: ignore[override]
            raise AssertionError("never awaited")

    plain = Plain()
    issue_250(plain).close()
    assert plain.leaf.max_id(TAG) == 2001
    for store in (Failing(), Async()):
        issue_250(store).close()  # never raises
        assert store.max_id(TAG) == 2001
    # A bare allocate function has nowhere to give back to.
    leaf = Leaf()
    issue_250(leaf.allocate).close()
    assert leaf.max_id(TAG) == 2001 and leaf.given == []


def test_a_hung_give_back_is_abandoned_after_store_timeout_ms() -> None:
    release = threading.Event()

    class Hung(Leaf):
        def give_back(self, tag: str, expected_max_id: int, max_id: int) -> bool:
            release.wait(10)
            return False

    gen = issue_250(Hung(), store_timeout_ms=300)
    started = time.monotonic()
    gen.close()
    elapsed = time.monotonic() - started
    release.set()
    assert elapsed < 3.0, elapsed


def test_a_multi_store_never_gives_back() -> None:
    a, b = Leaf(), Leaf()
    with segflake.SegmentGenerator(segflake.MultiStore([a, b]), step=100, dynamic_step=False) as gen:
        gen.next_ids(TAG, 10)
    assert a.given == [] and b.given == []


def test_memory_and_file_stores_give_back_as_a_compare_and_set(tmp_path: Path) -> None:
    for store in (segflake.MemoryStore(), segflake.FileStore(tmp_path / "ids.txt")):
        assert store.give_back(TAG, 101, 1) is False, "no row"
        assert store.allocate(TAG, 100) == (101, 100)
        assert store.give_back(TAG, 100, 50) is False, "not the expected max_id"
        assert store.give_back(TAG, 101, 101) is False, "nothing to give back"
        assert store.give_back(TAG, 101, 31) is True
        assert store.give_back(TAG, 101, 31) is False, "once"
        assert store.allocate(TAG, 10) == (41, 10)
        with pytest.raises(segflake.InvalidArgumentError):
            store.give_back(TAG, -1, 0)


# --- the sans-I/O engine ---------------------------------------------------------------


def test_engine_take_give_back() -> None:
    engine = segflake.SegmentEngine(TAG, step=100, dynamic_step=False, prefetch_percent=100)
    assert engine.take_give_back() is None, "open"
    step = engine.begin_fetch()
    assert step == 100
    engine.complete_fetch((101, 100))
    assert engine.try_next_batch(30) == list(range(1, 31))
    engine.close()
    assert engine.take_give_back() == (101, 31)
    assert engine.take_give_back() is None, "once"

    off = segflake.SegmentEngine(TAG, step=100, give_back=False)
    off.begin_fetch()
    off.complete_fetch((101, 100))
    off.close()
    assert off.take_give_back() is None

    flying = segflake.SegmentEngine(TAG, step=100)
    flying.begin_fetch()
    flying.close()
    assert flying.take_give_back() is None, "a fetch in flight"

    multi = segflake.SegmentEngine(TAG, 2, step=100)
    multi.begin_fetch()
    multi.complete_fetch((101, 100))
    multi.close()
    assert multi.take_give_back() is None, "a multi-store engine"


# --- asyncio -------------------------------------------------------------------------------


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def async_issue_250(store: Any, *, settle: bool, **options: Any) -> segflake.AsyncSegmentGenerator:
    gen = segflake.AsyncSegmentGenerator(store, step=1000, dynamic_step=False, **options)
    assert await gen.next_ids(TAG, 250) == list(range(1, 251))
    if settle:  # the prefetch done; else it was only begun when the generator closes
        while not gen.stats(TAG).next_ready:
            await asyncio.sleep(0.001)
    return gen


@pytest.mark.parametrize("settle", [True, False], ids=["prefetched", "prefetch-not-started"])
def test_aclose_gives_back_through_an_async_store(settle: bool) -> None:
    async def main() -> None:
        store = AsyncLeaf()
        gen = await async_issue_250(store, settle=settle)
        await gen.aclose()
        expected = 2001 if settle else 1001
        assert store.given == [(TAG, expected, 251, True)]
        assert store.max_id(TAG) == 251
        async with segflake.AsyncSegmentGenerator(store, step=1000, dynamic_step=False) as nxt:
            assert await nxt.next_ids(TAG, 1000) == list(range(251, 1251))
        given = len(store.given)
        await gen.aclose()  # idempotent: nothing more
        assert len(store.given) == given

    run(main())


def test_aclose_gives_back_through_a_sync_store_on_a_worker_thread() -> None:
    class ThreadLeaf(Leaf):
        thread = ""

        def give_back(self, tag: str, expected_max_id: int, max_id: int) -> bool:
            self.thread = threading.current_thread().name
            return super().give_back(tag, expected_max_id, max_id)

    async def main() -> None:
        leaf = ThreadLeaf()
        async with await async_issue_250(leaf, settle=True):
            pass
        assert leaf.max_id(TAG) == 251 and leaf.thread.startswith("segflake-store")
        memory = segflake.MemoryStore()
        await (await async_issue_250(memory, settle=True)).aclose()
        assert memory.max_id(TAG) == 251

    run(main())


def test_async_close_give_back_false_and_multi_store_give_nothing_back() -> None:
    async def main() -> None:
        store = AsyncLeaf()
        gen = await async_issue_250(store, settle=True)
        gen.close()  # cannot wait for the store: gives nothing back
        assert store.given == [] and store.max_id(TAG) == 2001

        store = AsyncLeaf()
        gen = await async_issue_250(store, settle=True, give_back=False)
        assert gen.options["give_back"] is False
        await gen.aclose()
        assert store.given == [] and store.max_id(TAG) == 2001

        a, b = AsyncLeaf(), AsyncLeaf()
        async with segflake.AsyncSegmentGenerator(segflake.MultiStore([a, b]), step=100) as multi:
            await multi.next_ids(TAG, 10)
        assert a.given == [] and b.given == []

    run(main())


def test_aclose_ignores_a_failing_or_hung_give_back() -> None:
    class Failing(AsyncLeaf):
        async def give_back(self, tag: str, expected_max_id: int, max_id: int) -> bool:  # type: ignore[override]
            raise ConnectionError("the database went away")

    class Hung(AsyncLeaf):
        async def give_back(self, tag: str, expected_max_id: int, max_id: int) -> bool:  # type: ignore[override]
            await asyncio.sleep(60)
            return False

    async def main() -> None:
        failing = Failing()
        await (await async_issue_250(failing, settle=True)).aclose()
        assert failing.max_id(TAG) == 2001
        hung = Hung()
        gen = await async_issue_250(hung, settle=True, store_timeout_ms=200)
        started = time.monotonic()
        await gen.aclose()
        assert time.monotonic() - started < 3.0
        assert hung.max_id(TAG) == 2001

    run(main())


def test_aclose_does_not_lower_a_row_someone_allocated_after() -> None:
    async def main() -> None:
        store = AsyncLeaf()
        gen = await async_issue_250(store, settle=True)
        await store.allocate(TAG, 500)
        await gen.aclose()
        assert store.given == [(TAG, 2001, 251, False)] and store.max_id(TAG) == 2501

    run(main())


# --- HttpStore ------------------------------------------------------------------------------


@pytest.fixture
def giveback_server() -> Iterator[Tuple[str, List[Dict[str, Any]], Dict[str, Any]]]:
    """A server answering ``POST /api/segment/giveback/TAG``: the requests it got, and the
    answer to give (``status``, ``body``)."""
    seen: List[Dict[str, Any]] = []
    answer: Dict[str, Any] = {"status": 200, "body": {"key": TAG, "givenBack": True}}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            parts = urlsplit(self.path)
            seen.append({"path": parts.path, "query": parse_qs(parts.query), "auth": self.headers.get("Authorization")})
            body = json.dumps(answer["body"]).encode()
            self.send_response(answer["status"])
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/ids", seen, answer
    finally:
        server.shutdown()
        server.server_close()


def give_back_tokens(seen: List[Dict[str, Any]]) -> List[str]:
    """The ``token`` of each give back a server got: 128 random bits as 32 lowercase hex
    digits (what ``segflake serve`` records and applies the give back under)."""
    tokens = [s["query"].pop("token") for s in seen]
    for token in tokens:
        assert len(token) == 1 and re.fullmatch(r"[0-9a-f]{32}", token[0]), token
    return [t[0] for t in tokens]


def test_http_store_gives_back(giveback_server: Tuple[str, List[Dict[str, Any]], Dict[str, Any]]) -> None:
    url, seen, answer = giveback_server
    with HttpStore(url, token="s3cret", timeout=2) as store:
        assert store.give_back(TAG, 2001, 251) is True
        first = give_back_tokens(seen)
        assert seen == [
            {
                "path": f"/ids/api/segment/giveback/{TAG}",
                "query": {"expected_max_id": ["2001"], "max_id": ["251"]},
                "auth": "Bearer s3cret",
            }
        ]
        answer["body"] = {"key": TAG, "givenBack": False}
        assert store.give_back(TAG, 2001, 251) is False
        assert store.give_back(TAG, 251, 251) is False and len(seen) == 2, "nothing to give back: not asked"
        answer["status"], answer["body"] = 404, {"code": "NOT_FOUND", "message": "no such path"}
        assert store.give_back(TAG, 2001, 251) is False, "an older server"
        answer["status"], answer["body"] = 500, {"code": "STORE_ERROR", "message": "database down"}
        with pytest.raises(segflake.StoreError, match="database down"):
            store.give_back(TAG, 2001, 251)
        answer["status"], answer["body"] = 200, {"key": TAG}
        with pytest.raises(segflake.StoreError, match="givenBack"):
            store.give_back(TAG, 2001, 251)
    tokens = first + give_back_tokens(seen[1:])
    assert len(set(tokens)) == len(tokens) == 5, "a fresh token for each give back"


def test_async_http_store_gives_back(giveback_server: Tuple[str, List[Dict[str, Any]], Dict[str, Any]]) -> None:
    url, seen, answer = giveback_server

    async def main() -> None:
        async with AsyncHttpStore(url, timeout=2) as store:
            assert await store.give_back(TAG, 2001, 251) is True
            answer["status"] = 404
            assert await store.give_back(TAG, 2001, 251) is False

    run(main())
    tokens = give_back_tokens(seen)
    assert tokens[0] != tokens[1], "a fresh token for each give back"
    assert [s["query"] for s in seen] == [{"expected_max_id": ["2001"], "max_id": ["251"]}] * 2


# --- the SQL stores: recorded under a token, applied by it at most once --------------------
# The fakes below give the core's statements the effect they have on the servers, matched
# by their text; tests/scenarios/adapters.py runs the same sequences on real PostgreSQL and
# MariaDB.


class GiveBackDatabase:
    """The tag rows and the marker table ``leaf_alloc_give_back`` of one fake server, and
    the core statement each call ran (by its name in :func:`row_statements`)."""

    def __init__(self, store: str, *, can_create: bool = True) -> None:
        self.sql = row_statements(store, "leaf_alloc")
        self.calls = {text: call for call, text in self.sql._asdict().items()}
        self.rows: Dict[str, int] = {}
        self.marks: Optional[Dict[str, List[Any]]] = None  # None: the table does not exist
        self.can_create = can_create
        self.can_write = True
        self.log: List[Tuple[str, Tuple[Any, ...]]] = []

    def run(self, sql: str, params: Optional[Tuple[Any, ...]]) -> int:
        call = self.calls[sql]
        self.log.append((call, tuple(params or ())))
        if call == "give_back_table":
            if not self.can_create:
                raise RuntimeError("permission denied for schema public")
            if self.marks is None:
                self.marks = {}
            return 0
        if self.marks is None:
            raise RuntimeError('relation "leaf_alloc_give_back" does not exist')
        if not self.can_write:
            raise RuntimeError("permission denied for table leaf_alloc_give_back")
        assert params is not None
        if call == "give_back_intent":
            token, tag, max_id, expected = params
            if token in self.marks:
                return 0
            self.marks[token] = [tag, max_id, expected, 0]
            return 1
        assert call == "give_back", call
        (token,) = params
        mark = self.marks.get(token)
        if mark is None or mark[3]:
            return 0
        tag, max_id, expected, _ = mark
        if self.rows.get(tag) != expected:
            return 0
        mark[3] = 1
        self.rows[tag] = max_id
        return 2

    def calls_made(self) -> List[str]:
        return [call for call, _ in self.log]


class GiveBackPgConn:
    """psycopg's ``execute(...).rowcount`` on a GiveBackDatabase."""

    autocommit = True

    def __init__(self, db: GiveBackDatabase) -> None:
        self.db = db

    def execute(self, sql: str, params: Any = None) -> Any:
        return types.SimpleNamespace(rowcount=min(1, self.db.run(sql, params)))

    def fileno(self) -> int:
        return -1

    def close(self) -> None:
        pass


class GiveBackMyCursor:
    def __init__(self, db: GiveBackDatabase) -> None:
        self.db = db

    def execute(self, sql: str, params: Any = None) -> int:
        return self.db.run(sql, params)

    def __enter__(self) -> "GiveBackMyCursor":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


class GiveBackMyConn:
    """PyMySQL's ``cursor().execute(...)`` (rows changed) on a GiveBackDatabase."""

    def __init__(self, db: GiveBackDatabase) -> None:
        self.db = db

    def autocommit(self, on: bool) -> None:
        assert on

    def cursor(self) -> GiveBackMyCursor:
        return GiveBackMyCursor(self.db)

    def close(self) -> None:
        pass


@pytest.fixture
def sql_drivers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stores import their driver even when given ``connect``: a stand-in module where
    it is not installed."""
    for module in ("psycopg", "pymysql"):
        try:
            importlib.import_module(module)
        except ImportError:
            monkeypatch.setitem(sys.modules, module, types.ModuleType(module))


def sql_store(kind: str, db: GiveBackDatabase) -> Any:
    if kind == "postgres":
        return PostgresStore(connect=lambda: GiveBackPgConn(db))
    return MySQLStore(connect=lambda: GiveBackMyConn(db))


@pytest.mark.usefixtures("sql_drivers")
@pytest.mark.parametrize("kind", ["postgres", "mysql"])
def test_a_sql_give_back_is_recorded_under_a_random_token_then_applied_by_it(kind: str) -> None:
    db = GiveBackDatabase(kind)
    db.rows[TAG] = 2001
    store = sql_store(kind, db)
    assert store.give_back(TAG, 2001, 251) is True
    assert db.rows[TAG] == 251
    assert db.calls_made() == ["give_back_table", "give_back_intent", "give_back"]
    token = db.log[1][1][0]
    assert re.fullmatch(r"[0-9a-f]{32}", token), token
    assert db.log[1][1][1:] == (TAG, 251, 2001)
    assert db.log[2][1] == (token,)
    # Another give back: a token of its own; the table is not created again.
    db.log.clear()
    db.rows[TAG] = 3001
    assert store.give_back(TAG, 3001, 2500) is True
    assert db.calls_made() == ["give_back_intent", "give_back"]
    assert db.log[0][1][0] != token
    # Nothing to give back: no statement at all.
    db.log.clear()
    assert store.give_back(TAG, 2500, 2500) is False
    assert store.give_back(TAG, 2500, 2600) is False
    assert db.log == []


@pytest.mark.usefixtures("sql_drivers")
@pytest.mark.parametrize("kind", ["postgres", "mysql"])
def test_a_sql_give_back_run_again_with_its_token_changes_nothing(kind: str) -> None:
    db = GiveBackDatabase(kind)
    db.rows[TAG] = 2001
    store = sql_store(kind, db)
    assert store._give_back(TAG, 2001, 251, "t1") is True
    db.rows[TAG] += 1750  # another process allocates exactly the range given back
    assert store._give_back(TAG, 2001, 251, "t1") is False, "a resend lowered max_id again"
    assert db.rows[TAG] == 2001
    assert db.calls_made()[-2:] == ["give_back_intent", "give_back"]
    assert all(params[0] == "t1" for call, params in db.log if call != "give_back_table")


@pytest.mark.usefixtures("sql_drivers")
@pytest.mark.parametrize("kind", ["postgres", "mysql"])
def test_a_sql_give_back_without_the_marker_table_fails_naming_it(kind: str) -> None:
    db = GiveBackDatabase(kind, can_create=False)
    db.rows[TAG] = 2001
    store = sql_store(kind, db)
    with pytest.raises(segflake.StoreError) as caught:
        store.give_back(TAG, 2001, 251)
    message = str(caught.value)
    for part in ("leaf_alloc_give_back", "CREATE privilege", "SELECT, INSERT, UPDATE", "permission denied"):
        assert part in message, message
    assert db.rows[TAG] == 2001, "nothing lowered"
    # Made beforehand by someone who may: a user without CREATE gives back through it.
    db.marks = {}
    db.log.clear()
    assert store.give_back(TAG, 2001, 251) is True
    assert db.calls_made() == ["give_back_table", "give_back_intent", "give_back"]
    db.log.clear()
    db.rows[TAG] = 2001
    assert store.give_back(TAG, 2001, 300) is True
    assert db.calls_made() == ["give_back_intent", "give_back"], "creation is not tried again"
    # A table that exists but cannot be written: the write's own error.
    db.can_write = False
    with pytest.raises(RuntimeError, match="permission denied for table"):
        store.give_back(TAG, 300, 250)


class AsyncGiveBackPgConn(GiveBackPgConn):
    """psycopg's ``AsyncConnection`` on a GiveBackDatabase."""

    async def set_autocommit(self, on: bool) -> None:
        assert on

    async def execute(self, sql: str, params: Any = None) -> Any:  # type: ignore[override]
        await asyncio.sleep(0)
        return GiveBackPgConn.execute(self, sql, params)

    async def close(self) -> None:  # type: ignore[override]
        pass


class AsyncGiveBackMyCursor(GiveBackMyCursor):
    async def execute(self, sql: str, params: Any = None) -> int:  # type: ignore[override]
        await asyncio.sleep(0)
        return GiveBackMyCursor.execute(self, sql, params)

    async def __aenter__(self) -> "AsyncGiveBackMyCursor":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        pass


class AsyncGiveBackMyConn(GiveBackMyConn):
    def cursor(self) -> AsyncGiveBackMyCursor:  # type: ignore[override]
        return AsyncGiveBackMyCursor(self.db)


@pytest.mark.parametrize("kind", ["postgres", "mysql"])
def test_the_async_sql_stores_give_back_by_token_too(kind: str) -> None:
    pytest.importorskip("psycopg" if kind == "postgres" else "aiomysql")
    db = GiveBackDatabase(kind)
    db.rows[TAG] = 2001

    async def pg_conn() -> Any:
        return AsyncGiveBackPgConn(db)

    async def my_conn() -> Any:
        return AsyncGiveBackMyConn(db)

    async def main() -> None:
        store: Any = (
            AsyncPostgresStore(connect=pg_conn) if kind == "postgres" else AsyncMySQLStore(connect=my_conn)
        )
        assert await store.give_back(TAG, 2001, 251) is True
        assert db.rows[TAG] == 251
        assert db.calls_made() == ["give_back_table", "give_back_intent", "give_back"]
        token = db.log[1][1][0]
        assert re.fullmatch(r"[0-9a-f]{32}", token), token
        db.rows[TAG] = 2001
        assert await store._give_back(TAG, 2001, 251, token) is False, "a resend lowered max_id again"
        assert db.rows[TAG] == 2001
        assert db.calls_made()[3:] == ["give_back_intent", "give_back"]
        db.marks = None
        db.can_create = False
        store._give_back_table = False
        with pytest.raises(segflake.StoreError, match="leaf_alloc_give_back"):
            await store.give_back(TAG, 2001, 251)

    run(main())
