"""Worker-ID registries for :meth:`segflake.Snowflake.from_registry` on the servers a fleet
already runs.

* :class:`RedisRegistry` - keys ``{segflake}:worker:<id>`` (``SET NX PX``), ``{segflake}:mark:<id>``
  and ``{segflake}:reports``, one Lua script per call (redis-py; ``pip install segflake[redis]``);
* :class:`PostgresRegistry` - the ``segflake_worker_lease`` table, expiry on the database's clock,
  uid-generator's ``worker_node`` rows as the audit trail (psycopg 3; ``segflake[postgres]``);
* :class:`MySQLRegistry` - the same on MySQL or MariaDB (PyMySQL; ``segflake[mysql]``).

Every language sends the same scripts and statements (they come from the core), so
Python, Node, C and CLI processes can share one registry. Any object with the four methods
below is a registry too (nacos, Consul, etcd...); ``docs/leases.md`` in the source tree has
the contract and a worked example:

``claim(worker_id, owner, ttl_ms)``
    the ID's mark (0 if never used) when it is now leased to ``owner``; ``None`` when
    another owner holds it.
``renew(worker_id, owner, ttl_ms, mark_ms, reported_ms)``
    if ``owner`` holds the ID: extend the lease, raise the mark to at least ``mark_ms``,
    record the report, return the stored mark; else ``None``.
``release(worker_id, owner, mark_ms)``
    if ``owner`` holds the ID: set the mark to ``mark_ms``, end the lease, return ``True``.
``peers()``
    ``[(worker_id, reported_ms, age_ms), ...]`` of the live holders.

Marks must be durable: Redis with ``appendonly yes``, PostgreSQL with
``synchronous_commit = on``, InnoDB with ``innodb_flush_log_at_trx_commit = 1``.
"""

from __future__ import annotations

import json
import socket
from typing import Any, Callable, Dict, List, Optional, Protocol, Tuple

from ._native import _audit_port, _tables
from .stores._common import Connections, import_client

__all__ = ["MySQLRegistry", "PostgresRegistry", "RedisRegistry", "Registry", "from_url", "statements"]


class Registry(Protocol):
    """A worker-ID registry: any object with these four methods (coroutine functions too,
    through :func:`segflake.from_registry_async`). Answers as in the module docs."""

    def claim(self, worker_id: int, owner: str, ttl_ms: int) -> Any: ...

    def renew(self, worker_id: int, owner: str, ttl_ms: int, mark_ms: int, reported_ms: int) -> Any: ...

    def release(self, worker_id: int, owner: str, mark_ms: int) -> Any: ...

    def peers(self) -> Any: ...

_STATEMENTS: Optional[Dict[str, Dict[str, str]]] = None


def statements(registry: str) -> Dict[str, str]:
    """The core's scripts or statements for ``registry`` (``redis``, ``postgres``, ``mysql``),
    by call name; SQL uses ``?`` placeholders."""
    global _STATEMENTS
    if _STATEMENTS is None:
        _STATEMENTS = json.loads(_tables())["registries"]
    return dict(_STATEMENTS[registry])


def _placeholders(sql: str) -> str:
    """``?`` placeholders as DB-API ``%s`` (no statement has ``%`` or ``?`` elsewhere)."""
    return sql.replace("?", "%s")


def _host_name() -> str:
    return socket.gethostname()[:64] or "unknown"


Peers = List[Tuple[int, int, int]]


class RedisRegistry:
    """Worker-ID leases in Redis: ``url`` (``redis://HOST:PORT/DB``) or ``client`` (a
    ``redis.Redis``); ``prefix`` names the keys (wrapped in braces: one cluster slot).
    redis-py's client is thread-safe and reconnects by itself."""

    def __init__(
        self,
        url: Optional[str] = None,
        *,
        client: Any = None,
        prefix: str = "segflake",
        socket_timeout: float = 3.0,
    ) -> None:
        if (url is None) == (client is None):
            raise TypeError("RedisRegistry needs exactly one of url or client")
        if client is None:
            redis = import_client("redis", "redis")
            client = redis.Redis.from_url(url, socket_timeout=socket_timeout, socket_connect_timeout=socket_timeout)
        self.client = client
        self.prefix = "{" + prefix + "}"
        scripts = statements("redis")
        self._claim = client.register_script(scripts["claim"])
        self._renew = client.register_script(scripts["renew"])
        self._release = client.register_script(scripts["release"])
        self._peers = client.register_script(scripts["peers"])

    def _key(self, what: str, worker_id: int) -> str:
        return f"{self.prefix}:{what}:{worker_id}"

    def claim(self, worker_id: int, owner: str, ttl_ms: int) -> Optional[int]:
        mark = self._claim(keys=[self._key("worker", worker_id), self._key("mark", worker_id)], args=[owner, ttl_ms])
        return None if mark is None else int(mark)

    def renew(self, worker_id: int, owner: str, ttl_ms: int, mark_ms: int, reported_ms: int) -> Optional[int]:
        keys = [self._key("worker", worker_id), self._key("mark", worker_id), f"{self.prefix}:reports"]
        mark = self._renew(keys=keys, args=[owner, ttl_ms, mark_ms, reported_ms, worker_id])
        return None if mark is None else int(mark)

    def release(self, worker_id: int, owner: str, mark_ms: int) -> bool:
        keys = [self._key("worker", worker_id), self._key("mark", worker_id), f"{self.prefix}:reports"]
        return int(self._release(keys=keys, args=[owner, mark_ms, worker_id])) == 1

    def peers(self) -> Peers:
        rows = self._peers(keys=[f"{self.prefix}:reports"], args=[f"{self.prefix}:worker:"])
        return [(int(w), int(r), int(a)) for w, r, a in rows]

    def close(self) -> None:
        self.client.close()


class _Sql:
    """One connection, opened on first use and reopened after a failure; the schema is
    created with it unless ``create_schema=False``."""

    dialect = ""

    def __init__(self, open_connection: Callable[[], Any], create_schema: bool) -> None:
        self._sql = {k: _placeholders(v) for k, v in statements(self.dialect).items()}

        def connect() -> Any:
            conn = open_connection()
            if create_schema:
                self._create_schema(conn)
            return conn

        self._conns: Connections[Any] = Connections(connect, lambda c: c.close())

    def _create_schema(self, conn: Any) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self._conns.close()


class PostgresRegistry(_Sql):
    """Worker-ID leases in PostgreSQL (psycopg 3): ``conninfo`` (a libpq string or URL) or
    ``connect`` (a function returning a new connection; it is switched to autocommit)."""

    dialect = "postgres"

    def __init__(
        self,
        conninfo: Optional[str] = None,
        *,
        connect: Optional[Callable[[], Any]] = None,
        connect_timeout: int = 3,
        create_schema: bool = True,
    ) -> None:
        if (conninfo is None) == (connect is None):
            raise TypeError("PostgresRegistry needs exactly one of conninfo or connect")
        psycopg = import_client("psycopg", "postgres")

        def open_connection() -> Any:
            if connect is not None:
                conn = connect()
                conn.autocommit = True
                return conn
            return psycopg.connect(conninfo, autocommit=True, connect_timeout=connect_timeout)

        super().__init__(open_connection, create_schema)

    def _create_schema(self, conn: Any) -> None:
        conn.execute(self._sql["schema"])

    def claim(self, worker_id: int, owner: str, ttl_ms: int) -> Optional[int]:
        def op(conn: Any) -> Optional[int]:
            row = conn.execute(self._sql["claim"], (worker_id, owner, ttl_ms)).fetchone()
            if row is None:
                return None
            conn.execute(self._sql["audit"], (_host_name(), _audit_port(worker_id, owner)))
            return int(row[0])

        return self._conns.run(op)  # type: ignore[no-any-return]

    def renew(self, worker_id: int, owner: str, ttl_ms: int, mark_ms: int, reported_ms: int) -> Optional[int]:
        params = (ttl_ms, mark_ms, reported_ms, worker_id, owner)
        row = self._conns.run(lambda c: c.execute(self._sql["renew"], params).fetchone())
        return None if row is None else int(row[0])

    def release(self, worker_id: int, owner: str, mark_ms: int) -> bool:
        params = (mark_ms, worker_id, owner)
        return self._conns.run(lambda c: c.execute(self._sql["release"], params).fetchone()) is not None

    def peers(self) -> Peers:
        rows = self._conns.run(lambda c: c.execute(self._sql["peers"]).fetchall())
        return [(int(w), int(r), max(0, int(a))) for w, r, a in rows]


class MySQLRegistry(_Sql):
    """Worker-ID leases in MySQL or MariaDB (PyMySQL): connection arguments (``host``,
    ``port``, ``user``, ``password``, ``database``...) or ``connect`` (a function returning
    a new connection opened with ``client_flag=pymysql.constants.CLIENT.FOUND_ROWS``)."""

    dialect = "mysql"

    def __init__(
        self,
        *,
        connect: Optional[Callable[[], Any]] = None,
        create_schema: bool = True,
        **connect_kwargs: Any,
    ) -> None:
        if connect is not None and connect_kwargs:
            raise TypeError("MySQLRegistry takes either connect or connection arguments, not both")
        pymysql = import_client("pymysql", "mysql")
        connect_kwargs.setdefault("connect_timeout", 3)
        # An UPDATE's row count is the rows it matched (the statements' contract).
        connect_kwargs["client_flag"] = connect_kwargs.get("client_flag", 0) | pymysql.constants.CLIENT.FOUND_ROWS

        def open_connection() -> Any:
            if connect is not None:
                conn = connect()
                conn.autocommit(True)
                return conn
            return pymysql.connect(autocommit=True, **connect_kwargs)

        super().__init__(open_connection, create_schema)

    def _create_schema(self, conn: Any) -> None:
        with conn.cursor() as cur:
            for statement in self._sql["schema"].split(";"):
                body = "\n".join(l for l in statement.splitlines() if not l.strip().startswith("--"))
                if body.strip():
                    cur.execute(body)

    def _claimed(self, cur: Any, worker_id: int, owner: str) -> Optional[int]:
        cur.execute(self._sql["claimed"], (worker_id, owner))
        row = cur.fetchone()
        return None if row is None else int(row[0])

    def claim(self, worker_id: int, owner: str, ttl_ms: int) -> Optional[int]:
        def op(conn: Any) -> Optional[int]:
            with conn.cursor() as cur:
                cur.execute(self._sql["ensure"], (worker_id,))
                cur.execute(self._sql["claim"], (owner, ttl_ms, worker_id, owner))
                mark = self._claimed(cur, worker_id, owner)
                if mark is not None:
                    cur.execute(self._sql["audit"], (_host_name(), _audit_port(worker_id, owner)))
                return mark

        return self._conns.run(op)  # type: ignore[no-any-return]

    def renew(self, worker_id: int, owner: str, ttl_ms: int, mark_ms: int, reported_ms: int) -> Optional[int]:
        def op(conn: Any) -> Optional[int]:
            with conn.cursor() as cur:
                if cur.execute(self._sql["renew"], (ttl_ms, mark_ms, reported_ms, worker_id, owner)) == 0:
                    return None
                return self._claimed(cur, worker_id, owner)

        return self._conns.run(op)  # type: ignore[no-any-return]

    def release(self, worker_id: int, owner: str, mark_ms: int) -> bool:
        def op(conn: Any) -> bool:
            with conn.cursor() as cur:
                return bool(cur.execute(self._sql["release"], (mark_ms, worker_id, owner)) == 1)

        return self._conns.run(op)  # type: ignore[no-any-return]

    def peers(self) -> Peers:
        def op(conn: Any) -> Peers:
            with conn.cursor() as cur:
                cur.execute(self._sql["peers"])
                return [(int(w), int(r), max(0, int(a))) for w, r, a in cur.fetchall()]

        return self._conns.run(op)  # type: ignore[no-any-return]


def from_url(url: str) -> Any:
    """A registry for ``redis://``, ``postgres://`` (``postgresql://``) or ``mysql://`` URLs."""
    scheme = url.split("://", 1)[0]
    if scheme == "redis":
        return RedisRegistry(url)
    if scheme in ("postgres", "postgresql"):
        return PostgresRegistry(url)
    if scheme == "mysql":
        from urllib.parse import unquote, urlparse

        u = urlparse(url)
        return MySQLRegistry(
            host=u.hostname or "localhost",
            port=u.port or 3306,
            user=unquote(u.username or ""),
            password=unquote(u.password or ""),
            database=u.path.lstrip("/") or None,
        )
    raise ValueError(f"unsupported registry URL {url!r}; allowed: redis://, postgres://, mysql://")
