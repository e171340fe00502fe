"""The database stores report their database's residue class (Tinyid's multi-database mode):
PostgresStore and MySQLStore read the ``delta`` and ``remainder`` columns of a table that
has them (asked through information_schema once per connection), RedisStore the key
``segflake:leaf_alloc_residue``. The fake clients below keep a Leaf table (or Redis keys)
of their own and answer the stores' statements the way the server would, refusing a column
the table does not have; the real servers run in tests/scenarios."""

from __future__ import annotations

import importlib
import re
import shutil
import subprocess
import sys
import threading
import types
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple

import pytest

import segflake
from segflake.stores import MultiStore, MySQLStore, PostgresStore, RedisStore
from segflake.stores._common import segment_statement

# The core's statements (the CLI's and Node's stores send the same), with the table as a
# parameter.
PG_COLUMNS = segment_statement("postgres", "residue_columns", "unused")
MYSQL_COLUMNS = segment_statement("mysql", "residue_columns", "unused")
RESIDUE_KEY = "segflake:leaf_alloc_residue"


class ServerError(Exception):
    """What the fake servers raise: a refused statement or a lost connection."""


@pytest.fixture(autouse=True)
def drivers(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The stores import their driver even when given ``connect``: a stand-in module where
    it is not installed."""
    for module in ("psycopg", "pymysql"):
        try:
            importlib.import_module(module)
        except ImportError:
            monkeypatch.setitem(sys.modules, module, types.ModuleType(module))
    yield


class Database:
    """One fake database server holding a Leaf table: its columns, its rows, the ranges it
    handed out, and every information_schema question it was asked."""

    BASE_COLUMNS = {"biz_tag", "max_id", "step", "description", "update_time"}

    def __init__(self, table: str = "leaf_alloc", residue: Optional[Tuple[int, int]] = None) -> None:
        self.table = table
        self.columns: Set[str] = set(self.BASE_COLUMNS)
        self.rows: Dict[str, Dict[str, Any]] = {}
        self.lock = threading.Lock()
        self.asked: List[Tuple[Any, ...]] = []
        self.connections = 0
        self.generation = 0  # connections of an earlier generation are broken
        self.down = False
        self.ranges: List[Tuple[int, int]] = []
        self.refuse_questions = 0  # information_schema questions to fail
        self.default: Dict[str, Optional[int]] = {}
        if residue is not None:
            self.add_residue_columns(*residue)

    def add(self, tag: str, *, max_id: int = 1, step: int = 100) -> None:
        row: Dict[str, Any] = {"max_id": max_id, "step": step}
        for column in ("delta", "remainder"):
            if column in self.columns:
                row[column] = self.default.get(column)
        self.rows[tag] = row

    def add_residue_columns(self, delta: Optional[int], remainder: Optional[int]) -> None:
        """``ALTER TABLE ... ADD COLUMN delta INTEGER DEFAULT d, ADD COLUMN remainder ...``."""
        self.columns |= {"delta", "remainder"}
        self.default = {"delta": delta, "remainder": remainder}
        for row in self.rows.values():
            row.update(self.default)

    def break_connections(self) -> None:
        """The server restarts: every open connection fails its next statement."""
        self.generation += 1

    def count_residue_columns(self, params: Any) -> int:
        self.asked.append(tuple(params))
        if self.refuse_questions:
            self.refuse_questions -= 1
            raise ServerError("canceling statement due to statement timeout")
        (name,) = params
        return len(self.columns & {"delta", "remainder"}) if name == self.table else 0

    def column(self, row: Dict[str, Any], name: str) -> Any:
        if name not in self.columns:
            raise ServerError(f'column "{name}" does not exist')
        return row[name]

    def handed_out(self, id_: int) -> bool:
        return any(start <= id_ < end for start, end in self.ranges)


class FakeConn:
    """A connection to a Database; fails every statement once the server restarted."""

    def __init__(self, db: Database) -> None:
        if db.down:
            raise ServerError("connection refused")
        db.connections += 1
        self.db = db
        self.generation = db.generation
        self.closed = False

    def check(self) -> None:
        if self.closed or self.db.down or self.generation != self.db.generation:
            raise ServerError("server closed the connection unexpectedly")

    def fileno(self) -> int:
        return -1

    def close(self) -> None:
        self.closed = True


class FakeRows:
    def __init__(self, rows: List[Tuple[Any, ...]]) -> None:
        self.rows = rows

    def fetchone(self) -> Optional[Tuple[Any, ...]]:
        return self.rows[0] if self.rows else None


def _split(items: str) -> List[str]:
    """A select list split at its top-level commas."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(items):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            out.append(items[start:i].strip())
            start = i + 1
    out.append(items[start:].strip())
    return out


class FakePgConn(FakeConn):
    """psycopg 3's ``execute(sql, params).fetchone()`` on the Database (an unquoted table
    name is folded to lower case, as PostgreSQL does)."""

    autocommit = False

    def execute(self, sql: str, params: Any = None) -> FakeRows:
        db = self.db
        with db.lock:
            self.check()
            if sql == PG_COLUMNS:
                return FakeRows([(db.count_residue_columns(params),)])
            m = re.fullmatch(
                r"UPDATE (\w+) SET max_id = max_id \+ COALESCE\(%s::bigint, step\), "
                r"update_time = now\(\) WHERE biz_tag = %s RETURNING (.*)",
                sql,
            )
            assert m is not None, f"unexpected statement {sql!r}"
            assert m.group(1).lower() == db.table, sql
            step, tag, again = params
            assert again == step, params
            row = db.rows.get(tag)
            if row is None:
                return FakeRows([])
            used = row["step"] if step is None else step
            values = {
                "max_id": row["max_id"] + used,
                "COALESCE(%s::bigint, step::bigint)": used,
                "step::bigint": row["step"],
                "delta::bigint": lambda: db.column(row, "delta"),
                "remainder::bigint": lambda: db.column(row, "remainder"),
            }
            out = []
            for item in _split(m.group(2)):
                assert item in values, f"unexpected RETURNING item {item!r}"
                value = values[item]
                out.append(value() if callable(value) else value)
            row["max_id"] += used
            db.ranges.append((row["max_id"] - used, row["max_id"]))
            return FakeRows([tuple(out)])


class FakeMySQLCursor:
    def __init__(self, conn: "FakeMySQLConn") -> None:
        self.conn = conn
        self.rows: List[Tuple[Any, ...]] = []

    def execute(self, sql: str, params: Any = None) -> int:
        conn, db = self.conn, self.conn.db
        with db.lock:
            conn.check()
            self.rows = []
            t = db.table
            if sql == MYSQL_COLUMNS:
                self.rows = [(db.count_residue_columns(params),)]
                return 1
            (tag,) = params[-1:]
            row = db.rows.get(tag)
            if sql == f"SELECT step FROM {t} WHERE biz_tag = %s":
                self.rows = [] if row is None else [(row["step"],)]
                return len(self.rows)
            if sql == f"UPDATE {t} SET max_id = LAST_INSERT_ID(max_id + %s) WHERE biz_tag = %s":
                if row is None:
                    return 0
                row["max_id"] += params[0]
                conn.last_insert_id = row["max_id"]
                db.ranges.append((row["max_id"] - params[0], row["max_id"]))
                return 1
            m = re.fullmatch(rf"SELECT (.*) FROM {t} WHERE biz_tag = %s", sql)
            assert m is not None and row is not None, f"unexpected statement {sql!r}"
            out = []
            for item in _split(m.group(1)):
                if item == "CAST(LAST_INSERT_ID() AS CHAR)":
                    out.append(str(conn.last_insert_id))
                else:
                    assert re.fullmatch(r"\w+", item), item
                    out.append(db.column(row, item))
            self.rows = [tuple(out)]
            return 1

    def fetchone(self) -> Optional[Tuple[Any, ...]]:
        return self.rows[0] if self.rows else None

    def __enter__(self) -> "FakeMySQLCursor":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


class FakeMySQLConn(FakeConn):
    """PyMySQL's ``cursor()`` on the Database."""

    last_insert_id = 0

    def autocommit(self, on: bool) -> None:
        assert on

    def cursor(self) -> FakeMySQLCursor:
        return FakeMySQLCursor(self)


def pg_store(db: Database, **kw: Any) -> PostgresStore:
    return PostgresStore(connect=lambda: FakePgConn(db), **kw)


def mysql_store(db: Database, **kw: Any) -> MySQLStore:
    return MySQLStore(connect=lambda: FakeMySQLConn(db), **kw)


SQL_STORES: Dict[str, Callable[..., Any]] = {"postgres": pg_store, "mysql": mysql_store}


# --- SQL stores ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(SQL_STORES))
def test_sql_table_with_the_columns_reports_its_class(kind: str) -> None:
    db = Database(table="ids_alloc", residue=(2, 1))
    db.add("order", step=100)
    store = SQL_STORES[kind](db, table="ids_alloc")
    # The first allocation uses the row's step; every answer carries the row's class.
    assert store.allocate("order", 50) == {"max_id": 101, "step": 100, "tag_step": 100, "delta": 2, "remainder": 1}
    assert store.allocate("order", 50) == {"max_id": 151, "step": 50, "tag_step": 100, "delta": 2, "remainder": 1}
    assert store.allocate("other", 50) is None
    # Asked once, on the connection's first use, about the configured table.
    assert db.asked == [("ids_alloc",)] and db.connections == 1

    plain = SQL_STORES[kind](db, table="ids_alloc", use_row_step=False)
    assert plain.allocate("order", 10) == {"max_id": 161, "step": 10, "delta": 2, "remainder": 1}


@pytest.mark.parametrize("kind", sorted(SQL_STORES))
def test_sql_table_without_the_columns_answers_as_before(kind: str) -> None:
    db = Database()
    db.add("order", step=100)
    store = SQL_STORES[kind](db)
    # The fake refuses a statement that reads a column the table lacks.
    assert store.allocate("order", 50) == (101, 100, 100)
    assert store.allocate("order", 50) == (151, 50, 100)
    assert SQL_STORES[kind](db, use_row_step=False).allocate("order", 10) == (161, 10)
    assert db.asked == [("leaf_alloc",), ("leaf_alloc",)]


@pytest.mark.parametrize("kind", sorted(SQL_STORES))
def test_sql_row_without_a_class_reports_none(kind: str) -> None:
    db = Database(residue=(None, None))
    db.add("order")
    db.add("half")
    db.rows["half"]["delta"] = 2  # remainder still NULL
    store = SQL_STORES[kind](db)
    assert store.allocate("order", 100) == (101, 100, 100)
    assert store.allocate("half", 100) == (101, 100, 100)


@pytest.mark.parametrize("kind", sorted(SQL_STORES))
def test_sql_columns_are_asked_again_after_a_reconnect(kind: str) -> None:
    db = Database()
    db.add("order")
    store = SQL_STORES[kind](db)
    assert store.allocate("order", 100) == (101, 100, 100)
    db.add_residue_columns(2, 0)
    # Same connection: the table was asked about once, the answer stands.
    assert store.allocate("order", 100) == (201, 100, 100)
    assert len(db.asked) == 1
    db.break_connections()
    with pytest.raises(ServerError, match="closed the connection"):
        store.allocate("order", 100)
    # The next allocation opens a new connection, which asks again.
    assert store.allocate("order", 100) == {"max_id": 301, "step": 100, "tag_step": 100, "delta": 2, "remainder": 0}
    assert len(db.asked) == 2 and db.connections == 2
    # A question that fails drops its connection too (nothing allocated); the next
    # allocation opens another and asks again.
    store.close()
    db.refuse_questions = 1
    with pytest.raises(ServerError, match="statement timeout"):
        store.allocate("order", 100)
    assert db.rows["order"]["max_id"] == 301 and len(db.asked) == 3 and db.connections == 3
    assert store.allocate("order", 100) == {"max_id": 401, "step": 100, "tag_step": 100, "delta": 2, "remainder": 0}
    assert len(db.asked) == 4 and db.connections == 4


def test_postgres_asks_about_the_folded_table_name() -> None:
    db = Database(table="ids_alloc", residue=(3, 2))
    db.add("order")
    store = pg_store(db, table="Ids_Alloc")
    assert store.allocate("order", 100) == {"max_id": 101, "step": 100, "tag_step": 100, "delta": 3, "remainder": 2}
    assert db.asked == [("ids_alloc",)]


# --- Redis --------------------------------------------------------------------------------


class FakeRedis:
    """The part of a ``redis.Redis`` that RedisStore uses: GET, SET NX and the allocation
    script (which must name exactly one key: Redis Cluster needs every key a script
    touches among its KEYS, on one node)."""

    def __init__(self, decode: bool = False) -> None:
        self.data: Dict[str, bytes] = {}
        self.decode = decode
        self.gets: List[str] = []
        self.fail_next = 0
        self.down = False
        self.lock = threading.Lock()
        self.ranges: List[Tuple[int, int]] = []

    def register_script(self, text: str) -> Callable[..., Any]:
        assert RESIDUE_KEY not in text and "KEYS[2]" not in text, text

        def script(keys: Any = (), args: Any = ()) -> int:
            assert len(keys) == 1, keys
            with self.lock:
                if self.down or self.fail_next:
                    self.fail_next = max(0, self.fail_next - 1)
                    raise ServerError("Connection closed by server.")
                (key,) = keys
                if key not in self.data:
                    raise ServerError("NOTAG")
                value = int(self.data[key]) + int(args[0])
                self.data[key] = str(value).encode()
                self.ranges.append((value - int(args[0]), value))
                return value

        return script

    def execute_command(self, *args: Any) -> Any:
        # A primary without replicas (ROLE) and min-replicas-to-write unset: no WAIT.
        return [b"master", 0, []] if args == ("ROLE",) else {"min-replicas-to-write": "0"}

    def get(self, key: str) -> Any:
        with self.lock:
            if self.down:
                raise ServerError("Connection refused")
            self.gets.append(key)
            value = self.data.get(key)
            return value.decode() if self.decode and value is not None else value

    def set(self, key: str, value: Any, nx: bool = False) -> Optional[bool]:
        with self.lock:
            if nx and key in self.data:
                return None
            self.data[key] = str(value).encode()
            return True

    def close(self) -> None:
        pass

    def handed_out(self, id_: int) -> bool:
        return any(start <= id_ < end for start, end in self.ranges)


def test_redis_without_the_key_answers_as_before() -> None:
    r = FakeRedis()
    store = RedisStore(client=r)
    store.ensure_tag("order")
    assert store.allocate("order", 100) == (101, 100)
    assert store.allocate("order", 50) == (151, 50)
    assert store.allocate("missing", 50) is None
    assert r.gets == [RESIDUE_KEY]


@pytest.mark.parametrize("decode", [False, True])
def test_redis_reports_the_key_with_every_allocation(decode: bool) -> None:
    r = FakeRedis(decode=decode)
    r.data[RESIDUE_KEY] = b"2:1"
    store = RedisStore(client=r, prefix="ids:", create_missing_tags=True)
    assert store.allocate("order", 100) == {"max_id": 101, "step": 100, "delta": 2, "remainder": 1}
    assert store.allocate("order", 50) == {"max_id": 151, "step": 50, "delta": 2, "remainder": 1}
    assert store.residue() == (2, 1)
    assert r.gets == [RESIDUE_KEY], "read once, whatever the prefix"
    # A missing tag (created on first use here) is no reason to read it again.
    assert store.allocate("new", 10) == {"max_id": 11, "step": 10, "delta": 2, "remainder": 1}
    assert r.gets == [RESIDUE_KEY]
    # A lost connection is: redis-py's reconnect may reach another server.
    r.data[RESIDUE_KEY] = b"3:0"
    r.fail_next = 1
    with pytest.raises(ServerError, match="Connection closed"):
        store.allocate("order", 50)
    assert store.allocate("order", 50) == {"max_id": 201, "step": 50, "delta": 3, "remainder": 0}
    assert r.gets == [RESIDUE_KEY, RESIDUE_KEY]
    # A GET that fails leaves the class unread: the next allocation reads it.
    del r.data[RESIDUE_KEY]
    r.fail_next = 1
    with pytest.raises(ServerError):
        store.allocate("order", 50)
    r.down = True
    with pytest.raises(ServerError, match="refused"):
        store.allocate("order", 50)
    r.down = False
    assert store.allocate("order", 50) == (251, 50)


@pytest.mark.parametrize("value", [b"2", b"2:", b":0", b"a:b", b"2:-1", b"-2:1", b"2:0:1", b" 2:0", b"2:0\n", b""])
def test_redis_malformed_key_is_an_error_naming_it(value: bytes) -> None:
    r = FakeRedis()
    r.data[RESIDUE_KEY] = value
    store = RedisStore(client=r)
    store.ensure_tag("order")
    with pytest.raises(segflake.StoreError) as info:
        store.allocate("order", 100)
    message = str(info.value)
    assert RESIDUE_KEY in message and "DELTA:REMAINDER" in message, message
    assert r.data["segflake:leaf_alloc:order"] == b"1", "nothing allocated"
    # Read again on every try until it is fixed.
    r.data[RESIDUE_KEY] = b"2:0"
    assert store.allocate("order", 100) == {"max_id": 101, "step": 100, "delta": 2, "remainder": 0}


def test_redis_malformed_key_fails_the_generator() -> None:
    r = FakeRedis()
    r.data[RESIDUE_KEY] = b"two:zero"
    store = RedisStore(client=r)
    store.ensure_tag("order")
    with segflake.SegmentGenerator(MultiStore([store]), wait_timeout_ms=300) as gen:
        with pytest.raises(segflake.SegmentsExhaustedError):
            gen.next_id("order")
        assert RESIDUE_KEY in (gen.stats("order").last_error or "")


# --- MultiStore ---------------------------------------------------------------------------


def _databases(kind: str) -> Tuple[Any, Any, Callable[[Any], Any]]:
    """Two databases of ``kind`` stating the classes 1 and 0 (mod 2), and a function that
    makes a store of one."""
    if kind == "redis":
        a, b = FakeRedis(), FakeRedis()
        for r, cls in ((a, b"2:1"), (b, b"2:0")):
            r.data[RESIDUE_KEY] = cls
            r.data["segflake:leaf_alloc:order"] = b"1"
        return a, b, lambda r: RedisStore(client=r)
    da, db = Database(residue=(2, 1)), Database(residue=(2, 0))
    for d in (da, db):
        d.add("order", step=100)
    return da, db, SQL_STORES[kind]


@pytest.mark.parametrize("kind", ["postgres", "mysql", "redis"])
def test_multi_store_lists_in_either_order_never_issue_an_id_twice(kind: str) -> None:
    a, b, make = _databases(kind)
    # Two clients list the databases in opposite orders: each starts on its first store,
    # whose rows both start at max_id 1. Classes by position would give both clients the
    # even IDs of [1, 101); the classes the databases state keep them apart.
    ab = segflake.SegmentGenerator(MultiStore([make(a), make(b)]), step=100, dynamic_step=False)
    ba = segflake.SegmentGenerator(MultiStore([make(b), make(a)]), step=100, dynamic_step=False)
    got: Dict[str, List[int]] = {"ab": [], "ba": []}
    try:
        for _ in range(3):
            got["ab"] += ab.next_ids("order", 120)
            got["ba"] += ba.next_ids("order", 120)
        a.down = True  # both clients move to b
        for _ in range(2):
            got["ab"] += ab.next_ids("order", 120)
            got["ba"] += ba.next_ids("order", 120)
        a.down, b.down = False, True  # and both to a
        for _ in range(2):
            got["ab"] += ab.next_ids("order", 120)
            got["ba"] += ba.next_ids("order", 120)
    finally:
        ab.close()
        ba.close()
    every = got["ab"] + got["ba"]
    assert len(set(every)) == len(every), "an ID issued twice"
    for ids in got.values():
        assert ids == sorted(ids)
    for id_ in every:
        home = a if id_ % 2 == 1 else b
        assert home.handed_out(id_), f"{id_} is not in a range of the database of class {id_ % 2}"
    assert got["ab"][0] % 2 == 1 and got["ba"][0] % 2 == 0, "each client starts on its first store"
    assert any(i % 2 == 0 for i in got["ab"]) and any(i % 2 == 1 for i in got["ba"]), "failover used both"


def test_postgres_conninfo_keeps_libpqs_tls_parameters_and_refuses_a_ca_without_sslmode(tmp_path: Any) -> None:
    # The real psycopg (libpq's parser): not the stand-in module the drivers fixture installs.
    pytest.importorskip("psycopg.conninfo")
    import psycopg

    from segflake.stores._common import pg_conninfo

    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    got = psycopg.conninfo.conninfo_to_dict(
        pg_conninfo(psycopg, f"postgresql://u@db/app?sslmode=verify-full&sslrootcert={ca}", 5, 5.0)
    )
    assert (got["sslmode"], got["sslrootcert"]) == ("verify-full", str(ca))
    with pytest.raises(ValueError, match="sslrootcert without sslmode"):
        pg_conninfo(psycopg, f"postgresql://u@db/app?sslrootcert={ca}", 5, 5.0)
    # libpq would not check a missing file under sslmode=require: refused instead.
    with pytest.raises(ValueError, match="does not exist or cannot be read"):
        pg_conninfo(psycopg, "sslmode=require sslrootcert=/no/such/ca.pem host=db", 5, 5.0)
    assert "sslrootcert" in pg_conninfo(psycopg, "sslmode=verify-full sslrootcert=system host=db", 5, 5.0)
    for mode in ("prefer", "allow"):
        with pytest.raises(ValueError, match="allow and prefer fall back to plaintext"):
            pg_conninfo(psycopg, f"postgresql://u@db/app?sslmode={mode}", 5, 5.0)
    assert "sslmode" not in pg_conninfo(psycopg, "postgresql://u@db/app", 5, 5.0)  # libpq's default


def test_the_mysql_store_takes_a_url_with_tls_and_refuses_a_plaintext_fallback() -> None:
    import ssl

    from segflake.stores._common import check_mysql_tls

    class Conn:
        def __init__(self, sock: Any) -> None:
            self._sock, self.closed = sock, False

        def close(self) -> None:
            self.closed = True

    plaintext = Conn(object())
    with pytest.raises(ConnectionError, match="did not take TLS"):
        check_mysql_tls(plaintext, {"ssl": ssl.create_default_context()})
    assert plaintext.closed
    assert check_mysql_tls(plaintext, {"host": "h"}) is plaintext  # TLS not asked for
    with pytest.raises(TypeError, match="one of url, connect or connection arguments"):
        MySQLStore("mysql://u@h/db", host="h")


def test_the_http_store_verifies_https_with_its_ca_file_and_refuses_one_for_http(tmp_path: Any) -> None:
    from segflake.stores import HttpStore

    with pytest.raises(segflake.InvalidArgumentError, match="ca_file is for TLS, but base_url .* use https://"):
        HttpStore("http://ids:8080", ca_file="/ca.pem")
    with pytest.raises(ValueError, match="does not exist or cannot be read"):
        HttpStore("https://ids:8443", ca_file=str(tmp_path / "missing.pem"))
    HttpStore("https://ids:8443").close()  # the system's certificate authorities


def test_the_http_store_takes_a_client_certificate_for_https_only_with_its_key(tmp_path: Any) -> None:
    from segflake.stores import AsyncHttpStore, HttpStore

    # Certificates made as the TLS tests make them (tests/tls/make-certs.sh, openssl).
    script = Path(__file__).resolve().parents[2] / "tests" / "tls" / "make-certs.sh"
    if not script.exists() or shutil.which("openssl") is None:
        pytest.skip("needs tests/tls/make-certs.sh and openssl")
    subprocess.run(["bash", str(script), str(tmp_path)], check=True, capture_output=True, timeout=30)
    ca, cert, key = (str(tmp_path / f) for f in ("ca.pem", "order.pem", "order.key"))
    plain, tls, missing = "http://ids:8080", "https://ids:8443", str(tmp_path / "missing.pem")
    refused: List[Tuple[str, Dict[str, Any], str]] = [
        (plain, {"cert_file": cert, "key_file": key}, "cert_file and key_file are for TLS, but base_url .* use https://"),
        (plain, {"ca_file": ca, "cert_file": cert, "key_file": key}, "ca_file, cert_file and key_file are for TLS"),
        (tls, {"cert_file": cert}, "cert_file without key_file"),
        (tls, {"ca_file": ca, "key_file": key}, "key_file without cert_file"),
        (tls, {"cert_file": missing, "key_file": key}, "client certificate file .* cannot be read"),
        (tls, {"cert_file": cert, "key_file": missing}, "client key file .* cannot be read"),
        (tls, {"cert_file": cert, "key_file": str(tmp_path / "billing.key")}, "do not load .*(KEY_VALUES_MISMATCH|mismatch)"),
        (tls, {"ca_file": str(tmp_path / "order.key")}, "holds no usable PEM certificate"),
    ]
    for url, options, message in refused:
        for store in (HttpStore, AsyncHttpStore):
            with pytest.raises(segflake.InvalidArgumentError, match=message):
                store(url, **options)
    HttpStore(tls, ca_file=ca, cert_file=cert, key_file=key).close()
    HttpStore(tls, cert_file=cert, key_file=key).close()  # the system's certificate authorities


# --- several hosts, the first writable one (high availability) ------------------------------


class ReadOnlyRefusal(Exception):
    """A driver's error for a write a read-only server refused: PyMySQL's ``(errno, text)``
    arguments, psycopg's ``sqlstate``."""

    def __init__(self, *args: Any, sqlstate: Optional[str] = None) -> None:
        super().__init__(*args)
        self.sqlstate = sqlstate


def test_a_url_with_several_hosts_is_one_target_per_host_in_order() -> None:
    from segflake.stores._common import mysql_targets, split_hosts

    assert split_hosts("mysql://u:p%40w@h1:3306,h2:3307,[::1]:3308/ids?ssl-mode=DISABLED") == [
        "mysql://u:p%40w@h1:3306/ids?ssl-mode=DISABLED",
        "mysql://u:p%40w@h2:3307/ids?ssl-mode=DISABLED",
        "mysql://u:p%40w@[::1]:3308/ids?ssl-mode=DISABLED",
    ]
    assert split_hosts("mysql://u@h/ids") == ["mysql://u@h/ids"]
    with pytest.raises(ValueError, match="empty host in the host list"):
        split_hosts("mysql://u@h1,,h2/ids")
    got = [(t["host"], t["port"], t["user"], t["password"], t["database"]) for t in mysql_targets("mysql://u:p%40w@h1:3306,h2/ids")]
    assert got == [("h1", 3306, "u", "p@w", "ids"), ("h2", 3306, "u", "p@w", "ids")]


def test_postgres_conninfo_targets_the_writable_host_of_several() -> None:
    pytest.importorskip("psycopg.conninfo")
    import psycopg

    from segflake.stores._common import pg_conninfo

    for url in ("postgresql://u@h1:5433,h2:5434/app", "postgresql://u@h1:5433,h2:5434/app?target_session_attrs=read-write"):
        got = psycopg.conninfo.conninfo_to_dict(pg_conninfo(psycopg, url, 5, 5.0))
        assert (got["host"], got["port"], got["target_session_attrs"]) == ("h1,h2", "5433,5434", "read-write")
    for attrs in ("any", "read-only", "standby"):
        with pytest.raises(ValueError, match="connects only to a server that takes writes"):
            pg_conninfo(psycopg, f"postgresql://u@h1,h2/app?target_session_attrs={attrs}", 5, 5.0)


def test_the_first_writable_host_is_connected_to_and_the_others_closed() -> None:
    from segflake.stores import ReadOnlyServerError
    from segflake.stores._common import mysql_connect_writable

    class Conn:
        def __init__(self, host: str, writable: bool) -> None:
            self.host, self.writable, self.closed = host, writable, False

        def close(self) -> None:
            self.closed = True

    servers = {"h1": None, "h2": False, "h3": True, "h4": True}  # None: down; False: a replica
    opened: List[Conn] = []

    def connect(kwargs: Dict[str, Any]) -> Conn:
        state = servers[kwargs["host"]]
        if state is None:
            raise ConnectionRefusedError(f"{kwargs['host']}: connection refused")
        opened.append(Conn(kwargs["host"], state))
        return opened[-1]

    targets = [{"host": h, "port": 3306} for h in ("h1", "h2", "h3", "h4")]
    conn = mysql_connect_writable(targets, connect, lambda c: c.writable)
    assert conn.host == "h3" and [c.host for c in opened] == ["h2", "h3"]
    assert opened[0].closed and not conn.closed
    # Every host read-only: the typed error, naming each.
    with pytest.raises(ReadOnlyServerError, match=r"every server of the URL is read-only: .*h2:3306.*; .*h2:3306"):
        mysql_connect_writable([targets[1], targets[1]], connect, lambda c: c.writable)
    # One host: its own failure, or the typed error.
    with pytest.raises(ConnectionRefusedError):
        mysql_connect_writable([targets[0]], connect, lambda c: c.writable)
    with pytest.raises(ReadOnlyServerError, match=r"h2:3306: @@global.read_only is set"):
        mysql_connect_writable([targets[1]], connect, lambda c: c.writable)
    # None writable, some down: why each was passed over.
    with pytest.raises(ConnectionError, match=r"no writable MySQL server among 2 hosts: h1:3306: .*refused; .*h2:3306"):
        mysql_connect_writable(targets[:2], connect, lambda c: c.writable)


def test_a_read_only_refusal_is_typed_and_the_next_call_connects_again() -> None:
    from segflake.stores import ReadOnlyServerError

    db = Database()
    db.add("order", max_id=1, step=100)
    refuse = {"on": False}

    class ReadOnlyPg(FakePgConn):
        def execute(self, sql: str, params: Any = None) -> FakeRows:
            if refuse["on"] and sql.startswith("UPDATE"):
                raise ReadOnlyRefusal("cannot execute UPDATE in a read-only transaction", sqlstate="25006")
            return super().execute(sql, params)

    class ReadOnlyMyCursor(FakeMySQLCursor):
        def execute(self, sql: str, params: Any = None) -> int:
            if refuse["on"] and sql.startswith("UPDATE"):
                raise ReadOnlyRefusal(1290, "The MariaDB server is running with the --read-only option")
            return super().execute(sql, params)

    class ReadOnlyMy(FakeMySQLConn):
        def cursor(self) -> FakeMySQLCursor:
            return ReadOnlyMyCursor(self)

    for store in (PostgresStore(connect=lambda: ReadOnlyPg(db)), MySQLStore(connect=lambda: ReadOnlyMy(db))):
        refuse["on"] = False
        assert store.allocate("order", 100) is not None
        before, ranges = db.connections, len(db.ranges)
        refuse["on"] = True
        with pytest.raises(ReadOnlyServerError, match=r"the server is read-only \(.*read-only.*\): nothing was written") as e:
            store.allocate("order", 100)
        assert isinstance(e.value, segflake.StoreError) and isinstance(e.value, segflake.RegistryError)
        assert isinstance(e.value.__cause__, ReadOnlyRefusal)
        assert len(db.ranges) == ranges  # nothing handed out
        refuse["on"] = False
        assert store.allocate("order", 100) is not None
        assert db.connections == before + 1  # the refused connection was dropped
        # Other failures stay as the driver raised them.
        db.break_connections()
        with pytest.raises(ServerError):
            store.allocate("order", 100)


def test_a_registry_on_a_read_only_server_fails_with_the_typed_error() -> None:
    from segflake import registries
    from segflake.stores import ReadOnlyServerError

    class Cursor:
        rowcount = 0
        description = None

        def execute(self, sql: str, params: Any = None) -> None:
            raise ReadOnlyRefusal(1836, "Running in read-only mode")

        def close(self) -> None:
            pass

    class Conn:
        def autocommit(self, on: bool) -> None:
            pass

        def cursor(self) -> Cursor:
            return Cursor()

        def close(self) -> None:
            pass

    reg = registries.MySQLRegistry(connect=Conn, create_schema=False)
    with pytest.raises(ReadOnlyServerError, match="the server is read-only"):
        reg.claim(3, "web-1#abc", 3000)


def test_libpq_refusing_every_host_as_read_only_is_the_typed_error() -> None:
    from segflake.stores import ReadOnlyServerError
    from segflake.stores._common import pg_connect_writable

    def refused() -> Any:
        raise ServerError(
            'connection failed: connection to server at "127.0.0.1", port 5433 failed: server is in hot standby mode'
        )

    with pytest.raises(ReadOnlyServerError, match="no host of the URL takes writes") as e:
        pg_connect_writable(refused)
    assert isinstance(e.value.__cause__, ServerError)

    def down() -> Any:
        raise ServerError("connection refused")

    with pytest.raises(ServerError, match="connection refused"):
        pg_connect_writable(down)
